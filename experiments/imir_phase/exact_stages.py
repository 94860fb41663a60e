"""The exact-dynamics stages of ``experiments.imir_phase.run`` (the default diagrams, their
checks, trained cells, sizes, theorems): each solves, trains or checks one thing, adds
its numbers to ``summary`` and its arrays to ``metrics``, and saves its figures.

Each takes ``c``, the checked config's objects (``run.build``).
"""
from __future__ import annotations

import os
import time

import numpy as np

from mechjax.analysis.imir.dynamics import grid
from mechjax.analysis.imir.cells import theory as imir_cells
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.phase import diagrams as exact_phase
from mechjax.analysis.imir.theorems import suppression as xt
from mechjax.analysis.imir.phase import readoff as ph
from mechjax.analysis.imir.cells import standard as std_cells
from mechjax.plots import imir as plots
from mechjax.plots.save import save_figure
from mechjax.sweep import log
from mechjax.tasks import blocklist as bl
from mechjax.timing import load_average

from experiments.imir_phase.stages import _dt0, _record_b_grid


def _exact_spec(e: dict, b: int | None = None) -> bl.BlockListSpec:
    return bl.BlockListSpec(kind="recall", n_common=e["n_common"], n_rare=e["n_rare"],
                            n_blocks=e["n_blocks"], burstiness=e["b"] if b is None else b)


def _grid_solver(e: dict) -> dict:
    """The grids' solver settings (``grid.timed_cells``)."""
    return {"solver": e["solver"], "step_cap": e["step_cap"] or None, "chunk": e["chunk"]}


def exact_frfv_diagram(c: dict, summary: dict, metrics: dict) -> dict:
    """The (f_r, f_v) diagram from the exact dynamics on every manifold coordinate: one jitted
    vmap over the grid (``grid.timed_cells``)."""
    e, g, o = c["exact"], c["grid"], c["ode"]
    spec = _exact_spec(e)
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
                                                 _dt0(e["t1"], e["n_steps"]), **_grid_solver(e))
    ro = ph.readoff(out, t, o["threshold"])
    sb = e["b"] * ph.s_factor(FR, FV)
    contour = ph.contour_agreement(sb, ro["icl"].reshape(FR.shape))
    log(f"exact grid: {FR.size} cells in {t_run:.1f} s (+ {t_comp:.1f} s compile; "
        f"{int(out['n_capped'])} cells past the step cap), load {load_average()}")
    summary.update({"grid_seconds": t_run, "grid_compile_seconds": t_comp,
                    "grid/solver": {**_grid_solver(e), "rtol": e["rtol"],
                                    "n_capped": int(out["n_capped"])},
                    "grid_cells": int(FR.size), "grid_load": load_average(),
                    "grid/n_coords": model.n_coords, "grid/n_classes": model.classes.size,
                    "grid/spec": {"n_common": spec.n_common, "n_rare": spec.n_rare,
                                  "n_blocks": spec.n_blocks, "T": spec.seq_len,
                                  "V": spec.n_tokens, "b": spec.burstiness},
                    "grid/winner_counts": ph.winner_counts(ro["winner"]),
                    "grid/contour_sb": contour,
                    # the issue's name for it: how well s * b = c separates ICL-formed cells
                    "boundary/sb_contour_accuracy": contour["agreement"]})
    for k in ("winner", "p_rare", "acc_rare", "p_iwl", "emergence"):
        metrics[f"frfv/{k}"] = ro[k].reshape(FR.shape)
    metrics["frfv/f_r"], metrics["frfv/f_v"], metrics["frfv/t"] = fr_ax, fv_ax, t
    return {"FR": FR, "FV": FV, "fr_ax": fr_ax, "fv_ax": fv_ax, "out": out, "ro": ro, "sb": sb,
            "contour": contour, "seconds": t_run, "spec": spec, "t": t}


