"""ACE on planted answers: each test builds a case whose core, spectrum or score is known."""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis import ace
from mechjax.config import ModelConfig
from mechjax.hooks import run_with_hooks
from mechjax.model import apply, param_shapes
from mechjax.tasks import markov


def _orthogonal(rng: np.random.Generator, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


def _uncorrelated(rng: np.random.Generator, n: int, stds: np.ndarray) -> np.ndarray:
    """[n, len(stds)] with sample covariance exactly diag(stds^2) (no finite-sample leakage)."""
    g = rng.normal(size=(n, len(stds)))
    q, _ = np.linalg.qr(g - g.mean(0))
    return q * np.sqrt(n - 1) * stds


def planted(seed: int, n: int = 4000, d: int = 16, k: int = 3, out: int = 5):
    """Activations with a known k-dim relevant subspace that PCA cannot find.

    Relevant directions have std 0.1; five irrelevant ones std 10, the rest std 1; a non-zero
    mean. The linear tail reads only the relevant directions (gains 3, 2, 1).
    """
    rng = np.random.default_rng(seed)
    rot = _orthogonal(rng, d)
    stds = np.concatenate([np.full(k, 0.1), np.full(5, 10.0), np.ones(d - k - 5)])
    h = _uncorrelated(rng, n, stds) @ rot.T + 3.0
    mix = _orthogonal(rng, out)[:, :k]  # [out, k] orthonormal columns
    w_u = rot[:, :k] @ np.diag([3.0, 2.0, 1.0]) @ mix.T  # [d, out]
    return (jnp.asarray(h, jnp.float32), jnp.asarray(w_u, jnp.float32),
            jnp.asarray(rot[:, :k], jnp.float32))


# ---- extract --------------------------------------------------------------------------------
def test_planted_subspace_recovered_with_right_rank():
    h, w_u, relevant = planted(0)
    core = jax.jit(ace.extract)(h, w_u.T[None], 0.999)
    assert int(core.rank) == 3
    assert float(ace.projector_overlap(ace.truncate(core.basis, core.rank), relevant)) >= 0.99
    # float32: the relevant variances sit 1e4 below the largest, so ~1e-3 relative error.
    np.testing.assert_allclose(core.weights[:3], 0.01 * np.array([9.0, 4.0, 1.0]), rtol=5e-3)
    # The planted case is not trivial: the top-3 principal components miss the relevant space.
    cov, _ = ace.covariance(h)
    pcs = jnp.linalg.eigh(cov)[1][:, ::-1][:, :3]
    assert float(ace.projector_overlap(pcs, relevant)) < 0.05
    # Basis prefixes are orthonormal and nested.
    np.testing.assert_allclose(core.basis.T @ core.basis, np.eye(16), atol=1e-5)


def test_extract_vmaps_over_seeds_and_data_form_agrees():
    cases = [planted(s) for s in (1, 2)]
    h = jnp.stack([c[0] for c in cases])
    w_u = jnp.stack([c[1] for c in cases])
    relevant = jnp.stack([c[2] for c in cases])
    cores = jax.jit(jax.vmap(lambda h, w: ace.extract(h, w.T[None], 0.999)))(h, w_u)
    data = jax.jit(jax.vmap(lambda h, w: ace.extract_data_form(h, w.T[None], 0.999)))(h, w_u)
    np.testing.assert_array_equal(cores.rank, [3, 3])
    assert cores.core_basis.shape == (2, 16, 16)
    np.testing.assert_array_equal(cores.core_basis[:, :, 3:], 0.0)
    np.testing.assert_array_equal(data.rank, [3, 3])
    for i in range(2):
        for core in (cores, data):
            q = ace.mask_basis(core.basis[i], core.rank[i])
            assert float(ace.projector_overlap(q, relevant[i], 3, 3)) >= 0.99
        # The data form never squares H, so in float32 it is the more accurate of the two.
        np.testing.assert_allclose(data.weights[i, :3], [0.09, 0.04, 0.01], rtol=1e-4)
        np.testing.assert_allclose(cores.weights[i, :3], [0.09, 0.04, 0.01], rtol=5e-3)


def test_gramian_and_data_form_agree_on_generic_data():
    rng = np.random.default_rng(3)
    d, n = 10, 600
    h = jnp.asarray(rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 1.0, jnp.float32)
    jac = jnp.asarray(rng.normal(size=(6, 2, d)), jnp.float32)  # S = 6 samples, K = 2
    gram, data = ace.extract(h, jac, 0.99), ace.extract_data_form(h, jac, 0.99)
    top = float(gram.weights[0])
    np.testing.assert_allclose(data.weights, gram.weights, rtol=2e-3, atol=1e-5 * top)
    assert int(gram.rank) == int(data.rank)
    for r in (1, 2, 3, 5, 8):
        overlap = ace.projector_overlap(gram.basis[:, :r], data.basis[:, :r])
        assert float(overlap) >= 0.999, r
    # Weights are the eigenvalues of Cov Obs.
    g = ace.gramians(h, jac)
    prod = np.asarray(g.cov, np.float64) @ np.asarray(g.obs, np.float64)
    eig = np.sort(np.linalg.eigvals(prod).real)[::-1]
    np.testing.assert_allclose(gram.weights, eig, rtol=2e-3, atol=1e-5 * top)


def test_float64_matches_float32():
    h, w_u, relevant = planted(4)
    core32 = ace.extract(h, w_u.T[None], 0.999)
    with jax.enable_x64(True):
        core64 = jax.jit(ace.extract)(h.astype(jnp.float64), w_u.T[None].astype(jnp.float64),
                                      0.999)
        assert core64.basis.dtype == jnp.float64
        q64 = np.asarray(core64.basis[:, :3])
        # Exact up to the jitter 1e-8 tr(Cov)/D = 3e-7 on variances of 1e-2.
        np.testing.assert_allclose(core64.weights[:3], 0.01 * np.array([9.0, 4.0, 1.0]),
                                   rtol=1e-4)
    assert int(core64.rank) == int(core32.rank) == 3
    assert float(ace.projector_overlap(core32.basis[:, :3], jnp.asarray(q64, jnp.float32))) > 0.9999


def test_energy_rank():
    w = jnp.array([5.0, 3.0, 1.0, 0.5, 0.5])
    assert [int(ace.energy_rank(w, t)) for t in (0.5, 0.8, 0.9, 0.95, 0.999)] == [1, 2, 3, 4, 5]


# ---- tail Jacobians ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", [3, 9])  # K < D uses jacrev, K >= D jacfwd
def test_tail_jacobians_match_finite_differences(k):
    d = 6
    rng = np.random.default_rng(k)
    with jax.enable_x64(True):
        w1, b = jnp.asarray(rng.normal(size=(d, 7))), jnp.asarray(rng.normal(size=7))
        w2 = jnp.asarray(rng.normal(size=(7, k)))
        f = lambda h: jnp.tanh(h @ w1 + b) @ w2
        hs = jnp.asarray(rng.normal(size=(4, d)))
        jac = ace.tail_jacobians(f, hs)
        assert jac.shape == (4, k, d)
        eps = 1e-6
        eye = jnp.eye(d)
        fd = jnp.stack([(jax.vmap(f)(hs + eps * e) - jax.vmap(f)(hs - eps * e)) / (2 * eps)
                        for e in eye], axis=-1)
        np.testing.assert_allclose(jac, fd, atol=1e-7)
        # A scalar tail gives one gradient row per sample.
        assert ace.tail_jacobians(lambda h: f(h)[0], hs).shape == (4, 1, d)


@functools.lru_cache(maxsize=None)
def tiny_model(n_layers: int = 1):
    """A small post-LN model with biases. NumPy parameters: eager ``init_params`` compiles one
    random program per parameter shape, which costs more CPU time than the tests themselves."""
    cfg = ModelConfig(n_layers=n_layers, d_model=16, n_heads=2, d_mlp=32, d_vocab=5, n_ctx=6,
                      normalization="post", use_bias=True)
    rng = np.random.default_rng(n_layers)
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith(".w"):
            value = 1.0 + 0.1 * rng.normal(size=shape)
        elif len(shape) == 1:
            value = 0.5 * rng.normal(size=shape)
        else:
            value = rng.normal(size=shape) / np.sqrt(shape[-2])
        params[name] = jnp.asarray(value, jnp.float32)
    tokens = jnp.asarray(rng.integers(0, 5, size=(24, 6)), jnp.int32)
    return cfg, params, tokens


def test_hook_jacobians_through_the_model():
    # Final block output: the tail is the unembedding, so every J_s is W_U^T.
    cfg, params, tokens = tiny_model(1)
    jac = ace.hook_jacobians(params, tokens[:5], cfg, "blocks.0.hook_resid_post",
                             jnp.arange(5) % 6)
    np.testing.assert_allclose(jac, jnp.broadcast_to(params["unembed.W_U"].T, jac.shape),
                               atol=1e-5)
    np.testing.assert_allclose(ace.observability(jac),
                               ace.linear_observability(params["unembed.W_U"]), atol=1e-4)
    # An earlier layer, a later read position and a scalar margin: finite differences in float64.
    cfg2, params2, tokens2 = tiny_model(2)
    with jax.enable_x64(True):
        p64 = {k: v.astype(jnp.float64) for k, v in params2.items()}
        name, pos = "blocks.0.hook_resid_post", 2
        margin = lambda logits: logits[1] - logits[3]
        jac = ace.hook_jacobians(p64, tokens2[:2], cfg2, name, pos, margin, read_position=-1)
        assert jac.shape == (2, 1, 16)

        def out(delta):
            logits, _ = run_with_hooks(p64, tokens2[:2], cfg2,
                                       {name: lambda x: x.at[:, pos].add(delta)})
            return jax.vmap(margin)(logits[:, -1])

        eps = 1e-6
        steps = eps * jnp.eye(16)
        fd = jax.jit(jax.vmap(lambda e: (out(e) - out(-e)) / (2 * eps), out_axes=-1))(steps)
        np.testing.assert_allclose(jac[:, 0], fd, atol=1e-6)


# ---- validate ---------------------------------------------------------------------------------
def test_validate_full_and_empty_basis_give_trivial_answers():
    cfg, params, tokens = tiny_model(1)
    name, d = "blocks.0.hook_resid_post", cfg.d_model
    eye, empty = jnp.eye(d), ace.mask_basis(jnp.eye(d), 0)

    @jax.jit
    def logits(eye, empty):  # one program: the plain pass and the four interventions
        run = lambda fn: run_with_hooks(params, tokens, cfg, {name: fn})[0]
        return [apply(params, tokens, cfg)] + [
            run(hook(q)) for q in (eye, empty) for hook in (ace.core_only_hook,
                                                            ace.core_removed_hook)]

    full_logits, only_eye, removed_eye, only_empty, removed_empty = logits(eye, empty)
    labels = jnp.argmax(full_logits, -1)  # full accuracy is 1 by construction
    bias = jnp.broadcast_to(params["unembed.b_U"], full_logits.shape)
    const_acc = float((labels == jnp.argmax(params["unembed.b_U"])).mean())
    np.testing.assert_allclose(only_eye, full_logits, atol=1e-5)
    np.testing.assert_allclose(removed_eye, bias, atol=1e-6)
    np.testing.assert_allclose(only_empty, bias, atol=1e-6)
    np.testing.assert_allclose(removed_empty, full_logits, atol=1e-6)

    res = ace.validate(params, tokens, labels, cfg, name, eye)
    assert float(res["full"]) == 1.0 and float(res["core_only"]) == 1.0
    assert float(res["core_removed"]) == pytest.approx(const_acc)
    res = ace.validate(params, tokens, labels, cfg, name, empty)
    assert float(res["core_only"]) == pytest.approx(const_acc)
    assert float(res["core_removed"]) == 1.0
    # One readout position and the loss metric.
    loss = ace.validate(params, tokens, labels[:, -1], cfg, name, eye, "loss", readout=-1)
    assert float(loss["core_only"]) == pytest.approx(float(loss["full"]), rel=1e-5)

    keep, remove = ace.causal_scan(params, tokens, labels, cfg, name, eye, batch_size=4)
    assert keep.shape == remove.shape == (d + 1,)
    assert float(keep[d]) == 1.0 and float(remove[0]) == 1.0
    assert float(keep[0]) == pytest.approx(const_acc)
    assert float(remove[d]) == pytest.approx(const_acc)


def test_rank_scans():
    removed = jnp.array([1.0, 0.9, 0.15, 0.5, 0.1, 0.05, 0.0])
    assert int(ace.r_nec(removed, 1, 10)) == 2     # 2/V = 0.2
    assert int(ace.r_nec(removed, 3, 10)) == 4     # must be >= r_energy
    assert int(ace.r_nec(removed, 1, 100)) == 6    # never <= 0.02 before the end -> R
    only = jnp.array([0.1, 0.5, 0.9985, 0.9, 1.0])
    assert int(ace.r_suf(only, 1.0)) == 4
    assert int(ace.r_suf(only, 0.9995)) == 2


def test_linear_tail_scan_matches_hook_scan():
    from mechjax.analysis import grokking_core as gc
    from mechjax.model import init_params
    p = 7
    cfg = gc.spec_model_config(p, d_model=8, n_heads=2, d_mlp=16, dropout=0.0)
    params = init_params(jax.random.PRNGKey(0), cfg)
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    tokens = jnp.asarray(np.stack([a.ravel(), b.ravel()], 1), jnp.int32)
    labels = (tokens[:, 0] + tokens[:, 1]) % p
    basis, _ = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(1), (8, 8)))
    h = ace.activations(params, tokens, cfg, gc.HOOK, position=-1)
    only, removed, full = ace.linear_tail_scan(h, basis, params["unembed.W_U"],
                                               params["unembed.b_U"], labels)
    ref_only, ref_removed = ace.causal_scan(params, tokens, labels, cfg, gc.HOOK, basis,
                                            readout=-1)
    np.testing.assert_allclose(only, ref_only, atol=1e-6)
    np.testing.assert_allclose(removed, ref_removed, atol=1e-6)
    assert float(full) == pytest.approx(float(ref_removed[0]))  # rank 0 removes nothing
    assert float(only[-1]) == pytest.approx(float(full), abs=1e-6)  # the full basis keeps all


