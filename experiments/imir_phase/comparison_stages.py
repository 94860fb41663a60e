"""The 4-coordinate comparison stages of ``experiments.imir_phase.run`` (the exact-dynamics
stages are ``stages``): each solves, trains or checks one thing, adds
its numbers to ``summary`` and its arrays to ``metrics``, and saves its figures.

Each takes ``c``, the checked config's objects (``config_checks.build``).
"""
from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.cells import theory as imir_cells
from mechjax.analysis.imir.phase import four_coord as fc
from mechjax.analysis.imir.phase.diagrams import PhaseDiagram
from mechjax.analysis.imir.manifold import confinement as cf
from experiments.imir_measure import measure
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.dynamics import four_coord as rd
from mechjax.analysis.imir.dynamics import solver as solve
from mechjax.analysis.imir.theorems import four_coord as th
from mechjax.plots import imir as plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log
from mechjax.tasks import blocklist as bl
from mechjax.sweeps.timing import load_average

from experiments.imir_phase.common import first_step, record_b_grid


def frfv_diagram(c: dict, t_ode: np.ndarray, summary: dict, metrics: dict) -> PhaseDiagram:
    """The 4-coordinate (f_r, f_v) diagram at burstiness ``task.b`` (a labelled comparison; the
    default diagram is the exact one, ``stages.frfv_diagram``): one vmapped reduced-ODE solve."""
    o, g, b0 = c["ode"], c["grid"], c["task"]["b"]
    log(f"imir_phase: ({g['n']} x {g['n']}) (f_r, f_v) grid, reduced ODE, b={b0}, "
        f"load {load_average()}")
    d = fc.fr_fv_diagram(c["sizes"], o["init"], b0,
                         np.linspace(g["f_r_min"], g["f_r_max"], g["n"]),
                         np.linspace(g["f_v_min"], g["f_v_max"], g["n"]), float(o["t1"]),
                         o["n_save"], o["threshold"], first_step(o["t1"], o["n_steps"]))
    log(f"grid: {d.X.size} ODE solves in {d.seconds:.1f} s (+ {d.compile_seconds:.1f} s "
        f"compile), load {load_average()}")
    summary.update({"grid_4coord/seconds": d.seconds,
                    "grid_4coord/compile_seconds": d.compile_seconds,
                    "grid_4coord/cells": int(d.X.size),
                    "grid_4coord/winner_counts": ph.winner_counts(d.cells["winner"]),
                    "grid_4coord/contour_sb": d.contour})
    for k in ("winner", "p_rare", "acc_rare", "p_iwl", "emergence"):
        metrics[f"frfv_4coord/{k}"] = d.grid(k)
    metrics["frfv_4coord/theta_final"] = d.curves["theta"][:, -1].reshape(d.X.shape + (4,))
    metrics["frfv_4coord/f_r"], metrics["frfv_4coord/f_v"] = d.x, d.y
    # float32 against float64 at a 10x tighter tolerance on a few cells
    idx = np.linspace(0, d.X.size - 1, o["check_cells"]).astype(int)
    with jax.enable_x64(True):
        fine = fc.solve_grid(c["sizes"], o["init"], b0, d.X.ravel()[idx], d.Y.ravel()[idx],
                             float(o["t1"]), o["n_save"], dtype=jnp.float64,
                             rtol=solve.RTOL / 10, atol=solve.ATOL / 10)
        fine = {k: np.asarray(v) for k, v in fine.items()}
    for k in ("theta", "p_rare"):
        summary[f"grid_4coord/check_f64_tight_max_abs_{k}"] = float(
            np.max(np.abs(fine[k] - d.curves[k][idx])))
    return d


def bfr_diagram(c: dict, t_ode: np.ndarray, summary: dict, metrics: dict) -> PhaseDiagram:
    """The (b, f_r) diagram at ``task_b.f_v``, b = 1 .. n_blocks - 1."""
    o = c["ode"]
    d = fc.b_fr_diagram(c["sizes_b"], o["init"], np.arange(1, c["task_b"]["n_blocks"]),
                        metrics["frfv_4coord/f_r"], c["task_b"]["f_v"], float(o["t1"]),
                        o["n_save"], o["threshold"], first_step(o["t1"], o["n_steps"]))
    record_b_grid("_4coord", d, summary, metrics)
    return d


def theorem_checks(c: dict, t_ode: np.ndarray, frfv: PhaseDiagram,
                   summary: dict) -> tuple[dict, dict]:
    """Theorems 2 and 3 (``theorems.four_coord``); returns the rows and series to plot."""
    t2, t3 = c["theorem2"], c["theorem3"]
    grid = {"t": t_ode, "out": frfv.curves, "f_r": frfv.X, "f_v": frfv.Y,
            "b": c["task"]["b"]}
    r2 = th.theorem2_protocols(c["sizes"], c["sizes_t2"], c["ode"]["init"], t2["p_iwl"], t2["b"],
                               t2["settings"], grid)
    r3 = th.theorem3_protocols(c["sizes_t3"], c["sizes_t3_small"], c["ode"]["init"],
                               t3["b_max"], t3["f_r"], t3["f_v"])
    rows, series = r2.pop("rows"), r3.pop("series")
    summary.update(r2 | r3)
    return rows, series


