"""The exact-dynamics stages of ``experiments.imir_phase.run`` (the default diagrams, their
checks, trained cells, sizes, theorems): each solves, trains or checks one thing, adds
its numbers to ``summary`` and its arrays to ``metrics``, and saves its figures.

Each takes ``c``, the checked config's objects (``config_checks.build``).
"""
from __future__ import annotations

import os

import numpy as np

from mechjax.analysis.imir.dynamics import grid
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.phase import checks, diagrams
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.plots import imir as plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log
from mechjax.tasks import blocklist as bl
from mechjax.sweeps.timing import load_average

from experiments.imir_phase.common import first_step, grid_settings, record_b_grid, spec_of


def frfv_diagram(c: dict, summary: dict, metrics: dict) -> dict:
    """The (f_r, f_v) diagram from the exact dynamics on every manifold coordinate: one jitted
    vmap over the grid (``grid.timed_cells``)."""
    e, g, o = c["exact"], c["grid"], c["ode"]
    spec = spec_of(e)
    model = exact.make(spec)
    fr_ax = np.linspace(g["f_r_min"], g["f_r_max"], e["n"])
    fv_ax = np.linspace(g["f_v_min"], g["f_v_max"], e["n"])
    FR, FV = np.meshgrid(fr_ax, fv_ax, indexing="ij")
    t = np.linspace(0.0, float(e["t1"]), e["n_save"] + 1)
    log(f"imir_phase: ({e['n']} x {e['n']}) (f_r, f_v) grid, exact dynamics ({model.n_coords} "
        f"coordinates, {model.classes.size} classes), T={spec.seq_len}, V={spec.n_tokens}, "
        f"load {load_average()}")
    out, t_comp, t_run = grid.timed_cells(model, o["init"], FR.ravel(), FV.ravel(),
                                                 float(e["t1"]), e["n_save"], e["rtol"],
                                                 first_step(e["t1"], e["n_steps"]),
                                                 **grid_settings(e))
    ro = ph.readoff(out, t, o["threshold"])
    sb = e["b"] * ph.s_factor(FR, FV)
    contour = ph.contour_agreement(sb, ro["icl"].reshape(FR.shape))
    log(f"exact grid: {FR.size} cells in {t_run:.1f} s (+ {t_comp:.1f} s compile; "
        f"{int(out['n_capped'])} cells past the step cap), load {load_average()}")
    summary.update({"grid_seconds": t_run, "grid_compile_seconds": t_comp,
                    "grid/solver": {**grid_settings(e), "rtol": e["rtol"],
                                    "n_capped": int(out["n_capped"])},
                    "grid_cells": int(FR.size), "grid_load": load_average(),
                    "grid/n_coords": model.n_coords, "grid/n_classes": model.classes.size,
                    "grid/spec": {"n_common": spec.n_common, "n_rare": spec.n_rare,
                                  "n_blocks": spec.n_blocks, "T": spec.seq_len,
                                  "V": spec.n_tokens, "b": spec.burstiness},
                    "grid/winner_counts": ph.winner_counts(ro["winner"]),
                    "grid/contour_sb": contour,
                    # the name for it: how well s * b = c separates ICL-formed cells
                    "boundary/sb_contour_accuracy": contour["agreement"]})
    for k in ("winner", "p_rare", "acc_rare", "p_iwl", "emergence"):
        metrics[f"frfv/{k}"] = ro[k].reshape(FR.shape)
    metrics["frfv/f_r"], metrics["frfv/f_v"], metrics["frfv/t"] = fr_ax, fv_ax, t
    return {"FR": FR, "FV": FV, "fr_ax": fr_ax, "fv_ax": fv_ax, "out": out, "ro": ro, "sb": sb,
            "contour": contour, "seconds": t_run, "spec": spec, "t": t}


def bfr_diagram(c: dict, summary: dict, metrics: dict) -> dict:
    """The (b, f_r) diagram from the exact dynamics, b = 1 .. n_blocks - 1."""
    e, eb, o = c["exact"], c["exact_b"], c["ode"]
    b_ax = np.arange(1, eb["n_blocks"])
    fr_ax = np.linspace(c["grid"]["f_r_min"], c["grid"]["f_r_max"], eb["n"])
    BB, FR = np.meshgrid(b_ax, fr_ax, indexing="ij")
    t = np.linspace(0.0, float(e["t1"]), e["n_save"] + 1)
    spec = spec_of({**eb, "b": 1})
    log(f"imir_phase: (b, f_r) grid, exact dynamics, b = 1..{b_ax[-1]}, T={spec.seq_len}")
    out, secs = diagrams.b_grid(spec, o["init"], b_ax, fr_ax, eb["f_v"], float(e["t1"]),
                                   e["n_save"], e["rtol"], first_step(e["t1"], e["n_steps"]),
                                   **grid_settings(e))
    ro = ph.readoff(out, t, o["threshold"])
    sb = BB * ph.s_factor(FR, eb["f_v"])
    contour = record_b_grid("", ro, BB, b_ax, fr_ax, sb, secs, summary, metrics)
    return {"b_ax": b_ax, "fr_ax": fr_ax, "sb": sb, "contour": contour, "spec": spec}


