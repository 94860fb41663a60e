"""Who binds, and from when it is visible: the seed atlas of an Assign-and-Add run.

    python -m experiments.seed_atlas.assign_add --run=RUN --workdir=OUT [--config=...]

Data flow: ``runs.open(config.run)`` (an ``experiments.assign_add`` run with parameter snapshots;
only read) -> seeds labelled *bound* where the run's final ``outcome`` metric (1-var restricted
accuracy; at evaluation ``outcome_step`` when given, and then only steps up to it count) is
>= ``bound_at`` -> the seven progress measures (docs/assign_add.md) of every seed at every
saved step, from the snapshots (``measure_table``; probe data drawn from the run's own split)
-> ``earliest_separating_step``: the first saved step from which a one-measure threshold, fit
on half the seeds, tells bound from never-bound seeds on the other half (>= ``min_accuracy`` at
that and every later step) -> the same on the progress measures the run recorded at every
evaluation (finer in time) -> ``cluster_seeds`` on the outcome trajectory as a check of the
two-group reading -> ``workdir/{table.npz, summary.json, figures/seed_atlas.png}``.
"""
from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np

from experiments.assign_add import analysis as aa_analysis
from experiments.seed_atlas.schema import AA_ALIASES, AA_SCHEMA
from mechjax.cli import experiment
from mechjax.sweeps import runs
from mechjax.studies import assign_add_mech as mech
from mechjax.analysis import seed_atlas as sa
from mechjax.analysis.seeds import seed_stats
from mechjax.models.config import ConfigError
from mechjax.io import write_json, write_npz
from mechjax.plots import seed_atlas as atlas_plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log
from mechjax.tasks import assign_add as aa

PROGRESS = tuple(f"progress/{m}" for m in aa_analysis.PROGRESS)
GROUP_NAMES = ("never bound", "bound")


def open_run(config) -> tuple[runs.Run, list[int], np.ndarray]:
    """The run, its saved steps, and ``bound [n_seeds]`` from the final outcome metric (every
    check before anything is computed or written)."""
    run = runs.open(config.run, config.sweep or None)
    task = (run.config or {}).get("task")
    if not task or "split" not in task:
        raise ConfigError(f"run={config.run!r}: no assign_add config.json (task.split); this "
                          "command reads experiments.assign_add runs")
    metrics = run.metrics_at(0)
    if config.outcome not in metrics:
        raise ConfigError(f"outcome={config.outcome!r}: the run has no such metric; it has "
                          f"{sorted(k for k in metrics if k.startswith('acc/'))}")
    evals = run.steps.tolist()
    at = config.outcome_step or (evals[-1] if evals else 0)
    if at not in evals:
        raise ConfigError(f"outcome_step={config.outcome_step!r}: not an evaluated step; the run "
                          f"has {evals[:3]} ... {evals[-3:]} (0: the last)")
    steps = [s for s in run.steps_saved if s <= at]
    if len(steps) < 2:
        raise ConfigError(f"run {config.run!r}: {len(steps)} saved step(s) {steps} up to step "
                          f"{at}; the atlas needs 2+ (train with --config.snapshot_every_chunks=1)")
    bound = metrics[config.outcome][:, evals.index(at)] >= config.bound_at
    return run, steps, bound


def snapshot_table(run: runs.Run, steps: list[int], config) -> dict[str, np.ndarray]:
    """``progress/<measure>`` ``[n_seeds, n_steps]`` at the saved ``steps``, on probe data from the
    run's split (one vmapped forward per step for all seven)."""
    task = run.config["task"]
    split = aa.authors_split(task["split_seed"]) if task["split"] == "authors" else \
        aa.seeded_split(task["split_seed"])
    probe = mech.probe_data(jax.random.PRNGKey(config.probe_seed), config.probe_size, split,
                            task["f"])
    return sa.measure_table(run, {"progress": lambda p, cfg: mech.progress_measures(p, probe, cfg)},
                            steps)


def separation(steps, table, bound: np.ndarray, names, min_accuracy: float):
    """``earliest_separating_step`` of ``names`` when each group has 2+ seeds, else None."""
    if min(bound.sum(), (~bound).sum()) < 2:
        return None
    return sa.earliest_separating_step(steps, table, bound, names, min_accuracy=min_accuracy)