def exact_bfr_diagram(c: dict, summary: dict, metrics: dict) -> dict:
    """The (b, f_r) diagram from the exact dynamics, b = 1 .. n_blocks - 1."""
    e, eb, o = c["exact"], c["exact_b"], c["ode"]
    b_ax = np.arange(1, eb["n_blocks"])
    fr_ax = np.linspace(c["grid"]["f_r_min"], c["grid"]["f_r_max"], eb["n"])
    BB, FR = np.meshgrid(b_ax, fr_ax, indexing="ij")
    t = np.linspace(0.0, float(e["t1"]), e["n_save"] + 1)
    spec = _exact_spec({**eb, "b": 1})
    log(f"imir_phase: (b, f_r) grid, exact dynamics, b = 1..{b_ax[-1]}, T={spec.seq_len}")
    out, secs = exact_phase.b_grid(spec, o["init"], b_ax, fr_ax, eb["f_v"], float(e["t1"]),
                                   e["n_save"], e["rtol"], _dt0(e["t1"], e["n_steps"]),
                                   **_grid_solver(e))
    ro = ph.readoff(out, t, o["threshold"])
    sb = BB * ph.s_factor(FR, eb["f_v"])
    contour = _record_b_grid("", ro, BB, b_ax, fr_ax, sb, secs, summary, metrics)
    return {"b_ax": b_ax, "fr_ax": fr_ax, "sb": sb, "contour": contour, "spec": spec}


def exact_checks(c: dict, summary: dict) -> None:
    """The exact dynamics against the enumerated full-manifold ODE (small spec) and against SGD
    on every weight from the same on-manifold point (the default spec)."""
    ec, es, e, o = c["exact_check"], c["exact_sgd"], c["exact"], c["ode"]
    spec = _exact_spec({**ec, "b": 1})
    cells = np.linspace(0.0, 1.0, ec["n_cells"])
    log(f"exact dynamics vs the enumerated full-manifold ODE on {ec['n_cells']} cells")
    r = exact_phase.vs_full_ode(spec, o["init"], cells, cells[::-1] * 0.8, float(ec["t1"]),
                                ec["n_save"], _dt0(ec["t1"], e["n_steps"]))
    summary["exact_vs_full_ode/max_rel_deviation"] = r["max_rel_deviation"]
    summary["exact_vs_full_ode/detail"] = r
    log(f"exact dynamics vs SGD (batch {es['batch_size']}, {es['steps']} steps)")
    s = exact_phase.vs_sgd(_exact_spec(e), o["init"], es["f_r"], es["f_v"], float(es["lr"]),
                           es["steps"], es["n_save"], es["batch_size"], es["seed"],
                           _dt0(es["steps"] * es["lr"], e["n_steps"]))
    summary["ode_vs_training/max_rel_deviation"] = s["until_90"]["norm"]
    summary["ode_vs_training/max_rel_deviation_per_coordinate"] = s["until_90"]["coord"]
    summary["ode_vs_training/detail"] = s


