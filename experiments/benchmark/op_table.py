"""Per-op time of a compiled program on XLA CPU, from a ``jax.profiler`` trace joined with the
program's optimized HLO: which fused ops the time goes to, their shapes, FLOPs and GFLOP/s.

XLA CPU (thunk runtime) emits one trace event per executed thunk, named after the HLO
instruction of the entry computation (``dot.16``, ``ynn_fusion.22``, ``transpose_copy_fusion``).
``experiments.benchmark.hlo_cost`` reads the optimized HLO (``compiled.as_text()``) for each
such instruction's shapes, FLOPs, bytes and pass (forward or backward); this module joins them.

``python -m experiments.benchmark.op_table [--tiny] [--top=5] [--calls=20] [--trace_dir=DIR]``
traces ``value_and_grad`` of the Assign-and-Add fast-path loss on one batch (the forward +
backward piece of ``experiments.benchmark.step_profile``) and prints the top ops of each pass.
"""
from __future__ import annotations

import dataclasses
import glob
import gzip
import json
import os
import re
import tempfile
import time
from typing import Any, Callable

import jax

from experiments.benchmark.hlo_cost import hlo_ops
from mechjax.sweeps.timing import timed_compile


def trace_durations(trace_dir: str) -> dict[str, tuple[int, float]]:
    """``{event name: (count, total seconds)}`` of the complete events of the newest
    ``*.trace.json.gz`` that ``jax.profiler.trace(trace_dir)`` wrote."""
    files = glob.glob(os.path.join(trace_dir, "plugins", "profile", "*", "*.trace.json.gz"))
    if not files:
        raise FileNotFoundError(f"no *.trace.json.gz under {trace_dir}/plugins/profile")
    with gzip.open(max(files, key=os.path.getmtime)) as f:
        events = json.load(f)["traceEvents"]
    out: dict[str, tuple[int, float]] = {}
    for e in events:
        if e.get("ph") == "X":
            n, s = out.get(e["name"], (0, 0.0))
            out[e["name"]] = (n + 1, s + e.get("dur", 0.0) * 1e-6)
    return out


def profile_ops(fn: Callable, args: tuple, calls: int = 20, trace_dir: str | None = None
                ) -> dict[str, Any]:
    """Trace ``calls`` calls of ``jax.jit(fn)(*args)`` (``fn`` as it is if already jitted, with
    its compiler options; compiled and warmed first) and join the
    trace's per-op seconds with the optimized HLO. Returns ``{"rows": [...], "seconds_per_call",
    "hlo_flops"}``; each row an ``Op`` as a dict plus ``seconds`` (per call) and ``calls_seen``."""
    compiled, _ = timed_compile(fn, *args)
    jax.block_until_ready(compiled(*args))
    ops = hlo_ops(compiled.as_text())
    trace_dir = trace_dir or tempfile.mkdtemp(prefix="op_table_")
    t0 = time.perf_counter()
    with jax.profiler.trace(trace_dir):
        for _ in range(calls):
            jax.block_until_ready(compiled(*args))
        wall = (time.perf_counter() - t0) / calls
    seen = trace_durations(trace_dir)
    rows = []
    for name, op in ops.items():
        count, total = seen.get(name, (0, 0.0))
        rows.append({**dataclasses.asdict(op), "seconds": total / calls, "calls_seen": count})
    rows.sort(key=lambda r: -r["seconds"])
    from experiments.benchmark.step_profile import compiled_flops
    return {"rows": rows, "seconds_per_call": wall, "hlo_flops": compiled_flops(compiled),
            "trace_dir": trace_dir, "calls": calls}


def kind_of(row: dict[str, Any]) -> str:
    """``"dot"`` (holds a dot), ``"no-FLOP"`` (copies, transposes, gathers, scatters, pads:
    data movement only) or ``"elementwise"``."""
    return "dot" if row["dot_flops"] else ("no-FLOP" if not row["flops"] else "elementwise")


