"""Timing a compiled program: compile time apart from run time, and a function batched over seeds
as one program against the same function called once per seed.

Each measurement blocks until the result is ready (JAX dispatches asynchronously), and compilation
is timed separately so the run times compare the programs, not the compiler.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import jax


def timed_compile(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``(jax.jit(fn) compiled for args, seconds)``; ``fn`` may already be jitted."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - t0


def timed_call(compiled: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``(compiled(*args) once ready, seconds)``."""
    t0 = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - t0


def batched_over_seeds(fn: Callable[..., Any], stacked: Any, *args: Any,
                       ) -> tuple[Any, dict[str, float]]:
    """``fn(seed_params, *args)`` vmapped over the leading axis of ``stacked`` as one program.

    Returns ``(output [n, ...], {'compile_seconds', 'seconds'})``.
    """
    in_axes = (0,) + (None,) * len(args)
    batched, compile_seconds = timed_compile(jax.vmap(fn, in_axes), stacked, *args)
    out, seconds = timed_call(batched, stacked, *args)
    return out, {"compile_seconds": compile_seconds, "seconds": seconds}


def loop_over_seeds(fn: Callable[..., Any], stacked: Any, *args: Any,
                    ) -> tuple[list[Any], dict[str, float]]:
    """The same as ``batched_over_seeds`` as a Python loop: one compiled single-seed program
    called once per seed. Returns ``(outputs, {'compile_seconds', 'seconds'})``; ``seconds``
    sums the calls only."""
    n = jax.tree.leaves(stacked)[0].shape[0]
    seed = lambda i: jax.tree.map(lambda x: x[i], stacked)  # noqa: E731
    single, compile_seconds = timed_compile(fn, seed(0), *args)
    outs, total = [], 0.0
    for i in range(n):
        out, dt = timed_call(single, seed(i), *args)
        outs.append(out)
        total += dt
    return outs, {"compile_seconds": compile_seconds, "seconds": total}
