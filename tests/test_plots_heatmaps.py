"""A heatmap shows the array it is given, with the given ticks."""
import numpy as np
import pytest

from mechjax.plots import heatmaps

pytestmark = pytest.mark.usefixtures("pyplot")


def test_matrix_shows_the_array_with_ticks_and_annotations(pyplot):
    values = np.arange(6.0).reshape(2, 3) / 10
    fig, ax = pyplot.subplots()
    out = heatmaps.matrix(values, xlabel="k", ylabel="seed", xticks=[1, 2, 3], yticks=[7, 9],
                          annotate=True, vmin=0.0, vmax=1.0, ax=ax)
    assert out is fig
    (image,) = ax.images
    np.testing.assert_array_equal(image.get_array(), values)
    assert image.get_clim() == (0.0, 1.0)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["7", "9"]
    assert sorted(t.get_text() for t in ax.texts) == [f"{v:.2f}" for v in sorted(values.ravel())]
    assert len(fig.axes) == 2  # the heatmap and its colorbar


def test_matrix_new_figure_grows_with_the_array(pyplot):
    small = heatmaps.matrix(np.zeros((2, 3)))
    large = heatmaps.matrix(np.zeros((10, 20)))
    assert small.get_figwidth() < large.get_figwidth()
    assert small.get_figheight() < large.get_figheight()