def chosen_on_fit_half(table: dict[str, np.ndarray], bound: np.ndarray, column: int
                       ) -> dict[str, Any]:
    """The predictor with nothing chosen on the seeds it is scored on: in each fold of
    ``sa.halves``, the measure and threshold with the best accuracy on the fit half at saved
    step ``column``, scored on the other half. ``earliest_separating_step`` picks the measure
    by its held-out accuracy, which flatters it; this does not."""
    folds = sa.halves(bound)
    out = []
    for fit, test in (folds, folds[::-1]):
        best = max(sorted(table), key=lambda n: sa.accuracy(
            sa.fit_threshold(table[n][fit, column], bound[fit]), table[n][fit, column],
            bound[fit]))
        rule = sa.fit_threshold(table[best][fit, column], bound[fit])
        out.append({"measure": best, "accuracy": sa.accuracy(rule, table[best][test, column],
                                                            bound[test])})
    return {"folds": out, "accuracy": float(np.mean([f["accuracy"] for f in out]))}


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = AA_SCHEMA.validate(config)
    if not config.run:
        raise ConfigError("run='': name the run to read with --run=RUN (an assign_add workdir)")
    run_, steps, bound = open_run(config)
    experiment.start(workdir, config, overwrite)
    log(f"seed_atlas.assign_add: {len(run_.seeds)} seeds of {run_.path}, {int(bound.sum())} "
        f"bound, at {len(steps)} saved steps")
    table = snapshot_table(run_, steps, config)
    metrics, evals = run_.metrics_at(0), run_.steps.tolist()
    upto = len([e for e in evals if e <= (config.outcome_step or evals[-1])])
    metrics, evals = {k: v[:, :upto] for k, v in metrics.items()}, evals[:upto]
    recorded = {m: np.asarray(metrics[m], np.float64) for m in PROGRESS if m in metrics}
    found = {"snapshots": separation(steps, table, bound, sorted(table), config.min_accuracy),
             "evaluations": separation(evals, recorded, bound, sorted(recorded),
                                       config.min_accuracy) if recorded else None}
    grouping = sa.cluster_seeds(sa.trajectory_similarity(
        {"o": np.asarray(metrics[config.outcome], np.float64)}, kind="distance"))
    summary = make_summary(run_, steps, bound, table, found, grouping, config)
    sep = found["snapshots"]
    if sep is not None and sep.step is not None:
        summary["separation"]["chosen_on_fit_half"] = chosen_on_fit_half(
            table, bound, steps.index(sep.step))
    shown = {config.outcome: at_steps(metrics[config.outcome], evals, steps), **table}
    write_npz(os.path.join(workdir, "table.npz"),
              {"steps": np.asarray(steps), "seeds": np.asarray(run_.seeds),
               "bound": bound.astype(np.int64), **{f"measure/{k}": v for k, v in shown.items()}})
    draw(workdir, steps, shown, evals, metrics, bound, found["snapshots"], config)
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json, table.npz and figures/")
    return summary


def at_steps(values: np.ndarray, evals: list[int], steps: list[int]) -> np.ndarray:
    """``values [n_seeds, n_evals]`` at ``steps`` (NaN where a step had no evaluation: step 0)."""
    out = np.full((values.shape[0], len(steps)), np.nan)
    for j, step in enumerate(steps):
        if step in evals:
            out[:, j] = values[:, evals.index(step)]
    return out


def draw(workdir: str, steps, shown, evals, metrics, bound: np.ndarray, sep, config) -> None:
    """``figures/seed_atlas.png`` (the outcome and the seven measures at the saved steps, the
    separating step marked) and ``figures/accuracy_by_group.png`` (every evaluation pool's
    accuracy, one line per seed coloured bound / never bound: the run's accuracy figure without
    the mean and band that hide the split)."""
    names = [n for n, present in zip(GROUP_NAMES, (not bound.all(), bound.any())) if present]
    title = f"{int(bound.sum())}/{len(bound)} seeds bind ({config.outcome} >= {config.bound_at})"
    save_figure(atlas_plots.seed_curves(
        steps, shown, bound.astype(int), marks=[sep.step] if sep and sep.step is not None else [],
        group_names=names, title=title), os.path.join(workdir, "figures", "seed_atlas.png"))
    acc = {k: metrics[k] for k in sorted(metrics) if k.startswith("acc/")}
    save_figure(atlas_plots.seed_curves(np.asarray(evals), acc, bound.astype(int),
                                        group_names=names, title=title),
                os.path.join(workdir, "figures", "accuracy_by_group.png"))


def _separation_json(sep) -> dict[str, Any] | None:
    if sep is None:
        return None
    return {"step": sep.step, "measure": sep.measure,
            "accuracy": None if sep.step is None else sep.accuracy, "first": sep.first}


def make_summary(run_: runs.Run, steps: list[int], bound: np.ndarray, table, found, grouping,
                 config) -> dict[str, Any]:
    return {
        "run": run_.path, "seeds": run_.seeds, "steps": steps,
        "outcome": config.outcome, "bound_at": config.bound_at,
        "outcome_step": config.outcome_step or None,
        "bound": bound.astype(int).tolist(), "n_bound": int(bound.sum()),
        "fraction_bound": float(bound.mean()),
        "separation": _separation_json(found["snapshots"]),
        "separation_evaluations": _separation_json(found["evaluations"]),
        "outcome_clusters": {"n_groups": grouping.n_groups, "labels": grouping.labels.tolist(),
                             "agrees_with_bound": bool(grouping.n_groups == 2 and len(
                                 {tuple(x) for x in zip(grouping.labels, bound)}) == 2)},
        "final": {name: {g: seed_stats(v[:, -1][bound == (g == "bound")])
                         for g in GROUP_NAMES} for name, v in table.items()},
    }


def format_summary(summary: dict[str, Any]) -> str:
    rows = {"seeds": len(summary["seeds"]),
            "bound": f"{summary['n_bound']} ({summary['fraction_bound']:.2f})"}
    for key in ("separation", "separation_evaluations"):
        sep = summary[key] or {}
        rows[key] = f"step {sep.get('step')} measure {sep.get('measure')} held-out accuracy " \
                    f"{sep.get('accuracy')}"
    chosen = (summary["separation"] or {}).get("chosen_on_fit_half")
    if chosen:
        rows["chosen on fit half"] = f"accuracy {chosen['accuracy']} " + ", ".join(
            f"{f['measure']} {f['accuracy']}" for f in chosen["folds"])
    rows["outcome clusters"] = summary["outcome_clusters"]
    return "\n".join(f"{k:>22s}: {v}" for k, v in rows.items())


if __name__ == "__main__":
    experiment.run_cli(run, format_summary, __file__, AA_SCHEMA, default_config="assign_add.py",
                       aliases=AA_ALIASES)
