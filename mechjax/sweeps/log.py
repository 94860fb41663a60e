"""The sweep's progress lines on stderr: one per chunk, with rate, elapsed time and ETA."""
from __future__ import annotations

import sys
import time
from typing import Mapping

import jax
import numpy as np


def log(message: str, every_process: bool = False) -> None:
    """Progress line on stderr (orbax and absl keep their own logs at WARNING); from process 0
    only, unless ``every_process`` (then each line names its process)."""
    if every_process and jax.process_count() > 1:
        message = f"process {jax.process_index()}/{jax.process_count()}: {message}"
    elif jax.process_index() != 0:
        return
    print(f"[mechjax {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def format_seconds(s: float) -> str:
    s = int(max(s, 0))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def log_progress(done: int, total: int, done_at_start: int, t0: float,
                 chunk_metrics: Mapping[str, np.ndarray], steps: int, n_runs: int) -> None:
    """The line after chunk ``done`` of ``total`` (``steps`` per run, ``n_runs`` runs)."""
    elapsed = time.time() - t0
    per_chunk = elapsed / max(done - done_at_start, 1)
    step = int(np.nanmax(chunk_metrics["step"]))
    steps_per_chunk = steps * (done - done_at_start) / total
    rate = n_runs * steps_per_chunk / max(elapsed, 1e-9)
    last = np.nanargmax(chunk_metrics["step"][0, 0])  # the last interval that ran steps
    loss = float(np.nanmean(chunk_metrics["train/loss"][..., last]))
    diverged = int(np.sum(chunk_metrics["finite"][..., last] == 0))
    log(f"chunk {done}/{total} | step {min(step, steps)}/{steps} | {rate:.0f} model-steps/s | "
        f"elapsed {format_seconds(elapsed)} | ETA {format_seconds(per_chunk * (total - done))} "
        f"| train/loss {loss:.4f}" + (f" | {diverged} runs diverged" if diverged else ""))


def log_local_seeds(seeds: list[int], rows: list[int], n_devices: int) -> None:
    """In a multi-process run: which seeds (and padding rows) this process trains."""
    mine = [seeds[r] for r in rows if r < len(seeds)]
    pad = sum(r >= len(seeds) for r in rows)
    log(f"trains seeds {mine}" + (f" (+{pad} padding row{'s' * (pad > 1)})" if pad else "")
        + f" on {jax.local_device_count()} of {n_devices} devices", every_process=True)
