"""The seed atlas figure draws every seed's curve in its group's colour, one panel a measure."""
import numpy as np
import pytest
from matplotlib.colors import to_rgba

from mechjax.plots import seed_atlas

pytestmark = pytest.mark.usefixtures("pyplot")

STEPS = np.array([0, 10, 20])
TABLE = {"a": np.arange(12.0).reshape(4, 3), "b": -np.arange(12.0).reshape(4, 3)}
LABELS = np.array([1, 0, 1, 1])


def test_every_seed_is_a_line_coloured_by_its_group(pyplot):
    fig = pyplot.figure()
    out = seed_atlas.seed_curves(STEPS, TABLE, LABELS, marks=[10], group_names=["not", "bound"],
                                 fig=fig)
    assert out is fig and pyplot.get_fignums() == [fig.number]
    ax_a, ax_b = fig.axes
    assert [ax_a.get_title(), ax_b.get_title()] == ["a", "b"]
    seeds = [line for line in ax_b.lines if line.get_linestyle() == "-"]
    assert len(seeds) == 4  # every seed, no mean line
    # drawn group by group: seed 1 (label 0), then seeds 0, 2, 3 (label 1)
    np.testing.assert_array_equal([s.get_ydata()[0] for s in seeds], [-3, 0, -6, -9])
    colours = [to_rgba(s.get_color()) for s in seeds]
    assert colours[0] != colours[1] == colours[2] == colours[3]
    assert [t.get_text() for t in ax_a.get_legend().get_texts()] == ["not (n=1)", "bound (n=3)"]
    np.testing.assert_array_equal(ax_a.lines[-1].get_xdata(), [10, 10])


def test_a_new_figure_and_a_checked_group_names_count(pyplot):
    fig = seed_atlas.seed_curves(STEPS, TABLE, LABELS, names=["a"], title="t")
    assert len([a for a in fig.axes if a.get_visible()]) == 1 and fig._suptitle.get_text() == "t"
    with pytest.raises(ValueError, match="2 groups"):
        seed_atlas.seed_curves(STEPS, TABLE, LABELS, group_names=["only one"])
