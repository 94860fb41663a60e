"""The example-model views of Assign-and-Add's final analysis on a planted neuron map."""
from __future__ import annotations

import numpy as np

from mechjax.analysis import assign_add_final as final


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
