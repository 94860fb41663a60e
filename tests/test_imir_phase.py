"""IMIR phase diagrams: the closed-form 4-coordinate model against the engine, the vmapped grid
against single solves, Theorems 2 and 3 against their derived forms, the read-offs on constructed
trajectories, the experiment end to end (one tiny run in this process, which the 4-coordinate
comparison and the plain-SGD arm's planted test reuse: their programs compile once), and the
standard architecture's plain-SGD arm on planted cells (docs/imir.md, section 6)."""
from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import STALL_SECONDS, assert_refused_before_writing, run_watched
from experiments.imir_phase import run
from experiments.imir_phase.configs import tiny
from experiments.imir_phase.schema import SCHEMA
from mechjax.sweeps import watchdog
from mechjax.analysis.imir.phase.diagrams import PhaseDiagram
from mechjax.analysis.imir.manifold import submanifold as subm
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.dynamics import reference as ode
from mechjax.analysis.imir.dynamics import grid
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.dynamics import solver as solve
from mechjax.analysis.imir.phase import clockfree as cf
from mechjax.analysis.imir.phase import four_coord as fc
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.dynamics import four_coord as rd
from mechjax.analysis.imir.theorems import four_coord as th
from mechjax.io import write_json
from mechjax.tasks import blocklist as bl


@pytest.mark.parametrize("spec", [
    bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, burstiness=1),   # one distractor
    bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, burstiness=2),   # b = 2, no distractor
])
def test_closed_form_equals_engine_on_the_submanifold(spec):
    """At f_v = 0 no token repeats by chance, so the closed form is the task's exact population:
    loss and reduced field equal the engine's forward at W(alpha, beta, gamma, delta)."""
    sizes = rd.RecallSizes.from_spec(spec)
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len)
    basis = ib.make_basis(frame)
    _, phi = subm.abgd_coordinates(basis)
    np.testing.assert_allclose(phi @ proj.gram(basis) @ phi.T, np.diag(rd.gram_diag(sizes)),
                               atol=1e-9)
    support = bl.enumerate_support(spec).orbit_quotient(spec)
    loss_eng = ode.population_loss_fn(basis, support)
    field_eng = jax.jit(ode.enumerated_field(basis, loss_eng, phi))
    field_cf = jax.jit(rd.field(sizes))
    phi_j = jnp.asarray(phi, jnp.float32)
    for i, f_r in enumerate((0.3, 0.8)):
        tp = {"f_r": jnp.float32(f_r), "f_v": jnp.float32(0.0)}
        theta = 1.5 * jax.random.normal(jax.random.key(i), (4,))
        want = loss_eng(proj.weights(basis, theta @ phi_j), tp)
        got = rd.loss(sizes, theta, spec.burstiness, f_r, 0.0)
        np.testing.assert_allclose(got, want, rtol=2e-6)
        np.testing.assert_allclose(field_cf(theta, spec.burstiness, f_r, 0.0),
                                   field_eng(theta, tp), rtol=2e-4, atol=1e-6)


def test_vmapped_grid_equals_individual_solves():
    # the tiny run's closed-form program (its sizes, n_save and a given first step: compiled once
    # in this module)
    sizes, n_save, dt0 = rd.RecallSizes(8, 8, 3), 10, 20.0
    fr = np.array([0.1, 0.5, 0.9, 0.3])
    fv = np.array([0.0, 0.2, 0.7, 0.4])
    b = np.array([1, 2, 2, 1])
    grid = fc.solve_grid(sizes, [0.1, 0.2, 0.3, 0.4], b, fr, fv, 800.0, n_save, dt0=dt0)
    one = jax.jit(lambda b, fr, fv: rd.integrate(sizes, jnp.asarray([0.1, 0.2, 0.3, 0.4]), b, fr,
                                                 fv, 800.0, n_save, dt0=dt0))
    # Both are adaptive float32 solves at the solver's rtol 1e-5: different op fusion (batched vs one
    # cell) can pick different steps, so they agree to ~10x that tolerance; a cell mixed up by the
    # padding or the batching differs at O(1).
    for i in range(4):
        np.testing.assert_allclose(grid["theta"][i], one(float(b[i]), fr[i], fv[i]), rtol=1e-4,
                                   atol=1e-5)
        m = rd.metrics(sizes, grid["theta"][i, -1], float(b[i]), fr[i], fv[i])
        np.testing.assert_allclose(grid["p_rare"][i, -1], m["p_rare"], rtol=1e-5)
    # the data parameters matter: different cells, different trajectories
    assert np.abs(np.asarray(grid["theta"][0, -1] - grid["theta"][2, -1])).max() > 0.1


