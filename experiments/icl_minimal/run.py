"""Reddy (ICLR 2024) minimal model of ICL vs IWL (docs/icl_minimal.md).

Stages: config -> checks (one-line errors before compiling) -> one ``run_sweep`` per sweep
(seeds x values of one knob, one compiled program each; ``mechjax.models.icl_minimal``) -> per-seed
final and peak ICL/IWL probe accuracies -> summary.json, metrics.npz, figures.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np

from mechjax.cli import experiment
from mechjax.studies.icl_minimal_map import contour_variable
from mechjax.analysis.imir.phase.readoffs import contour_agreement
from mechjax.io import write_json, write_npz
from mechjax.plots.icl_minimal import boundary_figure, knob_figure
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log, run_sweep
from mechjax.tasks import icl_minimal as icl
from mechjax.models.icl_minimal import IclModelConfig, icl_model
from mechjax.training.train import TrainConfig, Trainer, make_train

from experiments.icl_minimal.schema import SCHEMA

TASK_KNOB = {"K": "k", "B": "burstiness", "eps": "noise", "alpha": "zipf", "p_B": "p_bursty",
             "p_C": "p_novel"}
# the knobs the block-list map has a counterpart for (docs/icl_minimal.md)
THEORY_KNOBS = ("K", "B", "eps", "alpha")


def make_trainer(spec: icl.IclSpec, train_cfg: TrainConfig, batch_size: int, eval_size: int,
                 mlp_width: int = 128) -> Trainer:
    """Reddy's network on ``spec``'s task (it reads the query itself: no fast read-out)."""
    model_cfg = IclModelConfig(d=spec.d, n_pos=spec.seq_len, n_labels=spec.n_labels,
                               mlp_width=mlp_width)
    return make_train(icl.make_task(spec, batch_size, eval_size), icl_model(model_cfg),
                      dataclasses.replace(train_cfg, fast_readout=False))


def sweep_spec(config, name: str) -> icl.IclSpec:
    """The task of one sweep; every grid value is checked here (ConfigError, one line)."""
    t, s = config.task, config.sweeps[name]
    spec = icl.IclSpec(d=t.d, n_ctx=t.n_ctx, n_labels=s.n_labels or t.n_labels, k_max=t.k_max,
                       k=s.k or t.k, burstiness=t.burstiness, noise=t.noise, zipf=t.zipf,
                       data_seed=t.data_seed, p_bursty=t.p_bursty, p_novel=t.p_novel)
    for v in s["values"]:
        if s.knob in TASK_KNOB:
            try:
                icl.IclSpec(**{**spec.__dict__, TASK_KNOB[s.knob]: v})
            except Exception as err:
                raise type(err)(f"sweeps.{name}.values: {err}") from None
    return spec


def train_sweep(config, name: str, workdir: str) -> dict[str, Any]:
    s, tr = config.sweeps[name], config.train
    spec = sweep_spec(config, name)
    # optax Adam ignores weight decay; AdamW at weight decay 0 is Adam, so a weight-decay sweep
    # (Singh's "kept by L2") runs under AdamW whatever train.optimizer says.
    optimizer = "adamw" if s.knob == "weight_decay" and tr.optimizer == "adam" else tr.optimizer
    tc = TrainConfig(steps=s.steps, eval_every=tr.eval_every, optimizer=optimizer,
                     eval_chunk=None)
    trainer = make_trainer(spec, tc, tr.batch_size, tr.eval_size, tr.mlp_width)
    key = s.knob if s.knob == "weight_decay" else f"task.{s.knob}"
    grid = {"lr": [tr.lr] * len(s["values"]), key: list(s["values"])}
    if s.knob != "weight_decay":
        grid["weight_decay"] = [tr.weight_decay] * len(s["values"])
    t0 = time.time()
    res = run_sweep(trainer, experiment.seeds(config), grid, os.path.join(workdir, name),
                    chunk_evals=s.chunk_evals, log_every_chunk=False)
    icl_acc, iwl_acc = res.metrics["acc/icl"], res.metrics["acc/iwl"]  # [seeds, grid, evals]
    swap_acc = res.metrics["acc/swap"]
    log(f"{name}: {len(s['values'])} values x {len(res.seeds)} seeds in {time.time() - t0:.0f}s, "
        f"{res.traces} trace(s)")
    return {"values": list(s["values"]), "knob": s.knob, "steps": res.steps,
            "icl": icl_acc, "iwl": iwl_acc, "swap": swap_acc, "traces": res.traces,
            "seconds": time.time() - t0}


def sweep_summary(name: str, out: dict[str, Any], formed: float = 0.75) -> dict[str, Any]:
    """Per seed (rows) and value (columns): final ICL/IWL probe accuracy, peak ICL; per value:
    seeds whose final ICL probe is at least ``formed`` (``icl_formed``)."""
    return {f"{name}/icl_formed_seeds": (out["icl"][..., -1] >= formed).sum(0).tolist(),
            f"{name}/values": out["values"], f"{name}/knob": out["knob"],
            f"{name}/icl_final": np.round(out["icl"][..., -1].astype(float), 3).tolist(),
            f"{name}/iwl_final": np.round(out["iwl"][..., -1].astype(float), 3).tolist(),
            # Reddy's label-swap test: the context's label against the one the weights learned
            f"{name}/swap_final": np.round(out["swap"][..., -1].astype(float), 3).tolist(),
            f"{name}/icl_peak": np.round(out["icl"].max(-1).astype(float), 3).tolist(),
            f"{name}/traces": out["traces"], f"{name}/seconds": round(out["seconds"], 1)}


def theory_points(config, names, arrays, min_count: float | None = None
                  ) -> dict[str, np.ndarray]:
    """Every trained run of a task-knob sweep as one point: its grid point's ``s * b``
    (docs/icl_minimal.md; ``min_count`` default ``config.theory_min_count``), its final ICL probe
    accuracy and the index of its sweep in ``names``."""
    min_count = config.theory_min_count if min_count is None else min_count
    sb, icl_final, sweep = [], [], []
    for i, name in enumerate(names):
        s = config.sweeps[name]
        if s.knob not in THEORY_KNOBS or s.n_labels:  # L = N, the mixtures: no counterpart
            continue
        spec = sweep_spec(config, name)
        for j, v in enumerate(s["values"]):
            knobs = {"k": spec.k, "alpha": spec.zipf, "eps": spec.noise, "b": spec.burstiness,
                     {"K": "k", "B": "b", "eps": "eps", "alpha": "alpha"}[s.knob]: v}
            x = contour_variable(queries_seen=s.steps * config.train.batch_size,
                                 min_count=min_count, **knobs)
            for acc in arrays[f"{name}/icl"][:, j, -1]:
                sb.append(x)
                icl_final.append(float(acc))
                sweep.append(i)
    return {"sb": np.asarray(sb, float), "icl_final": np.asarray(icl_final, float),
            "sweep": np.asarray(sweep, int)}


def theory_separation(config, points: dict[str, np.ndarray]) -> dict[str, Any]:
    """``s * b`` of every run against whether it formed ICL: the best threshold's agreement
    (``contour_agreement``, as for block lists)."""
    if not len(points["sb"]):
        return {}
    formed = points["icl_final"] >= config.icl_formed
    out = contour_agreement(points["sb"], formed)
    return {"theory/sb_threshold": out["c"], "theory/sb_contour_accuracy": out["agreement"],
            **({"theory/sb_contour_undefined": out["undefined"]} if "undefined" in out else {}),
            "theory/n_runs": len(formed), "theory/n_icl_formed": int(formed.sum())}


def held_out_separation(config, names, arrays) -> dict[str, Any]:
    """The map scored out of sample: for each theory sweep, the threshold and ``min_count`` (from
    ``theory_min_counts``) that separate the *other* sweeps best, scored on that sweep's runs;
    beside it the majority outcome of the other sweeps, scored the same way."""
    points = {mc: theory_points(config, names, arrays, mc) for mc in config.theory_min_counts}
    first = points[config.theory_min_counts[0]]
    sweeps = np.unique(first["sweep"])
    if len(sweeps) < 2:
        return {}
    formed = first["icl_final"] >= config.icl_formed
    hits, base, chosen = np.zeros(len(formed), bool), np.zeros(len(formed), bool), {}
    for h in sweeps:
        test, fit = first["sweep"] == h, first["sweep"] != h
        best = None
        for mc, pts in points.items():
            out = contour_agreement(pts["sb"][fit], formed[fit])
            if out["agreement"] is not None and (best is None or out["agreement"] > best[0]):
                best = (out["agreement"], mc, out["c"])
        majority = formed[fit].mean() >= 0.5
        base[test] = formed[test] == majority
        if best is None:  # the other sweeps hold one outcome: the majority is all they say
            hits[test] = base[test]
            chosen[names[h]] = {"min_count": None, "threshold": None}
            continue
        hits[test] = (points[best[1]]["sb"][test] >= best[2]) == formed[test]
        chosen[names[h]] = {"min_count": best[1], "threshold": best[2],
                            "accuracy": float(hits[test].mean())}
    return {"theory/held_out_accuracy": float(hits.mean()),
            "theory/held_out_majority_baseline": float(base.mean()),
            "theory/held_out_per_sweep": chosen}


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    names = list(config.run_sweeps)
    for name in names:  # every check before anything compiles
        sweep_spec(config, name)
    experiment.start(workdir, config, overwrite)
    summary: dict[str, Any] = {"n_seeds": config.n_seeds}
    arrays = {}
    for name in names:
        out = train_sweep(config, name, workdir)
        summary.update(sweep_summary(name, out, config.icl_formed))
        arrays.update({f"{name}/icl": out["icl"], f"{name}/iwl": out["iwl"],
                       f"{name}/swap": out["swap"],
                       f"{name}/values": np.asarray(out["values"]), f"{name}/steps": out["steps"]})
        save_figure(knob_figure(out["values"], out["icl"][..., -1], out["iwl"][..., -1],
                                out["knob"], f"{name}: {config.n_seeds} seeds"),
                    os.path.join(workdir, "figures", f"{name}.png"))
    points = theory_points(config, names, arrays)
    summary.update(theory_separation(config, points))
    summary.update(held_out_separation(config, names, arrays))
    if len(points["sb"]):
        arrays.update({f"theory/{k}": v for k, v in points.items()})
        save_figure(boundary_figure(points["sb"], points["icl_final"],
                                    [names[i] for i in points["sweep"]],
                                    summary["theory/sb_threshold"], config.icl_formed),
                    os.path.join(workdir, "figures", "theory_boundary.png"))
    write_npz(os.path.join(workdir, "metrics.npz"), arrays)
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json")
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    lines = []
    for k, v in summary.items():
        lines.append(f"{k:>24s}: {v}")
    return "\n".join(lines)
