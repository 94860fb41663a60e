"""Algorithmic-core figures: bars are the seed means with every seed as a dot, eigenvalues sit
where they are, comparison heatmaps show the matrix."""
import numpy as np
import pytest
from matplotlib.collections import PathCollection

from mechjax.plots import ace

pytestmark = pytest.mark.usefixtures("pyplot")


def test_bars_with_dots_one_bar_per_condition_at_the_seed_mean(pyplot):
    values = {"full": np.array([0.9, 0.7, 0.8]), "core only": np.array([0.6, np.nan, 0.4]),
              "chance": 0.25}
    fig, ax = pyplot.subplots()
    assert ace.bars_with_dots(values, hlines={"ref": 0.5}, ax=ax) is fig
    bars = ax.patches
    assert len(bars) == 3
    np.testing.assert_allclose([b.get_height() for b in bars], [0.8, 0.5, 0.25])
    dots = [c.get_offsets() for c in ax.collections if isinstance(c, PathCollection)]
    assert len(dots) == 2  # a scalar gets no dots
    np.testing.assert_allclose(dots[0][:, 1], values["full"])
    np.testing.assert_allclose(np.ma.getdata(dots[1][:, 1]), values["core only"])
    assert np.all(np.abs(dots[0][:, 0] - 0) <= 0.2) and np.all(np.abs(dots[1][:, 0] - 1) <= 0.2)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(values)
    assert ax.lines[-1].get_ydata()[0] == 0.5 and ax.texts[-1].get_text() == "ref"


def test_unit_circle_plots_every_seeds_eigenvalues_and_the_true_ones(pyplot):
    fitted = [np.array([0.5 + 0.5j, -1.0]), np.array([0.1j])]
    true = np.array([1.0, -0.5j])
    fig, ax = pyplot.subplots()
    ace.unit_circle(fitted, true, ax=ax)
    circle = ax.lines[0]
    np.testing.assert_allclose(np.hypot(circle.get_xdata(), circle.get_ydata()), 1.0)
    fit, ref = ax.collections
    np.testing.assert_allclose(fit.get_offsets(), [[0.5, 0.5], [-1.0, 0.0], [0.0, 0.1]])
    np.testing.assert_allclose(ref.get_offsets(), [[1.0, 0.0], [0.0, -0.5]])
    assert fit.get_label() == "fitted (2 seeds)"


def test_seed_matrix_shows_the_matrix_with_seed_ticks(pyplot):
    m = np.array([[1.0, 0.2, 0.3], [0.2, 1.0, 0.4], [0.3, 0.4, 1.0]])
    fig, ax = pyplot.subplots()
    ace.seed_matrix(m, "overlap", seeds=[4, 5, 6], vmin=0.0, vmax=1.0, ax=ax)
    np.testing.assert_array_equal(ax.images[0].get_array(), m)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["4", "5", "6"]
    assert len(ax.texts) == 9  # annotated: small enough
    big = ace.seed_matrix(np.eye(9), "overlap")
    assert not big.axes[0].texts
