"""A stall watchdog for long compiled calls: a run that stops computing says so and exits.

A deadlocked XLA program (every thread of the CPU pool blocked, the Python thread in
``block_until_ready``) uses no CPU at all, while a working one on CPU uses at least a core. So
while a call is pending, a daemon thread samples the process's CPU time (all threads together);
when it has not advanced for ``stall_seconds``, it prints one line saying what was running and for
how long, writes every thread's Python stack to a file for the report, and ends the process with
``EXIT_STALLED``. Training checkpoints after every chunk, so rerunning the command resumes.

``MECHJAX_STALL_SECONDS`` sets the limit (default 300; ``0`` turns the watchdog off). On an
accelerator the host legitimately idles while the device computes, so the watchdog only runs when
the default backend is the CPU.
"""
from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
import tempfile
import threading
import time
from typing import Iterator

from mechjax.models.config import ConfigError

EXIT_STALLED = 75  # EX_TEMPFAIL: try again (the run resumes from its last checkpoint)
DEFAULT_STALL_SECONDS = 300.0
ENV_VAR = "MECHJAX_STALL_SECONDS"
# CPU seconds per second below which a sample counts as idle: a deadlocked process spends
# microseconds (this thread's own wake-ups); a computing one spends ~1 per busy core.
IDLE_CPU_FRACTION = 0.02


def stall_seconds_from_env() -> float:
    """The configured limit in seconds (``0``: off); a bad value is a one-line error."""
    raw = os.environ.get(ENV_VAR)
    if raw is None or raw == "":
        return DEFAULT_STALL_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{ENV_VAR}={raw!r}: must be a number of seconds >= 0 (0 turns the "
                         "watchdog off)") from None
    if not value >= 0:
        raise ConfigError(f"{ENV_VAR}={raw!r}: must be a number of seconds >= 0")
    return value


def _on_cpu_backend() -> bool:
    try:
        import jax
        return jax.default_backend() == "cpu"
    except Exception:  # noqa: BLE001 -- no jax: nothing compiled to watch
        return False


def _report_and_exit(what: str, started: float, idle_for: float) -> None:
    path = os.path.join(tempfile.gettempdir(), f"mechjax-stall-{os.getpid()}.txt")
    try:
        with open(path, "w") as f:
            faulthandler.dump_traceback(file=f, all_threads=True)
    except OSError:
        path = "(could not be written)"
    pending = time.monotonic() - started
    print(f"[mechjax] stalled: {what} has used no CPU for {idle_for:.0f} s (pending "
          f"{pending:.0f} s), so it is deadlocked; exiting with status {EXIT_STALLED}. Rerun the "
          f"same command to resume from the last checkpoint, and report it with the Python "
          f"stacks in {path} (native stacks: gdb -p PID -batch -ex 'thread apply all bt'; "
          f"{ENV_VAR} sets the limit).", file=sys.stderr, flush=True)
    os._exit(EXIT_STALLED)  # the stuck thread never returns, so sys.exit could not end it


_labels: list[tuple[str, float]] = []  # what is pending, innermost last, with its start time
_lock = threading.Lock()


@contextlib.contextmanager
def watch(what: str, stall_seconds: float | None = None, poll_seconds: float | None = None,
          cpu_only: bool = True) -> Iterator[None]:
    """Run the block under the watchdog: ``what`` names the call in the stall message.

    Nested blocks (a whole experiment, then a training chunk or an analysis inside it) share the
    outermost block's monitor, and a stall is reported under the innermost name.
    ``stall_seconds`` defaults to ``MECHJAX_STALL_SECONDS`` (300); 0, or a non-CPU backend with
    ``cpu_only``, turns it off. ``poll_seconds``: sampling interval (default stall/10, at most 5).
    """
    with _lock:
        nested = bool(_labels)
        _labels.append((what, time.monotonic()))
    try:
        if nested:
            yield
            return
        limit = stall_seconds_from_env() if stall_seconds is None else float(stall_seconds)
        if limit <= 0 or (cpu_only and not _on_cpu_backend()):
            yield
            return
        with _monitor(limit, poll_seconds or min(5.0, limit / 10)):
            yield
    finally:
        with _lock:
            _labels.pop()


@contextlib.contextmanager
def _monitor(limit: float, poll: float) -> Iterator[None]:
    done = threading.Event()

    def monitor() -> None:
        last_cpu, last_busy = time.process_time(), time.monotonic()
        while not done.wait(poll):
            cpu, now = time.process_time(), time.monotonic()
            if cpu - last_cpu > IDLE_CPU_FRACTION * poll:
                last_busy = now
            last_cpu = cpu
            if now - last_busy >= limit and not done.is_set():
                with _lock:
                    what, started = _labels[-1] if _labels else ("a call", last_busy)
                _report_and_exit(what, started, now - last_busy)

    thread = threading.Thread(target=monitor, name="mechjax-watchdog", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=poll + 1)