def reference_cell(c: dict, t_ode: np.ndarray, summary: dict, metrics: dict) -> None:
    """Emergence order of the coordinates at the reference cell (reduced ODE)."""
    o, t = c["ode"], c["task"]
    ref = fc.solve_grid(c["sizes"], o["init"], t["b"], t["f_r_ref"], t["f_v_ref"],
                        float(o["t1"]), o["n_save"], dt0=first_step(o["t1"], o["n_steps"]))
    metrics["ref/theta_ode"] = np.asarray(ref["theta"][0])
    summary.update(fc.reference_emergence(t_ode, metrics["ref/theta_ode"], t["f_r_ref"],
                                               t["f_v_ref"], t["b"]))


def trained_cells(c: dict, t_ode: np.ndarray, frfv: PhaseDiagram, summary: dict,
                  metrics: dict, fig_dir: str) -> dict | None:
    """A sample of grid cells trained as full transformers (vmapped), against the ODE."""
    ce, o, b0 = c["cells"], c["ode"], c["task"]["b"]
    FR, FV = frfv.X, frfv.Y
    pick = np.sort(np.random.default_rng(ce["seed"]).choice(FR.size, ce["n_cells"],
                                                            replace=False))
    # the reference cell goes first (for the trajectory figure)
    fr_c = np.concatenate([[c["task"]["f_r_ref"]], FR.ravel()[pick]])
    fv_c = np.concatenate([[c["task"]["f_v_ref"]], FV.ravel()[pick]])
    log(f"training {len(fr_c)} full transformers (vmapped), {ce['steps']} SGD steps, "
        f"lr {ce['lr']}")
    t0 = time.perf_counter()
    tr = imir_cells.train_cells(c["spec"], o["init"], fr_c, fv_c, float(ce["lr"]), ce["steps"],
                                ce["n_save"], ce["batch_size"], ce["eval_size"], ce["seed"])
    train_s = time.perf_counter() - t0
    horizon = float(tr["t"][-1])
    ode_c = fc.solve_grid(c["sizes"], o["init"], b0, fr_c, fv_c, horizon, ce["n_save"],
                          dt0=first_step(horizon, o["n_steps"]))
    ode_c = {k: np.asarray(v) for k, v in ode_c.items()}
    near = ph.nearest_cells(FR, FV, fr_c, fv_c)
    cmp, trc = fc.cells_vs_ode(tr, ode_c, {k: v[near] for k, v in frfv.curves.items()},
                                    t_ode, b0, o["threshold"], fr_c, fv_c)
    # time one transformer cell would need for the ODE's horizon
    per_cell = train_s / len(fr_c) * float(o["t1"]) / horizon
    summary.update(cmp | {"cells/train_seconds": train_s,
                          "speed_4coord/seconds_per_trained_cell_at_grid_horizon": per_cell,
                          "speed_4coord/ratio_train_per_cell_vs_grid": per_cell * FR.size
                          / frfv.seconds})
    metrics.update({"cells/theta": tr["theta"], "cells/t": tr["t"], "cells/p_rare": tr["p_rare"],
                    "cells/p_iwl": tr["p_iwl"], "cells/loss": tr["loss"],
                    "cells/theta_ode": ode_c["theta"]})
    save_figure(plots.trajectories(
        {"reduced 4-coord ODE": (tr["t"], ode_c["theta"][0]),
         "full transformer (projected)": (tr["t"], tr["theta"][0])},
        rd.NAMES, f"f_r={fr_c[0]:.2f}, f_v={fv_c[0]:.2f}, b={b0}: (alpha, beta, gamma, delta)"),
        os.path.join(fig_dir, "trajectories_abgd.png"))
    return {"x": fr_c, "y": fv_c, "winner": trc["winner"], "p_rare": trc["p_rare"],
            "emergence": trc["emergence"]}


