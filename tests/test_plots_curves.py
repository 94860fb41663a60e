"""Curve panels draw the mean, the min-max band and every seed of the data they are given."""
import numpy as np
import pytest

from mechjax.plots import curves

pytestmark = pytest.mark.usefixtures("pyplot")

STEPS = np.array([0, 10, 20, 30])
TRAIN = np.array([[0.1, 0.5, 0.9, 1.0], [0.3, np.nan, 0.8, 1.0], [0.2, 0.3, 0.4, 0.6]])
TEST = np.array([[0.0, 0.1, 0.2, 0.9], [0.0, 0.3, 0.6, 0.7], [0.1, 0.1, 0.1, 0.1]])


def band_edges(collection, x):
    """Lowest and highest y of a fill_between polygon at ``x``."""
    v = collection.get_paths()[0].vertices
    y = v[np.isclose(v[:, 0], x), 1]
    return y.min(), y.max()


def test_metric_curves_draws_mean_band_and_seeds_on_the_given_axes(pyplot):
    fig, ax = pyplot.subplots()
    out = curves.metric_curves(STEPS, {"train": TRAIN, "test": TEST}, marks=[15.0], ax=ax)
    assert out is fig and pyplot.get_fignums() == [fig.number]  # no new figure
    means = [line for line in ax.lines if line.get_linewidth() == 2]
    assert [line.get_label() for line in means] == ["train", "test"]
    np.testing.assert_allclose(means[0].get_ydata(), np.nanmean(TRAIN, 0))
    np.testing.assert_allclose(means[1].get_ydata(), TEST.mean(0))
    seeds = [line for line in ax.lines if line.get_linewidth() == 0.5]
    assert len(seeds) == 6
    np.testing.assert_array_equal(seeds[2].get_ydata(), TRAIN[2])
    assert band_edges(ax.collections[0], 20) == pytest.approx((0.4, 0.9))
    assert band_edges(ax.collections[1], 30) == pytest.approx((0.1, 0.9))
    np.testing.assert_array_equal(ax.lines[-1].get_xdata(), [15.0, 15.0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["train", "test"]


def test_metric_curves_makes_its_own_figure_when_no_axes_is_given(pyplot):
    fig = curves.metric_curves(STEPS, {"test": TEST}, title="t", ylabel="acc", logx=True)
    (ax,) = fig.axes
    assert ax.get_title() == "t" and ax.get_ylabel() == "acc" and ax.get_xscale() == "log"
    assert len(ax.lines) == 1 + TEST.shape[0]