def model_checks(c: dict, summary: dict) -> None:
    """The exact dynamics against the enumerated full-manifold ODE (small spec) and against SGD
    on every weight from the same on-manifold point (the default spec)."""
    ec, es, e, o = c["exact_check"], c["exact_sgd"], c["exact"], c["ode"]
    spec = spec_of({**ec, "b": 1})
    cells = np.linspace(0.0, 1.0, ec["n_cells"])
    log(f"exact dynamics vs the enumerated full-manifold ODE on {ec['n_cells']} cells")
    r = checks.vs_full_ode(spec, o["init"], cells, cells[::-1] * 0.8, float(ec["t1"]),
                                ec["n_save"], first_step(ec["t1"], e["n_steps"]))
    summary["exact_vs_full_ode/max_rel_deviation"] = r["max_rel_deviation"]
    summary["exact_vs_full_ode/detail"] = r
    log(f"exact dynamics vs SGD (batch {es['batch_size']}, {es['steps']} steps)")
    s = checks.vs_sgd(spec_of(e), o["init"], es["f_r"], es["f_v"], float(es["lr"]),
                           es["steps"], es["n_save"], es["batch_size"], es["seed"],
                           first_step(es["steps"] * es["lr"], e["n_steps"]))
    summary["ode_vs_training/max_rel_deviation"] = s["until_90"]["norm"]
    summary["ode_vs_training/max_rel_deviation_per_coordinate"] = s["until_90"]["coord"]
    summary["ode_vs_training/detail"] = s


def figures(c: dict, fig_dir: str, metrics: dict, ex: dict, exb: dict,
                  cells_xy: list[dict] | None) -> None:
    """The exact diagrams; ``cells_xy``: the trained cell sets overlaid on the (f_r, f_v) one."""
    spec, sb = ex["spec"], exb["spec"]
    save_figure(plots.phase_diagram(
        ex["fr_ax"], ex["fv_ax"], metrics["frfv/winner"], metrics["frfv/p_rare"],
        metrics["frfv/emergence"], ex["sb"], ex["contour"]["c"], "f_r (rare fraction)",
        "f_v (within-class variability)", f"exact reduced dynamics (every manifold coordinate), "
        f"b={spec.burstiness}, T={spec.seq_len}, V={spec.n_tokens}, t1={c['exact']['t1']}",
        ph.WINNERS, cells_xy), os.path.join(fig_dir, "phase_fr_fv.png"))
    save_figure(plots.phase_diagram(
        exb["b_ax"].astype(float), exb["fr_ax"], metrics["bfr/winner"], metrics["bfr/p_rare"],
        metrics["bfr/emergence"], exb["sb"], exb["contour"]["c"], "b (burstiness)",
        "f_r (rare fraction)", f"exact reduced dynamics, f_v={c['exact_b']['f_v']}, "
        f"T={sb.seq_len}, V={sb.n_tokens}", ph.WINNERS, None),
        os.path.join(fig_dir, "phase_b_fr.png"))


def sizes_scan(c: dict, summary: dict, metrics: dict, fig_dir: str) -> None:
    """The exact (f_r, f_v) diagram at several sizes (vocabulary V and context T, each on its own
    grid): where ICL starts and IWL ends, per size (``diagrams.boundary``). The class count,
    and so the cost, does not grow with V but grows steeply with T (46 classes at 3 blocks, 951
    at 4)."""
    e, g, o = c["exact"], c["grid"], c["ode"]
    t = np.linspace(0.0, float(e["t1"]), e["n_save"] + 1)
    panels = []
    for n_common, n_rare, n_blocks, n in c["sizes_scan"]["specs"]:
        spec = bl.BlockListSpec(kind="recall", n_common=n_common, n_rare=n_rare,
                                n_blocks=n_blocks, burstiness=e["b"])
        model = exact.make(spec)
        name = f"V{spec.n_tokens}_T{spec.seq_len}"
        fr_ax = np.linspace(g["f_r_min"], g["f_r_max"], n)
        fv_ax = np.linspace(g["f_v_min"], g["f_v_max"], n)
        FR, FV = np.meshgrid(fr_ax, fv_ax, indexing="ij")
        log(f"imir_phase: size {name}: {n} x {n} exact grid, {model.classes.size} classes, "
            f"{model.n_coords} coordinates")
        out, t_comp, t_run = grid.timed_cells(
            model, o["init"], FR.ravel(), FV.ravel(), float(e["t1"]), e["n_save"], e["rtol"],
            first_step(e["t1"], e["n_steps"]), **grid_settings(e))
        ro = ph.readoff(out, t, o["threshold"])
        winner, icl = ro["winner"].reshape(FR.shape), ro["icl"].reshape(FR.shape)
        sb = e["b"] * ph.s_factor(FR, FV)
        contour = ph.contour_agreement(sb, icl)
        summary[f"boundary/{name}"] = {
            **diagrams.boundary(winner, icl, fr_ax, fv_ax), "V": spec.n_tokens,
            "T": spec.seq_len, "n_classes": model.classes.size, "n_coords": model.n_coords,
            "cells_per_axis": n, "winner_counts": ph.winner_counts(winner),
            "contour_sb": contour, "p_iwl_max": float(ro["p_iwl"].max()),
            "seconds": t_run, "compile_seconds": t_comp, "load": load_average()}
        metrics[f"sizes/{name}/winner"] = winner
        metrics[f"sizes/{name}/p_rare"] = ro["p_rare"].reshape(FR.shape)
        panels.append({"x": fr_ax, "y": fv_ax, "winner": winner, "sb": sb, "c": contour["c"],
                       "title": f"V={spec.n_tokens}, T={spec.seq_len}"})
    if panels:
        save_figure(plots.winner_panels(panels, "f_r (rare fraction)",
                                        "f_v (within-class variability)", ph.WINNERS,
                                        f"exact reduced dynamics at several sizes, b={e['b']}, "
                                        f"t1={e['t1']}"),
                    os.path.join(fig_dir, "phase_sizes.png"))
