"""ACE extraction on planted activations: the right subspace and rank, both forms, both precisions."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ace_cases import planted
from mechjax.analysis import ace

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
