"""The theorem stage of ``experiments.imir_phase.run``: Theorems 2 and 3 and the emergence order
on the exact model (``mechjax.analysis.imir.theorems``)."""
from __future__ import annotations

import time

import numpy as np

from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.theorems import gradient_suppression as xt
from mechjax.analysis.imir.theorems import burstiness
from mechjax.analysis.imir.theorems import emergence_order as emergence
from mechjax.sweeps.sweep import log
from mechjax.sweeps.timing import load_average

from experiments.imir_phase.common import first_step, spec_of


def _iwl_digest(rows: list[dict]) -> list[dict]:
    """Theorem 2 trajectory rows without the gradient vectors (the summary's table)."""
    keep = ("ratio_gamma", "ratio_proj", "ratio_norm", "gamma_ill_conditioned", "p_iwl_reset",
            "s_two_sided")
    return [{**{k: r[k] for k in ("f_r", "f_v", "p_level", "t", "p_iwl", "p_rare", "s",
                                  "s_partial")},
             **{part: {k: r[part][k] for k in keep} for part in xt.IWL_PARTS}} for r in rows]


def theorems(c: dict, summary: dict, metrics: dict) -> None:
    """Theorem 2 along exact trajectories and at the 4-coordinate protocol point, Theorem 3's
    linearity in b on the exact classes, and the emergence order of (alpha, beta, gamma, delta)
    in the exact dynamics and in full training (``theorems``), on the exact grid's spec."""
    e, o, x, t = c["exact"], c["ode"], c["exact_theorems"], c["task"]
    spec = spec_of(e)
    model = exact.make(spec)
    settings = [tuple(map(float, p)) for p in x["settings"]]
    ref = (float(t["f_r_ref"]), float(t["f_v_ref"]))
    log(f"exact theorems: {len(settings)} exact trajectories and the reference cell, load "
        f"{load_average()}")
    t0 = time.perf_counter()
    # one vmapped solve (one compile) for Theorem 2's settings and the emergence cell
    solved = xt.solve_settings(model, o["init"], settings + [ref], float(x["t1"]), x["n_save"],
                               x["rtol"], first_step(x["t1"], e["n_steps"]))
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
    r3 = burstiness.theorem3(spec, x["t3_n_blocks"], o["init"], t3["f_r"], t3["f_v"])
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
    em = emergence.emergence(model, o["init"], ref[0], ref[1], float(x["lr"]), x["steps"],
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
