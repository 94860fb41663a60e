"""Timing compiled programs: compile time apart from run time; a function batched over seeds as one
program against the same function called once per seed; a sweep grid as one program against its
runs one after another.

Each measurement blocks until the result is ready (JAX dispatches asynchronously), and compilation
is timed separately so the run times compare the programs, not the compiler.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp

from mechjax.chunks import map_chunks
from mechjax.training.compile_options import jit_analysis, jit_train
from mechjax.sweeps.sweep import seed_mesh, sweep_program
from mechjax.sweeps.vectorize import resolve_analysis_vectorize


def timed_compile(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``(jax.jit(fn) compiled for args, seconds)``; ``fn`` may already be jitted."""
    t0 = time.perf_counter()
    # a jitted fn is lowered as it is: wrapping it in another jit would drop (and JAX refuses)
    # the compiler options of a training program (``compile_options.jit_train``)
    compiled = (fn if hasattr(fn, "lower") else jax.jit(fn)).lower(*args).compile()
    return compiled, time.perf_counter() - t0


def timed_call(compiled: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``(compiled(*args) once ready, seconds)``."""
    t0 = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - t0


def vmap_in_seed_blocks(fn: Callable[..., Any], seed_block: int | None = None
                        ) -> Callable[..., Any]:
    """``jax.vmap(fn)`` over the leading axis of the first argument (the others shared), with
    ``seed_block`` seeds vmapped at a time and the blocks run one after another inside the same
    program (``chunks.map_chunks``: a ``lax.map``, the last block padded with copies of the last
    seed); None vmaps every seed at once.

    Why blocks: on CPU the working set of a vmapped analysis grows with the seeds (ACE on 16
    seeds x 93,000 activations spills the caches: its MLP product ran 1.5x slower per seed than
    one seed's), so a block of a few seeds keeps the batched program's per-seed speed
    (measured; docs/design.md, "How seeds share a device").
    """
    def blocked(stacked: Any, *args: Any) -> Any:
        batched = jax.vmap(lambda seed: fn(seed, *args))
        return map_chunks(batched, stacked, seed_block)

    return blocked


def batched_over_seeds(fn: Callable[..., Any], stacked: Any, *args: Any,
                       seed_block: int | None = None) -> tuple[Any, dict[str, float]]:
    """``fn(seed_params, *args)`` vmapped over the leading axis of ``stacked`` as one program,
    ``seed_block`` seeds at a time (``vmap_in_seed_blocks``; None: all at once).

    Returns ``(output [n, ...], {'compile_seconds', 'seconds'})``.
    """
    batched, compile_seconds = timed_compile(jit_analysis(vmap_in_seed_blocks(fn, seed_block)),
                                             stacked, *args)
    out, seconds = timed_call(batched, stacked, *args)
    return out, {"compile_seconds": compile_seconds, "seconds": seconds}


def loop_over_seeds(fn: Callable[..., Any], stacked: Any, *args: Any,
                    ) -> tuple[list[Any], dict[str, float]]:
    """The same as ``batched_over_seeds`` as a Python loop: one compiled single-seed program
    called once per seed. Returns ``(outputs, {'compile_seconds', 'seconds'})``; ``seconds``
    sums the calls only."""
    n = jax.tree.leaves(stacked)[0].shape[0]
    seed = lambda i: jax.tree.map(lambda x: x[i], stacked)  # noqa: E731
    single, compile_seconds = timed_compile(jit_analysis(fn), seed(0), *args)
    outs, total = [], 0.0
    for i in range(n):
        out, dt = timed_call(single, seed(i), *args)
        outs.append(out)
        total += dt
    return outs, {"compile_seconds": compile_seconds, "seconds": total}


def over_seeds(fn: Callable[..., Any], stacked: Any, *args: Any, vectorize: str = "auto",
               seed_block: int | None = None) -> tuple[Any, dict[str, Any]]:
    """``fn(seed_params, *args)`` for every seed of ``stacked`` (leading axis ``n``), in the form
    ``vectorize.resolve_analysis_vectorize`` picks for the backend: one vmapped program
    (``batched_over_seeds``) or a loop of one compiled single-seed program (``loop_over_seeds``).

    Returns ``(outputs [n, ...], {'vectorize', 'compile_seconds', 'seconds'})``: the same
    stacked outputs either way. ``seed_block``: the vmapped program's seeds per block.
    """
    mode = resolve_analysis_vectorize(vectorize)
    if mode == "vmap":
        out, t = batched_over_seeds(fn, stacked, *args, seed_block=seed_block)
    else:
        outs, t = loop_over_seeds(fn, stacked, *args)
        out = jax.tree.map(lambda *xs: jnp.stack(xs), *outs)
    return out, {"vectorize": mode, **t}


def grid_vs_sequential(trainer, seeds: Sequence[int], grid: Mapping[str, jax.Array], steps: int,
                       vectorize: str = "auto") -> dict[str, float]:
    """Seconds for seeds x grid runs of ``steps`` steps as one sweep program (what ``run_sweep``
    runs per chunk) against the same runs one after another (one compiled single-run program
    called per run). ``grid``: ``{hparam: [G]}``, every hyperparameter of ``trainer``.

    Compilation is timed separately and excluded from the run times. Returns the two compile
    and run times, ``sequential_over_grid``, ``runs``, ``steps_per_run`` and the 1-minute load
    average (other processes on the machine skew both sides).
    """
    mesh = seed_mesh()
    if len(seeds) % mesh.devices.size:
        raise ValueError(f"n_seeds={len(seeds)} must be a multiple of the "
                         f"{mesh.devices.size} devices")
    n_grid = len(next(iter(grid.values())))
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    init = jax.jit(jax.vmap(jax.vmap(trainer.init, (None, 0)), (0, None)))
    program = sweep_program(trainer, steps, mesh, vectorize)
    state = init(keys, dict(grid))
    total = trainer.total_steps()
    compiled, out_compile = timed_compile(program, state, dict(grid), total)
    _, grid_seconds = timed_call(compiled, state, dict(grid), total)
    out = {"grid_compile_seconds": out_compile, "grid_seconds": grid_seconds}

    single = jit_train(lambda s, h: trainer.run(s, h, steps), trainer)  # compiled as the sweep is
    runs = [({k: v[g] for k, v in grid.items()}, s) for s in seeds for g in range(n_grid)]
    states = [(trainer.init(jax.random.PRNGKey(s), hp), hp) for hp, s in runs]
    compiled_one, out["sequential_compile_seconds"] = timed_compile(single, *states[0])
    total = 0.0
    for s, h in states:
        total += timed_call(compiled_one, s, h)[1]
    out["sequential_seconds"] = total
    out["sequential_over_grid"] = total / out["grid_seconds"]
    out["runs"], out["steps_per_run"] = len(runs), steps
    out["load_average_1min"] = os.getloadavg()[0]
    return out


def load_average() -> str:
    """The 1, 5 and 15 minute load averages as ``"a b c"`` (``"unknown"`` where the OS has none):
    recorded beside timings, which shared cores make noisy."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"
