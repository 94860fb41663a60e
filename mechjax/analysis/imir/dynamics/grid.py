"""The compiled grid solver every exact diagram uses: the model's field from one start for many
``(f_r, f_v)`` cells, one jitted ``vmap`` per chunk of cells (``cells_solver``, ``solve_cells``),
and ``timed_cells``, the grid runner (chunks side by side, a step-capped first pass, compilation
timed apart).
"""
from __future__ import annotations

import concurrent.futures
import functools
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.dynamics import solver as solve
from mechjax.analysis.imir.dynamics.model import ExactRecall, abgd_init


def padded_size(n_cells: int) -> int:
    """The cell count a solve is compiled for: ``n_cells`` rounded up to a power of two, at
    least 4 (padded cells repeat the last one), so solves of a few cells share one program."""
    return max(4, 1 << (max(int(n_cells), 1) - 1).bit_length())


def solve_cells(model: ExactRecall, theta0, f_r, f_v, t1: float, n_save: int,
                dtype=jnp.float32, rtol: float = solve.RTOL, atol: float = solve.ATOL,
                dt0: float | None = None, solver: str = "tsit5") -> dict[str, np.ndarray]:
    """The exact reduced ODE from ``theta0 [n]`` for every cell ``(f_r[c], f_v[c])`` (one jitted
    ``vmap``): ``theta [G, n_save + 1, n]`` and the ``readouts`` ``[G, n_save + 1]``. Raises
    when a cell does not reach ``t1`` within ``solver.MAX_STEPS`` steps."""
    f_r, f_v = np.ravel(f_r), np.ravel(f_v)
    fn = cells_solver(model, t1, n_save, rtol, atol, dt0, solver=solver, dtype=dtype,
                      size=padded_size(f_r.size))
    idx = np.minimum(np.arange(fn.size), f_r.size - 1)   # pad with the last cell
    out = fn(jnp.asarray(theta0, dtype), f_r[idx], f_v[idx])
    return {k: np.asarray(v)[: f_r.size] for k, v in out.items()}


class CellsSolver:
    """A compiled ``(theta0 [n], f_r [size], f_v [size]) -> solve_cells output`` (``cells_solver``).
    Calls with ``max_steps=None`` raise when a cell did not reach ``t1``."""

    def __init__(self, compiled, size: int, scalars: tuple, capped: bool, keep_theta: bool,
                 t1: float):
        self.compiled, self.size, self.scalars = compiled, size, scalars
        self.capped, self.keep_theta, self.t1 = capped, keep_theta, t1

    def __call__(self, theta0, f_r, f_v) -> dict[str, jax.Array]:
        dtype = self.scalars[0].dtype
        out = dict(self.compiled(jnp.asarray(theta0, dtype), jnp.asarray(f_r, dtype),
                                 jnp.asarray(f_v, dtype), *self.scalars))
        if not self.keep_theta:
            out["theta"] = out["theta"][:, -1]
        if not self.capped:
            done = np.asarray(out.pop("done"))
            out.pop("steps")
            if not done.all():
                raise RuntimeError(f"{int((~done).sum())} of {done.size} cells did not reach "
                                   f"t1={self.t1} within {solve.MAX_STEPS} solver steps")
        return out


def cells_solver(model: ExactRecall, t1: float, n_save: int, rtol: float = solve.RTOL,
                 atol: float = solve.ATOL, dt0: float | None = None, keep_theta: bool = True,
                 solver: str = "tsit5", max_steps: int | None = None, size: int = 4,
                 dtype=jnp.float32) -> CellsSolver:
    """The compiled solve of ``size`` cells (compiled apart from the solve, so its time can be
    measured). ``keep_theta=False`` returns the read-offs and the final state only.
    ``max_steps``: a step cap per cell (``solver.solve_capped``); the output then has ``done
    [G]``, False for the cells the cap stopped (their read-offs are not to be used), and
    ``steps [G]``, the solver steps each took (rejected ones included).

    ``t1``, ``rtol``, ``atol`` and ``dt0`` are arguments of the compiled program, not constants,
    so the solves of one model at one ``n_save``, method, cap and size share one compilation
    (a test-size run compiles a handful of programs, not one per stage)."""
    scalars = tuple(jnp.asarray(x, dtype) for x in (t1, rtol, atol, 0.0 if dt0 is None else dt0))
    compiled = _program(model, n_save, solver, max_steps or solve.MAX_STEPS, dt0 is not None,
                        size, jnp.dtype(dtype).name)
    return CellsSolver(compiled, size, scalars, max_steps is not None, keep_theta, t1)


