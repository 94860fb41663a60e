"""The Markov-cores read-offs on hand-built ACE results whose numbers are known."""
from __future__ import annotations

import numpy as np
import pytest
import jax.numpy as jnp

from mechjax.analysis import ace
from mechjax.studies import markov_cores as mc
from mechjax.tasks import markov


def _result(bases, ranks, eigenvalues, coords, accs):
    n, d = len(ranks), bases.shape[-1]
    core = ace.Core(jnp.asarray(bases, jnp.float32),
                    jnp.asarray(np.tile(np.arange(d, 0, -1.0), (n, 1)), jnp.float32),
                    jnp.asarray(ranks, jnp.int32), jnp.zeros((n, d)))
    fit = ace.MarkovFit(jnp.zeros((n, d, d)), jnp.asarray(eigenvalues),
                        jnp.asarray([0.4, 0.5, 0.6]), jnp.zeros((n, d)),
                        jnp.asarray([0.8, 1.0, 1.2]))
    acc = {k: jnp.asarray(v) for k, v in accs.items()}
    return ace.Result(core, jnp.asarray(ranks), acc, fit, None, None, None,
                      jnp.asarray(coords, jnp.float32))


def test_summary_of_identical_cores_and_the_true_eigenvalues():
    d, n = 6, 3
    basis = np.linalg.qr(np.random.default_rng(0).normal(size=(d, d)))[0]
    true = markov.true_eigenvalues()[1:]
    lam = np.zeros((n, d), complex)
    lam[:, :len(true)] = true
    lam[2, 0] += 0.1  # one seed's leading eigenvalue is off by 0.1
    coords = np.random.default_rng(1).normal(size=(50, 4))
    out = _result(np.stack([basis] * n), [3, 3, 2], lam, np.stack([coords] * n),
                  {"full": [0.5, 0.6, 0.7], "core_only": [0.5, 0.5, 0.5],
                   "core_removed": [0.1, 0.2, 0.3]})
    params = {"w": jnp.asarray([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])}
    summary, mats = mc.summarize_cores(out, params, compare_dims=4, d_model=d)
    assert summary["acc/full"]["mean"] == pytest.approx(0.6)
    assert summary["core/rank3_fraction"] == pytest.approx(2 / 3)
    assert summary["overlap/chance"] == pytest.approx(8 / 3 / d)
    # Nested cores: overlap 1 between the rank-3 pair, 2/sqrt(6) with the rank-2 one.
    assert mats["overlap"][0, 1] == pytest.approx(1.0, abs=1e-5)
    assert mats["overlap"][0, 2] == pytest.approx(2 / np.sqrt(6), abs=1e-5)
    assert summary["cca/top3_mean_offdiag"] == pytest.approx(1.0, abs=1e-4)
    # Whole-weight cosines: 1 for seeds 0-1, 0 with seed 2.
    assert summary["weight_cosine/mean_offdiag"] == pytest.approx(1 / 3, abs=1e-6)
    np.testing.assert_allclose(summary["eig/max_abs_error"], [0, 0, 0.1], atol=1e-6)
    assert summary["eig/within_0.03_fraction"] == pytest.approx(2 / 3)
    assert [len(row) for row in summary["eig/fitted"]] == [3, 3, 2]
    assert summary["r2_over_oracle"]["mean"] == pytest.approx(1.0)


def test_loop_matches_batched_catches_a_rank_and_an_accuracy_change():
    d = 4
    bases = np.stack([np.eye(d)] * 3)
    accs = {"full": [0.5, 0.6, 0.7], "core_only": [0.5, 0.5, 0.5],
            "core_removed": [0.1, 0.2, 0.3]}
    lam = np.zeros((3, d), complex)
    batched = _result(bases, [3, 3, 2], lam, np.zeros((3, 5, 2)), accs)

    def one(i, rank=None, full=None):
        a = {k: v[i] for k, v in accs.items()}
        if full is not None:
            a["full"] = full
        core = ace.Core(None, None, jnp.asarray(rank if rank is not None else [3, 3, 2][i]), None)
        return ace.Result(core, None, a, None, None, None, None, None)

    assert mc.loop_matches_batched(batched, [one(0), one(1), one(2)])
    assert not mc.loop_matches_batched(batched, [one(0), one(1, rank=2), one(2)])
    assert not mc.loop_matches_batched(batched, [one(0), one(1, full=0.61), one(2)])
