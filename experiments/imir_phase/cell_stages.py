"""The trained-cell stages of ``experiments.imir_phase.run``: cells straddling the exact
diagram's boundaries trained as the theory's architecture and as the standard one."""
from __future__ import annotations

import os
import time

import jax
import numpy as np

from mechjax.analysis.imir.cells import standard as std_cells
from mechjax.analysis.imir.cells import theory as imir_cells
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.phase import diagrams
from mechjax.analysis.imir.phase.diagrams import PhaseDiagram
from mechjax.analysis.imir.phase import clockfree as cf
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.plots import imir as plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log
from mechjax.sweeps.timing import load_average

from experiments.imir_phase.common import first_step, grid_settings, winner_panel
from experiments.imir_phase.config_checks import sgd_steps


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


def theory_cells(c: dict, ex: PhaseDiagram, summary: dict, metrics: dict) -> dict:
    """Cells straddling the exact diagram's boundaries trained as full transformers (the theory's
    architecture, vmapped), to the diagram's horizon: winner agreement and final accuracies."""
    v, e, o = c["validate"], c["exact"], c["ode"]
    pick = straddling_cells(ex.grid("winner"), v["n_cells"], v["seed"])
    fr_c, fv_c = ex.X.ravel()[pick], ex.Y.ravel()[pick]
    steps = int(round(float(e["t1"]) / v["lr"]))
    n_save = e["n_save"]
    steps -= steps % n_save
    log(f"training {len(pick)} full transformers on cells straddling the exact boundary, "
        f"{steps} SGD steps, lr {v['lr']}, batch {v['batch_size']}")
    t0 = time.perf_counter()
    tr = imir_cells.train_cells(ex.spec, o["init"], fr_c, fv_c, float(v["lr"]), steps,
                                n_save, v["batch_size"], v["eval_size"], v["seed"],
                                rare_pool="cell")
    train_s = time.perf_counter() - t0
    ro_tr = ph.readoff({**tr, "acc_rare": tr["p_rare"]}, tr["t"], o["threshold"])
    ro_ex = {k: v_[pick] for k, v_ in ex.cells.items()}
    # one seed per cell, on the diagram's own clock (t = step x lr) and from its start point
    one_seed = {"step": tr["t"], "p_rare": tr["p_rare"][:, None], "p_iwl": tr["p_iwl"][:, None]}
    summary.update(clockfree_agreement(ex, pick, one_seed, o["threshold"], "theory_arch"))
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
        "speed/ratio_train_per_cell_vs_grid": per_cell * ex.X.size / ex.seconds})
    metrics.update({"cells_exact/p_rare": tr["p_rare"], "cells_exact/p_iwl": tr["p_iwl"],
                    "cells_exact/t": tr["t"], "cells_exact/index": pick})
    return {"x": fr_c, "y": fv_c, "winner": ro_tr["winner"], "p_rare": ro_tr["p_rare"],
            "emergence": ro_tr["emergence"], "label": "theory's architecture"}


def standard_cells(c: dict, ex: PhaseDiagram, summary: dict, metrics: dict,
                   workdir: str | None = None) -> dict:
    """The straddling cells of ``theory_cells`` (``validate.seed``'s pick: the same cells when
    ``n_cells`` agree) trained as the standard architecture (``cells.standard``; ``workdir``:
    the sweep resumes there), all cells x seeds in one program: winner agreement with the exact
    diagram over every (cell, seed) run, per-seed winners and their per-cell majority."""
    vs, o = c["validate_standard"], c["ode"]
    pick = straddling_cells(ex.grid("winner"), vs["n_cells"],
                            c["validate"]["seed"])
    fr_c, fv_c = ex.X.ravel()[pick], ex.Y.ravel()[pick]
    seeds = list(range(vs["seed"], vs["seed"] + vs["n_seeds"]))
    log(f"training the standard architecture on {len(pick)} straddling cells x {len(seeds)} "
        f"seeds (one program), d_model {vs['d_model']}, {vs['steps']} {vs['optimizer']} steps, "
        f"lr {vs['lr']}, batch {vs['batch_size']}, load {load_average()}")
    t0 = time.perf_counter()
    tr = std_cells.train_standard_cells(
        ex.spec, fr_c, fv_c, seeds, vs["d_model"], vs["steps"], float(vs["lr"]),
        vs["batch_size"], vs["eval_size"], vs["n_evals"], o["threshold"], vs["optimizer"],
        workdir)
    train_s = time.perf_counter() - t0
    w_ex = ex.cells["winner"][pick]
    major = std_cells.majority(tr["winner"])
    final = {k: tr[k][..., -1] for k in std_cells.READOFFS}
    log(f"standard architecture: {train_s:.1f} s, load {load_average()}")
    summary.update(clockfree_agreement(ex, pick, tr, o["threshold"], "standard_arch"))
    summary.update({
        # one horizon: the exact diagram's t1 against the last optimizer step (not one clock)
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
            final[k].mean(1) - ex.cells[k][pick]))) for k in ("p_rare", "acc_rare", "p_iwl")},
        "cells_standard/loss_first_last": [float(np.mean(tr["loss"][..., 0])),
                                           float(np.mean(tr["loss"][..., -1]))],
        "cells_standard/train_seconds": train_s, "cells_standard/load": load_average()})
    metrics.update({f"cells_standard/{k}": tr[k] for k in (*std_cells.READOFFS, "loss", "step",
                                                           "winner")})
    metrics["cells_standard/index"] = pick
    runs = {"standard_arch": tr}
    if vs["sgd_lr"]:
        sgd_summary, runs["standard_arch_sgd"] = sgd_arm(
            c, ex, pick, seeds, metrics, workdir and workdir.rstrip("/") + "_sgd")
        summary.update(sgd_summary)
    # no emergence on the diagram: it is in optimizer steps, not on the diagram's time axis
    # (clockfree_agreement ranks it across cells instead); ``runs`` and ``pick`` feed
    # ``start_control``
    return {"x": fr_c, "y": fv_c, "winner": major, "p_rare": final["p_rare"].mean(1),
            "marker": "o", "size": 40,
            "label": "standard architecture (seed majority, mean p)", "runs": runs, "pick": pick}


