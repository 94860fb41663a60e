import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.models.config import ConfigError, ModelConfig
from mechjax.tasks import modular
from mechjax.tasks.base import Task, fixed_dataset_sampler
from mechjax.training.train import TrainConfig, make_train, split_hparams

TASK = modular.make_task(p=7, batch_size=16, train_fraction=0.6, sweep_fraction=True)
CFG = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_mlp=32, d_vocab=7, d_vocab_out=7,
                  n_ctx=2, causal=False)
TRAIN = TrainConfig(steps=20, eval_every=10)


def trainer(**kwargs):
    return make_train(TASK, kwargs.pop("model", CFG), TrainConfig(**{**TRAIN.__dict__, **kwargs}))


# The two programs of the default trainer that most tests run, jitted once for the module: one
# run alone, and seeds x grid (3 x 2, the sweep's nesting). Each new jit of a new trainer would
# trace and compile the same program again.
TR = trainer()
ALONE = jax.jit(TR)
GRID_TRACES = []


def _grid_run(key, hparams):
    GRID_TRACES.append(1)  # Python side effect: runs when the program is traced, only then
    return TR(key, hparams)


GRID = jax.jit(jax.vmap(jax.vmap(_grid_run, (None, 0)), (0, None)))
KEYS = jax.vmap(jax.random.PRNGKey)(jnp.arange(3))


def grid_hparams(**values):
    """Two grid points: ``TR``'s defaults with each ``name=(first, second)`` in ``values``."""
    points = [TR.default_hparams(**{k: v[i] for k, v in values.items()}) for i in range(2)]
    return {k: jnp.stack([pt[k] for pt in points]) for k in points[0]}


def test_seed_in_vmapped_sweep_equals_seed_alone_and_is_deterministic():
    hp = TR.default_hparams(lr=3e-3, weight_decay=0.1)
    swept, swept_metrics = GRID(KEYS, grid_hparams(lr=(3e-3, 3e-3), weight_decay=(0.1, 0.1)))
    alone, alone_metrics = ALONE(KEYS[1], hp)
    again, _ = ALONE(KEYS[1], hp)
    for k in alone.params:
        for g in range(2):  # seed 1 at both (equal) grid points
            np.testing.assert_allclose(swept.params[k][1, g], alone.params[k], rtol=1e-5,
                                       atol=1e-6)
        np.testing.assert_array_equal(again.params[k], alone.params[k])  # bit-identical
    np.testing.assert_allclose(swept_metrics["train/loss"][1, 0], alone_metrics["train/loss"],
                               rtol=1e-5)
    assert not np.allclose(swept.params["embed.W_E"][0, 0], swept.params["embed.W_E"][1, 0])
    assert alone_metrics["acc/train"].shape == (2,)
    np.testing.assert_array_equal(alone_metrics["step"], [10, 20])
    assert float(alone_metrics["train/loss"][-1]) < float(alone_metrics["train/loss"][0])


def test_seeds_by_grid_compiles_once():
    _, m1 = GRID(KEYS, grid_hparams(lr=(1e-3, 3e-3), weight_decay=(0.0, 1.0),
                                    **{"task.train_fraction": (0.3, 0.9)}))
    _, m2 = GRID(KEYS, grid_hparams(lr=(2e-3, 1e-2), weight_decay=(0.5, 0.1),
                                    **{"task.train_fraction": (0.5, 0.5)}))
    # new values, no retrace: one trace in this module, whichever test called GRID first
    assert len(GRID_TRACES) == 1
    assert m1["acc/train"].shape == (3, 2, 2)
    assert not np.allclose(m1["train/loss"], m2["train/loss"])


def test_diverged_run_is_flagged_and_others_unaffected():
    hp = grid_hparams(lr=(3e-3, jnp.nan))
    state, metrics = GRID(KEYS, hp)
    assert bool(metrics["finite"][0, 0, -1]) and not bool(metrics["finite"][1, 1, -1])
    # last finite parameters kept (checked in numpy: eager jnp ops compile one by one)
    assert all(np.isfinite(np.asarray(v)[:, 1]).all() for v in state.params.values())
    alone, _ = ALONE(KEYS[1], TR.default_hparams(lr=3e-3))
    for k in alone.params:
        np.testing.assert_allclose(state.params[k][1, 0], alone.params[k], rtol=1e-5, atol=1e-6)


def test_branch_resets_optimizer_and_continues():
    tr = TR
    hp = tr.default_hparams(lr=3e-3, weight_decay=1.0)
    state, _ = ALONE(jax.random.PRNGKey(0), hp)
    branched = tr.branch(state, tr.default_hparams(lr=3e-3, weight_decay=0.0))
    mu = branched.opt_state[0].mu
    assert all(float(np.abs(np.asarray(v)).max()) == 0.0 for v in mu.values())
    assert int(branched.step) == 20
    for k in state.params:
        np.testing.assert_array_equal(branched.params[k], state.params[k])
    longer = make_train(TASK, CFG, TrainConfig(steps=40, eval_every=10))
    cont, metrics = jax.jit(lambda s, h: longer.run(s, h, 2))(branched, longer.default_hparams(
        lr=3e-3, weight_decay=0.0))
    np.testing.assert_array_equal(metrics["step"], [30, 40])


def test_frozen_parameters_do_not_move():
    cfg = ModelConfig(**{**CFG.__dict__, "frozen": ("embed.W_E",)})
    tr = trainer(model=cfg)
    hp = tr.default_hparams(lr=1e-2, weight_decay=1.0)
    init = jax.jit(tr.init)(jax.random.PRNGKey(0), hp)
    state, _ = jax.jit(tr)(jax.random.PRNGKey(0), hp)
    np.testing.assert_array_equal(state.params["embed.W_E"], init.params["embed.W_E"])
    assert not np.allclose(state.params["unembed.W_U"], init.params["unembed.W_U"])