def test_icl_gradient_at_the_null_point_is_linear_in_b():
    """At alpha = beta = gamma = delta = 0 attention is uniform and predictions are uniform, so
    -dL/dgamma = b / T - 1 / V exactly (Theorem 3's linearity, derived in docs/imir.md)."""
    sizes = rd.RecallSizes(128, 128, 64)
    bs = [1, 2, 4, 8, 16]
    got = [float(th.icl_gradient(sizes, [0.0, 0.0, 0.0, 0.0], b, 0.5, 0.1)[2]) for b in bs]
    want = [b / sizes.seq_len - 1 / sizes.vocab for b in bs]
    np.testing.assert_allclose(got, want, rtol=1e-4)
    fit = th.theorem3(sizes, [0.1, 0.1, 0.1], 0.1, list(range(1, 9)), 0.5, 0.1)
    assert fit["fit_gamma"]["r2"] > 0.99 and fit["fit_gamma"]["slope"] > 0


def test_theorem2_factor_under_the_stated_protocol():
    """Large vocabulary, ICL coordinates at their initial values: the suppression is
    s + (1 - s)(1 - p_iwl) to leading order (docs/imir.md), i.e. Theorem 2's s once IWL has
    formed, and far from s while it is half formed."""
    sizes = rd.RecallSizes(256, 256, 4)
    settings = [(0.1, 0.0), (0.3, 0.0), (0.5, 0.0), (0.1, 0.3), (0.3, 0.3), (0.7, 0.2)]
    for p in (0.999, 0.9):
        d = th.delta_for_p_iwl(sizes, p)
        np.testing.assert_allclose(float(rd.p_iwl(sizes, jnp.float32(d))), p, rtol=1e-5)
        for fr, fv in settings:
            r = th.theorem2_ratio(sizes, [0.1, 0.1, 0.1], d, 1, fr, fv, delta_null=0.1)
            s = fr + (1 - fr) * fv
            assert abs(r["ratio_gamma"] - (s + (1 - s) * (1 - p))) < 0.02 * s + 0.003, (p, r)
            if p == 0.999:
                assert r["rel_error_gamma"] < 0.1, r
    # the same protocol in a small vocabulary (T / V not small) misses s by far more than 10%
    small = rd.RecallSizes(4, 4, 3)
    d = th.delta_for_p_iwl(small, 0.999)
    worst = max(th.theorem2_ratio(small, [0.1, 0.1, 0.1], d, 1, fr, fv)["rel_error_gamma"]
                for fr, fv in settings)
    assert worst > 0.3


