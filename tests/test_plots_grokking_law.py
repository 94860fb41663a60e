"""The grokking-law figure: per-setting means of the grokked seeds and the fitted curve."""
import numpy as np
import pytest

from mechjax.plots.grokking_law import grokking_law_figure

pytestmark = pytest.mark.usefixtures("pyplot")

OMEGAS = [0.1, 0.3, 1.0]
TAU_OMEGA = np.array([[1000.0, 1200.0], [400.0, np.nan], [100.0, 140.0]])
PS = [53, 97]
TAU_P = np.array([[300.0, 500.0], [200.0, 200.0]])


def test_panels_show_seed_means_and_the_fits():
    fig = grokking_law_figure(OMEGAS, TAU_OMEGA, (120.0, -1.0, 0.99), PS, TAU_P,
                              (float("nan"), float("nan"), float("nan")))
    left, right = fig.axes
    means = [line for line in left.lines if line.get_marker() == "o"][0]
    np.testing.assert_allclose(means.get_xdata(), OMEGAS)
    np.testing.assert_allclose(means.get_ydata(), [1100.0, 400.0, 120.0])
    fit = [line for line in left.lines if line.get_linestyle() == "-"][0]
    np.testing.assert_allclose(fit.get_ydata(), 120.0 / fit.get_xdata())
    assert "1 run(s) never grokked" in left.get_title()
    assert sum(len(c.get_offsets()) for c in left.collections) == 5  # the grokked seeds
    assert [line.get_marker() for line in right.lines] == ["o"]  # a NaN fit is not drawn
    assert left.get_xscale() == "log" and left.get_yscale() == "log"


def test_a_sweep_where_nothing_grokked_says_so(pyplot):
    fig = pyplot.figure()
    sub = fig.subfigures(1, 2)[1]
    out = grokking_law_figure(OMEGAS, np.full((3, 2), np.nan), None, PS, TAU_P, None, fig=sub)
    assert out is fig and len(sub.axes) == 2
    assert sub.axes[0].texts[0].get_text() == "no run grokked"
    assert sub.axes[0].get_yscale() == "linear"
