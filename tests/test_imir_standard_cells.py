"""The standard architecture on phase-diagram cells (``mechjax.analysis.imir.cells.standard``):
every cell x seed in one program, each cell trained at its own task parameters, read-offs and
winners per (cell, seed) in that order; the overlay of a second cell set on the phase diagram."""
import numpy as np
import pytest

from conftest import assert_refused_before_writing
from experiments.imir_phase import run
from experiments.imir_phase.configs import tiny
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.analysis.imir.cells import standard as sc
from mechjax.plots import imir as plots
from mechjax.tasks import blocklist as bl

TASK = bl.BlockListSpec(kind="recall", n_common=4, n_rare=4, n_blocks=3, burstiness=1)


def test_cells_train_at_their_own_task_parameters_in_one_program():
    """f_r = 0, f_v = 0: common faithful pairs only, so the association is learnt in weights
    (p_iwl high, winner IWL or both). f_r = 1: no common token is ever seen, so the in-weights
    read-off stays near chance. A cell that trained at another cell's parameters, or seeds and
    cells swapped in the returned arrays, would break one of the two rows."""
    fr, fv = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 0.0])
    out = sc.train_standard_cells(TASK, fr, fv, seeds=[0, 1], d_model=8, steps=150, lr=3e-2,
                                  batch_size=32, eval_size=64, n_evals=3, threshold=0.5)
    assert out["traces"] == 1
    for k in (*sc.READOFFS, "loss"):
        assert out[k].shape == (3, 2, 3), k
    assert out["winner"].shape == (3, 2) and out["step"].tolist() == [50, 100, 150]
    p_iwl = out["p_iwl"][..., -1]
    assert (p_iwl[[0, 2]] > 0.5).all() and (p_iwl[1] < 0.2).all(), p_iwl
    assert (out["loss"][..., -1] < out["loss"][..., 0]).all()
    # the winner is the exact diagram's rule on the final read-offs, per (cell, seed)
    want = ph.classify(out["p_rare"][..., -1], p_iwl, 0.5)
    np.testing.assert_array_equal(out["winner"], want)
    assert set(out["winner"][0]) <= {2, 3} and not set(out["winner"][1]) & {2, 3}


def test_majority_is_the_most_frequent_winner_ties_to_the_lowest_code():
    w = np.array([[1, 1, 2], [0, 3, 3], [2, 1, 0], [3, 3, 3]])
    np.testing.assert_array_equal(sc.majority(w), [1, 3, 0, 3])


def test_rejects_steps_not_a_multiple_of_the_evaluations():
    with pytest.raises(ValueError, match="multiple of n_evals"):
        sc.train_standard_cells(TASK, [0.5], [0.5], [0], 8, 10, 1e-2, 8, 8, 3, 0.5)


@pytest.mark.parametrize("edit, message", [
    ({"steps": 25, "n_evals": 10}, "validate_standard.steps=25 must be a multiple"),
    ({"n_cells": 10_000}, "validate_standard.n_cells=10000: at most exact.n ** 2"),
    ({"optimizer": "lbfgs"}, "validate_standard.optimizer"),
])
def test_bad_standard_config_refused_before_writing(tmp_path, edit, message):
    config = tiny.get_config()
    config.validate_standard.update({"n_cells": 2, **edit})
    assert_refused_before_writing(run.run, config, tmp_path / "run", message)


@pytest.mark.usefixtures("pyplot")
def test_phase_diagram_overlays_two_cell_sets_with_their_markers():
    """The standard architecture's cells (circles, no emergence time: steps are not the
    diagram's time) beside the theory's (squares, every panel)."""
    x, y = np.linspace(0, 1, 3), np.linspace(0, 1, 3)
    grid = np.zeros((3, 3))
    theory = {"x": np.array([0.5]), "y": np.array([0.5]), "winner": np.array([1]),
              "p_rare": np.array([0.9]), "emergence": np.array([3.0]), "label": "theory"}
    standard = {"x": np.array([0.0]), "y": np.array([1.0]), "winner": np.array([2]),
                "p_rare": np.array([0.1]), "marker": "o", "label": "standard"}
    fig = plots.phase_diagram(x, y, grid.astype(int), grid, grid, grid, 5.0, "x", "y", "t",
                              ph.WINNERS, [theory, standard])
    panels = [ax for ax in fig.axes if ax.images]
    offsets = [[c.get_offsets().tolist() for c in ax.collections] for ax in panels]
    assert offsets[0] == offsets[1] == [[[0.5, 0.5]], [[0.0, 1.0]]]
    assert offsets[2] == [[[0.5, 0.5]]]
    # different markers: the two sets' paths differ
    a, b = panels[0].collections
    assert not np.allclose(a.get_paths()[0].vertices[:4], b.get_paths()[0].vertices[:4])
    assert "squares: theory" in fig._suptitle.get_text()
    assert "circles: standard" in fig._suptitle.get_text()