def test_validate_centred_llm_interventions():
    cfg, params, tokens = tiny_model(2)
    name = "blocks.1.hook_resid_post"  # the tail to the last-position logits is affine
    score_fn = lambda logits: logits[:, 0] - logits[:, 1]
    base = score_fn(jax.jit(apply, static_argnums=2)(params, tokens, cfg)[:, -1])
    positive = base > jnp.median(base)  # base AUC = 1
    mean = ace.activations(params, tokens, cfg, name, position=-1).mean(0)
    eye = jnp.eye(cfg.d_model)
    res = ace.validate_centred(params, tokens, cfg, name, eye, mean, score_fn, positive)
    assert float(res["base"]) == 1.0 and float(res["keep"]) == 1.0
    # Projections on the identity are exact: every prompt scores the same (all ties: 0.5), and
    # x -> -x mirrors the score.
    assert float(res["remove"]) == pytest.approx(0.5, abs=1e-6)
    assert float(res["flip"]) == pytest.approx(0.0, abs=1e-6)
    res = ace.validate_centred(params, tokens, cfg, name, ace.mask_basis(eye, 0), mean, score_fn,
                               positive)
    assert float(res["remove"]) == 1.0 and float(res["flip"]) == 1.0
    assert float(res["keep"]) == pytest.approx(0.5, abs=1e-6)


