"""Joining a multi-process run through JAX's own distributed runtime, and agreeing across it.

Every process of a multi-process sweep runs the same command with its own ``process_id``;
``initialize`` hands the coordinator address, process count and id to
``jax.distributed.initialize`` (JAX's coordination service, gloo collectives between CPU
processes), after which ``jax.devices()`` lists every process's devices and ``run_sweep``'s mesh
spans them. ``coordinator='auto'`` lets JAX detect the cluster itself (SLURM, Open MPI, Cloud
TPU, Kubernetes, or ``JAX_COORDINATOR_ADDRESS``).

``barrier`` and ``agree`` exist because a decision taken from the shared filesystem can differ
between processes (one process may already have written a file the other then sees), and a
collective entered by only some processes never returns.
"""
from __future__ import annotations

import os

from mechjax.models.config import ConfigError

AUTO = "auto"
# How long JAX's coordination service waits for a process's heartbeats before it declares the
# process dead and ends the others (JAX's own default, 100 s); a test sets a few seconds.
HEARTBEAT_ENV_VAR = "MECHJAX_HEARTBEAT_SECONDS"
DEFAULT_HEARTBEAT_SECONDS = 100


def heartbeat_seconds_from_env() -> int:
    """``MECHJAX_HEARTBEAT_SECONDS`` (default 100); a bad value is a one-line error."""
    raw = os.environ.get(HEARTBEAT_ENV_VAR, "")
    if raw == "":
        return DEFAULT_HEARTBEAT_SECONDS
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{HEARTBEAT_ENV_VAR}={raw!r}: must be a whole number of seconds >= 1")
    return int(raw)


def check_args(coordinator: str | None, num_processes: int | None,
               process_id: int | None) -> None:
    """One-line ``ConfigError`` for a bad combination, before JAX is touched."""
    if coordinator is None:
        given = [n for n, v in (("--num_processes", num_processes), ("--process_id", process_id))
                 if v is not None]
        if given:
            raise ConfigError(f"{' and '.join(given)} given without --coordinator: give "
                              "--coordinator=HOST:PORT (or --coordinator=auto)")
        return
    if coordinator != AUTO:
        host, _, port = coordinator.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"--coordinator={coordinator!r}: must be HOST:PORT with a port in "
                              "1..65535, or 'auto' (JAX detects the cluster)")
        if num_processes is None or process_id is None:
            raise ConfigError(f"--coordinator={coordinator!r} needs --num_processes and "
                              "--process_id (only --coordinator=auto detects them)")
    if num_processes is not None and num_processes < 1:
        raise ConfigError(f"--num_processes={num_processes}: must be an integer >= 1")
    if process_id is not None and (process_id < 0 or (num_processes is not None
                                                      and process_id >= num_processes)):
        raise ConfigError(f"--process_id={process_id}: must be in 0..{(num_processes or 1) - 1} "
                          f"(--num_processes={num_processes})")


def initialize(coordinator: str | None, num_processes: int | None = None,
               process_id: int | None = None) -> bool:
    """Join the run (call before any JAX computation); returns False when ``coordinator`` is
    None (a single-process run: nothing to do)."""
    check_args(coordinator, num_processes, process_id)
    if coordinator is None:
        return False
    heartbeat = heartbeat_seconds_from_env()
    import jax
    # Cross-process collectives between CPU devices need an implementation; gloo ships in
    # jaxlib (the default since 0.4.3x, set explicitly so an older default of 'none' cannot
    # leave the processes unable to talk). It does not affect accelerator collectives.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if coordinator == AUTO:
        jax.distributed.initialize(num_processes=num_processes, process_id=process_id,
                                   heartbeat_timeout_seconds=heartbeat)
    else:
        jax.distributed.initialize(coordinator, num_processes=num_processes,
                                   process_id=process_id, heartbeat_timeout_seconds=heartbeat)
    return True


def barrier(name: str) -> None:
    """Wait until every process reaches ``barrier(name)`` (no-op in a single process)."""
    import jax
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils
        multihost_utils.sync_global_devices(name)


def agree(flag: bool) -> bool:
    """Process 0's ``flag`` on every process (itself in a single process)."""
    import jax
    if jax.process_count() == 1:
        return bool(flag)
    import numpy as np
    from jax.experimental import multihost_utils
    return bool(multihost_utils.broadcast_one_to_all(np.asarray(bool(flag))))
