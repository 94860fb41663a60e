"""The seed atlas job: a saved run's seeds measured at every saved step, grouped, the measures
that separate the groups ranked, the earliest separating step, a figure and summary.json.

Data flow: ``runs.open(config.run)`` -> ``measure_table`` (Fourier sparsity and norm of W_E,
whole-weight norm at each snapshot) joined with the run's metrics at the same steps ->
``trajectory_similarity`` of ``group_by`` -> ``cluster_seeds`` -> ``rank_measures`` and (two
groups) ``earliest_separating_step`` -> ``workdir/{table.npz, summary.json,
figures/seed_atlas.png}``. The run is only read; nothing is trained.
"""
from __future__ import annotations

import os
from typing import Any

import jax.numpy as jnp
import numpy as np

from mechjax.cli import experiment
from mechjax.sweeps import runs
from mechjax.analysis import fourier
from mechjax.analysis import seed_atlas as sa
from mechjax.analysis.seeds import seed_stats
from mechjax.models.config import ConfigError
from mechjax.io import write_json, write_npz
from mechjax.plots import seed_atlas as atlas_plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log

from experiments.seed_atlas.schema import SCHEMA


def snapshot_measures(k: int) -> dict[str, sa.table.Measure]:
    """The measures read off each snapshot: ``fourier/top<k>`` (share of W_E's non-constant
    Fourier energy in its k strongest frequencies), ``norm/W_E`` and ``norm/all``."""
    return {f"fourier/top{k}": lambda p, cfg: fourier.top_k_energy_fraction(
                fourier.frequency_norms(p["embed.W_E"]), k),
            "norm/W_E": lambda p, cfg: jnp.linalg.norm(p["embed.W_E"]),
            "norm/all": lambda p, cfg: jnp.sqrt(sum(jnp.sum(v ** 2) for v in p.values()))}


def read_table(config) -> tuple[runs.Run, list[int], dict[str, np.ndarray]]:
    """The run, the saved steps that also have an evaluation, and the table at those steps."""
    run = runs.open(config.run, config.sweep or None)
    if config.grid >= run.n_grid:
        raise ConfigError(f"grid={config.grid}: the run has {run.n_grid} grid point(s)")
    metrics = run.metrics_at(config.grid)
    missing = [m for m in config.metrics if m not in metrics]
    if missing:
        raise ConfigError(f"metrics={list(config.metrics)}: the run has no {missing}; it has "
                          f"{sorted(metrics)}")
    evals = run.steps.tolist()
    steps = [s for s in run.steps_saved if s in evals]
    if len(steps) < 2:
        raise ConfigError(f"run {config.run!r}: {len(steps)} saved step(s) with an evaluation "
                          f"(saved {run.steps_saved}, evaluated {evals}); need 2")
    table = sa.measure_table(run, snapshot_measures(config.fourier_k), steps, config.grid)
    cols = [evals.index(s) for s in steps]
    table.update({m: np.asarray(metrics[m][:, cols], np.float64) for m in config.metrics})
    unknown = [m for m in config.group_by if m not in table]
    if unknown:
        raise ConfigError(f"group_by={list(config.group_by)}: no measure {unknown}; the table "
                          f"has {sorted(table)}")
    return run, steps, table


def analyse(config, steps: list[int], table: dict[str, np.ndarray]) -> dict[str, Any]:
    """Groups, ranked measures and (for two groups of 2+ seeds) the earliest separating step."""
    grouping = sa.cluster_seeds(sa.trajectory_similarity(table, config.group_by, "distance"),
                                min_silhouette=config.min_silhouette)
    out = {"grouping": grouping, "separation": None,
           "ranked": sa.rank_measures(table, grouping.labels) if grouping.n_groups > 1 else []}
    sizes = np.bincount(grouping.labels)
    if grouping.n_groups == 2 and sizes.min() >= 2:
        out["separation"] = sa.earliest_separating_step(
            steps, table, grouping.labels == 1, min_accuracy=config.min_accuracy)
    return out


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    if not config.run:
        raise ConfigError("run='': name the run to read with --run=RUN (a mechjax workdir)")
    run_, steps, table = read_table(config)  # every check before the workdir is touched
    experiment.start(workdir, config, overwrite)
    log(f"seed_atlas: {len(run_.seeds)} seeds of {run_.path} at {len(steps)} saved steps")
    found = analyse(config, steps, table)
    summary = make_summary(run_, steps, table, found)
    write_npz(os.path.join(workdir, "table.npz"),
              {"steps": np.asarray(steps), "seeds": np.asarray(run_.seeds),
               "labels": found["grouping"].labels, **{f"measure/{k}": v for k, v in table.items()}})
    sep = found["separation"]
    save_figure(atlas_plots.seed_curves(
        steps, table, found["grouping"].labels, marks=[sep.step] if sep and sep.step else [],
        title=f"{len(run_.seeds)} seeds in {found['grouping'].n_groups} group(s)"),
        os.path.join(workdir, "figures", "seed_atlas.png"))
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json, table.npz and figures/")
    return summary


def make_summary(run_: runs.Run, steps: list[int], table: dict[str, np.ndarray],
                 found: dict[str, Any]) -> dict[str, Any]:
    grouping, sep = found["grouping"], found["separation"]
    return {
        "run": run_.path, "seeds": run_.seeds, "steps": steps,
        "n_groups": grouping.n_groups, "labels": grouping.labels.tolist(),
        "silhouette": None if grouping.n_groups == 1 else grouping.silhouette,
        "silhouettes": {str(k): v for k, v in grouping.silhouettes.items()},
        "ranked": [{"measure": r.name, "eta_squared": r.score, "step": steps[r.step_index]}
                   for r in found["ranked"]],
        "separation": None if sep is None else {
            "step": sep.step, "measure": sep.measure,
            "accuracy": None if sep.step is None else sep.accuracy, "first": sep.first},
        "final": {name: seed_stats(v[:, -1]) for name, v in table.items()},
    }


def format_summary(summary: dict[str, Any]) -> str:
    sep = summary["separation"] or {}
    rows = {"n_seeds": len(summary["seeds"]), "n_groups": summary["n_groups"],
            "labels": summary["labels"], "silhouette": summary["silhouette"],
            "top measure": summary["ranked"][0]["measure"] if summary["ranked"] else None,
            "separating step": sep.get("step"), "separating measure": sep.get("measure"),
            "held-out accuracy": sep.get("accuracy")}
    return "\n".join(f"{k:>20s}: {v}" for k, v in rows.items())