# ---- identify ---------------------------------------------------------------------------------
def test_markov_operator_recovers_eigenvalues_of_a_linear_system():
    rng = np.random.default_rng(6)
    true = np.array([0.75 + 0.25j, 0.75 - 0.25j, 0.5])
    block = np.array([[0.75, 0.25, 0.0], [-0.25, 0.75, 0.0], [0.0, 0.0, 0.5]])
    basis = rng.normal(size=(3, 3))
    a = basis @ block @ np.linalg.inv(basis)
    b, t = 256, 32
    z = np.zeros((b, t, 3))
    z[:, 0] = rng.normal(size=(b, 3))
    for i in range(1, t):
        z[:, i] = z[:, i - 1] @ a.T + 0.2 * rng.normal(size=(b, 3))
    # Through an embedding and back, as ACE does: H = z E^T + c, Z = H Q with Q spanning E.
    emb = _orthogonal(rng, 8)[:, :3]
    h = z @ emb.T + 1.0
    fit = ace.markov_operator(jnp.asarray(h @ emb, jnp.float32))
    lam = np.asarray(fit.eigenvalues)
    np.testing.assert_allclose(np.sort_complex(lam), np.sort_complex(true), atol=0.02)
    assert 0.5 < float(fit.r2) < 1.0
    # Masked (zero) extra coordinates change nothing but add zero eigenvalues.
    padded = jnp.asarray(np.concatenate([h @ emb, np.zeros((b, t, 2))], -1), jnp.float32)
    fit_p = jax.jit(ace.markov_operator)(padded, 3)
    np.testing.assert_allclose(fit_p.eigenvalues[:3], fit.eigenvalues, atol=1e-4)
    np.testing.assert_allclose(fit_p.eigenvalues[3:], 0.0, atol=1e-6)
    assert float(fit_p.r2) == pytest.approx(float(fit.r2), abs=1e-5)


