"""ACE on the checkpoints an ``ace_grokking`` run has saved so far: a running, stopped or crashed
run, read without touching it (training resumes from the same workdir later).

``python -m experiments.ace_grokking.so_far --workdir=DIR [--out=FILE.json]`` prints, per branch
and checkpoint epoch reached, the test accuracy, the energy rank, the core dimension, the
rotational modes and the held-out shift R^2 (mean over seeds, with min-max; a seed with no
value there is left out), and how far each branch got. The analysis is the experiment's own
(``run.analyse``, the config the run was started with).
"""
from __future__ import annotations

import os
from typing import Any

import ml_collections
import numpy as np

from experiments.ace_grokking import run as grok
from experiments.ace_grokking.schema import SCHEMA
from mechjax.sweeps import runs
from mechjax import filecheck
from mechjax.models.config import ConfigError
from mechjax.io import write_json
from mechjax.sweeps.workdir import CONFIG_FILE

COLUMNS = ("acc_full", "r_energy", "core_dim", "n_rotational", "heldout_r2")


def reached_epochs(b: dict, workdir: str) -> dict[str, list[int]]:
    """Per branch, the checkpoint epochs whose snapshots exist in ``workdir`` (the wd0 branch
    starts from the wd1 snapshot at ``branch.epoch``; it is listed once it has one of its own)."""
    spe, b_epoch = b["steps_per_epoch"], b["branch"]["epoch"]
    epochs = grok.checkpoint_epochs(b)

    def saved(name: str) -> set[int]:
        folder = grok._sweep_dir(workdir, name)
        return set(runs.open(folder).steps_saved) if os.path.isdir(folder) else set()

    wd1, wd0 = saved("wd1"), saved("wd0")
    own = [e for e in epochs["wd0"] if e > b_epoch and (e - b_epoch) * spe in wd0]
    return {"wd1": [e for e in epochs["wd1"] if e * spe in wd1],
            "wd0": [b_epoch] + own if own else []}


def analyse_so_far(workdir: str) -> dict[str, Any]:
    path = os.path.join(workdir, CONFIG_FILE)
    if not os.path.exists(path):
        raise ConfigError(f"--workdir={workdir!r}: no {CONFIG_FILE}; not an ace_grokking run")
    b = grok.build(SCHEMA.validate(ml_collections.ConfigDict(
        filecheck.read_json(path, "run config"))))
    epochs = reached_epochs(b, workdir)
    if not epochs["wd1"]:
        raise ConfigError(f"--workdir={workdir!r}: no checkpoint saved yet")
    stats, epochs, timing = grok.analyse(b, workdir, epochs)
    table = {name: {"epoch": epochs[name],
                    **{c: {"mean": np.nanmean(stats[name][c], 1),
                           "min": np.nanmin(stats[name][c], 1),
                           "max": np.nanmax(stats[name][c], 1)} for c in COLUMNS}}
             for name in stats}
    return {"epochs_total": b["epochs"], "branch_epoch": b["branch"]["epoch"],
            "seeds": b["seeds"], "table": table, **timing}


def format_table(result: dict[str, Any]) -> str:
    lines = []
    for name, t in result["table"].items():
        lines.append(f"{name}: {len(t['epoch'])} checkpoints, last epoch {t['epoch'][-1]} of "
                     f"{result['epochs_total']}")
        lines.append("  epoch  " + "  ".join(f"{c:>16s}" for c in COLUMNS))
        for i, epoch in enumerate(t["epoch"]):
            cells = [f"{t[c]['mean'][i]:7.3f} [{t[c]['min'][i]:.2f},{t[c]['max'][i]:.2f}]"
                     if len(result["seeds"]) > 1 else f"{t[c]['mean'][i]:16.3f}"
                     for c in COLUMNS]
            lines.append(f"  {epoch:5d}  " + "  ".join(f"{c:>16s}" for c in cells))
    return "\n".join(lines)


if __name__ == "__main__":
    from absl import app, flags

    _WORKDIR = flags.DEFINE_string("workdir", None, "the ace_grokking run", required=True)
    _OUT = flags.DEFINE_string("out", None, "also write the table as JSON here")

    def main(argv):
        del argv
        try:
            result = analyse_so_far(_WORKDIR.value)
        except (ConfigError, filecheck.FileError) as err:  # a bad config or a broken file
            raise SystemExit(f"error: {err}") from None
        print(format_table(result))
        if _OUT.value:
            write_json(_OUT.value, result)

    app.run(main)
