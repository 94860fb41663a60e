"""Peak resident memory of every experiment's CPU config, and of the Assign-and-Add training sweep
against its number of seeds.

``python -m experiments.benchmark.memory --out=DIR [--experiments=a,b] [--seeds=8,16,32]
[--root=PATH]`` runs each measurement as its own child process (``--root``: the source tree it
imports, default this one, so an older checkout can be measured by the same script) and reads
the child's peak resident set size (the kernel's ``ru_maxrss`` of that one process, read by a
launcher that forked it). Memory follows the shapes, not the step count, so every run is cut to one or two
compiled chunks (``CASES``: the exact flags); the analyses after training run at full size.
Prints a table and writes ``DIR/memory.json``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any, Sequence

# Flags that cut each CPU config to one or two compiled training chunks; shapes (seeds, batch,
# pools, analysis sizes) are the CPU config's. Checkpoint-stacked analyses (ace_grokking) keep
# at least ``ace.checkpoint_batch`` checkpoints, so their batch is the config's.
CASES: dict[str, list[str]] = {
    "quickstart": ["--config.train.steps=200"],
    "assign_add": ["--config.train.steps=200", "--config.chunk_evals=1"],
    "ace_markov": ["--config.train.steps=75", "--config.train.eval_every=75"],
    "ace_grokking": ["--config.train.epochs=1000",
                     "--config.ace.clock_epochs=(0,300,700,900,1000)"],
    "grokking_law": ["--config.omega_sweep.steps=200", "--config.p_sweep.steps=200",
                     "--config.benchmark.steps=20"],
    "imir_phase": ["--config.cells.steps=100"],
    "ace_agreement": ["--config.train.steps=150", "--config.train.warmup_steps=10"],
    "imir_detect": ["--config.recall_icl.steps=300", "--config.recall_iwl.steps=300"],
}
GIB = 1024 ** 3


# The measured command runs as the grandchild of a small launcher: Linux carries a process's
# high-water RSS across fork and exec, so a child forked straight from a large parent (a pytest
# worker holding JAX) would report the parent's peak, not its own.
_LAUNCHER = ("import resource, subprocess, sys; rc = subprocess.call(sys.argv[2:]); "
             "open(sys.argv[1], 'w').write(str(resource.getrusage("
             "resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(rc)")


def peak_rss(argv: Sequence[str], root: str, log_path: str, timeout_s: float | None = None,
             ) -> dict[str, Any]:
    """Run ``argv`` in ``root`` (imports from it) and return its exit status, seconds and peak
    resident memory in bytes (``ru_maxrss`` of that process alone, read by a launcher that
    forked it: see ``_LAUNCHER``). Past ``timeout_s`` the run is killed (peak: None)."""
    env = dict(os.environ, PYTHONPATH=root)
    peak_file = log_path + ".maxrss"
    if os.path.exists(peak_file):
        os.remove(peak_file)
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, peak_file, *argv], cwd=root,
                                env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
    peak = int(open(peak_file).read()) * 1024 if os.path.exists(peak_file) else None
    return {"rc": rc, "seconds": time.perf_counter() - t0, "peak_rss_bytes": peak,
            "argv": list(argv), "log": log_path}


def _gib(run: dict[str, Any]) -> str:
    peak = run["peak_rss_bytes"]
    return "killed" if peak is None else f"{peak / GIB:.2f} GiB"


def experiment_argv(name: str, workdir: str) -> list[str]:
    return [sys.executable, "-m", f"experiments.{name}", f"--workdir={workdir}", "--overwrite",
            *CASES[name]]


def sweep_argv(seeds: int, vectorize: str, steps: int) -> list[str]:
    return [sys.executable, "-m", "experiments.benchmark.memory", "--child_sweep",
            f"--seeds={seeds}", f"--vectorize={vectorize}", f"--steps={steps}"]


def child_sweep(seeds: int, vectorize: str, steps: int) -> None:
    """The Assign-and-Add CPU config's training sweep alone (its pools, probes and evaluation
    measures) at ``seeds`` seeds for ``steps`` steps (one evaluation), no workdir."""
    from experiments.assign_add import run as aa_run
    from experiments.assign_add.configs import cpu
    from mechjax.sweeps.sweep import run_sweep

    config = cpu.get_config()
    config.n_seeds, config.train.steps, config.train.eval_every = seeds, steps, steps
    setup = aa_run.build(aa_run.SCHEMA.validate(config))
    run_sweep(setup.trainer, setup.seeds, setup.hparams, chunk_evals=1, vectorize=vectorize,
              log_every_chunk=False)


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares ``(intercept, slope)`` of ``ys`` on ``xs``."""
    import numpy as np
    slope, intercept = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return float(intercept), float(slope)


