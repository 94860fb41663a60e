"""Cross-seed comparisons on constructed pairs: identical, rotated, orthogonal and independent cores."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ace_cases import orthogonal, tiny_model
from mechjax.analysis import ace

def test_projector_overlap_and_principal_angles():
    eye = jnp.eye(8)
    assert float(ace.projector_overlap(eye[:, :3], eye[:, :3])) == pytest.approx(1.0)
    assert float(ace.projector_overlap(eye[:, :3], eye[:, 3:6])) == pytest.approx(0.0)
    rot = jnp.asarray(orthogonal(np.random.default_rng(8), 3), jnp.float32)
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
    rotated = z @ orthogonal(rng, 4) * 5.0 + 3.0
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


def _cores_sharing_four_signals(n=3000, seed=10):
    """Coordinates ``[2, N, 6]`` of two rank-4 cores (zero past the rank): the same four signals,
    the second model's in another order and noisy, so its first two coordinates carry the first
    model's last two."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, 4))
    z = np.zeros((2, n, 6))
    z[0, :, :4] = s
    z[1, :, :4] = s[:, [2, 3, 0, 1]] + 0.5 * rng.normal(size=(n, 4))
    return jnp.asarray(z, jnp.float32), jnp.array([4, 4])


def test_cca_refuses_coordinates_that_cut_the_cores_short():
    z, ranks = _cores_sharing_four_signals()
    whole = float(ace.cca_matrix(z, ranks)[0, 1])
    assert whole == pytest.approx(1 / math.sqrt(1.25), abs=0.02)  # signal / (signal + noise)
    with pytest.raises(ValueError, match=r"keep_coords=2 is below the core rank 4; pass "
                                         r"allow_truncation=True"):
        ace.cca_matrix(z[..., :2], ranks)
    # Asked for, the first two coordinates alone give another number.
    assert float(ace.cca_matrix(z[..., :2], ranks, allow_truncation=True)[0, 1]) < 0.1
    # Under jit the ranks are traced: the pairs that would be cut short come back NaN instead.
    assert np.isnan(np.asarray(jax.jit(ace.cca_matrix)(z[..., :2], ranks))).all()
    assert float(jax.jit(ace.cca_matrix)(z, ranks)[0, 1]) == pytest.approx(whole, abs=1e-5)
    per_stack = jax.vmap(ace.cca_matrix)(jnp.stack([z, z]), jnp.stack([ranks, ranks]))
    np.testing.assert_allclose(per_stack[:, 0, 1], whole, atol=1e-5)
