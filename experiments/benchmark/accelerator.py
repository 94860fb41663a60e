"""The prepared accelerator run: every part in its own process, each under its own time limit.

``python -m experiments.benchmark.accelerator --out=DIR [--tiny] [--parts=...] [--limits=...]``

Parts (in this order; ``--parts`` picks some):
  throughput        (a) model-steps/s at S = 1, 16, 64, 256 seeds, vmap and loop, fp32 and bf16,
                    with the final-accuracy parity of a short run (``throughput.py``)
  transformer_lens  (a) the same model in TransformerLens on the same device (``bench.py``),
                    skipped when torch or transformer_lens is not installed
  assign_add        (b) ``python -m experiments.assign_add`` with ``configs/paper.py``, 16 seeds
  grokking          (c) ``python -m experiments.ace_grokking`` with ``configs/paper.py``
                    (8 seeds, 20,000 epochs, both branches)
Then (d): ``DIR/results.json`` (every part's status, time and results) and ``DIR/table.md``
(markdown for the docs); the experiments' own ``summary.json`` and figures stay in
``DIR/assign_add`` and ``DIR/ace_grokking``, and each part's output in ``DIR/<part>.log``.

A part that passes its limit is killed; the experiments checkpoint after every chunk, so
rerunning the same command resumes them where they stopped. This parent process never starts
JAX itself: on a GPU each JAX process takes most of the memory, so only one may hold it at a
time. ``--tiny`` runs every part at test sizes (a CPU check of the whole path).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from typing import Any, Mapping, Sequence

from experiments.benchmark import report
from mechjax.io import write_json

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTS = ("throughput", "transformer_lens", "assign_add", "grokking")
# Seconds per part on one accelerator; 480 in all, the whole run's budget. By estimate the
# grokking part needs more than its share on one H200; it resumes where it stopped when run
# again (``--parts=grokking --limits=grokking=600``).
LIMITS = {"throughput": 120, "transformer_lens": 30, "assign_add": 130, "grokking": 200}
TINY_LIMITS = {"throughput": 300, "transformer_lens": 120, "assign_add": 300, "grokking": 300}
WORKDIRS = {"assign_add": "assign_add", "grokking": "ace_grokking"}


def parse_parts(text: str) -> list[str]:
    """``--parts``: a comma list of ``PARTS`` (or ``all``), kept in the order of ``PARTS``."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if names == ["all"]:
        return list(PARTS)
    bad = [n for n in names if n not in PARTS]
    if bad or not names:
        raise ValueError(f"--parts={text!r}: allowed a comma list of {list(PARTS)} or 'all'")
    return [p for p in PARTS if p in names]


def parse_limits(text: str, defaults: Mapping[str, float]) -> dict[str, float]:
    """``--limits=part=seconds,...``: overrides of the per-part time limits."""
    out = dict(defaults)
    for item in (t.strip() for t in text.split(",") if t.strip()):
        name, _, value = item.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if name not in PARTS or not seconds > 0:
            raise ValueError(f"--limits item {item!r}: must be PART=SECONDS with PART in "
                             f"{list(PARTS)} and SECONDS > 0")
        out[name] = seconds
    return out


def torch_available() -> bool:
    """torch and transformer_lens are installed (found without importing them)."""
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformer_lens"))


def commands(out: str, tiny: bool, limits: Mapping[str, float]) -> dict[str, list[str]]:
    """The command line of every part."""
    py = sys.executable
    size = "tiny.py" if tiny else "paper.py"
    tl_args = {"steps": 2, "batch": 16, "repeats": 1, "tiny": True} if tiny else \
        {"steps": 50, "batch": 512, "repeats": 3}
    # the throughput part stops starting measurements a little before it would be killed
    soft = 0.8 * limits["throughput"]
    return {
        "throughput": [py, "-m", "experiments.benchmark.throughput",
                       f"--out={os.path.join(out, 'throughput.json')}", f"--time_limit_s={soft}"]
                      + (["--tiny"] if tiny else []),
        "transformer_lens": [py, "-m", "experiments.benchmark.bench", "transformer_lens",
                             json.dumps(tl_args)],
        "assign_add": [py, "-m", "experiments.assign_add",
                       f"--workdir={os.path.join(out, WORKDIRS['assign_add'])}",
                       f"--config=experiments/assign_add/configs/{size}"]
                      + ([] if tiny else ["--config.n_seeds=16"]),
        "grokking": [py, "-m", "experiments.ace_grokking",
                     f"--workdir={os.path.join(out, WORKDIRS['grokking'])}",
                     f"--config=experiments/ace_grokking/configs/{size}"]
                    + ([] if tiny else ["--config.n_seeds=8"]),
    }


