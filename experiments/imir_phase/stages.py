"""The exact-dynamics stages of ``experiments.imir_phase.run`` (the default diagrams, their
checks, trained cells, sizes, theorems): each solves, trains or checks one thing, adds
its numbers to ``summary`` and its arrays to ``metrics``, and saves its figures.

Each takes ``c``, the checked config's objects (``config_checks.build``).
"""
from __future__ import annotations

import os

import numpy as np

from mechjax.analysis.imir.phase import checks, diagrams
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.plots import imir as plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log
from mechjax.tasks import blocklist as bl
from mechjax.sweeps.timing import load_average

from experiments.imir_phase.common import (first_step, grid_settings, record_b_grid, spec_of,
                                          winner_panel)


def frfv_diagram(c: dict, summary: dict, metrics: dict) -> diagrams.PhaseDiagram:
    """The (f_r, f_v) diagram from the exact dynamics on every manifold coordinate: one jitted
    vmap over the grid (``diagrams.fr_fv_diagram``)."""
    e, g, o = c["exact"], c["grid"], c["ode"]
    spec = spec_of(e)
    log(f"imir_phase: ({e['n']} x {e['n']}) (f_r, f_v) grid, exact dynamics, T={spec.seq_len}, "
        f"V={spec.n_tokens}, load {load_average()}")
    d = diagrams.fr_fv_diagram(spec, o["init"], np.linspace(g["f_r_min"], g["f_r_max"], e["n"]),
                               np.linspace(g["f_v_min"], g["f_v_max"], e["n"]), float(e["t1"]),
                               e["n_save"], o["threshold"], e["rtol"],
                               first_step(e["t1"], e["n_steps"]), **grid_settings(e))
    log(f"exact grid: {d.X.size} cells ({d.n_coords} coordinates, {d.n_classes} classes) in "
        f"{d.seconds:.1f} s (+ {d.compile_seconds:.1f} s compile; {d.n_capped} cells past the "
        f"step cap), load {load_average()}")
    summary.update({"grid_seconds": d.seconds, "grid_compile_seconds": d.compile_seconds,
                    "grid/solver": {**grid_settings(e), "rtol": e["rtol"],
                                    "n_capped": d.n_capped},
                    "grid_cells": int(d.X.size), "grid_load": load_average(),
                    "grid/n_coords": d.n_coords, "grid/n_classes": d.n_classes,
                    "grid/spec": {"n_common": spec.n_common, "n_rare": spec.n_rare,
                                  "n_blocks": spec.n_blocks, "T": spec.seq_len,
                                  "V": spec.n_tokens, "b": spec.burstiness},
                    "grid/winner_counts": ph.winner_counts(d.cells["winner"]),
                    "grid/contour_sb": d.contour,
                    "boundary/sb_contour_accuracy": d.contour["agreement"]})
    for k in ("winner", "p_rare", "acc_rare", "p_iwl", "emergence"):
        metrics[f"frfv/{k}"] = d.grid(k)
    metrics["frfv/f_r"], metrics["frfv/f_v"], metrics["frfv/t"] = d.x, d.y, d.t
    return d


def bfr_diagram(c: dict, summary: dict, metrics: dict) -> diagrams.PhaseDiagram:
    """The (b, f_r) diagram from the exact dynamics, b = 1 .. n_blocks - 1."""
    e, eb, o = c["exact"], c["exact_b"], c["ode"]
    b_ax = np.arange(1, eb["n_blocks"])
    spec = spec_of({**eb, "b": 1})
    log(f"imir_phase: (b, f_r) grid, exact dynamics, b = 1..{b_ax[-1]}, T={spec.seq_len}")
    d = diagrams.b_fr_diagram(spec, o["init"], b_ax,
                              np.linspace(c["grid"]["f_r_min"], c["grid"]["f_r_max"], eb["n"]),
                              eb["f_v"], float(e["t1"]), e["n_save"], o["threshold"], e["rtol"],
                              first_step(e["t1"], e["n_steps"]), **grid_settings(e))
    record_b_grid("", d, summary, metrics)
    return d


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


