"""Per-checkpoint core analysis of modular addition on planted activations with a known answer, and
the fast causal scan against the hook-based one."""
from __future__ import annotations

import numpy as np
import pytest
import jax
import jax.numpy as jnp

from mechjax.analysis import ace
from mechjax.analysis import grokking_core as gc
from mechjax.model import init_params

P = 13
D = 16


def planted(freqs, p=P, d=D, nuisance=0.0, seed=0):
    """Activations of every pair (a, b) that carry exactly cos/sin(2 pi k (a+b) / p) for k in
    ``freqs`` in a random orthonormal 2|K|-dim subspace, a readout that decodes a+b from them, and
    optional variance in other directions the readout cannot see: a random centred code of the
    first operand ``a``, which over the full grid is exactly uncorrelated with any zero-mean
    function of a+b (balanced truncation would otherwise tilt the core toward it)."""
    rng = np.random.default_rng(seed)
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    s = ((a + b) % p).ravel()
    ang = 2 * np.pi * np.outer(s, freqs) / p                       # [N, K]
    feats = np.concatenate([np.cos(ang), np.sin(ang)], 1)           # [N, 2K]
    m, _ = np.linalg.qr(rng.normal(size=(d, d)))
    core, rest = m[:, :2 * len(freqs)], m[:, 2 * len(freqs):]
    code = rng.normal(size=(p, rest.shape[1]))
    code -= code.mean(0)
    h = feats @ core.T + nuisance * code[a.ravel()] @ rest.T
    c_ang = 2 * np.pi * np.outer(np.arange(p), freqs) / p          # [V, K]
    w_u = core @ np.concatenate([np.cos(c_ang), np.sin(c_ang)], 1).T  # [D, V]
    return (jnp.asarray(h, jnp.float32), jnp.asarray(s, jnp.int32),
            jnp.asarray(w_u, jnp.float32), jnp.zeros(p, jnp.float32))


def test_planted_fourier_core_is_found():
    freqs = [1, 3]
    h, labels, w_u, b_u = planted(freqs, nuisance=2.0)
    out = gc.analyse_activations(h, labels, w_u, b_u, P, tau=0.99)
    # Two frequencies = four directions; the large nuisance variance is invisible to the readout.
    assert int(out.r_energy) == 4 and int(out.core_dim) == 4
    assert float(out.acc_full) == 1.0 and float(out.acc_core_only) == 1.0
    assert float(out.acc_core_removed) <= 2.0 / P
    assert int(out.r_suf) <= 4
    # The class means rotate by 2 pi k / p per answer: an exact shift operator. (Held out, the
    # centre is the mean of the other answers, which a rotation does not fix: R^2 just below 1.)
    assert float(out.shift_r2) > 0.999 and float(out.heldout_r2) > 0.95
    lam = np.asarray(out.eigenvalues)[: int(out.n_directions)]
    assert int(out.n_directions) == 4
    np.testing.assert_allclose(np.abs(lam), 1.0, atol=1e-3)
    angles = sorted(np.round(np.abs(np.angle(lam)) * P / (2 * np.pi)).astype(int))
    assert angles == [1, 1, 3, 3]
    assert int(out.n_rotational) == 2


