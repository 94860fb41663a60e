"""The accelerator run's results as markdown for the docs (pure: dicts in, text out)."""
from __future__ import annotations

import re
from typing import Any, Mapping

from mechjax.analysis.seeds import format_stats

PROGRESS = re.compile(r"chunk (\d+)/(\d+) \| step (\d+)/(\d+) \| (\d+) model-steps/s .*?"
                      r"ETA (\S+)")


def last_progress(log_text: str) -> dict[str, Any] | None:
    """The last ``run_sweep`` progress line of a log: chunk, step, model-steps/s, ETA."""
    found = PROGRESS.findall(log_text)
    if not found:
        return None
    chunk, chunks, step, steps, rate, eta = found[-1]
    return {"chunk": int(chunk), "chunks": int(chunks), "step": int(step), "steps": int(steps),
            "model_steps_per_s": int(rate), "eta": eta}


def _cell(x: float | None, fmt: str = "{:.0f}") -> str:
    return "-" if x is None else fmt.format(x)


def throughput_table(tp: Mapping[str, Any], tl: Mapping[str, Any] | None) -> list[str]:
    """Model-steps/s against S: one column per (vectorize, dtype), then TransformerLens."""
    rows = tp.get("rows", [])
    cols = sorted({(r["mode"].split("_")[1], r["dtype"]) for r in rows},
                  key=lambda c: (c[1] != "float32", c[0] != "vmap", c))
    by = {(r["mode"].split("_")[1], r["dtype"], r["models"]): r for r in rows}
    head = ["S"] + [f"{v} {d}" for v, d in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sorted({r["models"] for r in rows}):
        cells = []
        for v, d in cols:  # one seed: map is the same program as vmap (not timed twice)
            r = by.get((v, d, s)) or (by.get(("vmap", d, s)) if s == 1 else None)
            cells.append(_cell(r and r["model_steps_per_s"]))
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    if tl:
        lines.append(f"| TransformerLens ({tl.get('platform')}, 1 model, float32) | "
                     f"{tl['model_steps_per_s']:.0f} |" + " |" * (len(cols) - 1))
    return lines


def parity_lines(parity: Mapping[str, Any] | None) -> list[str]:
    if not parity:
        return ["Accuracy parity: not run."]
    dtypes = [d for d in ("float32", "bfloat16") if d in parity]
    pools = sorted(parity["float32"]["acc"])
    lines = [f"Final accuracy after a {parity['steps']}-step Assign-and-Add run, mean of "
             f"{len(parity['seeds'])} seeds:", "",
             "| pool | " + " | ".join(dtypes) + " |", "|---|" + "---|" * len(dtypes)]
    lines += [f"| {p} | " + " | ".join(f"{parity[d]['acc'][p]:.3f}" for d in dtypes) + " |"
              for p in pools]
    for d in dtypes[1:]:
        lines.append(f"\nLargest gap {d} vs float32: {parity[f'max_abs_diff/{d}']:.3f}")
    return lines


ASSIGN_ADD_KEYS = ("phase1_step", "phase2_step", "phase3_step", "acc/exact_0var_heldout",
                   "acc/exact_2var_union")
GROKKING_KEYS = ("grok_epoch", "core_dim/at_grok", "core_dim/final_wd1", "core_dim/final_wd0",
                 "modes/final_wd1", "modes/final_wd0", "r2_heldout/after_grok",
                 "acc/test_final_wd1", "acc/test_final_wd0")


def summary_lines(summary: Mapping[str, Any] | None, keys: tuple[str, ...]) -> list[str]:
    if not summary:
        return ["(no summary.json: the part did not finish; rerunning the command resumes it)"]
    return [f"- `{k}`: {format_stats(summary[k])}" for k in keys if k in summary]


def markdown(results: Mapping[str, Any]) -> str:
    """The whole report: device, parts (status, time, progress), throughput table, parity,
    the two paper-scale summaries."""
    parts = results["parts"]
    tp = results.get("throughput") or {}
    dev = tp.get("device") or {}
    lines = [f"## Accelerator run ({'tiny' if results['tiny'] else 'full'})", "",
             f"Device: {dev.get('kind', 'unknown')} ({dev.get('platform', '?')}, "
             f"{dev.get('count', '?')} device(s), compute capability "
             f"{dev.get('compute_capability') or '-'}, bf16 {'yes' if dev.get('bf16') else 'no'},"
             f" jax {dev.get('jax', '?')}); command: `{results['command']}`", "",
             "| part | status | seconds (limit) | progress |", "|---|---|---|---|"]
    for name, p in parts.items():
        prog = p.get("progress")
        where = (f"step {prog['step']}/{prog['steps']}, {prog['model_steps_per_s']} "
                 f"model-steps/s, ETA {prog['eta']}" if prog else "-")
        lines.append(f"| {name} | {p['status']} | {_cell(p.get('seconds'))} "
                     f"({_cell(p.get('limit_s'))}) | {where} |")
    if tp.get("rows"):
        st = tp["settings"]
        lines += ["", f"Model-steps/s of the Assign-and-Add model (batch {st['batch']}, "
                  f"{st['steps']} steps per timed call, best of {st['repeats']}, compilation "
                  "excluded), S seeds on one device:", ""]
        lines += throughput_table(tp, results.get("transformer_lens"))
        if tp.get("skipped"):
            lines.append(f"\nNot measured (time limit): {', '.join(tp['skipped'])}")
        lines += [""] + parity_lines(tp.get("parity"))
    lines += ["", "Assign and Add, paper config:"] + summary_lines(results.get("assign_add"),
                                                                    ASSIGN_ADD_KEYS)
    lines += ["", "ACE grokking, paper config (both branches):"] + summary_lines(
        results.get("grokking"), GROKKING_KEYS)
    return "\n".join(lines) + "\n"