def test_readoffs_on_constructed_trajectories():
    t = np.linspace(0, 100, 101)
    # sigmoids with known midpoints: alpha first, then gamma, then beta; delta earliest (not the
    # default order of ``emergence_order``'s names, so returning them unsorted fails)
    mids = {"alpha": 30.0, "beta": 70.0, "gamma": 50.0, "delta": 10.0}
    theta = np.stack([1 / (1 + np.exp(-(t - mids[n]) / 2)) for n in rd.NAMES], -1)
    em = ph.coordinate_emergence(t, theta)
    for n in rd.NAMES:
        assert abs(em[n] - mids[n]) < 1.0, (n, em[n])
    assert ph.emergence_order(em) == ["alpha", "gamma", "beta"]
    # departure from the start by 0.5 = the sigmoid's midpoint here
    dep = ph.departure_times(t, theta, 0.5)
    assert ph.emergence_order(dep) == ["alpha", "gamma", "beta"]
    assert abs(dep["delta"] - mids["delta"]) < 1.0
    codes = ph.classify(np.array([0.9, 0.9, 0.1, 0.1]), np.array([0.1, 0.9, 0.9, 0.1]))
    assert [ph.WINNERS[c] for c in codes] == ["ICL", "both", "IWL", "neither"]
    # a planted contour s * b = 0.6 is recovered
    fr, fv = np.meshgrid(np.linspace(0, 1, 21), np.linspace(0, 1, 21), indexing="ij")
    sb = 2 * ph.s_factor(fr, fv)
    fit = ph.contour_agreement(sb, sb >= 0.6)
    assert fit["agreement"] == 1.0 and 0.55 < fit["c"] <= 0.6 + 1e-9
    # one class empty: nothing to separate, and a threshold past the end must not score 1.0
    for formed in (sb >= 10.0, sb >= -1.0):
        empty = ph.contour_agreement(sb, formed)
        assert empty["agreement"] is None and empty["c"] is None
        assert "formed ICL" in empty["undefined"]


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """The tiny run (the default pipeline, its 4-coordinate comparison switched off) and then the
    labelled 4-coordinate comparison by itself, against a stand-in exact diagram whose every
    winner is ``neither``: both in this process, so the comparison's programs that the run
    compiled (the reference cell's and the (b, f_r) grid's closed-form solve, the trainings'
    pieces) are compiled once. Returns ``(workdir, saved summary, comparison figures folder,
    comparison summary)``."""
    root = tmp_path_factory.mktemp("imir_phase")
    workdir = str(root / "run")
    run_watched(run.run, tiny.get_config(), workdir)
    with open(os.path.join(workdir, "summary.json")) as f:
        saved = json.load(f)
    c = run.build(SCHEMA.validate(tiny.get_config()))
    e = c["exact"]
    ax = np.linspace(0.0, 1.0, e["n"])
    FR, FV = np.meshgrid(ax, ax, indexing="ij")
    ex = PhaseDiagram("f_r", "f_v", ax, ax, FR, FV, np.linspace(0.0, float(e["t1"]),
                                                                e["n_save"] + 1),
                      {}, {"winner": np.zeros(FR.size, int)}, FR, {}, c["exact_spec"], 0, 0.0,
                      0.0)
    four = {"n_cells": int(FR.size)}
    metrics = {"t_ode": np.linspace(0.0, float(c["ode"]["t1"]), c["ode"]["n_save"] + 1)}
    fig_dir = str(root / "four_coord_figures")
    with watchdog.watch("the 4-coordinate comparison", stall_seconds=STALL_SECONDS):
        run.four_coordinate_comparison(c, ex, four, metrics, fig_dir)
    write_json(str(root / "four_coord.json"), four)   # as a summary is saved (JSON types)
    with open(root / "four_coord.json") as f:
        return workdir, saved, fig_dir, json.load(f)


