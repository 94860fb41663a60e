"""What validating a run's files adds to opening it: ``runs.open`` and every accessor (model and
train config, metrics, every parameter snapshot with all seeds and grid points) against the same
reads without the checks (plain ``json.load`` / ``np.load``, as ``mechjax.sweeps.runs`` read before
``mechjax.filecheck``), and against the validator's own archive reader with no check (what the
checks alone cost), in one process, in alternating order, with the page cache warm.

    python -m experiments.benchmark.validate_cost --workdir=RUN [--repeats=15]

prints the median seconds of each and the ratios (the bound: validated / before < 1.05).
"""
from __future__ import annotations

import dataclasses
import json
import os
import statistics
import time

import numpy as np
from absl import app, flags

from mechjax.sweeps import runs
from mechjax.models.config import ModelConfig
from mechjax.sweeps.snapshots import SNAPSHOT_DIR
from mechjax.sweeps.files import METRICS_FILE, MODEL_FILE, SWEEP_FILE, TRAIN_FILE
from mechjax.training.train import TrainConfig
from mechjax.filecheck.npz_stored import read_stored_npz

def open_validated(workdir: str) -> int:
    """Everything a run holds, through ``mechjax.sweeps.runs``; returns the bytes of parameters read."""
    run = runs.open(workdir)
    run.model_cfg, run.train_cfg, run.seeds, run.hparams, run.config  # noqa: B018
    run.metrics  # noqa: B018
    total = 0
    for step in run.steps_saved:
        params = run.stacked_params(step, grid=None)
        total += sum(v.nbytes for v in params.values())
    return total


def open_unchecked(workdir: str, read_npz=None) -> int:
    """The same reads without any check (the reader before ``mechjax.filecheck``: ``np.load``),
    or with ``read_npz(path) -> {name: array}`` as the archive reader and still no check."""
    def load(path):
        if read_npz is not None:
            return read_npz(path)
        with np.load(path) as z:
            return {k: z[k] for k in z.files}

    def read_json(name):
        with open(os.path.join(workdir, name)) as f:
            return json.load(f)

    sweep = read_json(SWEEP_FILE)
    ModelConfig.from_dict(read_json(MODEL_FILE))
    train = read_json(TRAIN_FILE)
    train["eval_pools"] = tuple(train["eval_pools"]) if train.get("eval_pools") else None
    TrainConfig(**train)
    [int(s) for s in sweep["seeds"]], {k: np.asarray(v) for k, v in sweep["hparams"].items()}
    read_json("config.json")
    {k: v for k, v in load(os.path.join(workdir, METRICS_FILE)).items()
     if k.startswith("metrics/")}
    folder = os.path.join(workdir, SNAPSHOT_DIR)
    total = 0
    for name in sorted(os.listdir(folder)):
        if name.startswith("step_") and name.endswith(".npz"):
            params = load(os.path.join(folder, name))  # held as a dict, as Run returns them
            total += sum(v.nbytes for v in params.values())
    return total


def open_reader_only(workdir: str) -> int:
    """The reads of ``open_validated`` with its archive reader (``npz_stored``) and no check:
    what the checks themselves cost is ``open_validated`` against this."""
    return open_unchecked(workdir, read_npz=read_stored_npz)


@dataclasses.dataclass
class Timing:
    validated: list[float]
    unchecked: list[float]
    reader_only: list[float]
    nbytes: int

    @property
    def ratio(self) -> float:
        """Validated open against the open before validation (the acceptance bound < 1.05)."""
        return statistics.median(self.validated) / statistics.median(self.unchecked)

    @property
    def checks_ratio(self) -> float:
        """Validated open against the same archive reader without any check."""
        return statistics.median(self.validated) / statistics.median(self.reader_only)


def measure(workdir: str, repeats: int) -> Timing:
    a = open_validated(workdir)
    b = open_unchecked(workdir)  # warm the page cache, and the same bytes every way
    c = open_reader_only(workdir)
    if not a == b == c:
        raise SystemExit(f"the readers read different amounts ({a}, {b}, {c} bytes)")
    out = Timing([], [], [], a)
    for i in range(repeats):
        order = [(open_validated, out.validated), (open_unchecked, out.unchecked),
                 (open_reader_only, out.reader_only)]
        for fn, times in (order if i % 2 == 0 else order[::-1]):
            t0 = time.perf_counter()
            fn(workdir)
            times.append(time.perf_counter() - t0)
    return out


def main(argv):
    del argv
    workdir, repeats = flags.FLAGS.workdir, flags.FLAGS.repeats
    t = measure(workdir, repeats)
    n_snap = len(runs.open(workdir).steps_saved)
    print(f"{workdir}: {n_snap} snapshots, {t.nbytes / 2 ** 20:.1f} MiB of parameters; "
          f"{repeats} paired repeats")
    print(f"validated open: median {statistics.median(t.validated) * 1e3:.1f} ms "
          f"(min {min(t.validated) * 1e3:.1f})")
    print(f"unchecked open: median {statistics.median(t.unchecked) * 1e3:.1f} ms "
          f"(min {min(t.unchecked) * 1e3:.1f})")
    print(f"reader only:    median {statistics.median(t.reader_only) * 1e3:.1f} ms "
          f"(min {min(t.reader_only) * 1e3:.1f}; npz_stored, no check)")
    print(f"ratio of medians, validated / before validation (np.load): {t.ratio:.3f}")
    print(f"ratio of medians, validated / the same reader unchecked: {t.checks_ratio:.3f}")


if __name__ == "__main__":  # flags defined here: importing the module (tests walk every module)
    # must not clash with other modules' --workdir
    flags.DEFINE_string("workdir", None, "a finished run's workdir (one sweep)", required=True)
    flags.DEFINE_integer("repeats", 15, "paired measurements", lower_bound=1)
    app.run(main)
