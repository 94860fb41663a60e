"""The exact-dynamics grid runner: the step-capped first pass and the uncapped second pass give
the uncapped solve's read-offs, cell by cell."""
import numpy as np

from mechjax.analysis.imir.dynamics import grid
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.phase import diagrams
from mechjax.tasks import blocklist as bl


def test_two_pass_grid_equals_one_uncapped_pass():
    model = exact.make(bl.BlockListSpec(kind="recall", n_common=4, n_rare=4, n_blocks=3,
                                        burstiness=1))
    f_r = np.array([0.0, 0.1, 0.5, 0.9, 0.05])
    f_v = np.array([0.0, 0.0, 0.3, 0.9, 0.5])
    # chunks of 1 (compiled for 4 cells): the second pass's program is the first run's, so two
    # programs compile
    kw = dict(rtol=1e-2, dt0=3.0, solver="heun", chunk=1, workers=2)
    one, _, _ = grid.timed_cells(model, [0.1] * 4, f_r, f_v, 300.0, 4, **kw)
    steps = one["steps"]
    cap = int(np.median(steps))
    assert steps.min() <= cap < steps.max(), steps   # some cells go past the cap
    two, _, _ = grid.timed_cells(model, [0.1] * 4, f_r, f_v, 300.0, 4, step_cap=cap,
                                        **kw)
    assert int(two["n_capped"]) == int(np.sum(steps > cap)) > 0
    assert int(one["n_capped"]) == 0
    np.testing.assert_array_equal(two["steps"], steps)   # each cell's last pass: the same solve
    for k in ("p_rare", "p_iwl", "loss", "theta"):
        np.testing.assert_allclose(two[k], one[k], rtol=1e-5, atol=1e-7, err_msg=k)


def test_boundary_reads_a_planted_diagram():
    """ICL from f_r index 2 on (index 1 where f_v is largest), IWL at f_v = 0 for f_r index <= 1."""
    fr, fv = np.linspace(0, 1, 4), np.linspace(0, 1, 3)
    icl = np.zeros((4, 3), bool)
    icl[2:, :] = True
    icl[1, 2] = True
    iwl = np.zeros((4, 3), bool)
    iwl[:2, 0] = True
    winner = icl.astype(int) + 2 * iwl.astype(int)
    got = diagrams.boundary(winner, icl, fr, fv)
    assert got["icl_f_r_min_per_f_v"] == [fr[2], fr[2], fr[1]]
    assert got["iwl_f_r_max_at_f_v_min"] == fr[1]
    assert (got["iwl_cells"], got["icl_cells"]) == (2, 7)
    none = diagrams.boundary(np.zeros((4, 3), int), np.zeros((4, 3), bool), fr, fv)
    assert none["icl_f_r_min_per_f_v"] == [None] * 3 and none["iwl_f_r_max_at_f_v_min"] is None


def test_a_given_start_replaces_the_abgd_point():
    """``timed_cells(theta0=...)``: the full coordinates of the (alpha, beta, gamma, delta) point
    give that point's solve to the bit (one program, one input); another start gives another
    trajectory."""
    model = exact.make(bl.BlockListSpec(kind="recall", n_common=4, n_rare=4, n_blocks=3,
                                        burstiness=1))
    f_r, f_v = np.array([0.1, 0.5, 0.9]), np.array([0.0, 0.3, 0.2])
    kw = dict(rtol=1e-2, dt0=3.0, solver="heun", chunk=4, workers=1)
    start = [0.1, 0.1, 0.1, 0.1]
    ref, _, _ = grid.timed_cells(model, start, f_r, f_v, 100.0, 4, **kw)
    same, _, _ = grid.timed_cells(model, None, f_r, f_v, 100.0, 4,
                                  theta0=exact.abgd_init(model, start), **kw)
    for k in ("p_rare", "p_iwl", "theta"):
        np.testing.assert_array_equal(same[k], ref[k], err_msg=k)
    no_head_start, _, _ = grid.timed_cells(model, None, f_r, f_v, 100.0, 4,
                                           theta0=exact.abgd_init(model, [0.1, 0.1, 0.1, 0.0]),
                                           **kw)
    assert np.abs(no_head_start["theta"] - ref["theta"]).max() > 1e-2