def figures(c: dict, fig_dir: str, ex: diagrams.PhaseDiagram, exb: diagrams.PhaseDiagram,
            cells_xy: list[dict] | None) -> None:
    """The exact diagrams; ``cells_xy``: the trained cell sets overlaid on the (f_r, f_v) one."""
    spec, sb = ex.spec, exb.spec
    save_figure(plots.phase_diagram(
        ex.x, ex.y, ex.grid("winner"), ex.grid("p_rare"), ex.grid("emergence"), ex.sb,
        ex.contour["c"], "f_r (rare fraction)",
        "f_v (within-class variability)", f"exact reduced dynamics (every manifold coordinate), "
        f"b={spec.burstiness}, T={spec.seq_len}, V={spec.n_tokens}, t1={c['exact']['t1']}",
        ph.WINNERS, cells_xy), os.path.join(fig_dir, "phase_fr_fv.png"))
    save_figure(plots.phase_diagram(
        exb.x.astype(float), exb.y, exb.grid("winner"), exb.grid("p_rare"),
        exb.grid("emergence"), exb.sb, exb.contour["c"], "b (burstiness)",
        "f_r (rare fraction)", f"exact reduced dynamics, f_v={c['exact_b']['f_v']}, "
        f"T={sb.seq_len}, V={sb.n_tokens}", ph.WINNERS, None),
        os.path.join(fig_dir, "phase_b_fr.png"))


def sizes_scan(c: dict, summary: dict, metrics: dict, fig_dir: str) -> None:
    """The exact (f_r, f_v) diagram at several sizes (vocabulary V and context T, each on its own
    grid): where ICL starts and IWL ends, per size (``diagrams.boundary``). The class count,
    and so the cost, does not grow with V but grows steeply with T (46 classes at 3 blocks, 951
    at 4)."""
    e, g, o = c["exact"], c["grid"], c["ode"]
    panels = []
    for n_common, n_rare, n_blocks, n in c["sizes_scan"]["specs"]:
        spec = bl.BlockListSpec(kind="recall", n_common=n_common, n_rare=n_rare,
                                n_blocks=n_blocks, burstiness=e["b"])
        name = f"V{spec.n_tokens}_T{spec.seq_len}"
        log(f"imir_phase: size {name}: {n} x {n} exact grid")
        d = diagrams.fr_fv_diagram(spec, o["init"], np.linspace(g["f_r_min"], g["f_r_max"], n),
                                   np.linspace(g["f_v_min"], g["f_v_max"], n), float(e["t1"]),
                                   e["n_save"], o["threshold"], e["rtol"],
                                   first_step(e["t1"], e["n_steps"]), **grid_settings(e))
        winner = d.grid("winner")
        summary[f"boundary/{name}"] = {
            **diagrams.boundary(winner, d.grid("icl"), d.x, d.y), "V": spec.n_tokens,
            "T": spec.seq_len, "n_classes": d.n_classes, "n_coords": d.n_coords,
            "cells_per_axis": n, "winner_counts": ph.winner_counts(winner),
            "contour_sb": d.contour, "p_iwl_max": float(d.cells["p_iwl"].max()),
            "seconds": d.seconds, "compile_seconds": d.compile_seconds, "load": load_average()}
        metrics[f"sizes/{name}/winner"] = winner
        metrics[f"sizes/{name}/p_rare"] = d.grid("p_rare")
        panels.append(winner_panel(d, f"V={spec.n_tokens}, T={spec.seq_len}"))
    if panels:
        save_figure(plots.winner_panels(panels, "f_r (rare fraction)",
                                        "f_v (within-class variability)", ph.WINNERS,
                                        f"exact reduced dynamics at several sizes, b={e['b']}, "
                                        f"t1={e['t1']}"),
                    os.path.join(fig_dir, "phase_sizes.png"))