@pytest.mark.timeout(600)  # the tiny run and the comparison: ~60 s cold on 2 cores
def test_tiny_end_to_end(tiny_runs):
    """The tiny config's run (``python -m experiments.imir_phase --config=...tiny.py`` in
    process), its summary as saved."""
    workdir, saved, _, _ = tiny_runs
    for key in ("grid_seconds", "speed/ratio_train_per_cell_vs_grid", "grid/contour_sb",
                "exact_vs_full_ode/max_rel_deviation", "winner_agreement/theory_arch",
                "ode_vs_training/max_rel_deviation", "grid_b/contour_sb", "grid/n_classes",
                "winner_agreement/standard_arch", "cells_standard/winner_exact",
                "boundary/sb_contour_accuracy", "standard_arch/order_agreement",
                "standard_arch/emergence_spearman", "standard_arch/stable_winner_agreement"):
        assert key in saved, key
    # the clock-free comparisons rank / order the same 2 straddling cells as the one-horizon one
    assert saved["standard_arch/order_agreement_cells"] == 2
    assert saved["standard_arch/emergence_spearman_cells"] == 2
    assert not any(k.startswith(("theorem2/", "grid_4coord/")) for k in saved)  # switched off
    # the exact dynamics (orbit classes, coordinate forward) against the enumerated engine ODE
    # (float32 solver noise), and against SGD on full weights from the same point
    assert saved["exact_vs_full_ode/max_rel_deviation"] < 1e-3
    assert saved["ode_vs_training/max_rel_deviation"] < 0.05
    # the headline validation: a full transformer of the theory's architecture, trained on the
    # cell(s) next to the exact boundary, forms the circuit the exact dynamics predict
    assert saved["winner_agreement/theory_arch_cells"] >= 1
    assert saved["winner_agreement/theory_arch"] == 1.0, saved["cells_exact/winner_trained"]
    # the standard architecture (150 Adam steps, 2 seeds) forms ICL in every seed at a
    # straddling cell where the exact dynamics predict ICL (measured: cell 0 ICL/ICL, cell 1
    # neither/neither against ICL: agreement 0.5); the same under plain SGD
    for arm in ("cells_standard/winner_per_seed", "standard_arch_sgd/winner_per_seed"):
        assert any(row == ["ICL"] * 2 for row, want in zip(saved[arm],
                   saved["cells_standard/winner_exact"]) if want == "ICL"), saved[arm]
    assert saved["winner_agreement/standard_arch"] >= 0.5
    # the theory's architecture compared clock-free as well, over its trained cell(s)
    assert saved["theory_arch/order_agreement_cells"] == saved["winner_agreement/theory_arch_cells"]
    # the start control: the diagram re-solved from delta = 0 and from a projected random init,
    # every cell solved, and both standard arms compared clock-free with each over their 2 cells
    for start in ("delta0", "projected"):
        assert sum(saved[f"start_control/{start}/winner_counts"].values()) == 36
        for arm in ("standard_arch", "standard_arch_sgd"):
            assert saved[f"{arm}/start_{start}/order_agreement_cells"] == 2
    assert saved["start_control/projected/theta0_abs_max"] > 0.0
    # ... and the stage's wiring, recomputed apart: the trained cells solved from delta = 0 by
    # solve_cells (not the grid runner), their order codes against the Adam runs as saved
    c = run.build(SCHEMA.validate(tiny.get_config()))
    e, o, g = c["exact"], c["ode"], c["grid"]
    model = exact.make(c["exact_spec"])
    m = np.load(os.path.join(workdir, "metrics.npz"))
    pick = m["cells_standard/index"]
    FR, FV = np.meshgrid(np.linspace(g["f_r_min"], g["f_r_max"], e["n"]),
                         np.linspace(g["f_v_min"], g["f_v_max"], e["n"]), indexing="ij")
    out = grid.solve_cells(model, exact.abgd_init(model, [*o["init"][:3], 0.0]),
                           FR.ravel()[pick], FV.ravel()[pick], e["t1"], e["n_save"],
                           rtol=e["rtol"], atol=e["rtol"] * solve.ATOL / solve.RTOL,
                           dt0=e["t1"] / e["n_steps"], solver=e["solver"])
    t = np.linspace(0.0, e["t1"], e["n_save"] + 1)
    step = np.asarray(m["cells_standard/step"], np.float64)
    order = cf.agreement(cf.first_to_form(t, out["p_rare"], out["p_iwl"], o["threshold"]),
                         cf.first_to_form(step, m["cells_standard/p_rare"],
                                          m["cells_standard/p_iwl"], o["threshold"]))
    assert saved["standard_arch/start_delta0/order_agreement"] == order["value"]
    # the exact theorems stage: the protocol point on the exact loss is the 4-coordinate one at
    # f_v = 0 (float32 rounding), f_r = 1 never forms IWL, and within 200 steps delta, gamma,
    # alpha move, in that order, and beta does not (in the exact dynamics and in training alike)
    assert saved["theorem2_exact/protocol_max_abs_diff_vs_4coord_f_v_0"] < 1e-5
    assert {(r["f_r"], r["p"]) for r in saved["theorem2_exact/never_reached"]} >= {
        (1.0, 0.9), (1.0, 0.99)}
    assert saved["emergence_exact/order_exact"] == saved["emergence_exact/order_trained"] == [
        "delta", "gamma", "alpha"]
    for name in ("phase_fr_fv.png", "phase_b_fr.png", "phase_sizes.png", "phase_starts.png"):
        assert os.path.getsize(os.path.join(workdir, "figures", name)) > 1000, name
    assert m["frfv/winner"].shape == (6, 6)
    assert "boundary/V16_T5" in saved  # the size scan ran (its one size is the grid's spec)
    assert saved["grid_cells"] == 36 and "grid_seconds" in run.format_summary(saved)


