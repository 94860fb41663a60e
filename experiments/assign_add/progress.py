"""Phases reached so far by a running (or crashed) Assign-and-Add training run.

    python -m experiments.assign_add.progress --workdir=DIR

Reads ``DIR/config.json`` (the phase definitions) and the metrics so far through
``mechjax.sweeps.runs.open`` (the sweep runner rewrites them after every chunk), and prints, per seed,
the step at which each phase's measure first crossed its threshold, the fraction of seeds in
each phase, and the latest accuracies. Read-only: safe to call while the run is writing (the metrics file is replaced atomically).
A paper-scale run takes hours on CPU; this is how to follow it without waiting for summary.json.
"""
from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
from absl import app, flags

from experiments.assign_add import analysis as an
from mechjax.sweeps import runs
from mechjax import filecheck

LATEST = ("acc/0var_heldout", "acc/1var_train", "acc/2var_two_misplaced", "acc/2var_heldout")


class ProgressError(ValueError):
    """A workdir that holds no Assign-and-Add run to report on."""


def read(workdir: str) -> dict[str, Any]:
    """``{"seeds", "step", "phases": {phase: [n_seeds] step or NaN}, "definitions",
    "latest": {metric: [n_seeds]}}`` from the files of ``workdir``."""
    config_path = os.path.join(workdir, "config.json")
    metrics_path = os.path.join(workdir, "metrics.npz")
    for path in (config_path, metrics_path):
        if not os.path.exists(path):
            raise ProgressError(f"{path} does not exist: --workdir must be the folder of a "
                                "started `python -m experiments.assign_add` run (metrics.npz "
                                "appears after its first chunk)")
    config = filecheck.read_json(config_path, "run config")
    phase_cfg = config.get("phases")
    if not isinstance(phase_cfg, dict) or "threshold" not in phase_cfg:
        raise ProgressError(f"{config_path} has no 'phases' block: not an Assign-and-Add "
                            "training run (a data sweep's workdir has its own summary)")
    sweep = runs.open(workdir)
    m, seeds = sweep.metrics_at(grid=0), sweep.seeds  # [n_seeds, n_evals] each
    thr = float(phase_cfg["threshold"])
    definitions = {p: (phase_cfg[p], thr) for p in ("phase1", "phase2", "phase3")}
    steps = m["step"][0]
    return {"seeds": seeds, "step": int(steps[-1]),
            "phases": an.phase_steps(steps, m, definitions), "definitions": definitions,
            "latest": {k: m[k][:, -1] for k in LATEST if k in m}}


def format_progress(report: dict[str, Any]) -> str:
    """A per-seed table: phase steps ('-' = not yet) and the latest accuracies."""
    phases, latest = report["phases"], report["latest"]
    head = ["seed"] + list(phases) + list(latest)
    rows = [head]
    for i, seed in enumerate(report["seeds"]):
        row = [str(seed)]
        row += ["-" if not np.isfinite(v[i]) else str(int(v[i])) for v in phases.values()]
        row += [f"{v[i]:.3f}" for v in latest.values()]
        rows.append(row)
    widths = [max(len(r[j]) for r in rows) for j in range(len(head))]
    lines = [f"evaluated up to step {report['step']}, {len(report['seeds'])} seeds; phase = "
             "first step with " + ", ".join(f"{p}: {n} >= {t}"
                                             for p, (n, t) in report["definitions"].items())]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    lines += [f"{p}: {int(np.isfinite(v).sum())}/{len(v)} seeds" for p, v in phases.items()]
    return "\n".join(lines)


def main(argv):
    del argv
    workdir = flags.FLAGS.workdir
    if not workdir:
        sys.exit("--workdir is required: the folder of an Assign-and-Add training run")
    try:
        print(format_progress(read(workdir)))
    except (ProgressError, filecheck.FileError) as e:  # FileError: a broken file
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    # Defined here, not at import: other modules (evaluate) define --workdir too, and tests
    # import both into one process.
    flags.DEFINE_string("workdir", None, "the training run's workdir")
    app.run(main)
