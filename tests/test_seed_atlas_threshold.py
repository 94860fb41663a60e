"""``seed_atlas.threshold``: the half split, the fitted cut and its held-out accuracy."""
import numpy as np
import pytest

from mechjax.analysis import seed_atlas as sa


def test_halves_are_disjoint_and_balanced_in_each_group():
    in_group = np.array([1, 0, 0, 1, 1, 0, 1, 0, 0, 1], bool)
    a, b = sa.halves(in_group)
    assert sorted(np.concatenate([a, b]).tolist()) == list(range(10))
    assert in_group[a].sum() == 3 and in_group[b].sum() == 2  # 5 in the group: 3 + 2
    assert (~in_group[a]).sum() == 3 and (~in_group[b]).sum() == 2


def test_fit_threshold_finds_the_side_and_the_widest_gap():
    x = np.array([0.0, 1.0, 5.0, 6.0, 2.0])
    cut = sa.fit_threshold(x, x < 3)
    assert (cut.sign, cut.at) == (-1, 3.5)  # between 2 and 5, group below
    assert sa.accuracy(cut, x, x < 3) == 1.0
    # one value out of place: the best cut misses exactly it
    y = np.array([0, 0, 1, 1, 1, 0, 1], bool)
    z = np.array([0.0, 1.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    assert sa.accuracy(sa.fit_threshold(z, y), z, y) == pytest.approx(6 / 7)


def test_nan_values_count_as_misclassified():
    cut = sa.Threshold(0.5, 1)
    assert sa.accuracy(cut, np.array([1.0, np.nan, 0.0, 0.0]), np.array([1, 1, 0, 0], bool)) == 0.75


def test_held_out_accuracy_is_high_for_a_real_difference_and_chance_for_none():
    rng = np.random.default_rng(0)
    y = np.tile([True, False], 20)
    noise = rng.standard_normal(40)
    assert sa.held_out_accuracy(noise + 3.0 * y, y) >= 0.95
    assert sa.held_out_accuracy(noise, y) < 0.75


def test_held_out_accuracy_scores_only_seeds_the_threshold_was_not_fit_on():
    # the group is high in one half and low in the other: a perfect fit on either half is
    # wrong on every held-out seed
    y = np.tile([True, False], 6)
    a, b = sa.halves(y)
    x = np.where(y, 1.0, -1.0)
    x[b] *= -1
    assert sa.accuracy(sa.fit_threshold(x[a], y[a]), x[a], y[a]) == 1.0
    assert sa.held_out_accuracy(x, y) == 0.0