@pytest.mark.timeout(600)  # builds the tiny run when it runs first
def test_tiny_four_coordinate_comparison(tiny_runs):
    """The labelled 4-coordinate comparison by itself (the tiny run switches it off), against a
    stand-in exact diagram: every winner ``neither``."""
    _, _, fig_dir, saved = tiny_runs
    for key in ("theorem2/max_rel_error", "theorem3/slope_vs_b", "theorem3/r2",
                "emergence_order", "confinement/rel_residual", "theorem2/conditions",
                "theorem2/protocols", "full_ode_vs_gd/max_rel_deviation"):
        assert key in saved, key
    four = saved["grid_4coord/winner_counts_on_exact_spec"]
    assert saved["grid_4coord/winner_agreement_with_exact"] == four["neither"] / saved["n_cells"]
    # The readout scale gamma moves first at the reference cell; alpha and beta later or never
    # (None) within the tiny horizon (gamma ~117, alpha / beta never measured).
    times = saved["emergence_times_ode"]
    assert saved["emergence_order"][0] == "gamma" and times["gamma"] is not None
    assert all(times[n] is None or times[n] > times["gamma"] for n in ("alpha", "beta")), times
    assert saved["confinement/rel_residual"] < 1e-5
    assert saved["full_ode_vs_gd/max_rel_deviation"] < 0.05
    assert saved["theorem3/r2"] > 0.95
    assert len(saved["theorem2/protocols"]) >= 4
    for name in ("trajectories_abgd.png", "phase_fr_fv_4coord.png", "phase_b_fr_4coord.png",
                 "trajectories_ode_vs_training.png", "theorem2.png", "theorem3.png"):
        assert os.path.getsize(os.path.join(fig_dir, name)) > 1000, name


@pytest.mark.parametrize("edit, message", [
    (lambda c: setattr(c.grid, "n", 1), "grid.n=1"),
    (lambda c: setattr(c.task, "b", 5), "task.b=5"),
    (lambda c: setattr(c.cells, "steps", 25), "cells.steps=25 must be a multiple"),
    (lambda c: setattr(c.theorem2, "settings", [[0.1, 0.0]] * 3), "theorem2.settings="),
    (lambda c: setattr(c.task, "n_common", 2), "n_common=2"),
    (lambda c: setattr(c.grid, "f_v_max", 1.5), "grid.f_v_max=1.5"),
    (lambda c: setattr(c.exact_theorems, "steps", 21), "exact_theorems.steps=21"),
    (lambda c: setattr(c.exact_theorems, "steps", 400), "steps * lr = 400.0 must be <= t1"),
    (lambda c: setattr(c.exact, "n_blocks", 7), "exact.n_blocks=7"),
    (lambda c: setattr(c.exact, "b", 3), "exact.b=3"),
])
def test_bad_config_refused_before_writing(tmp_path, edit, message):
    config = tiny.get_config()
    edit(config)
    assert_refused_before_writing(run.run, config, tmp_path / "run", message)


def test_readoff_caps_the_icl_level_at_b_over_b_plus_1():
    """Two cells whose p_rare ends at 0.3: with b = 1 the 4-coordinate ICL level is 0.5 * 1/2 =
    0.25 (formed, crossing at t = 5 by interpolation); uncapped it is 0.5 (never)."""
    t = np.linspace(0.0, 10.0, 3)
    out = {"p_rare": np.array([[0.0, 0.25, 0.3], [0.0, 0.1, 0.3]]),
           "p_iwl": np.array([[0.0, 0.0, 0.9], [0.0, 0.0, 0.1]]),
           "acc_rare": np.zeros((2, 3))}
    capped = fc.readoff(out, t, np.ones(2), 0.5)
    assert [ph.WINNERS[w] for w in capped["winner"]] == ["both", "ICL"]
    np.testing.assert_allclose(capped["emergence"], [5.0, 5.0 + 5.0 * 0.15 / 0.2])
    free = ph.readoff(out, t, 0.5)
    assert [ph.WINNERS[w] for w in free["winner"]] == ["IWL", "neither"]
    assert np.isinf(free["emergence"]).all()
    assert ph.winner_counts(capped["winner"]) == {"neither": 0, "ICL": 1, "IWL": 0, "both": 1}


# ---- the plain-SGD arm of the standard architecture (``cell_stages.sgd_arm``): steps = exact.t1 / lr
# so that t = step x lr, its one-horizon winner agreement and clock-free comparisons against the
# exact diagram's cells; its config refused before anything compiles