def straddling_cells(winner: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Flat indices of ``n`` grid cells next to a change of winner (then any others), at
    random: cells that test where the boundary lies."""
    w = np.asarray(winner)
    edge = np.zeros(w.shape, bool)
    edge[:-1] |= w[:-1] != w[1:]
    edge[1:] |= w[:-1] != w[1:]
    edge[:, :-1] |= w[:, :-1] != w[:, 1:]
    edge[:, 1:] |= w[:, :-1] != w[:, 1:]
    rng = np.random.default_rng(seed)
    on, off = np.flatnonzero(edge.ravel()), np.flatnonzero(~edge.ravel())
    pick = rng.choice(on, min(n, len(on)), replace=False)
    if len(pick) < n:
        pick = np.concatenate([pick, rng.choice(off, n - len(pick), replace=False)])
    return np.sort(pick)


def exact_cells(c: dict, ex: dict, summary: dict, metrics: dict) -> dict:
    """Cells straddling the exact diagram's boundaries trained as full transformers (the theory's
    architecture, vmapped), to the diagram's horizon: winner agreement and final accuracies."""
    v, e, o = c["validate"], c["exact"], c["ode"]
    pick = straddling_cells(ex["ro"]["winner"].reshape(ex["FR"].shape), v["n_cells"], v["seed"])
    fr_c, fv_c = ex["FR"].ravel()[pick], ex["FV"].ravel()[pick]
    steps = int(round(float(e["t1"]) / v["lr"]))
    n_save = e["n_save"]
    steps -= steps % n_save
    log(f"training {len(pick)} full transformers on cells straddling the exact boundary, "
        f"{steps} SGD steps, lr {v['lr']}, batch {v['batch_size']}")
    t0 = time.perf_counter()
    tr = imir_cells.train_cells(ex["spec"], o["init"], fr_c, fv_c, float(v["lr"]), steps,
                                n_save, v["batch_size"], v["eval_size"], v["seed"],
                                rare_pool="cell")
    train_s = time.perf_counter() - t0
    ro_tr = ph.readoff({**tr, "acc_rare": tr["p_rare"]}, tr["t"], o["threshold"])
    ro_ex = {k: v_[pick] for k, v_ in ex["ro"].items()}
    agree = ro_tr["winner"] == ro_ex["winner"]
    per_cell = train_s / len(pick) * float(e["t1"]) / float(tr["t"][-1])
    summary.update({
        "winner_agreement/theory_arch": float(np.mean(agree)),
        "winner_agreement/theory_arch_cells": int(len(pick)),
        "cells_exact/f_r": fr_c.round(4).tolist(), "cells_exact/f_v": fv_c.round(4).tolist(),
        "cells_exact/winner_trained": [ph.WINNERS[w] for w in ro_tr["winner"]],
        "cells_exact/winner_exact": [ph.WINNERS[w] for w in ro_ex["winner"]],
        "cells_exact/p_rare_abs_error": float(np.max(np.abs(ro_tr["p_rare"] - ro_ex["p_rare"]))),
        "cells_exact/p_iwl_abs_error": float(np.max(np.abs(ro_tr["p_iwl"] - ro_ex["p_iwl"]))),
        "cells_exact/train_seconds": train_s,
        "speed/seconds_per_trained_cell_at_grid_horizon": per_cell,
        "speed/ratio_train_per_cell_vs_grid": per_cell * ex["FR"].size / ex["seconds"]})
    metrics.update({"cells_exact/p_rare": tr["p_rare"], "cells_exact/p_iwl": tr["p_iwl"],
                    "cells_exact/t": tr["t"], "cells_exact/index": pick})
    return {"x": fr_c, "y": fv_c, "winner": ro_tr["winner"], "p_rare": ro_tr["p_rare"],
            "emergence": ro_tr["emergence"], "label": "theory's architecture"}


def standard_cells(c: dict, ex: dict, summary: dict, metrics: dict,
                   workdir: str | None = None) -> dict:
    """The straddling cells of ``exact_cells`` (``validate.seed``'s pick: the same cells when
    ``n_cells`` agree) trained as the standard architecture (``standard_cells``; ``workdir``:
    the sweep resumes there), all cells x seeds in one program: winner agreement with the exact
    diagram over every (cell, seed) run, per-seed winners and their per-cell majority."""
    vs, o = c["validate_standard"], c["ode"]
    pick = straddling_cells(ex["ro"]["winner"].reshape(ex["FR"].shape), vs["n_cells"],
                            c["validate"]["seed"])
    fr_c, fv_c = ex["FR"].ravel()[pick], ex["FV"].ravel()[pick]
    seeds = list(range(vs["seed"], vs["seed"] + vs["n_seeds"]))
    log(f"training the standard architecture on {len(pick)} straddling cells x {len(seeds)} "
        f"seeds (one program), d_model {vs['d_model']}, {vs['steps']} {vs['optimizer']} steps, "
        f"lr {vs['lr']}, batch {vs['batch_size']}, load {load_average()}")
    t0 = time.perf_counter()
    tr = std_cells.train_standard_cells(
        ex["spec"], fr_c, fv_c, seeds, vs["d_model"], vs["steps"], float(vs["lr"]),
        vs["batch_size"], vs["eval_size"], vs["n_evals"], o["threshold"], vs["optimizer"],
        workdir)
    train_s = time.perf_counter() - t0
    w_ex = ex["ro"]["winner"][pick]
    major = std_cells.majority(tr["winner"])
    final = {k: tr[k][..., -1] for k in std_cells.READOFFS}
    log(f"standard architecture: {train_s:.1f} s, load {load_average()}")
    summary.update({
        "winner_agreement/standard_arch": float(np.mean(tr["winner"] == w_ex[:, None])),
        "winner_agreement/standard_arch_majority": float(np.mean(major == w_ex)),
        "winner_agreement/standard_arch_cells": int(len(pick)),
        "winner_agreement/standard_arch_seeds": len(seeds),
        "cells_standard/f_r": fr_c.round(4).tolist(), "cells_standard/f_v": fv_c.round(4).tolist(),
        "cells_standard/winner_per_seed": [[ph.WINNERS[w] for w in row] for row in tr["winner"]],
        "cells_standard/winner_majority": [ph.WINNERS[w] for w in major],
        "cells_standard/winner_exact": [ph.WINNERS[w] for w in w_ex],
        # seed means against the exact diagram's final read-offs
        **{f"cells_standard/{k}_abs_error": float(np.max(np.abs(
            final[k].mean(1) - ex["ro"][k][pick]))) for k in ("p_rare", "acc_rare", "p_iwl")},
        "cells_standard/loss_first_last": [float(np.mean(tr["loss"][..., 0])),
                                           float(np.mean(tr["loss"][..., -1]))],
        "cells_standard/train_seconds": train_s, "cells_standard/load": load_average()})
    metrics.update({f"cells_standard/{k}": tr[k] for k in (*std_cells.READOFFS, "loss", "step",
                                                           "winner")})
    metrics["cells_standard/index"] = pick
    # no emergence: it is in optimizer steps, not on the diagram's time axis
    return {"x": fr_c, "y": fv_c, "winner": major, "p_rare": final["p_rare"].mean(1),
            "marker": "o", "size": 40,
            "label": "standard architecture (seed majority, mean p)"}