def sgd_arm(c: dict, ex: PhaseDiagram, pick: np.ndarray, seeds: list[int], metrics: dict,
            workdir: str | None = None) -> tuple[dict, dict]:
    """The standard architecture on cells ``pick`` trained with plain SGD at
    ``validate_standard.sgd_lr`` for ``exact.t1 / sgd_lr`` steps, so that t = step x lr
    (the theory architecture's matching, ``theory_cells``; no Adam rescaling of the gradient):
    ``standard_arch_sgd/winner_agreement`` (one horizon, the last step against the exact t1,
    with seed spread), its clock-free comparisons and the run's steps, lr and time; and the
    trained curves on the diagram's clock."""
    vs, o = c["validate_standard"], c["ode"]
    lr = float(vs["sgd_lr"])
    steps = sgd_steps(c["exact"]["t1"], lr, vs["n_evals"])
    fr_c, fv_c = ex.X.ravel()[pick], ex.Y.ravel()[pick]
    log(f"the standard architecture with plain SGD: {len(pick)} cells x {len(seeds)} seeds, "
        f"{steps} steps at lr {lr} (t = {steps * lr:g}), load {load_average()}")
    t0 = time.perf_counter()
    tr = std_cells.train_standard_cells(
        ex.spec, fr_c, fv_c, seeds, vs["d_model"], steps, lr, vs["batch_size"],
        vs["eval_size"], vs["n_evals"], o["threshold"], "sgd", workdir)
    train_s = time.perf_counter() - t0
    arm = "standard_arch_sgd"
    metrics.update({f"cells_standard_sgd/{k}": tr[k] for k in (*std_cells.READOFFS, "loss",
                                                               "step", "winner")})
    # on the diagram's clock (t = step x lr); the clock-free measures do not depend on it
    timed = {**tr, "step": np.asarray(tr["step"], np.float64) * lr}
    out = {**_keys(f"{arm}/winner_agreement", cf.agreement(ex.cells["winner"][pick],
                                                           tr["winner"])),
           **clockfree_agreement(ex, pick, timed, o["threshold"], arm),
           f"{arm}/steps": steps, f"{arm}/lr": lr, f"{arm}/t_last": steps * lr,
           # SGD at a large lr can blow up (its read-offs then count as "neither"): runs whose
           # last loss is not below the first (NaN included), how many
           f"{arm}/diverged_runs": int(np.sum(~(tr["loss"][..., -1] <= tr["loss"][..., 0]))),
           f"{arm}/winner_per_seed": [[ph.WINNERS[w] for w in row] for row in tr["winner"]],
           f"{arm}/loss_first_last": [float(np.mean(tr["loss"][..., 0])),
                                      float(np.mean(tr["loss"][..., -1]))],
           f"{arm}/train_seconds": train_s}
    return out, timed