def test_full_batch_fixed_dataset_and_weights():
    tokens = jnp.array([[0, 1], [1, 2], [2, 3], [3, 0]])
    labels = jnp.array([1, 2, 3, 0])
    sample = fixed_dataset_sampler(tokens, labels)
    task = Task("copy", sample, {"train": sample}, readout=-1)
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=1, d_mlp=16, d_vocab=4, n_ctx=2)
    tr = make_train(task, cfg, TrainConfig(steps=200, eval_every=100))
    _, metrics = jax.jit(tr)(jax.random.PRNGKey(0), tr.default_hparams(lr=1e-2))
    assert float(metrics["acc/train"][-1]) == 1.0
    mini = fixed_dataset_sampler(tokens, labels, batch_size=2)(jax.random.PRNGKey(0), {})
    assert mini["tokens"].shape == (2, 2)
    with pytest.raises(ValueError, match="batch_size=5"):
        fixed_dataset_sampler(tokens, labels, batch_size=5)


def test_schedule_warmup_then_cosine():
    tr = trainer(steps=100, warmup_steps=10, schedule="cosine")
    lr = tr._schedule(jnp.float32(1.0))
    np.testing.assert_allclose(lr(jnp.int32(0)), 0.1, rtol=1e-6)
    np.testing.assert_allclose(lr(jnp.int32(9)), 1.0, rtol=1e-6)
    np.testing.assert_allclose(lr(jnp.int32(55)), 0.5, rtol=1e-5)
    np.testing.assert_allclose(lr(jnp.int32(100)), 0.0, atol=1e-6)


def test_schedule_linear_decay_without_warmup():
    lr = trainer(steps=100, schedule="linear")._schedule(jnp.float32(2.0))
    np.testing.assert_allclose([lr(jnp.int32(c)) for c in (0, 25, 100, 150)],
                               [2.0, 1.5, 0.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"steps": 0}, "train.steps=0"),
    ({"eval_every": -5}, "train.eval_every=-5"),
    ({"optimizer": "lion"}, "train.optimizer='lion'"),
    ({"warmup_steps": 50}, "train.warmup_steps=50"),
    ({"compute_dtype": "float16"}, "train.compute_dtype='float16': allowed"),
    ({"eval_pools": ("nope",)}, r"eval pools \['nope'\] do not exist"),
])
def test_bad_train_config_is_named(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment):
        trainer(**kwargs)


def test_unknown_hyperparameter_and_task_mismatch():
    tr = trainer()
    with pytest.raises(ConfigError, match=r"unknown hyperparameters \['learning_rate'\]"):
        tr.default_hparams(learning_rate=1.0)
    small = ModelConfig(**{**CFG.__dict__, "d_vocab": 5, "d_vocab_out": 5})
    with pytest.raises(ConfigError, match="uses 7 tokens but model.d_vocab=5"):
        make_train(TASK, small, TRAIN)


def test_bfloat16_compute_keeps_float32_state_and_tracks_float32():
    hp = TR.default_hparams(lr=3e-3, weight_decay=0.1)
    key = jax.random.PRNGKey(0)
    f32, m32 = ALONE(key, hp)
    bf16 = trainer(compute_dtype="bfloat16")
    state, m16 = jax.jit(bf16)(key, hp)
    assert all(v.dtype == jnp.float32 for v in jax.tree.leaves((state.params, state.opt_state))
               if jnp.issubdtype(v.dtype, jnp.floating))
    # the forward pass really is in bfloat16: its logits differ from float32 at bf16 precision
    batch = TASK.eval_pools["test"](key, split_hparams(hp)[1])
    l32 = jax.jit(TR.logits)(f32.params, batch["tokens"])  # one program each, not op by op
    l16 = jax.jit(bf16.logits)(jax.tree.map(lambda v: v.astype(jnp.bfloat16), f32.params),
                               batch["tokens"])
    assert l16.dtype == jnp.bfloat16
    err = float(jnp.max(jnp.abs(l16.astype(jnp.float32) - l32)))
    assert 1e-4 < err < 0.1, err
    np.testing.assert_allclose(m16["train/loss"], m32["train/loss"], rtol=0.05, atol=0.02)


def _shifted_task(token_shift=0, label_shift=0):
    """``TASK`` with its tokens and labels moved by a constant (out of the model's range)."""
    def sample(key, task_params):
        batch = TASK.sample(key, task_params)
        return {**batch, "tokens": batch["tokens"] + token_shift,
                "labels": batch["labels"] + label_shift}
    return Task("shifted", sample, TASK.eval_pools, TASK.readout, TASK.default_params,
                TASK.seq_len, TASK.vocab_size)


@pytest.mark.parametrize("shifts, fragment", [
    ((1, 0), r"task 'shifted' samples tokens in \[1, 7\] but model.d_vocab=7 allows \[0, 6\]"),
    ((-3, 0), r"samples tokens in \[-3, 3\]"),
    ((0, 2), r"samples labels in \[2, 8\] but model.vocab_out=7 allows \[0, 6\]"),
])
def test_out_of_vocabulary_task_is_refused_before_compiling(shifts, fragment):
    # Inside the step JAX's gather would clamp these indices silently.
    with pytest.raises(ConfigError, match=fragment):
        make_train(_shifted_task(*shifts), CFG, TRAIN)
    make_train(_shifted_task(0, 0), CFG, TRAIN)  # the same task in range is accepted