def test_every_frequency_gives_every_mode():
    freqs = list(range(1, P // 2 + 1))
    h, labels, w_u, b_u = planted(freqs)
    out = gc.analyse_activations(h, labels, w_u, b_u, P, tau=0.999)
    assert int(out.n_rotational) == P // 2  # all nonzero folded frequencies (centred: no k = 0)
    assert int(out.n_rotational) <= gc.max_rotational_modes(P)
    # In-sample only: with every frequency the class means span all P - 1 centred directions, so
    # the fit without a held-out answer has as many unknowns as shifts and cannot extrapolate.
    assert float(out.shift_r2) > 0.999


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unstructured_class_means_do_not_fit_a_shift(seed):
    # Class means in random positions: no shift operator predicts a held-out answer.
    rng = np.random.default_rng(seed)
    labels = jnp.asarray(np.repeat(np.arange(P), 8), jnp.int32)
    centres = rng.normal(size=(P, D))
    h = jnp.asarray(centres[np.asarray(labels)] + 0.1 * rng.normal(size=(len(labels), D)),
                    jnp.float32)
    w_u = jnp.asarray(centres.T, jnp.float32)  # a readout that decodes these memorised points
    out = gc.analyse_activations(h, labels, w_u, jnp.zeros(P), P, tau=0.99)
    assert float(out.heldout_r2) < 0.5


def test_linear_tail_scan_matches_hook_scan():
    p = 7
    cfg = gc.spec_model_config(p, d_model=8, n_heads=2, d_mlp=16, dropout=0.0)
    params = init_params(jax.random.PRNGKey(0), cfg)
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    tokens = jnp.asarray(np.stack([a.ravel(), b.ravel()], 1), jnp.int32)
    labels = (tokens[:, 0] + tokens[:, 1]) % p
    basis, _ = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(1), (8, 8)))
    h = ace.activations(params, tokens, cfg, gc.HOOK, position=-1)
    only, removed, full = gc.linear_tail_scan(h, basis, params["unembed.W_U"],
                                              params["unembed.b_U"], labels)
    ref_only, ref_removed = ace.causal_scan(params, tokens, labels, cfg, gc.HOOK, basis,
                                            readout=-1)
    np.testing.assert_allclose(only, ref_only, atol=1e-6)
    np.testing.assert_allclose(removed, ref_removed, atol=1e-6)
    assert float(full) == pytest.approx(float(ref_removed[0]))  # rank 0 removes nothing
    assert float(only[-1]) == pytest.approx(float(full), abs=1e-6)  # the full basis keeps all


def test_stack_equals_per_checkpoint_calls():
    p = 7
    cfg = gc.spec_model_config(p, d_model=8, n_heads=2, d_mlp=16, dropout=0.0)
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    flat = [init_params(k, cfg, 1.0 + 0.5 * i) for i, k in enumerate(keys)]
    stack = jax.tree.map(lambda *x: jnp.stack(x).reshape(2, 2, *x[0].shape), *flat)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, p, (30, 2)), jnp.int32)
    labels = (tokens[:, 0] + tokens[:, 1]) % p
    out = gc.analyse_stack(stack, tokens, labels, cfg, checkpoint_batch=1)
    assert out.core_dim.shape == (2, 2) and out.scan_core_only.shape == (2, 2, 9)
    singles = [gc.analyse_params(f, tokens, labels, cfg) for f in flat]
    for i, one in enumerate(singles):
        c, s = divmod(i, 2)
        assert int(out.core_dim[c, s]) == int(one.core_dim)
        np.testing.assert_allclose(out.scan_core_removed[c, s], one.scan_core_removed, atol=1e-6)
    # 4 checkpoints in batches of 3: padded, and the padding is dropped again.
    long = jax.tree.map(lambda *x: jnp.stack(x)[:, None], *flat)
    out = gc.analyse_stack(long, tokens, labels, cfg, checkpoint_batch=3)
    assert out.core_dim.shape == (4, 1)
    assert [int(v) for v in out.core_dim[:, 0]] == [int(one.core_dim) for one in singles]


def test_refuses_a_hook_whose_tail_is_not_linear():
    cfg = gc.spec_model_config(7, d_model=8, n_heads=2, d_mlp=16)
    params = init_params(jax.random.PRNGKey(0), cfg)
    tokens = jnp.zeros((4, 2), jnp.int32)
    with pytest.raises(ValueError, match="blocks.0.hook_resid_post"):
        gc.analyse_params(params, tokens, tokens[:, 0], cfg, "blocks.0.hook_resid_post")


def test_schedule_and_clock():
    epochs = gc.checkpoint_epochs(20000)  # SPEC 2.6: every 100 to 2000, then every 500
    assert epochs[:3] == [0, 100, 200] and 2000 in epochs and 2100 not in epochs
    assert epochs[-2:] == [19500, 20000] and len(epochs) == 21 + 36
    assert gc.checkpoint_epochs(250, 100, 2000, 500) == [0, 100, 200, 250]
    assert gc.steps_per_epoch(1404, 512) == 3 and gc.steps_per_epoch(1404, None) == 1
    assert gc.steps_per_epoch(264, 512) == 1
    assert gc.first_at_least(np.array([[0.1, 0.995, 0.5], [0.2, 0.3, 0.4]]), [0, 100, 200],
                             0.99) == [100, None]
