"""ACE on the binding circuit across the seeds of an Assign-and-Add run (docs/seed_atlas.md).

    python -m experiments.seed_atlas.binding_cores --run=RUN --workdir=OUT [--step=STEP]

Data flow: ``runs.open(config.run)`` (an ``experiments.assign_add`` run with parameter
snapshots; only read; every check before anything compiles) -> seeds labelled by their
``outcome`` metric (>= ``bound_at``, as ``experiments.seed_atlas.assign_add`` labels them) ->
the parameters of every seed at saved step ``step`` -> ``binding_cores.binding_cores`` (the ACE
core at the layer-2 MLP input at ``=`` on 2-var queries drawn from the run's own split) ->
``binding_cores.compare_cores`` (seeds x seeds overlap and CCA, ``cluster_seeds`` on each,
agreement with the outcome labels) -> ``OUT/{matrices.npz, summary.json,
figures/binding_cores.png}`` (both matrices with the seeds ordered by outcome group).
"""
from __future__ import annotations

import os
import time
from typing import Any

import jax
import numpy as np

from experiments.seed_atlas import assign_add as atlas_aa
from experiments.seed_atlas.schema import BC_ALIASES, BC_SCHEMA
from mechjax.cli import experiment
from mechjax.sweeps import runs
from mechjax.studies import binding_cores as bc
from mechjax.analysis.seeds import seed_stats
from mechjax.models.config import ConfigError
from mechjax.io import write_json, write_npz
from mechjax.plots import ace as ace_plots
from mechjax.plots import canvas
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log
from mechjax.tasks import assign_add as aa
from mechjax.filecheck import RunError


def open_run(config) -> tuple[runs.Run, int, np.ndarray]:
    """The run, the step analysed and the outcome labels ``[n_seeds]`` (0/1), every key checked
    against the run before anything is computed or written."""
    if not config.run:
        raise ConfigError("run='': name the run to read with --run=RUN (an assign_add workdir)")
    try:
        run, _, bound = atlas_aa.open_run(config)
    except RunError as e:  # a missing or broken run is the user's input, named in one line
        raise ConfigError(f"run={config.run!r}: {e}") from None
    saved = run.steps_saved
    step = config.step or saved[-1]
    if step not in saved:
        raise ConfigError(f"step={config.step!r}: no parameters saved there; saved steps: "
                          f"{saved} (0: the last)")
    if config.jac_samples > config.probe_size:
        raise ConfigError(f"jac_samples={config.jac_samples} exceeds probe_size="
                          f"{config.probe_size}")
    d_model = run.model_cfg.d_model
    if config.compare_dims > d_model:
        raise ConfigError(f"compare_dims={config.compare_dims} exceeds the run's d_model "
                          f"{d_model}")
    return run, step, bound.astype(np.int64)


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = BC_SCHEMA.validate(config)
    run_, step, labels = open_run(config)
    experiment.start(workdir, config, overwrite)
    t0 = time.perf_counter()
    task = run_.config["task"]
    split = aa.authors_split(task["split_seed"]) if task["split"] == "authors" else \
        aa.seeded_split(task["split_seed"])
    inputs = bc.binding_inputs(jax.random.PRNGKey(config.probe_seed), config.probe_size,
                               config.jac_samples, split, task["f"])
    log(f"seed_atlas.binding_cores: {len(run_.seeds)} seeds of {run_.path} at step {step}, "
        f"{int(labels.sum())} with {config.outcome} >= {config.bound_at}")
    pipe = bc.binding_pipeline(config.tau, config.float64, config.compare_dims)
    result, timing = bc.binding_cores(run_.stacked_params(step), inputs, run_.model_cfg, pipe)
    summary, mats = bc.compare_cores(result, labels, config.compare_dims)
    summary.update({
        "run": run_.path, "seeds": run_.seeds, "step": step, "outcome": config.outcome,
        "bound_at": config.bound_at, "labels": labels.tolist(), "n_labelled_1": int(labels.sum()),
        "core_dim_stats": seed_stats(np.asarray(summary["core_dim"], np.float64)),
        "accuracy_stats": {k: seed_stats(np.asarray(v)) for k, v in summary["accuracy"].items()},
        "ace_seconds": timing["seconds"], "ace_compile_seconds": timing["compile_seconds"],
        "seconds": time.perf_counter() - t0})
    write_npz(os.path.join(workdir, "matrices.npz"),
              {**mats, "labels": labels, "seeds": np.asarray(run_.seeds),
               "core_dim": np.asarray(summary["core_dim"]),
               "weights": np.asarray(result.core.weights)})
    draw(workdir, mats, labels, run_.seeds, summary)
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json, matrices.npz and figures/")
    return summary


def draw(workdir: str, mats, labels: np.ndarray, seeds, summary) -> None:
    """``figures/binding_cores.png``: overlap and the CCAs side by side, seeds ordered by outcome
    group (then by seed), a line between the groups."""
    order = np.lexsort((np.arange(len(labels)), labels))
    names = [k for k in mats if k == "overlap" or k.startswith("cca")]
    fig = canvas.figure_or_new(None, (6 * len(names), 5.5))
    for ax, name in zip(fig.subplots(1, len(names)), names):
        s = summary[name]
        title = (f"{name}, step {summary['step']}: label silhouette "
                 f"{_fmt(s['label_silhouette'])}, ARI {_fmt(s['clusters']['adjusted_rand'])}")
        ace_plots.seed_matrix(mats[name][np.ix_(order, order)], title,
                              [seeds[i] for i in order], 0.0, 1.0, ax=ax)
        cut = int((labels == 0).sum()) - 0.5
        ax.axhline(cut, color="w", lw=1.5)
        ax.axvline(cut, color="w", lw=1.5)
    save_figure(fig, os.path.join(workdir, "figures", "binding_cores.png"))


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def format_summary(summary: dict[str, Any]) -> str:
    rows = {"seeds": f"{len(summary['seeds'])} at step {summary['step']}, "
                     f"{summary['n_labelled_1']} with {summary['outcome']} >= "
                     f"{summary['bound_at']}",
            "core dim": summary["core_dim_stats"]}
    for name in [k for k, v in summary.items() if isinstance(v, dict) and "within" in v]:
        s = summary[name]
        rows[name] = (f"within {s['within']} between {s['between']} label silhouette "
                      f"{_fmt(s['label_silhouette'])}; clusters {s['clusters']['n_groups']} "
                      f"ARI {_fmt(s['clusters']['adjusted_rand'])}")
    return "\n".join(f"{k:>10s}: {v}" for k, v in rows.items())


if __name__ == "__main__":
    experiment.run_cli(run, format_summary, __file__, BC_SCHEMA,
                       default_config="binding_cores.py", aliases=BC_ALIASES)