def ode_vs_training(c: dict, summary: dict, metrics: dict, fig_dir: str) -> None:
    """The full-manifold reduced ODE against full gradient descent (``measure.ode_vs_gd``)."""
    oc, sc = c["ode_check"], c["check_spec"]
    spec = bl.BlockListSpec(kind="recall", n_common=sc.n_common, n_rare=sc.n_rare,
                            n_blocks=sc.n_blocks, f_r=oc["f_r"], f_v=oc["f_v"])
    log(f"full-manifold reduced ODE vs gradient descent on {bl.support_size(spec)} sequences")
    chk = measure.ode_vs_gd(spec, t1=float(oc["t1"]), lr=float(oc["lr"]), n_save=oc["n_save"],
                            return_trajectories=True)
    traj, run0 = chk.pop("trajectories"), chk["runs"][0]
    summary.update({
        "full_ode_vs_gd/max_rel_deviation": run0["until_90"]["norm"],
        "full_ode_vs_gd/max_rel_deviation_per_coordinate": run0["until_90"]["coord"],
        "full_ode_vs_gd/loss_drop_90_at_t": run0["loss_drop_90_at_t"],
        "full_ode_vs_gd/detail": {k: v for k, v in chk.items() if k != "runs"} | {
            "loss_start": run0["loss_start"], "loss_end": run0["loss_end"],
            "whole_run": run0["whole"], "max_off_span": run0["max_off_span"]}})
    save_figure(plots.trajectories(
        {"reduced ODE (full manifold)": (traj["t"], traj["ode_top"]),
         "full gradient descent": (traj["t"], traj["gd_top"])},
        traj["names"], f"full-manifold reduced ODE vs full training "
        f"({chk['n_coords']} coordinates; the 4 largest shown)"),
        os.path.join(fig_dir, "trajectories_ode_vs_training.png"))
    metrics.update({"check/t": traj["t"], "check/theta_ode": traj["ode"],
                    "check/theta_gd": traj["gd"]})


def confinement(c: dict, summary: dict) -> None:
    """Exact confinement of the population gradient at a random point of the manifold."""
    frame = ib.make_frame(ib.TokenStructure.from_spec(measure.TINY), measure.TINY.seq_len)
    basis = ib.make_basis(frame)
    theta = 0.7 * jax.random.normal(jax.random.key(c["confinement"]["seed"]), (basis.size,))
    conf = cf.exact_confinement(measure.TINY, basis, proj.weights(basis, theta))
    summary["confinement/rel_residual"] = conf["rel_residual"]


def figures(c: dict, fig_dir: str, metrics: dict, frfv: PhaseDiagram, bfr: PhaseDiagram,
            t2_rows: dict, t3_series: dict, cells_xy: dict | None) -> None:
    o, b0, nb = c["ode"], c["task"]["b"], c["task_b"]["n_blocks"]
    save_figure(plots.phase_diagram(
        frfv.x, frfv.y, frfv.grid("winner"), frfv.grid("p_rare"), frfv.grid("emergence"),
        frfv.sb, frfv.contour["c"],
        "f_r (rare fraction)", "f_v (within-class variability)",
        f"comparison: 4-coordinate (alpha, beta, gamma, delta) ODE, not closed; b={b0}, "
        f"T={c['sizes'].seq_len}, V={c['sizes'].vocab}, t1={o['t1']}", ph.WINNERS, cells_xy),
        os.path.join(fig_dir, "phase_fr_fv_4coord.png"))
    save_figure(plots.phase_diagram(
        bfr.x.astype(float), bfr.y, bfr.grid("winner"), bfr.grid("p_rare"),
        bfr.grid("emergence"), bfr.sb, bfr.contour["c"], "b (burstiness)", "f_r (rare fraction)",
        f"comparison: 4-coordinate ODE, f_v={c['task_b']['f_v']}, n={nb} blocks, "
        f"V={c['sizes_b'].vocab}", ph.WINNERS, None),
        os.path.join(fig_dir, "phase_b_fr_4coord.png"))
    save_figure(plots.theorem2(t2_rows, "Theorem 2: ICL gradient suppression by IWL"),
                os.path.join(fig_dir, "theorem2.png"))
    save_figure(plots.theorem3(t3_series, "Theorem 3: ICL gradient vs burstiness"),
                os.path.join(fig_dir, "theorem3.png"))


def four_vs_exact(c: dict, ex: PhaseDiagram, summary: dict) -> None:
    """The 4-coordinate closed form on the exact diagram's spec, grid and horizon: how often it
    names the same winner (its own ICL level, capped at b / (b + 1))."""
    e, o, spec = c["exact"], c["ode"], ex.spec
    four = fc.solve_grid(rd.RecallSizes.from_spec(spec), o["init"], spec.burstiness,
                         ex.X.ravel(), ex.Y.ravel(), float(e["t1"]), e["n_save"],
                         dt0=first_step(e["t1"], e["n_steps"]))
    ro = fc.readoff({k: np.asarray(v) for k, v in four.items()}, ex.t,
                    np.full(ex.X.size, float(spec.burstiness)), o["threshold"])
    summary["grid_4coord/winner_agreement_with_exact"] = float(np.mean(
        ro["winner"] == ex.cells["winner"]))
    summary["grid_4coord/winner_counts_on_exact_spec"] = ph.winner_counts(ro["winner"])