def clockfree_agreement(ex: PhaseDiagram, pick: np.ndarray, tr: dict, threshold: float,
                        arm: str) -> dict:
    """The exact diagram's curves at cells ``pick`` (on ``ex.t``) against trained curves
    ``tr`` (``[cell, seed, n_evals]`` on ``tr["step"]``), each on its own time axis
    (``phase.clockfree``): ``{arm}/order_agreement`` (which of ICL, IWL forms first),
    ``{arm}/emergence_spearman`` (ICL emergence ranked across cells) and
    ``{arm}/stable_winner_agreement`` (winner unchanged over the second half of each run,
    ``[t/2, t]``), each with ``_cells`` and the seed spread."""
    t_ex, step = ex.t, np.asarray(tr["step"], np.float64)
    icl_ex, iwl_ex = (np.asarray(ex.curves[k])[pick] for k in ("p_rare", "p_iwl"))
    order = cf.agreement(cf.first_to_form(t_ex, icl_ex, iwl_ex, threshold),
                         cf.first_to_form(step, tr["p_rare"], tr["p_iwl"], threshold))
    rho = cf.emergence_spearman(cf.emergence_time(t_ex, icl_ex, threshold),
                                cf.emergence_time(step, tr["p_rare"], threshold))
    out = {}
    if step[0] <= step[-1] / 2:  # a stable winner needs a saved point at or before t/2
        stable = cf.agreement(
            cf.stable_winner(t_ex, icl_ex, iwl_ex, threshold, t_ex[-1] / 2),
            cf.stable_winner(step, tr["p_rare"], tr["p_iwl"], threshold, step[-1] / 2))
        out.update(_keys(f"{arm}/stable_winner_agreement", stable))
    return {**out, **_keys(f"{arm}/order_agreement", order),
            **_keys(f"{arm}/emergence_spearman", rho)}


def _keys(name: str, m: dict) -> dict:
    """``name`` (the value), ``name_cells`` and the rest of ``m`` as ``name_<field>``."""
    return {name: m["value"], **{f"{name}_{k}": v for k, v in m.items() if k != "value"}}


def start_control(c: dict, ex: PhaseDiagram, standard: dict, summary: dict, metrics: dict,
                  fig_dir: str) -> None:
    """Does the exact diagram's start point decide its agreement with the standard
    architecture? The (f_r, f_v) diagram re-solved from ``start_control``'s starts: ``delta0``
    (``ode.init`` without the in-weights head start, delta = 0) and ``projected`` (a random
    init of the theory's architecture projected on the manifold,
    ``dynamics.model.random_start``). Per start: its winner counts, the fraction of cells whose
    winner is the default start's, and each trained arm of ``standard["runs"]`` compared with
    it clock-free at the trained cells (``{arm}/start_{name}/...``, as ``clockfree_agreement``).
    """
    sc, e, o = c["start_control"], c["exact"], c["ode"]
    model = exact.make(ex.spec)
    starts = {}
    if sc["delta0"]:
        starts["delta0"] = exact.abgd_init(model, [*o["init"][:3], 0.0])
    if sc["projected"]:
        starts["projected"] = exact.random_start(model, jax.random.key(sc["seed"]), sc["std"])
    panels = [winner_panel(ex, f"start (alpha, beta, gamma, delta) = {tuple(o['init'])}")]
    for name, theta0 in starts.items():
        log(f"imir_phase: the exact diagram from the {name} start, load {load_average()}")
        d = diagrams.fr_fv_diagram(ex.spec, o["init"], ex.x, ex.y, float(e["t1"]), e["n_save"],
                                   o["threshold"], e["rtol"], first_step(e["t1"], e["n_steps"]),
                                   theta0=theta0, **grid_settings(e))
        same = d.cells["winner"] == ex.cells["winner"]
        summary.update({f"start_control/{name}/winner_counts": ph.winner_counts(d.cells["winner"]),
                        f"start_control/{name}/same_winner_as_default": float(np.mean(same)),
                        f"start_control/{name}/contour_sb": d.contour,
                        f"start_control/{name}/theta0_abs_max": float(np.abs(theta0).max())})
        for arm, tr in standard["runs"].items():
            summary.update(clockfree_agreement(d, standard["pick"], tr, o["threshold"],
                                               f"{arm}/start_{name}"))
        metrics[f"start_control/{name}/winner"] = d.grid("winner")
        title = {"delta0": "start delta = 0",
                 "projected": f"random init (std {sc['std']}) projected"}[name]
        panels.append(winner_panel(d, title))
    save_figure(plots.winner_panels(panels, "f_r (rare fraction)",
                                    "f_v (within-class variability)", ph.WINNERS,
                                    f"exact reduced dynamics from three starts, t1={e['t1']}"),
                os.path.join(fig_dir, "phase_starts.png"))
