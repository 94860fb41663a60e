"""Operator identification on systems whose eigenvalues are known."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ace_cases import orthogonal
from mechjax.analysis import ace
from mechjax.tasks import markov

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
    emb = orthogonal(rng, 8)[:, :3]
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
    emb = orthogonal(rng, d)[:, :6]
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