def exact_figures(c: dict, fig_dir: str, metrics: dict, ex: dict, exb: dict,
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


def exact_sizes(c: dict, summary: dict, metrics: dict, fig_dir: str) -> None:
    """The exact (f_r, f_v) diagram at several sizes (vocabulary V and context T, each on its own
    grid): where ICL starts and IWL ends, per size (``exact_phase.boundary``). The class count,
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
            _dt0(e["t1"], e["n_steps"]), **_grid_solver(e))
        ro = ph.readoff(out, t, o["threshold"])
        winner, icl = ro["winner"].reshape(FR.shape), ro["icl"].reshape(FR.shape)
        sb = e["b"] * ph.s_factor(FR, FV)
        contour = ph.contour_agreement(sb, icl)
        summary[f"boundary/{name}"] = {
            **exact_phase.boundary(winner, icl, fr_ax, fv_ax), "V": spec.n_tokens,
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


def _iwl_digest(rows: list[dict]) -> list[dict]:
    """Theorem 2 trajectory rows without the gradient vectors (the summary's table)."""
    keep = ("ratio_gamma", "ratio_proj", "ratio_norm", "gamma_ill_conditioned", "p_iwl_reset",
            "s_two_sided")
    return [{**{k: r[k] for k in ("f_r", "f_v", "p_level", "t", "p_iwl", "p_rare", "s",
                                  "s_partial")},
             **{part: {k: r[part][k] for k in keep} for part in xt.IWL_PARTS}} for r in rows]


def exact_theorems(c: dict, summary: dict, metrics: dict) -> None:
    """Theorem 2 along exact trajectories and at the 4-coordinate protocol point, Theorem 3's
    linearity in b on the exact classes, and the emergence order of (alpha, beta, gamma, delta)
    in the exact dynamics and in full training (``exact_theorems``), on the exact grid's spec."""
    e, o, x, t = c["exact"], c["ode"], c["exact_theorems"], c["task"]
    spec = _exact_spec(e)
    model = exact.make(spec)
    settings = [tuple(map(float, p)) for p in x["settings"]]
    ref = (float(t["f_r_ref"]), float(t["f_v_ref"]))
    log(f"exact theorems: {len(settings)} exact trajectories and the reference cell, load "
        f"{load_average()}")
    t0 = time.perf_counter()
    # one vmapped solve (one compile) for Theorem 2's settings and the emergence cell
    solved = xt.solve_settings(model, o["init"], settings + [ref], float(x["t1"]), x["n_save"],
                               x["rtol"], _dt0(x["t1"], e["n_steps"]))
    n = len(settings)
    tr = xt.theorem2_trajectories(model, o["init"], {
        k: (v if k == "t" else v[:n]) for k, v in solved.items()}, x["p_levels"])
    pp = xt.theorem2_protocol_point(model, o["init"], c["theorem2"]["p_iwl"], settings)
    t2_s = time.perf_counter() - t0
    names = model.basis.names()
    summary.update({
        "theorem2_exact/protocol": (
            f"exact dynamics from (alpha, beta, gamma, delta) = {list(o['init'])} on "
            f"T={spec.seq_len}, V={spec.n_tokens}, b={spec.burstiness}, to t1={x['t1']} "
            f"({x['n_save']} saved times); at the first saved time with the exact p_iwl >= p "
            f"(p in {list(x['p_levels'])}), the ICL gradient -(phi[:3] @ grad L) at theta(t) "
            "against theta(t) with its in-weights part reset to theta(0); parts: delta = U I|C "
            "(the theorem's statement: delta formed, ICL held), direct = the direct path's "
            "unembedding U I|*, assoc = C read out on every path U *|C. Predictions: s, "
            "s_partial = s + (1 - s)(1 - p_iwl(theta)), s_two_sided = s_partial / "
            "(s + (1 - s)(1 - p_iwl(reset)))"),
        "theorem2_exact/in_weights_parts": {
            part: [names[i] for i in xt.in_weights_indices(model.basis, part)]
            for part in xt.IWL_PARTS},
        "theorem2_exact/trajectory_rows": _iwl_digest(tr["rows"]),
        "theorem2_exact/never_reached": tr["never"],
        "theorem2_exact/prediction_errors": xt.prediction_errors(tr["rows"]),
        "theorem2_exact/protocol_point": pp,
        "theorem2_exact/protocol_max_abs_diff_vs_4coord": pp["max_abs_diff"],
        "theorem2_exact/protocol_max_abs_diff_vs_4coord_f_v_0": pp["max_abs_diff_f_v_0"],
        "theorem2_exact/seconds": t2_s})
    t3 = c["theorem3"]
    log(f"exact theorems: Theorem 3, n_blocks={x['t3_n_blocks']}, load {load_average()}")
    t0 = time.perf_counter()
    r3 = xt.theorem3_exact(spec, x["t3_n_blocks"], o["init"], t3["f_r"], t3["f_v"])
    summary.update({
        "theorem3_exact/slope_vs_b": r3["fit_gamma"]["slope"],
        "theorem3_exact/r2": r3["fit_gamma"]["r2"], "theorem3_exact/r2_beta": r3["fit_beta"]["r2"],
        "theorem3_exact/detail": r3, "theorem3_exact/seconds": time.perf_counter() - t0,
        "theorem3_exact/conditions": (
            f"-dL/dgamma and -dL/dbeta on the exact classes at (alpha, beta, gamma, delta) = "
            f"{list(o['init'])}, b = 1..{x['t3_n_blocks'] - 1}, n_blocks = {x['t3_n_blocks']} "
            f"({r3['n_classes']} classes per b), V = {spec.n_tokens}, f_r = {t3['f_r']}, "
            f"f_v = {t3['f_v']}: at most {x['t3_n_blocks'] - 2} distractor blocks, so the "
            f"theorem's regime (distractors dominate, n >> b; theorem3/* uses n = "
            f"{t3['n_blocks']} on the 4-coordinate model) is out of reach of the exact classes")})
    log(f"exact theorems: emergence at f_r={t['f_r_ref']}, f_v={t['f_v_ref']} (exact ODE and "
        f"{x['steps']} SGD steps), load {load_average()}")
    t0 = time.perf_counter()
    em = xt.emergence(model, o["init"], ref[0], ref[1], float(x["lr"]), x["steps"],
                      x["n_save_train"], x["batch_size"], x["eval_size"], x["seed"], x["rtol"],
                      exact_traj=(solved["t"], solved["theta"][n]),
                      four_coord=x["four_coord_reference"])
    for k in ("exact", "trained", "four_coord")[:3 if x["four_coord_reference"] else 2]:
        summary[f"emergence_exact/order_{k}"] = em[k]["order"]
        summary[f"emergence_exact/never_{k}"] = em[k]["never"]
        summary[f"emergence_exact/times_{k}"] = em[k]["times"]
        metrics[f"emergence_exact/theta_{k}"] = em[f"theta_{k}"]  # [n_t, 4] (alpha..delta)
    metrics["emergence_exact/t"] = np.asarray(em["t"])
    metrics["emergence_exact/t_exact"] = np.asarray(em["t_exact"])
    summary.update({"emergence_exact/definition": em["definition"],
                    "emergence_exact/trained_vs_exact_max_rel_deviation_abgd":
                        em["trained_vs_exact_max_rel_deviation_abgd"],
                    "emergence_exact/seconds": time.perf_counter() - t0,
                    "emergence_exact/load": load_average()})