def run_part(name: str, cmd: Sequence[str], log_path: str, limit_s: float) -> dict[str, Any]:
    """Run one part to completion or to ``limit_s``; its output goes to ``log_path``."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        # its own session: at the limit the part and anything it started end together
        proc = subprocess.Popen(list(cmd), cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=limit_s)
            status = "ok" if rc == 0 else f"failed (exit {rc})"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            status = "stopped at its time limit (rerun resumes)"
    text = open(log_path, errors="replace").read()
    return {"status": status, "seconds": round(time.perf_counter() - t0, 1), "limit_s": limit_s,
            "command": shlex.join(cmd), "log": log_path, "progress": report.last_progress(text)}


def _json_line(text: str) -> dict | None:
    for line in text.splitlines()[::-1]:
        if line.startswith("{"):
            return json.loads(line)
    return None


def _read_json(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def main(out: str, tiny: bool, parts: Sequence[str], limits: Mapping[str, float],
         command: str) -> dict[str, Any]:
    """Run ``parts`` one after another, then write ``results.json`` and ``table.md``."""
    os.makedirs(out, exist_ok=True)
    cmds = commands(out, tiny, limits)
    results: dict[str, Any] = {"tiny": tiny, "command": command, "parts": {}}
    for name in parts:
        if name == "transformer_lens" and not torch_available():
            results["parts"][name] = {"status": "skipped: torch or transformer_lens is not "
                                                "installed", "seconds": None, "limit_s": None}
            continue
        print(f"[accelerator] {name}: {shlex.join(cmds[name])} (limit {limits[name]:.0f} s)",
              file=sys.stderr, flush=True)
        part = run_part(name, cmds[name], os.path.join(out, f"{name}.log"), limits[name])
        results["parts"][name] = part
        print(f"[accelerator] {name}: {part['status']} in {part['seconds']} s", file=sys.stderr,
              flush=True)
        if name == "throughput":
            results["throughput"] = _read_json(os.path.join(out, "throughput.json"))
        elif name == "transformer_lens":
            results["transformer_lens"] = _json_line(open(part["log"]).read())
        else:
            results[name] = _read_json(os.path.join(out, WORKDIRS[name], "summary.json"))
        write_json(os.path.join(out, "results.json"), results)
    text = report.markdown(results)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    write_json(os.path.join(out, "results.json"), results)
    return results


def cli(out: str, tiny: bool, parts_text: str, limits_text: str, argv: Sequence[str]) -> None:
    """The command line after absl parsed it: a bad ``--parts`` or ``--limits`` is one line
    (``error: ...``) before anything is written; exits 1 when a part did not finish."""
    try:
        parts = parse_parts(parts_text)
        limits = parse_limits(limits_text, TINY_LIMITS if tiny else LIMITS)
    except ValueError as err:
        sys.exit(f"error: {err}")
    results = main(out, tiny, parts, limits, shlex.join(
        ["python", "-m", "experiments.benchmark.accelerator", *argv]))
    print(report.markdown(results), end="")
    bad = [n for n, p in results["parts"].items() if not p["status"].startswith(("ok",
                                                                              "skipped"))]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    from absl import app, flags

    _OUT = flags.DEFINE_string("out", None, "output folder (results.json, table.md, logs, the "
                               "experiments' workdirs); rerunning with it resumes them",
                               required=True)
    _TINY = flags.DEFINE_bool("tiny", False, "every part at test sizes (a CPU check)")
    _PARTS = flags.DEFINE_string("parts", "all", f"comma list of {list(PARTS)} or 'all'")
    _LIMITS = flags.DEFINE_string("limits", "", "per-part time limits in seconds, e.g. "
                                  f"'grokking=300' (defaults {LIMITS}; --tiny: {TINY_LIMITS})")

    def _main(argv):
        if len(argv) > 1:
            raise app.UsageError(f"unexpected arguments {argv[1:]}")
        cli(_OUT.value, _TINY.value, _PARTS.value, _LIMITS.value, sys.argv[1:])

    app.run(_main)