# the tiny run's exact spec: the SGD-arm test then runs the tiny run's compiled trainings
TASK = bl.BlockListSpec(kind="recall", n_common=8, n_rare=8, n_blocks=3, burstiness=1)
IWL, NEITHER = ph.WINNERS.index("IWL"), ph.WINNERS.index("neither")


@pytest.mark.parametrize("edit, message", [
    ({"sgd_lr": -0.5}, "validate_standard.sgd_lr"),
    # tiny's exact.t1 = 200: 2,000,000 steps
    ({"sgd_lr": 1e-4}, "validate_standard.sgd_lr=0.0001: exact.t1 / sgd_lr = 2000000 SGD steps"),
    ({"sgd_lr": 150.0, "n_evals": 2}, "exact.t1 / sgd_lr = 1 SGD steps; allowed 2 (n_evals)"),
])
def test_bad_sgd_arm_refused_before_writing(tmp_path, edit, message):
    config = tiny.get_config()
    config.validate_standard.update(edit)
    assert_refused_before_writing(run.run, config, tmp_path / "run", message)


def _exact_side(winners: list[int], t1: float) -> PhaseDiagram:
    """An exact diagram of one row of cells ``(f_r, f_v) = (0, 0), (1, 0)`` whose winners are
    planted, with curves that make IWL form at t1 / 4 where the winner is IWL (else nothing)."""
    t = np.linspace(0.0, t1, 11)
    iwl = np.array([1 / (1 + np.exp(-(t - t1 / 4) / (t1 / 50))) if w == IWL else 0 * t
                    for w in winners])
    fr, fv = np.array([[0.0, 1.0]]), np.zeros((1, 2))
    cells = {"winner": np.array(winners), "p_rare": np.zeros(2), "acc_rare": np.zeros(2),
             "p_iwl": iwl[:, -1]}
    return PhaseDiagram("f_r", "f_v", np.array([0.0]), np.array([0.0, 1.0]), fr, fv, t,
                        {"p_rare": np.zeros_like(iwl), "p_iwl": iwl}, cells, fr, {}, TASK, 0,
                        1.0, 0.0)


def test_sgd_arm_matches_t_and_recovers_the_in_weights_cell():
    """f_r = 0, f_v = 0 (common faithful pairs only) learns the association in weights under
    plain SGD; f_r = 1 (no common token ever seen) forms nothing. Planted exact winners IWL /
    neither (IWL forming at t1 / 4) agree in every seed, by the one-horizon winner, the order
    of formation and the stable winner. The step count is t1 / lr rounded down to a multiple
    of the read-offs, and the arm's clock is step x lr."""
    from experiments.imir_phase.cell_stages import standard_cells
    t1, lr = 200.0, 0.5   # 400 steps -> 399 (a multiple of 3 read-offs): the tiny run's
    # through the stage: Adam's arm (its keys unchanged) then SGD's on the same cells
    c = {"exact": {"t1": t1}, "ode": {"threshold": 0.5}, "validate": {"seed": 0},
         "validate_standard": dict(sgd_lr=lr, d_model=8, batch_size=32, eval_size=64,
                                   n_evals=3, n_cells=2, n_seeds=2, seed=0, steps=150,
                                   lr=3e-2, optimizer="adam")}
    metrics, out = {}, {}
    standard_cells(c, _exact_side([IWL, NEITHER], t1), out, metrics)
    assert metrics["cells_standard/index"].tolist() == [0, 1]
    assert "winner_agreement/standard_arch" in out and "standard_arch/order_agreement" in out
    arm = "standard_arch_sgd"
    assert out[f"{arm}/steps"] == 399 and out[f"{arm}/t_last"] == 199.5
    assert metrics["cells_standard_sgd/step"].tolist() == [133, 266, 399]
    w = metrics["cells_standard_sgd/winner"]
    assert w.tolist() == [[IWL, IWL], [NEITHER, NEITHER]], w
    assert out[f"{arm}/diverged_runs"] == 0
    for key in ("winner_agreement", "order_agreement", "stable_winner_agreement"):
        assert out[f"{arm}/{key}"] == 1.0 and out[f"{arm}/{key}_cells"] == 2, key
    assert out[f"{arm}/winner_agreement_seed_min"] == out[f"{arm}/winner_agreement_seed_max"]