def test_markov_operator_on_the_chain_states_hits_the_oracle():
    # One-hot states of the real chain: eigenvalues of T (the constant mode is centred away)
    # and R^2 = 0.5, the one-hot oracle.
    data = markov.make_datasets(0, 500, 1000)["test"]
    z = jax.nn.one_hot(jnp.concatenate([data["tokens"], data["labels"][:, -1:]], 1), 4)
    fit = ace.markov_operator(z)
    lam = np.asarray(fit.eigenvalues)[:3]
    np.testing.assert_allclose(np.sort_complex(lam), np.sort_complex(markov.true_eigenvalues()[1:]),
                               atol=0.02)
    assert float(fit.r2_ratio) == pytest.approx(1.0, abs=0.03)


def test_cyclic_shift_finds_rotational_modes():
    rng = np.random.default_rng(7)
    p, freqs, d = 31, (2, 5, 11), 12
    c = np.arange(p)
    angles = 2 * np.pi * np.outer(c, freqs) / p
    circle = np.concatenate([np.cos(angles), np.sin(angles)], 1)  # [P, 6]
    emb = _orthogonal(rng, d)[:, :6]
    answers = np.repeat(c, 20)
    z = (circle @ emb.T)[answers] + 1e-3 * rng.normal(size=(len(answers), d)) + 2.0
    reps = ace.class_means(jnp.asarray(z, jnp.float32), jnp.asarray(answers), p)
    fit = jax.jit(ace.cyclic_shift)(reps)
    assert int(fit.n_directions) == 6
    assert int(fit.n_rotational) == 3
    assert int(fit.on_circle.sum()) == 6
    assert float(fit.r2) > 0.99 and float(fit.heldout_r2) > 0.99
    lam = np.asarray(fit.eigenvalues)[np.asarray(fit.on_circle)]
    k = np.round(np.angle(lam) * p / (2 * np.pi)).astype(int) % p
    assert sorted(set(np.minimum(k, p - k))) == sorted(freqs)
    # Unstructured class means: nothing to extrapolate into the held-out block.
    noise = ace.cyclic_shift(jnp.asarray(rng.normal(size=(p, d)), jnp.float32), holdout_start=5)
    assert float(noise.heldout_r2) < 0.5