@functools.lru_cache(maxsize=32)
def _program(model: ExactRecall, n_save: int, solver: str, max_steps: int, has_dt0: bool,
             size: int, dtype: str):
    def one(th0, fr, fv, t1, rtol, atol, dt0):
        tp = {"f_r": fr, "f_v": fv}
        traj, ok, steps = solve.solve_capped(model.field, th0, tp, t1, n_save, rtol, atol,
                                             dt0 if has_dt0 else None, max_steps, solver)
        ro = jax.vmap(lambda th: model.readouts(th, tp))(traj)
        return {"theta": traj, **ro, "done": ok, "steps": steps}

    cells = jax.ShapeDtypeStruct((size,), dtype)
    scalar = jax.ShapeDtypeStruct((), dtype)
    theta0 = jax.ShapeDtypeStruct((model.n_coords,), dtype)
    return jax.jit(jax.vmap(one, in_axes=(None, 0, 0, None, None, None, None))).lower(
        theta0, cells, cells, scalar, scalar, scalar, scalar).compile()


def timed_cells(model: ExactRecall, init_sub, f_r, f_v, t1: float, n_save: int,
                rtol: float = solve.RTOL, dt0: float | None = None, chunk: int = 256,
                solver: str = "tsit5", step_cap: int | None = None,
                workers: int | None = None, theta0=None,
                ) -> tuple[dict[str, np.ndarray], float, float]:
    """``solve_cells`` over many cells (float32, final state kept only) from ``init_sub`` (the
    (alpha, beta, gamma, delta) point, ``abgd_init``) or, given, from ``theta0 [n_coords]``,
    with compilation
    timed apart: ``(numpy results, compile seconds, run seconds)``; ``results["n_capped"]`` is
    how many cells needed the second pass, ``results["steps"] [G]`` the solver steps of each
    cell's last pass.

    Cells run ``chunk`` at a time (one compiled vmap, padded). Under ``vmap`` the adaptive loop
    runs until the chunk's slowest cell is done, and a few stiff cells near the ICL/IWL boundary
    take several times the median steps; so with ``step_cap`` every cell first runs capped, and
    only the cells the cap stopped are solved again, uncapped, in a second pass. ``workers``
    chunks run at once (default: one per CPU core)."""
    workers = workers or os.cpu_count() or 1
    f_r, f_v = np.ravel(f_r), np.ravel(f_v)
    n_cells = f_r.size
    chunk = padded_size(min(chunk, n_cells))
    atol = rtol * solve.ATOL / solve.RTOL
    th0 = jnp.asarray(abgd_init(model, init_sub) if theta0 is None else theta0, jnp.float32)
    # the second pass holds few cells: a smaller chunk, so they do not pad a full one
    sizes = [(step_cap, chunk), (solve.MAX_STEPS, padded_size(chunk // 8))] if step_cap \
        else [(solve.MAX_STEPS, chunk)]
    t0 = time.perf_counter()
    passes = [(cells_solver(model, float(t1), n_save, rtol, atol, dt0, keep_theta=False,
                                  solver=solver, max_steps=cap, size=size), size)
              for cap, size in sizes]
    t_compile = time.perf_counter() - t0

    def run(fn_size, cells: np.ndarray) -> dict[str, np.ndarray]:
        fn, chunk = fn_size

        def one(i: int) -> dict[str, np.ndarray]:
            idx = cells[i: i + chunk]
            idx = np.concatenate([idx, np.full(chunk - idx.size, idx[-1])])  # pad the last
            out = fn(th0, jnp.asarray(f_r[idx], jnp.float32), jnp.asarray(f_v[idx], jnp.float32))
            return {k: np.asarray(v) for k, v in out.items()}

        # the adaptive loop's ops are too small for XLA to spread over the cores, so chunks
        # run side by side, one per core (measured: 1.9x on 2 cores)
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(one, range(0, cells.size, chunk)))
        return {k: np.concatenate([p[k] for p in parts])[: cells.size] for k in parts[0]}

    t0 = time.perf_counter()
    out = run(passes[0], np.arange(n_cells))
    n_capped = 0
    if step_cap:
        again = np.flatnonzero(~out["done"])
        n_capped = int(again.size)
        if n_capped:
            redo = run(passes[1], again)
            for k in out:
                out[k][again] = redo[k]
    t_run = time.perf_counter() - t0
    if "done" in out and not out["done"].all():
        raise RuntimeError(f"{int((~out['done']).sum())} of {n_cells} cells did not reach "
                           f"t1={t1} within {solve.MAX_STEPS} solver steps")
    out.pop("done", None)
    return {**out, "n_capped": np.asarray(n_capped)}, t_compile, t_run