def largest_fitting(intercept: float, slope: float, budget_bytes: float) -> int | None:
    """Largest whole seed count under ``budget_bytes`` on the line (None: no growth measured)."""
    if slope <= 0:
        return None
    return int((budget_bytes - intercept) // slope)


def main(out: str, names: Sequence[str], seed_counts: Sequence[int], vectorizes: Sequence[str],
         steps: int, root: str, timeout_s: float) -> dict[str, Any]:
    from mechjax.io import write_json
    from mechjax.sweeps.timing import load_average

    os.makedirs(out, exist_ok=True)
    result: dict[str, Any] = {"root": root, "experiments": {}, "sweep": {},
                              "load_average": load_average()}
    path = os.path.join(out, "memory.json")
    for name in names:
        r = peak_rss(experiment_argv(name, os.path.join(out, "runs", name)), root,
                     os.path.join(out, f"{name}.log"), timeout_s)
        result["experiments"][name] = r
        print(f"{name:<16}{_gib(r):>13}{r['seconds']:>9.0f} s  rc {r['rc']}", flush=True)
        write_json(path, result)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for vectorize in vectorizes:
        rows = {}
        for s in seed_counts:
            r = peak_rss(sweep_argv(s, vectorize, steps), here,
                         os.path.join(out, f"sweep_{vectorize}_{s}.log"), timeout_s)
            rows[s] = r
            print(f"assign_add sweep {vectorize} S={s:<4}{_gib(r):>13}{r['seconds']:>9.0f} s  "
                  f"rc {r['rc']}", flush=True)
        ok = {s: r for s, r in rows.items() if r["rc"] == 0 and r["peak_rss_bytes"] is not None}
        entry: dict[str, Any] = {"rows": rows}
        if len(ok) >= 2:
            b, m = linear_fit(list(ok), [r["peak_rss_bytes"] for r in ok.values()])
            entry.update(intercept_bytes=b, bytes_per_seed=m,
                         largest_seeds_in_24GiB=largest_fitting(b, m, 24 * GIB))
            print(f"  linear fit: {b / GIB:.2f} GiB + {m / 2**20:.1f} MiB per seed -> "
                  f"{entry['largest_seeds_in_24GiB']} seeds in 24 GiB (extrapolated)", flush=True)
        result["sweep"][vectorize] = entry
        write_json(path, result)
    return result


if __name__ == "__main__":
    from absl import app, flags

    _OUT = flags.DEFINE_string("out", None, "folder for memory.json, logs and the runs")
    _EXPERIMENTS = flags.DEFINE_list("experiments", list(CASES), "experiments to measure")
    _SEEDS = flags.DEFINE_list("seeds", ["8", "16", "32"], "seed counts of the sweep scan")
    _VECTORIZE = flags.DEFINE_list("vectorize", ["map", "vmap"], "sweep forms of the scan")
    _STEPS = flags.DEFINE_integer("steps", 20, "training steps of the sweep scan", lower_bound=1)
    _ROOT = flags.DEFINE_string("root", None, "source tree the experiments import (default: "
                                "this one)")
    _TIMEOUT = flags.DEFINE_float("timeout_s", 3600.0, "kill a measurement after this")
    _CHILD = flags.DEFINE_bool("child_sweep", False, "internal: run one sweep measurement")

    def _main(argv):
        if _CHILD.value:
            child_sweep(int(_SEEDS.value[0]), _VECTORIZE.value[0], _STEPS.value)
            return
        if not _OUT.value:
            raise app.UsageError("--out is required")
        unknown = sorted(set(_EXPERIMENTS.value) - set(CASES))
        if unknown:
            raise app.UsageError(f"--experiments: unknown {unknown}; allowed {sorted(CASES)}")
        root = os.path.abspath(_ROOT.value or os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))
        main(_OUT.value, _EXPERIMENTS.value, [int(s) for s in _SEEDS.value if s],
             [v for v in _VECTORIZE.value if v], _STEPS.value, root, _TIMEOUT.value)

    app.run(_main)
