"""The example-model views of Assign-and-Add's final analysis on a planted neuron map."""
from __future__ import annotations

import numpy as np
import pytest

from mechjax.studies import assign_add_final as final


def test_fourier_component_recovers_a_planted_frequency_and_drops_the_rest():
    p, k = 12, 3
    n = np.arange(p)
    planted = np.add.outer(np.cos(2 * np.pi * k * n / p), 0.5 * np.sin(2 * np.pi * k * n / p))
    other = np.add.outer(np.cos(2 * np.pi * 5 * n / p), np.zeros(p))
    fit = final.fourier_component(planted + other + 7.0, k)
    np.testing.assert_allclose(fit, planted - planted.mean(), atol=1e-10)
    np.testing.assert_allclose(final.fourier_component(other, k), 0.0, atol=1e-10)


def test_example_seed_prefers_the_first_that_completed_phase3():
    assert final.example_seed(np.array([False, True, True]), np.array([0.9, 0.1, 0.2])) == 1
    # None completed: the best final phase-3 metric, NaN counting as the worst.
    assert final.example_seed(np.zeros(3, bool), np.array([0.3, np.nan, 0.5])) == 2


def test_per_seed_numbers_read_the_identity_cosine_before_each_seeds_phase2():
    steps = np.arange(10, 110, 10)                                 # 10 evaluations
    cos = np.stack([np.linspace(0.0, 0.9, 10), np.full(10, 0.5)])  # [2 seeds, 10]
    m = {"acc/1var_train": np.tile(np.linspace(0, 1, 10), (2, 1)), "qk2grad/identity_cos": cos,
         "finite": np.array([[1] * 10, [1] * 9 + [0]]), "train/loss": np.zeros((2, 10))}
    keys = ("exact_0var_heldout", "exact_2var_union")
    scalars = {**{f"acc/{k}": np.array([0.1, 0.2]) for k in keys},
               **{k: np.array([0.3, 0.4]) for k in (
                   "mlp_in_cos_matched", "mlp_in_cos_mismatched", "attn_out_cos_literal",
                   "attn_out_cos_variable", "fourier_max_evr", "fourier_max_k", "fourier_top_evr",
                   "fourier_top_k", "qk2_diagonal", "qk2_diagonal_count", "qk1_prev_token",
                   "probe_accuracy", "ov_mlp_accuracy")}}
    done = {"scalars": scalars, "neuron_best_evr": np.array([[0.95, 0.5, 0.91], [0.2, 0.3, 0.4]])}
    out = final.per_seed_numbers(steps, m, np.array([60.0, np.nan]), done, window=30)
    # seed 0: phase 2 at step 60, so the evaluations at steps 30, 40, 50 (cos 0.2, 0.3, 0.4)
    assert out["qk2grad/identity_cos_5evals_before_phase2"][0] == pytest.approx(0.3)
    assert np.isnan(out["qk2grad/identity_cos_5evals_before_phase2"][1])  # never reached
    np.testing.assert_allclose(out["qk2grad/identity_cos_max"], [0.9, 0.5])
    np.testing.assert_array_equal(out["fourier/neurons_evr_above_0.9"], [2, 0])
    np.testing.assert_array_equal(out["finite"], [1, 0])
    assert "train/loss" not in out and out["acc/1var_train"].tolist() == [1.0, 1.0]