def pass_totals(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], str] = lambda r:
                r["pass_"]) -> dict[str, dict[str, float]]:
    """Seconds, FLOPs and op count per call of each group ``key(row)`` (default: each pass)."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        t = out.setdefault(key(r), {"seconds": 0.0, "flops": 0.0, "ops": 0})
        t["seconds"] += r["seconds"]
        t["flops"] += r["flops"]
        t["ops"] += 1
    return out


def _total_line(label: str, t: dict[str, float]) -> str:
    rate = t["flops"] / t["seconds"] / 1e9 if t["seconds"] else 0.0
    return (f"  {label:<22} {t['ops']:4d} ops  {1e3 * t['seconds']:8.2f} ms  "
            f"{t['flops'] / 1e9:7.3f} GFLOP  {rate:7.1f} GFLOP/s")


def _sources(op_names: list[str], most: int = 3) -> list[str]:
    """The einsums an op came from (its jaxpr names with a ``->``), else its own name."""
    short = list(dict.fromkeys(re.sub(r"^jit\([^)]*\)/", "", n) for n in op_names))
    einsums = [n for n in short if "->" in n]
    return (einsums or short)[:most]


def format_table(result: dict[str, Any], top: int = 5, passes: tuple[str, ...] = ("backward",
                                                                                 "forward")
                 ) -> str:
    rows, totals = result["rows"], pass_totals(result["rows"])
    lines = [f"{result['calls']} traced calls, {1e3 * result['seconds_per_call']:.2f} ms/call "
             f"wall; XLA cost analysis {result['hlo_flops'] / 1e9:.3f} GFLOP/call"]
    kinds = pass_totals(rows, lambda r: f"{r['pass_']}, {kind_of(r)}")
    for p in ("forward", "backward", "other"):
        if p in totals:
            lines.append(_total_line(p, totals[p]))
            lines += [_total_line(f"  {k.split(', ')[1]}", t) for k, t in sorted(kinds.items())
                      if k.startswith(p + ",")]
    for p in passes:
        chosen = [r for r in rows if r["pass_"] == p][:top]
        share = totals.get(p, {}).get("seconds", 0.0)
        lines.append(f"top {len(chosen)} ops of the {p} pass:")
        lines.append(f"  {'op':<26}{'ms':>7}{'share':>7}{'MFLOP':>8}{'GFLOP/s':>8}{'GB/s':>6}"
                     "  shape (dots)  <- from")
        for r in chosen:
            s = r["seconds"]
            gfs = r["flops"] / s / 1e9 if s else 0.0
            gbs = r["bytes"] / s / 1e9 if s else 0.0
            what = "; ".join(r["dots"]) if r["dots"] else \
                f"{', '.join(r['operand_shapes'][:3])} -> {r['shape']}"
            src = _sources(r["op_names"])
            lines.append(f"  {r['name']:<26}{1e3 * s:7.2f}{s / share if share else 0:7.1%}"
                         f"{r['flops'] / 1e6:8.1f}{gfs:8.1f}{gbs:6.1f}  {r['opcode']}: {what}"
                         f"  <- {', '.join(src)}")
    return "\n".join(lines)


def fastpath_loss_program(tiny: bool = False, batch: int | None = None
                          ) -> tuple[Callable, tuple]:
    """``value_and_grad`` of the Assign-and-Add fast-path loss, jitted as its training programs
    are (``compile_options.jit_train``), and its args (params, one batch of the real sampler):
    the step_profile's forward + backward piece, one step, no scan."""
    from experiments.benchmark import step_profile as sp
    settings = sp.TINY if tiny else sp.FULL
    if batch is not None:
        settings = dataclasses.replace(settings, batch=batch)
    trainer, hparams, state = sp.build(settings)
    _, task_params = sp._split(hparams)
    data = jax.jit(trainer.task.sample)(jax.random.PRNGKey(1), task_params)
    from mechjax.training.compile_options import jit_train
    return (jit_train(jax.value_and_grad(lambda p, b: trainer.loss(p, b)[0]), trainer),
            (state.params, data))


if __name__ == "__main__":
    from absl import app, flags

    _TINY = flags.DEFINE_bool("tiny", False, "tiny model and batch (a seconds-long check)")
    _TOP = flags.DEFINE_integer("top", 5, "ops shown per pass", lower_bound=1)
    _CALLS = flags.DEFINE_integer("calls", 20, "traced calls", lower_bound=1)
    _DIR = flags.DEFINE_string("trace_dir", None, "where the trace goes (default: a temp dir)")
    _OUT = flags.DEFINE_string("out", None, "also write the rows as JSON here")

    def _main(argv):
        del argv
        fn, args = fastpath_loss_program(_TINY.value)
        result = profile_ops(fn, args, _CALLS.value, _DIR.value)
        print(format_table(result, _TOP.value))
        from mechjax.sweeps.timing import load_average
        print(f"load average {load_average()}; XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
        if _OUT.value:
            from mechjax.io import write_json
            write_json(_OUT.value, result)

    app.run(_main)
