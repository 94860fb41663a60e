"""The attention-rate knob: rate 1 is today's model bit for bit, rate 0 attends uniformly (or,
with the paper's ``"ones"`` mixing, with weight one on every allowed key), and a seeds x rates
grid trains as one compiled program."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.models import attention_rate as ar
from mechjax.models import attention_mix
from mechjax.models import fastpath
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.models.transformer import forward, init_params
from mechjax.sweeps.sweep import run_sweep
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, make_train

CFG = ModelConfig(n_layers=1, d_model=16, n_heads=4, d_head=4, d_mlp=32, d_vocab=11,
                  n_ctx=2, causal=False)


def patterns(params, tokens, cfg, rate, mixing="uniform"):
    seen = {}

    def keep(name, x):
        if name.endswith("hook_pattern"):
            seen[name] = x
        return x
    ar.forward(params, tokens, cfg, rate, hook=keep, mixing=mixing)
    return seen["blocks.0.attn.hook_pattern"]


def test_rate_one_is_the_model_exactly_and_rate_zero_uniform():
    params = init_params(jax.random.PRNGKey(0), CFG, scale=5.0)  # far-from-uniform softmax
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 11, (64, 2)), jnp.int32)
    np.testing.assert_array_equal(np.asarray(ar.forward(params, tokens, CFG, 1.0)),
                                  np.asarray(forward(params, tokens, CFG)))
    # traced rate, jitted: XLA fuses the two programs differently, so equal to float32 rounding
    # (measured: 4e-5 relative on logits of size ~500 at this init scale)
    jitted = jax.jit(lambda r: ar.forward(params, tokens, CFG, r))(jnp.float32(1.0))
    plain = jax.jit(lambda: forward(params, tokens, CFG))()
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(plain), rtol=2e-4, atol=1e-3)
    soft, flat = patterns(params, tokens, CFG, 1.0), patterns(params, tokens, CFG, 0.0)
    assert float(jnp.abs(soft - 0.5).max()) > 0.1
    np.testing.assert_allclose(np.asarray(flat), 0.5)
    np.testing.assert_allclose(np.asarray(patterns(params, tokens, CFG, 0.25)),
                               np.asarray(0.25 * soft + 0.75 * 0.5), rtol=1e-6)
    assert not np.allclose(ar.forward(params, tokens, CFG, 0.0), forward(params, tokens, CFG))
    # the paper's mixing: a * softmax + (1 - a) * ones
    np.testing.assert_allclose(np.asarray(patterns(params, tokens, CFG, 0.0, "ones")), 1.0)
    np.testing.assert_allclose(np.asarray(patterns(params, tokens, CFG, 0.25, "ones")),
                               np.asarray(0.25 * soft + 0.75), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(ar.forward(params, tokens, CFG, 1.0, mixing="ones")),
                                  np.asarray(forward(params, tokens, CFG)))
    with pytest.raises(ConfigError, match="attn_mixing='one'"):
        ar.forward(params, tokens, CFG, 0.5, mixing="one")


@pytest.mark.parametrize("n_layers,causal,mixing,bias,mlp_layers",
                         [(1, False, "uniform", False, None), (2, True, "uniform", False, None),
                          (2, True, "ones", True, None),
                          # layer 0 attention only: the rate reaches layer 0 through the tables
                          (2, True, "ones", True, (False, True))])
def test_fast_readout_at_a_rate_is_the_forward_at_that_rate(n_layers, causal, mixing, bias,
                                                            mlp_layers):
    cfg = ModelConfig(n_layers=n_layers, d_model=16, n_heads=2, d_head=8, d_mlp=32, d_vocab=11,
                      n_ctx=3, causal=causal, use_bias=bias, mlp_layers=mlp_layers)
    assert fastpath.tabled(cfg, dropout_drawn=False) == (mlp_layers is not None)
    params = init_params(jax.random.PRNGKey(1), cfg, scale=2.0)
    tokens = jnp.asarray(np.random.default_rng(1).integers(0, 11, (32, 3)), jnp.int32)
    w = jax.random.normal(jax.random.PRNGKey(2), (32, 11))  # a linear loss: no amplified
    # rounding of large logits; each rate a Python float as a user passes it, one program each

    @functools.partial(jax.jit, static_argnums=1)
    def both(p, rate):
        fast = lambda p: fastpath.readout_logits(p, tokens, cfg, -1, attn_rate=rate,
                                                 attn_mixing=mixing)
        full = lambda p: ar.forward(p, tokens, cfg, rate, mixing=mixing)[:, -1]
        return (fast(p), full(p), jax.grad(lambda p: jnp.sum(w * fast(p)))(p),
                jax.grad(lambda p: jnp.sum(w * full(p)))(p))

    for rate in (0.0, 0.3, 1.0):
        logits_fast, logits_full, g_fast, g_full = both(params, rate)
        np.testing.assert_allclose(logits_fast, logits_full, rtol=1e-4, atol=1e-4)
        overall = max(float(jnp.abs(g).max()) for g in g_full.values())
        for k in params:
            if k.endswith("b_K"):  # zero in exact arithmetic (softmax ignores it): float noise
                assert float(jnp.abs(g_fast[k]).max()) < 1e-4 * overall, k
                continue
            scale = float(jnp.abs(g_full[k]).max())
            np.testing.assert_allclose(g_fast[k], g_full[k], rtol=1e-3, atol=1e-4 * scale,
                                       err_msg=k)


def test_causal_uniform_over_allowed_keys():
    u = ar.uniform_pattern((1, 3, 3), causal=True)[0]
    np.testing.assert_allclose(np.asarray(u), [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]])
    ones = attention_mix.constant_pattern((2, 3, 3), causal=True, mixing="ones")
    np.testing.assert_array_equal(np.asarray(ones[1]), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])


def test_rates_x_seeds_grid_is_one_program_and_rate_one_reproduces_the_trainer(tmp_path):
    task = modular.make_task(p=11, train_fraction=0.5)
    cfg = ModelConfig.from_dict(dict(CFG.to_dict()))
    train_cfg = TrainConfig(steps=20, eval_every=10)
    rated = make_train(task, ar.rate_model(cfg), train_cfg)
    assert float(rated.default_hparams()["attn_rate"]) == 1.0
    result = run_sweep(rated, [0, 1], {"attn_rate": [1.0, 0.0], "lr": 1e-2}, str(tmp_path / "r"),
                       chunk_evals=2)
    assert result.traces == 1
    plain = run_sweep(make_train(task, cfg, train_cfg), [0, 1], {"lr": 1e-2}, str(tmp_path / "p"),
                      chunk_evals=2)
    # both read the last position by the fast path; XLA fuses the two programs differently
    for name in ("loss/train", "loss/test"):
        np.testing.assert_allclose(result.metrics[name][:, 0], plain.metrics[name][:, 0],
                                   rtol=1e-4)
        gap = np.abs(result.metrics[name][:, 1, -1] / plain.metrics[name][:, 0, -1] - 1)
        assert gap.min() > 1e-2, gap  # uniform attention trains another model


def test_check_rates():
    assert ar.check_rates([0, 0.5, 1]) == [0.0, 0.5, 1.0]
    with pytest.raises(ConfigError, match="attn_rates"):
        ar.check_rates([0.5, 1.5])
    with pytest.raises(ConfigError, match="attn_rates"):
        ar.check_rates([])
