"""A Flax user's model on mechjax's path: NNX and Linen modules as ``Model``s, hooks by module
path, a seed sweep as one program with resume, the saved run read back, one-line errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import flax.linen as nn
from flax import nnx

from mechjax.models import flax_adapter
from mechjax.models.config import ConfigError
from mechjax.models.hooks import HookNameError
from mechjax.sweeps import runs
from mechjax.sweeps.sweep import run_sweep
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, make_train

P, D, HEADS = 7, 16, 2
TOKENS = jnp.asarray(np.random.default_rng(0).integers(0, P, (5, 2)), jnp.int32)


# ---- the model as a Flax user writes it (no mechjax inside) -------------------------------------
class NnxMlp(nnx.Module):
    def __init__(self, d: int, rngs: nnx.Rngs):
        self.up, self.down = nnx.Linear(d, 2 * d, rngs=rngs), nnx.Linear(2 * d, d, rngs=rngs)

    def __call__(self, x):
        return self.down(jax.nn.gelu(self.up(x)))


class NnxBlock(nnx.Module):
    def __init__(self, d: int, rngs: nnx.Rngs):
        self.ln1, self.ln2 = nnx.LayerNorm(d, rngs=rngs), nnx.LayerNorm(d, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(HEADS, d, decode=False, rngs=rngs)
        self.mlp = NnxMlp(d, rngs)

    def __call__(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, mask=nnx.make_causal_mask(x[..., 0]))
        return x + self.mlp(self.ln2(x))


class NnxNet(nnx.Module):
    def __init__(self, vocab: int, d: int, rngs: nnx.Rngs, n_ctx: int = 2):
        self.embed, self.pos = nnx.Embed(vocab, d, rngs=rngs), nnx.Embed(n_ctx, d, rngs=rngs)
        self.blocks = nnx.List([NnxBlock(d, rngs) for _ in range(2)])
        self.unembed = nnx.Linear(d, vocab, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens) + self.pos(jnp.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.unembed(x)


class LinenMlp(nn.Module):
    d: int

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.d, name="down")(nn.gelu(nn.Dense(2 * self.d, name="up")(x)))


class LinenBlock(nn.Module):
    d: int

    def setup(self):
        self.ln1, self.ln2 = nn.LayerNorm(), nn.LayerNorm()
        self.attn = nn.SelfAttention(HEADS)
        self.mlp = LinenMlp(self.d)

    def __call__(self, x):
        x = x + self.attn(self.ln1(x), mask=nn.make_causal_mask(x[..., 0]))
        return x + self.mlp(self.ln2(x))


class LinenNet(nn.Module):
    vocab: int
    d: int

    def setup(self):
        self.embed, self.pos = nn.Embed(self.vocab, self.d), nn.Embed(2, self.d)
        self.blocks = [LinenBlock(self.d) for _ in range(2)]
        self.unembed = nn.Dense(self.vocab)

    def __call__(self, tokens):
        x = self.embed(tokens) + self.pos(jnp.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.unembed(x)


def nnx_factory(rngs):
    return NnxNet(P, D, rngs)


@pytest.fixture(scope="module")
def nnx_model():
    return flax_adapter.nnx_model(nnx_factory, TOKENS, n_ctx=2)


@pytest.fixture(scope="module")
def linen_model():
    return flax_adapter.linen_model(LinenNet(P, D), TOKENS, n_ctx=2)


# ---- the forward pass --------------------------------------------------------------------------
def test_nnx_logits_equal_the_modules_own_call(nnx_model):
    params = nnx_model.init(jax.random.PRNGKey(3), 1.0)
    module = NnxNet(P, D, nnx.Rngs(jax.random.PRNGKey(3)))  # the same key draws the same weights
    assert "blocks.0.attn.query.kernel" in params and nnx_model.config.vocab_out == P
    np.testing.assert_array_equal(params["unembed.kernel"], module.unembed.kernel[...])
    want = module(TOKENS)
    np.testing.assert_allclose(nnx_model.logits(params, TOKENS, None, None, {}, False), want,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(nnx_model.logits(params, TOKENS, -1, None, {}, False),
                               want[:, -1], rtol=1e-6, atol=1e-6)
    # init_scale multiplies the weight matrices, not biases or norm gains
    scaled = nnx_model.init(jax.random.PRNGKey(3), 2.0)
    np.testing.assert_allclose(scaled["embed.embedding"], 2 * params["embed.embedding"])
    np.testing.assert_array_equal(scaled["blocks.0.ln1.scale"], params["blocks.0.ln1.scale"])


def test_linen_logits_equal_apply(linen_model):
    params = linen_model.init(jax.random.PRNGKey(4), 1.0)
    variables = LinenNet(P, D).init(jax.random.PRNGKey(4), TOKENS)
    assert "blocks_1.attn.query.kernel" in params
    want = LinenNet(P, D).apply(variables, TOKENS)
    got = linen_model.logits(params, TOKENS, -1, None, {}, False)
    np.testing.assert_allclose(got, want[:, -1], rtol=1e-6, atol=1e-6)
    back = flax_adapter.to_module(linen_model, params)
    np.testing.assert_array_equal(back["params"]["unembed"]["kernel"],
                                  variables["params"]["unembed"]["kernel"])


# ---- hooks -------------------------------------------------------------------------------------
def test_cache_equals_flax_intermediates_and_the_computation_by_hand(nnx_model, linen_model):
    params = linen_model.init(jax.random.PRNGKey(1), 1.0)
    cache = flax_adapter.run_with_cache(linen_model, params, TOKENS, ["blocks_0", "blocks_1.mlp"])
    _, state = LinenNet(P, D).apply(flax_adapter.to_module(linen_model, params), TOKENS,
                                    capture_intermediates=True, mutable=["intermediates"])
    inter = state["intermediates"]
    np.testing.assert_array_equal(cache["blocks_0"], inter["blocks_0"]["__call__"][0])
    np.testing.assert_array_equal(cache["blocks_1.mlp"], inter["blocks_1"]["mlp"]["__call__"][0])

    params = nnx_model.init(jax.random.PRNGKey(2), 1.0)
    module = flax_adapter.to_module(nnx_model, params)
    cache = flax_adapter.run_with_cache(nnx_model, params, TOKENS, ["blocks.0", "blocks.1.mlp"])
    x = module.embed(TOKENS) + module.pos(jnp.arange(2))
    h0 = module.blocks[0](x)
    x1 = h0 + module.blocks[1].attn(module.blocks[1].ln1(h0), mask=nnx.make_causal_mask(TOKENS))
    np.testing.assert_allclose(cache["blocks.0"], h0, rtol=1e-6, atol=1e-6)
    want = module.blocks[1].mlp(module.blocks[1].ln2(x1))
    np.testing.assert_allclose(cache["blocks.1.mlp"], want, rtol=1e-5, atol=1e-6)


def test_zero_ablation_hook_equals_the_edit_by_hand(nnx_model, linen_model):
    params = nnx_model.init(jax.random.PRNGKey(5), 1.0)
    m = flax_adapter.to_module(nnx_model, params)
    got = jax.jit(lambda p: flax_adapter.run_with_hooks(
        nnx_model, p, TOKENS, {"blocks.1.mlp": jnp.zeros_like}, readout=-1))(params)
    h0 = m.blocks[0](m.embed(TOKENS) + m.pos(jnp.arange(2)))
    h1 = h0 + m.blocks[1].attn(m.blocks[1].ln1(h0), mask=nnx.make_causal_mask(TOKENS))  # no mlp
    np.testing.assert_allclose(got, m.unembed(h1)[:, -1], rtol=1e-5, atol=1e-6)

    params = linen_model.init(jax.random.PRNGKey(5), 1.0)
    bound = LinenNet(P, D).bind(flax_adapter.to_module(linen_model, params))
    got = flax_adapter.run_with_hooks(linen_model, params, TOKENS,
                                      {"blocks_1.mlp": jnp.zeros_like}, readout=-1)
    h0 = bound.blocks[0](bound.embed(TOKENS) + bound.pos(jnp.arange(2)))
    h1 = h0 + bound.blocks[1].attn(bound.blocks[1].ln1(h0), mask=nn.make_causal_mask(TOKENS))
    np.testing.assert_allclose(got, bound.unembed(h1)[:, -1], rtol=1e-5, atol=1e-6)


def test_a_misspelled_module_path_names_the_near_matches(nnx_model, linen_model):
    params = nnx_model.init(jax.random.PRNGKey(0), 1.0)
    with pytest.raises(HookNameError, match=r"'blocks\.1\.mpl' \(near matches: blocks\.1\.mlp"):
        flax_adapter.run_with_cache(nnx_model, params, TOKENS, ["blocks.1.mpl"])
    with pytest.raises(HookNameError) as err:
        flax_adapter.run_with_hooks(linen_model, linen_model.init(jax.random.PRNGKey(0), 1.0),
                                    TOKENS, {"blocks.1.mlp": jnp.zeros_like})
    assert "\n" not in str(err.value) and "blocks_1.mlp" in str(err.value)
    assert "blocks.1.attn" in flax_adapter.module_paths(nnx_model)


# ---- bad inputs --------------------------------------------------------------------------------
def test_bad_inputs_are_one_line_each(nnx_model):
    task = modular.make_task(p=P, batch_size=None)
    small = flax_adapter.nnx_model(lambda rngs: NnxNet(P - 2, D, rngs), TOKENS % (P - 2))
    with pytest.raises(ConfigError, match=f"uses {P} tokens but model.d_vocab={P - 2}"):
        make_train(task, small, TrainConfig(steps=2, eval_every=1))
    params = nnx_model.init(jax.random.PRNGKey(0), 1.0)
    cases = {"missing": {k: v for k, v in params.items() if k != "unembed.bias"},
             "unexpected": {**params, "unembed.bais": params["unembed.bias"]},
             "has shape": {**params, "unembed.bias": jnp.zeros(P + 1)},
             "leading seed axis": jax.tree.map(lambda v: jnp.stack([v, v]), params)}
    for words, bad in cases.items():
        with pytest.raises(ValueError) as err:
            nnx_model.logits(bad, TOKENS, -1, None, {}, False)
        assert words in str(err.value) and "\n" not in str(err.value), str(err.value)
    with pytest.raises(ValueError, match="'unembed.bais' is near 'unembed.bias'"):
        flax_adapter.to_module(nnx_model, cases["unexpected"])
    with pytest.raises(TypeError, match="expected a Model from nnx_model or linen_model"):
        flax_adapter.run_with_cache(object(), params, TOKENS)


# ---- a sweep of seeds, resumed and read back ---------------------------------------------------
def test_sweep_of_four_seeds_is_one_program_learns_resumes_and_reads_back(nnx_model, tmp_path):
    task = modular.make_task(p=P, batch_size=None, train_fraction=0.8)
    trainer = make_train(task, nnx_model, TrainConfig(steps=160, eval_every=40))
    seeds, grid = [0, 1, 2, 3], {"lr": 1e-2}
    full = run_sweep(trainer, seeds, grid, str(tmp_path / "full"), chunk_evals=1,
                     log_every_chunk=False)
    assert full.traces == 1
    loss = full.metrics_at(0)["loss/train"]  # [n_seeds, n_evals]
    assert np.all(loss[:, -1] < 0.5 * loss[:, 0])
    assert full.metrics_at(0)["acc/train"][:, -1].min() > 0.9
    # a run stopped after half its chunks, then relaunched, ends where the uninterrupted one does
    half = run_sweep(trainer, seeds, grid, str(tmp_path / "half"), chunk_evals=1,
                     stop=lambda m: m["step"].shape[-1] >= 2, log_every_chunk=False)
    assert half.stopped_early and half.steps.tolist() == [40, 80]
    resumed = run_sweep(trainer, seeds, grid, str(tmp_path / "half"), chunk_evals=1,
                        log_every_chunk=False)
    for k, v in full.state.params.items():
        np.testing.assert_array_equal(resumed.state.params[k], v, err_msg=k)
    run = runs.open(str(tmp_path / "full"))
    assert run.model_cfg == nnx_model.config and run.steps_saved == [160]
    saved = run.params(seed=1, step=160)
    assert sorted(saved) == sorted(nnx_model.param_shapes())
    for k, v in full.params_at(0).items():
        np.testing.assert_array_equal(saved[k], v[1], err_msg=k)
    module = flax_adapter.to_module(nnx_model, saved)
    np.testing.assert_allclose(module(TOKENS)[:, -1],
                               trainer.logits({k: v[1] for k, v in full.params_at(0).items()},
                                              TOKENS), rtol=1e-5, atol=1e-5)


def test_a_linen_model_trains_in_a_sweep_and_reads_back(linen_model, tmp_path):
    task = modular.make_task(p=P, batch_size=None, train_fraction=0.8)
    trainer = make_train(task, linen_model, TrainConfig(steps=60, eval_every=30))
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    params = jax.jit(jax.vmap(lambda k: trainer.init(k, trainer.default_hparams()).params))(keys)
    assert params["unembed.kernel"].shape == (2, D, P)
    assert not np.allclose(params["unembed.kernel"][0], params["unembed.kernel"][1])
    # two seeds in one program, saved and opened as a run: the loss falls in both, and the
    # saved parameters rebuild a Linen variable dict whose apply gives the trainer's logits
    result = run_sweep(trainer, [0, 1], {"lr": 1e-2}, str(tmp_path / "linen"), chunk_evals=2,
                       log_every_chunk=False)
    loss = result.metrics_at(0)["loss/train"]
    assert result.traces == 1 and np.all(loss[:, -1] < 0.7 * loss[:, 0]), loss
    run = runs.open(str(tmp_path / "linen"))
    saved = run.params(seed=1, step=60)
    assert run.model_cfg == linen_model.config and sorted(saved) == sorted(linen_model.param_shapes())
    variables = flax_adapter.to_module(linen_model, saved)
    np.testing.assert_allclose(LinenNet(P, D).apply(variables, TOKENS)[:, -1],
                               trainer.logits({k: v[1] for k, v in result.params_at(0).items()},
                                              TOKENS), rtol=1e-5, atol=1e-5)