# ---- compare ----------------------------------------------------------------------------------
def test_projector_overlap_and_principal_angles():
    eye = jnp.eye(8)
    assert float(ace.projector_overlap(eye[:, :3], eye[:, :3])) == pytest.approx(1.0)
    assert float(ace.projector_overlap(eye[:, :3], eye[:, 3:6])) == pytest.approx(0.0)
    rot = jnp.asarray(_orthogonal(np.random.default_rng(8), 3), jnp.float32)
    same = ace.projector_overlap(eye[:, :3], eye[:, :3] @ rot)
    assert float(same) == pytest.approx(1.0, abs=1e-5)
    theta = 0.3
    qb = jnp.zeros((8, 1)).at[0, 0].set(math.cos(theta)).at[1, 0].set(math.sin(theta))
    assert float(ace.principal_angles(eye[:, :1], qb)[0]) == pytest.approx(theta, abs=1e-5)
    # All seed pairs at once, with per-seed ranks masking full bases.
    perm = jnp.concatenate([eye[:, 3:], eye[:, :3]], axis=1)
    bases = jnp.stack([eye, eye.at[:, :3].set(eye[:, :3] @ rot), perm])
    mat = jax.jit(ace.overlap_matrix)(bases, jnp.array([3, 3, 3]))
    np.testing.assert_allclose(mat, [[1, 1, 0], [1, 1, 0], [0, 0, 1]], atol=1e-5)
    angles = ace.principal_angle_matrix(bases, jnp.array([3, 3, 3]))
    assert angles.shape == (3, 3, 8)
    np.testing.assert_allclose(angles[0, 1, :3], 0.0, atol=2e-3)
    np.testing.assert_allclose(angles[0, 2, :3], np.pi / 2, atol=1e-5)


