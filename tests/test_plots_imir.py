"""IMIR figures: phase-diagram panels show the grid arrays (x along the horizontal axis), the
trained cells and the contour; trajectories and theorem checks show their series."""
import numpy as np
import pytest

from mechjax.plots import imir

pytestmark = pytest.mark.usefixtures("pyplot")

RNG = np.random.default_rng(2)
X, Y = np.linspace(0, 1, 4), np.linspace(0, 1, 3)
WINNERS = ("neither", "ICL", "IWL", "both")


def test_phase_diagram_panels_show_the_grid_arrays_and_the_trained_cells():
    winner = RNG.integers(0, 4, (4, 3))
    p_rare = RNG.uniform(size=(4, 3))
    emergence = np.where(p_rare > 0.5, 10 * p_rare, np.inf)
    sb = np.add.outer(X, Y)  # the contour s*b = 1 crosses the grid
    cells = {"x": np.array([0.2]), "y": np.array([0.7]), "winner": np.array([1]),
             "p_rare": np.array([0.9]), "emergence": np.array([np.inf])}
    fig = imir.phase_diagram(X, Y, winner, p_rare, emergence, sb, 1.0, "x", "y", "t", WINNERS,
                             cells)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 3
    np.testing.assert_array_equal(panels[0].images[0].get_array(), winner.T)
    np.testing.assert_array_equal(panels[1].images[0].get_array(), p_rare.T)
    shown = np.ma.filled(panels[2].images[0].get_array().astype(float), np.nan)
    np.testing.assert_array_equal(np.isnan(shown), ~np.isfinite(emergence.T))  # blank: never
    for ax in panels:
        np.testing.assert_allclose(ax.collections[-1].get_offsets(), [[0.2, 0.7]])
        assert any(ax.collections[:-1])  # the contour
    assert panels[2].texts[0].get_text() == "never" and panels[1].texts[0].get_text() == "0.9"


def test_trajectories_one_panel_per_coordinate(pyplot):
    t = np.linspace(0, 1, 5)
    a, b = RNG.normal(size=(5, 2)), RNG.normal(size=(5, 2))
    fig = pyplot.figure()
    sub = fig.subfigures(1, 1)
    assert imir.trajectories({"ode": (t, a), "gd": (t, b)}, ["alpha", "beta"], "t", fig=sub) is fig
    for j, ax in enumerate(sub.axes):
        assert ax.get_title() == ["alpha", "beta"][j]
        np.testing.assert_array_equal(ax.lines[0].get_ydata(), a[:, j])
        np.testing.assert_array_equal(ax.lines[1].get_ydata(), b[:, j])


def test_theorem_checks_show_the_measured_series(pyplot):
    rows = {"exact": [{"s": 0.2, "ratio_gamma": 0.25}, {"s": 0.6, "ratio_gamma": 0.55}]}
    fig, ax = pyplot.subplots()
    imir.theorem2(rows, "t2", ax=ax)
    np.testing.assert_allclose(ax.collections[0].get_offsets(), [[0.2, 0.25], [0.6, 0.55]])
    fig, ax = pyplot.subplots()
    imir.theorem3({"g": ([1, 2, 4], [-2.0, -1.0, -0.5], 0.99)}, "t3", ax=ax)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [-1.0, -0.5, -0.25])  # normalised
    assert ax.get_legend().get_texts()[0].get_text() == "g (R^2 0.990)"
