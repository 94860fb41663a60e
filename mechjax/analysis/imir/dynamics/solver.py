"""One ODE solver for every IMIR flow: diffrax's adaptive Tsit5 with a PID step-size controller
(error control at ``rtol`` / ``atol``), states saved at equal times with ``SaveAt(ts=...)``.
Phase-diagram grids may pick a cheaper explicit method by name (``SOLVERS``: Heun's 2 field
evaluations a step beat Tsit5's 6 at the loose tolerances a diagram needs; docs/design.md,
"Dependencies"), and ``solve_capped`` stops a cell at a step cap instead of raising.

Jittable and vmappable over the initial state and the field's arguments (grid cells), so a
phase diagram is one ``jit(vmap(solve))``: under ``vmap`` every cell keeps its own step size.
The numbers behind the defaults (time and deviation against the hand-written RK4 it replaced)
are in docs/design.md, "Dependencies" (measured by
``python -m experiments.imir_phase.benchmark_ode``).
"""
from __future__ import annotations

from typing import Any, Callable

import diffrax
import jax
import jax.numpy as jnp

RTOL = 1e-5
ATOL = 1e-7
MAX_STEPS = 16_384

Field = Callable[[jax.Array, Any], jax.Array]

# explicit Runge-Kutta methods with an embedded error estimate, by name
SOLVERS = {"tsit5": diffrax.Tsit5, "bosh3": diffrax.Bosh3, "heun": diffrax.Heun}


def solver_for(name: str):
    """The diffrax solver called ``name`` (one of ``SOLVERS``)."""
    if name not in SOLVERS:
        raise ValueError(f"solver={name!r}: must be one of {sorted(SOLVERS)}")
    return SOLVERS[name]()


def _solution(field: Field, theta0: jax.Array, args: Any, t1, n_save: int, rtol: float,
              atol: float, dt0: float | None, max_steps: int, solver: str = "tsit5",
              throw: bool = True) -> diffrax.Solution:
    if not isinstance(n_save, int) or n_save < 1:
        raise ValueError(f"n_save={n_save!r}: must be a positive integer")
    ts = jnp.linspace(0.0, t1, n_save + 1).astype(theta0.dtype)
    return diffrax.diffeqsolve(
        diffrax.ODETerm(lambda t, y, a: field(y, a)), solver_for(solver), t0=ts[0], t1=ts[-1],
        dt0=dt0, y0=theta0, args=args, saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol), max_steps=max_steps,
        throw=throw)


def solve(field: Field, theta0: jax.Array, args: Any, t1: float | jax.Array, n_save: int,
          rtol: float = RTOL, atol: float = ATOL, dt0: float | None = None,
          max_steps: int = MAX_STEPS, solver: str = "tsit5") -> jax.Array:
    """``d theta / dt = field(theta, args)`` from 0 to ``t1``: ``theta0 [n]`` to states
    ``[n_save + 1, n]`` at ``t = linspace(0, t1, n_save + 1)`` (the first is ``theta0``).
    ``dt0=None``: diffrax picks the first step. Raises (through diffrax) when ``max_steps`` steps
    do not reach ``t1``."""
    return _solution(field, theta0, args, t1, n_save, rtol, atol, dt0, max_steps, solver).ys


def solve_capped(field: Field, theta0: jax.Array, args: Any, t1: float | jax.Array, n_save: int,
                 rtol: float, atol: float, dt0: float | None, max_steps: int,
                 solver: str = "tsit5") -> tuple[jax.Array, jax.Array, jax.Array]:
    """``solve`` that gives up at ``max_steps`` instead of raising: ``(states [n_save + 1, n],
    done, num_steps)``, ``done`` False where the cap stopped it before ``t1`` (its states are
    then not to be used). Under ``vmap`` the loop runs until every cell is done or capped, so a low cap keeps a
    few stiff cells from setting the cost of all the others; solve those again with a higher
    cap."""
    sol = _solution(field, theta0, args, t1, n_save, rtol, atol, dt0, max_steps, solver,
                    throw=False)
    return sol.ys, sol.result == diffrax.RESULTS.successful, sol.stats["num_steps"]


def solve_with_stats(field: Field, theta0: jax.Array, args: Any, t1: float | jax.Array,
                     n_save: int, rtol: float = RTOL, atol: float = ATOL,
                     dt0: float | None = None, max_steps: int = MAX_STEPS,
                     solver: str = "tsit5") -> tuple[jax.Array, dict[str, jax.Array]]:
    """``solve`` plus what the adaptive controller did: ``num_steps``, ``num_accepted_steps``,
    ``num_rejected_steps``."""
    sol = _solution(field, theta0, args, t1, n_save, rtol, atol, dt0, max_steps, solver)
    return sol.ys, {k: sol.stats[k] for k in ("num_steps", "num_accepted_steps",
                                              "num_rejected_steps")}
