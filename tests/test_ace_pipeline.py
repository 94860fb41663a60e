"""The ACE pipeline: planted activations with a known core and operator, the batched entry points
against one-model calls, the two validations against each other, and bad pipelines refused."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import jax
import jax.numpy as jnp

from mechjax.analysis import ace
from mechjax.studies import grokking_core as gc
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_hooks
from mechjax.models.transformer import apply, init_params

P = 13
D = 16
SHIFT = ace.Pipeline(tail="unembed", validation="rank_scan", identify="cyclic_shift", tau=0.99)


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
    out = ace.analyse_linear(h, labels, w_u, b_u, SHIFT)
    # Two frequencies = four directions; the large nuisance variance is invisible to the readout.
    assert int(out.core.rank) == 4 and int(out.core_dim) == 4
    assert float(out.accuracy["full"]) == 1.0 and float(out.accuracy["core_only"]) == 1.0
    assert float(out.accuracy["core_removed"]) <= 2.0 / P
    assert int(out.r_suf) <= 4
    # The class means rotate by 2 pi k / p per answer: an exact shift operator. (Held out, the
    # centre is the mean of the other answers, which a rotation does not fix: R^2 just below 1.)
    assert float(out.fit.r2) > 0.999 and float(out.fit.heldout_r2) > 0.95
    lam = np.asarray(out.fit.eigenvalues)[: int(out.fit.n_directions)]
    assert int(out.fit.n_directions) == 4
    np.testing.assert_allclose(np.abs(lam), 1.0, atol=1e-3)
    angles = sorted(np.round(np.abs(np.angle(lam)) * P / (2 * np.pi)).astype(int))
    assert angles == [1, 1, 3, 3]
    assert int(out.fit.n_rotational) == 2


def test_every_frequency_gives_every_mode():
    freqs = list(range(1, P // 2 + 1))
    h, labels, w_u, b_u = planted(freqs)
    out = ace.analyse_linear(h, labels, w_u, b_u,
                             ace.Pipeline(tail="unembed", validation="rank_scan",
                                          identify="cyclic_shift", tau=0.999))
    assert int(out.fit.n_rotational) == P // 2  # every nonzero folded frequency (no k = 0)
    # In-sample only: with every frequency the class means span all P - 1 centred directions, so
    # the fit without a held-out answer has as many unknowns as shifts and cannot extrapolate.
    assert float(out.fit.r2) > 0.999


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unstructured_class_means_do_not_fit_a_shift(seed):
    # Class means in random positions: no shift operator predicts a held-out answer.
    rng = np.random.default_rng(seed)
    labels = jnp.asarray(np.repeat(np.arange(P), 8), jnp.int32)
    centres = rng.normal(size=(P, D))
    h = jnp.asarray(centres[np.asarray(labels)] + 0.1 * rng.normal(size=(len(labels), D)),
                    jnp.float32)
    w_u = jnp.asarray(centres.T, jnp.float32)  # a readout that decodes these memorised points
    out = ace.analyse_linear(h, labels, w_u, jnp.zeros(P), SHIFT)
    assert float(out.fit.heldout_r2) < 0.5


def _modular_model(p=7, seed=0, scale=1.0):
    cfg = gc.spec_model_config(p, d_model=8, n_heads=2, d_mlp=16, dropout=0.0)
    return cfg, init_params(jax.random.PRNGKey(seed), cfg, scale)


def _all_pairs(p=7):
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    tokens = jnp.asarray(np.stack([a.ravel(), b.ravel()], 1), jnp.int32)
    return ace.Inputs(tokens, (tokens[:, 0] + tokens[:, 1]) % 7)


def test_hook_validation_agrees_with_the_rank_scan_at_the_energy_rank():
    # Same core (same tail), two ways to intervene on it: through the model's hooks at every
    # position, and through the linear tail at the read position. The last block's output at
    # position 0 does not reach the logits at position -1, so the two must agree.
    cfg, params = _modular_model(scale=3.0)
    inputs = _all_pairs()
    scan = ace.analyse(params, inputs, cfg, gc.core_pipeline(tau=0.9))
    hooks = ace.analyse(params, inputs, cfg, ace.Pipeline(
        hook_name=gc.HOOK, position=-1, tail="unembed", validation="hooks",
        identify="cyclic_shift", tau=0.9))
    r = int(hooks.core.rank)
    assert r == int(scan.core.rank) and 0 < r < cfg.d_model
    np.testing.assert_allclose(hooks.core.basis, scan.core.basis, atol=1e-6)
    assert float(hooks.accuracy["core_only"]) == pytest.approx(float(scan.scan[0][r]), abs=1e-6)
    assert float(hooks.accuracy["core_removed"]) == pytest.approx(float(scan.scan[1][r]),
                                                                 abs=1e-6)
    assert float(hooks.accuracy["full"]) == pytest.approx(float(scan.accuracy["full"]), abs=1e-6)


def test_stack_and_seeds_equal_one_model_calls():
    cfg, _ = _modular_model()
    flat = [init_params(k, cfg, 1.0 + 0.5 * i)
            for i, k in enumerate(jax.random.split(jax.random.PRNGKey(3), 4))]
    stack = jax.tree.map(lambda *x: jnp.stack(x).reshape(2, 2, *x[0].shape), *flat)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 7, (30, 2)), jnp.int32)
    inputs = ace.Inputs(tokens, (tokens[:, 0] + tokens[:, 1]) % 7)
    pipe = gc.core_pipeline()
    singles = [ace.analyse(f, inputs, cfg, pipe) for f in flat]
    out = ace.analyse_stack(stack, inputs, cfg, pipe, checkpoint_batch=1)
    assert out.core_dim.shape == (2, 2) and out.scan[0].shape == (2, 2, 9)
    for i, one in enumerate(singles):
        c, s = divmod(i, 2)
        assert int(out.core_dim[c, s]) == int(one.core_dim)
        np.testing.assert_allclose(out.scan[1][c, s], one.scan[1], atol=1e-6)
    seeds = ace.analyse_seeds(jax.tree.map(lambda x: x[1], stack), inputs, cfg, pipe)
    assert [int(v) for v in seeds.core_dim] == [int(one.core_dim) for one in singles[2:]]
    # 4 checkpoints in batches of 3: padded, and the padding is dropped again.
    long = jax.tree.map(lambda *x: jnp.stack(x)[:, None], *flat)
    out = ace.analyse_stack(long, inputs, cfg, pipe, checkpoint_batch=3)
    assert out.core_dim.shape == (4, 1)
    assert [int(v) for v in out.core_dim[:, 0]] == [int(one.core_dim) for one in singles]


def test_core_stats_is_the_result_field_by_field():
    h, labels, w_u, b_u = planted([1, 3], nuisance=2.0)
    out = ace.analyse_linear(h, labels, w_u, b_u, SHIFT)
    stats = gc.core_stats(out)
    assert int(stats.r_energy) == int(out.core.rank) and int(stats.r_nec) == int(out.r_nec)
    assert float(stats.acc_core_removed) == float(out.accuracy["core_removed"])
    np.testing.assert_array_equal(stats.scan_core_removed, out.scan[1])
    assert float(stats.heldout_r2) == float(out.fit.heldout_r2)


def test_refuses_a_hook_whose_tail_is_not_linear():
    cfg, params = _modular_model()
    tokens = jnp.zeros((4, 2), jnp.int32)
    pipe = gc.core_pipeline(hook_name="blocks.0.hook_resid_post")
    with pytest.raises(ValueError, match="blocks.0.hook_resid_post"):
        ace.analyse(params, ace.Inputs(tokens, tokens[:, 0]), cfg, pipe)


def test_a_jacobian_tail_needs_its_samples():
    cfg, params = _modular_model()
    tokens = jnp.zeros((4, 2), jnp.int32)
    pipe = ace.Pipeline(hook_name=gc.HOOK, position=-1, tail="logits", identify="cyclic_shift")
    with pytest.raises(ValueError, match="jac_tokens"):
        ace.analyse(params, ace.Inputs(tokens, tokens[:, 0]), cfg, pipe)


@pytest.mark.parametrize("kwargs, message", [
    ({"tail": "softmax"}, "tail='softmax'"),
    ({"scan_batch": 0}, "scan_batch=0"),
    ({"identify": "markov", "position": -1}, "position=-1"),
    ({"identify": "shift"}, "identify='shift'"),
    ({"tau": 0.0}, "tau=0.0"),
    ({"keep_coords": -1}, "keep_coords=-1"),
])
def test_bad_pipelines_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        ace.Pipeline(**kwargs)


def test_jacobian_samples_are_distinct_pairs_and_refuse_too_many():
    tokens = np.arange(12).reshape(3, 4)
    seqs, pos = ace.jacobian_samples(tokens, 12, seed=0)
    assert sorted(seqs[np.arange(12), pos].tolist()) == list(range(12))  # every pair, once
    with pytest.raises(ValueError, match="n=13"):
        ace.jacobian_samples(tokens, 13, seed=0)


def _pre_ln_model(p=7, d=16, k=3):
    """A model with a final LayerNorm (pre-LN) whose unembedding reads ``k`` directions, on every
    pair ``(a, b)``, labelled with its own answers at the last position (full accuracy 1),
    Jacobians sampled there."""
    cfg = ModelConfig(n_layers=1, d_model=d, n_heads=2, d_mlp=32, d_vocab=p, n_ctx=2,
                      normalization="pre")
    params = init_params(jax.random.PRNGKey(1), cfg, 3.0)
    rng = np.random.default_rng(1)
    params["unembed.W_U"] = jnp.asarray(rng.normal(size=(d, k)) @ rng.normal(size=(k, p)),
                                        jnp.float32)
    tokens = _all_pairs(p).tokens
    labels = jnp.argmax(apply(params, tokens, cfg)[:, -1], -1)
    pos = jnp.full((tokens.shape[0],), 1, jnp.int32)
    return cfg, params, ace.Inputs(tokens, labels, tokens, pos)


def _accuracy_by_hand(params, inputs, cfg, hook_name, hook_fn):
    logits, _ = run_with_hooks(params, inputs.tokens, cfg, {hook_name: hook_fn})
    return float((jnp.argmax(logits[:, -1], -1) == inputs.labels).mean())


@pytest.mark.parametrize("hook_name", ["blocks.0.hook_resid_mid", "blocks.0.hook_resid_post"])
def test_rank_scan_through_a_final_layer_norm_gives_r_nec_and_r_suf(hook_name):
    cfg, params, inputs = _pre_ln_model()
    pipe = ace.Pipeline(hook_name=hook_name, position=-1, tail="logits", validation="rank_scan",
                        identify="cyclic_shift", tau=0.9)
    out = ace.analyse(params, inputs, cfg, pipe)
    only, removed = (np.asarray(x) for x in out.scan)
    assert only.shape == removed.shape == (cfg.d_model + 1,)
    nec, suf, full = int(out.r_nec), int(out.r_suf), float(out.accuracy["full"])
    assert out.r_nec.dtype == out.r_suf.dtype == jnp.int32 and full == 1.0
    # r_suf: the first rank whose core-only accuracy reaches the full model's.
    assert only[suf] >= full - pipe.suf_tol and (only[:suf] < full - pipe.suf_tol).all()
    # r_nec: the first rank from the energy rank on whose core-removed accuracy is at chance.
    rank = int(out.core.rank)
    assert nec >= rank and removed[nec] <= 2.0 / cfg.vocab_out
    assert (removed[rank:nec] > 2.0 / cfg.vocab_out).all()
    assert int(out.core_dim) == max(rank, nec)
    assert 0 < suf < cfg.d_model and 0 < nec < cfg.d_model
    # The scan agrees with interventions by hand through the model's hooks and real tail.
    only_by_hand = _accuracy_by_hand(params, inputs, cfg, hook_name,
                                     ace.core_only_hook(ace.mask_basis(out.core.basis, suf)))
    removed_by_hand = _accuracy_by_hand(params, inputs, cfg, hook_name,
                                        ace.core_removed_hook(ace.mask_basis(out.core.basis, nec)))
    assert only[suf] == pytest.approx(only_by_hand) and removed[nec] == pytest.approx(
        removed_by_hand)


def test_kept_coordinates_default_to_the_whole_core():
    h, labels, w_u, b_u = planted([1, 3], nuisance=2.0)
    out = ace.analyse_linear(h, labels, w_u, b_u, SHIFT)
    r = int(out.core_dim)
    assert r == 4 and out.coords.shape == (P * P, D)  # every column; those past the rank zero
    np.testing.assert_allclose(out.coords[:, :r], h @ out.core.basis[:, :r], atol=1e-5)
    np.testing.assert_array_equal(out.coords[:, r:], 0.0)
    assert ace.analyse_linear(h, labels, w_u, b_u,
                              dataclasses.replace(SHIFT, keep_coords=0)).coords is None
    # Fewer coordinates than the rank: comparing them is refused unless asked for.
    cut = ace.analyse_linear(h, labels, w_u, b_u, dataclasses.replace(SHIFT, keep_coords=2))
    with pytest.raises(ValueError, match="keep_coords=2 is below the core rank 4"):
        ace.cca_matrix(jnp.stack([cut.coords] * 2), jnp.stack([cut.core_dim] * 2))
    whole = ace.cca_matrix(jnp.stack([out.coords] * 2), jnp.stack([out.core_dim] * 2))
    np.testing.assert_allclose(whole, 1.0, atol=1e-4)