def test_cca_is_one_under_rotation_and_low_for_independent_data():
    rng = np.random.default_rng(9)
    z = rng.normal(size=(2000, 4)) @ rng.normal(size=(4, 4))
    rotated = z @ _orthogonal(rng, 4) * 5.0 + 3.0
    other = rng.normal(size=(2000, 4))
    mean, corr = ace.cca(jnp.asarray(z, jnp.float32), jnp.asarray(rotated, jnp.float32))
    assert float(mean) == pytest.approx(1.0, abs=1e-4)
    stacked = jnp.asarray(np.stack([z, rotated, other]), jnp.float32)
    mat = jax.jit(ace.cca_matrix)(stacked)
    np.testing.assert_allclose(np.diag(mat), 1.0, atol=1e-4)
    assert float(mat[0, 1]) == pytest.approx(1.0, abs=1e-4)
    assert float(mat[0, 2]) < 0.1
    # Zero-padded (masked) coordinates with ranks give the same answers.
    padded = jnp.concatenate([stacked, jnp.zeros((3, 2000, 3))], -1)
    mat_p = ace.cca_matrix(padded, jnp.array([4, 4, 4]))
    np.testing.assert_allclose(mat_p, mat, atol=1e-4)


def test_weight_cosine():
    _, params, _ = tiny_model(1)
    neg = {k: -v for k, v in params.items()}
    assert float(ace.weight_cosine(params, params)) == pytest.approx(1.0, abs=1e-6)
    assert float(ace.weight_cosine(params, neg)) == pytest.approx(-1.0, abs=1e-6)
    stacked = {k: jnp.stack([v, -v, 2 * v]) for k, v in params.items()}
    np.testing.assert_allclose(ace.weight_cosine_matrix(stacked),
                               [[1, -1, 1], [-1, 1, -1], [1, -1, 1]], atol=1e-5)
