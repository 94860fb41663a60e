"""The labelled comparison: phase diagrams of the closed-form 4-coordinate (alpha, beta, gamma,
delta) model (``dynamics.four_coord``; docs/imir.md, section 6), its read-off, and full
transformers trained on its cells against it. The default diagrams are the exact model's
(``phase.diagrams``).
"""
from __future__ import annotations

import functools
import time
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.dynamics import four_coord as rd
from mechjax.analysis.imir.dynamics import solver as solve
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.analysis.imir.phase.diagrams import PhaseDiagram
from mechjax.analysis.imir.phase.readoffs import EMERGENCE_LEVEL


def readoff(out: dict, t: np.ndarray, b: np.ndarray, threshold: float) -> dict[str, np.ndarray]:
    """``phase.readoff`` of 4-coordinate cells: ICL counts as formed when ``p_rare`` reaches
    ``threshold * b / (b + 1)``. The 4-coordinate induction head attends equally to the answers
    and to the token after the query (which also follows a copy of the query token on the
    ring), so ``b / (b + 1)`` is its ceiling (docs/imir.md, section 6)."""
    b = np.asarray(b, np.float64)
    return ph.readoff(out, t, threshold, icl_ceiling=b / (b + 1.0))


# Grids are padded to a multiple of this many cells (copies of the first cell, dropped after):
# the diagrams, the reference cell and the trained cells' horizon then run one compiled
# program per (sizes, n_save, tolerances, dtype) instead of one per grid size. A 4-coordinate
# solve costs little per cell; compiling it costs seconds.
GRID_BUCKET = 64


def solve_grid(sizes: rd.RecallSizes, theta0: Sequence[float], b, f_r, f_v, t1: float,
               n_save: int, dtype=jnp.float32, rtol: float = solve.RTOL,
               atol: float = solve.ATOL, dt0: float | None = None) -> dict[str, jax.Array]:
    """Reduced ODE for every cell of a flat grid (``b``, ``f_r``, ``f_v`` broadcast to ``[G]``):
    one jitted ``vmap``. Returns ``theta [G, n_save + 1, 4]`` and the
    ``dynamics.four_coord.metrics``
    ``[G, n_save + 1]`` along the trajectories."""
    out, _ = _run_padded(sizes, theta0, b, f_r, f_v, t1, n_save, dtype, rtol, atol, dt0)
    return out


def _run_padded(sizes, theta0, b, f_r, f_v, t1, n_save, dtype, rtol, atol, dt0):
    """``solve_grid`` and the seconds spent compiling (0 when the program was compiled before)."""
    b, f_r, f_v = (np.ravel(x) for x in np.broadcast_arrays(b, f_r, f_v))
    n = b.size
    pad = -n % GRID_BUCKET
    cells = [jnp.asarray(np.concatenate([x, np.repeat(x[:1], pad)]), dtype) for x in (b, f_r, f_v)]
    args = (jnp.asarray(theta0, dtype), *cells, jnp.asarray(t1, dtype),
            jnp.asarray(0.0 if dt0 is None else dt0, dtype))
    t0 = time.perf_counter()
    program = _compiled(sizes, n_save, float(rtol), float(atol), dt0 is not None,
                        tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args))
    compile_s = time.perf_counter() - t0
    return {k: v[:n] for k, v in program(*args).items()}, compile_s


def grid_solver(sizes: rd.RecallSizes, n_save: int, rtol: float = solve.RTOL,
                atol: float = solve.ATOL, fixed_dt0: bool = True):
    """The jitted ``(theta0 [4], b [G], f_r [G], f_v [G], t1, dt0) -> solve_grid output``;
    ``t1`` and ``dt0`` are traced (one program serves every horizon), ``dt0`` is ignored (diffrax
    picks the first step) unless ``fixed_dt0``."""
    def one(th0, b, fr, fv, t1, dt0):
        traj = rd.integrate(sizes, th0, b, fr, fv, t1, n_save, rtol, atol,
                            dt0 if fixed_dt0 else None)
        m = jax.vmap(lambda th: rd.metrics(sizes, th, b, fr, fv))(traj)
        return {"theta": traj, **m}

    return jax.jit(jax.vmap(one, in_axes=(None, 0, 0, 0, None, None)))


@functools.lru_cache(maxsize=None)
def _compiled(sizes: rd.RecallSizes, n_save: int, rtol: float, atol: float, fixed_dt0: bool,
              shapes: tuple):
    """``grid_solver`` compiled for these argument shapes, kept for the process."""
    return grid_solver(sizes, n_save, rtol, atol, fixed_dt0).lower(*shapes).compile()


def timed_grid(sizes: rd.RecallSizes, theta0: Sequence[float], b, f_r, f_v, t1: float,
               n_save: int, dt0: float | None = None) -> tuple[dict[str, np.ndarray], float, float]:
    """``solve_grid`` (float32) with compilation timed apart: ``(numpy results, compile
    seconds (0 when an earlier call compiled the same program), run seconds)``."""
    t0 = time.perf_counter()
    out, compile_s = _run_padded(sizes, theta0, b, f_r, f_v, t1, n_save, jnp.float32,
                                 solve.RTOL, solve.ATOL, dt0)
    out = jax.block_until_ready(out)
    run_s = time.perf_counter() - t0 - compile_s
    return {k: np.asarray(v) for k, v in out.items()}, compile_s, run_s


def cells_vs_ode(trained: dict[str, np.ndarray], ode_same_horizon: dict[str, np.ndarray],
                 ode_grid_horizon: dict[str, np.ndarray], t_grid: np.ndarray, b: int,
                 threshold: float, f_r: Sequence[float], f_v: Sequence[float],
                 ) -> tuple[dict, dict[str, np.ndarray]]:
    """Summary entries ``cells/*`` and ``emergence_*_trained``, and the trained cells'
    ``phase.readoff``.

    ``trained``: ``train_cells`` output (``theta``, ``p_rare``, ``p_iwl`` ``[C, n_t, ...]`` at
    times ``t``); ``ode_same_horizon``: ``solve_grid`` on the same cells and times;
    ``ode_grid_horizon``: the phase diagram's own solve at the nearest grid cells (times
    ``t_grid``). The first cell is the one whose coordinate emergence is reported."""
    bb = np.full(len(f_r), float(b))
    t = trained["t"]
    trc = readoff({"p_rare": trained["p_rare"], "p_iwl": trained["p_iwl"],
                      "acc_rare": trained["p_rare"]}, t, bb, threshold)
    odc = readoff(ode_same_horizon, t, bb, threshold)
    odg = readoff(ode_grid_horizon, t_grid, bb, threshold)
    th_o, th_t = np.asarray(ode_same_horizon["theta"]), trained["theta"]
    dev = np.linalg.norm(th_t - th_o, axis=-1) / np.linalg.norm(th_o, axis=-1)
    em = ph.departure_times(t, th_t[0], EMERGENCE_LEVEL)
    return {
        "cells/f_r": [float(x) for x in f_r], "cells/f_v": [float(x) for x in f_v],
        "cells/horizon_t": float(t[-1]),
        "cells/winner_trained": [ph.WINNERS[w] for w in trc["winner"]],
        "cells/winner_ode_same_horizon": [ph.WINNERS[w] for w in odc["winner"]],
        "cells/winner_ode_grid_horizon": [ph.WINNERS[w] for w in odg["winner"]],
        "cells/p_rare_trained": trc["p_rare"].tolist(),
        "cells/p_rare_ode_same_horizon": odc["p_rare"].tolist(),
        "cells/p_iwl_trained": trc["p_iwl"].tolist(),
        "cells/p_iwl_ode_same_horizon": odc["p_iwl"].tolist(),
        "cells/icl_emergence_trained": trc["emergence"].tolist(),
        "cells/icl_emergence_ode": odc["emergence"].tolist(),
        # where the 4-coordinate ODE and the projected transformer part (relative, in theta)
        "cells/abgd_rel_deviation_max": dev.max(1).tolist(),
        "cells/abgd_rel_deviation_first_t_over_0.1": [
            float(t[np.argmax(d > 0.1)]) if (d > 0.1).any() else None for d in dev],
        "emergence_times_trained": em,
        "emergence_order_trained": ph.emergence_order(em),
        "emergence_times_trained_half_change": ph.coordinate_emergence(t, th_t[0]),
    }, trc


def reference_emergence(t: np.ndarray, theta: np.ndarray, f_r: float, f_v: float, b: int,
                        ) -> dict:
    """Coordinate emergence of one reduced-ODE trajectory ``theta [n_t, 4]`` (the reference
    cell): summary entries ``emergence_*``."""
    em = ph.departure_times(t, theta, EMERGENCE_LEVEL)
    return {"emergence_times_ode": em, "emergence_order": ph.emergence_order(em),
            "emergence_definition": (
                f"first time a coordinate has moved {EMERGENCE_LEVEL} from its initial value, "
                f"reduced ODE at the reference cell f_r={f_r}, f_v={f_v}, b={b}; *_half_change: "
                "first time it covers half of its change over the horizon"),
            "emergence_times_ode_half_change": ph.coordinate_emergence(t, theta)}


def fr_fv_diagram(sizes: rd.RecallSizes, theta0: Sequence[float], b: int, fr_ax, fv_ax,
                  t1: float, n_save: int, threshold: float, dt0: float | None = None,
                  ) -> PhaseDiagram:
    """The 4-coordinate (f_r, f_v) diagram at burstiness ``b`` (one vmapped solve,
    ``timed_grid``), read with its ceiling (``readoff``); the same ``PhaseDiagram`` as the exact
    model's (``spec`` holds the ``sizes``)."""
    fr_ax, fv_ax = np.asarray(fr_ax, np.float64), np.asarray(fv_ax, np.float64)
    FR, FV = np.meshgrid(fr_ax, fv_ax, indexing="ij")
    out, t_comp, t_run = timed_grid(sizes, theta0, b, FR.ravel(), FV.ravel(), t1, n_save, dt0)
    return _diagram("f_r", "f_v", fr_ax, fv_ax, FR, FV, b * ph.s_factor(FR, FV),
                    np.full(FR.size, float(b)), out, t1, n_save, threshold, sizes, t_run,
                    t_comp)


def b_fr_diagram(sizes: rd.RecallSizes, theta0: Sequence[float], b_ax, fr_ax, f_v: float,
                 t1: float, n_save: int, threshold: float, dt0: float | None = None,
                 ) -> PhaseDiagram:
    """The 4-coordinate (b, f_r) diagram at ``f_v``: one vmapped solve over b and f_r."""
    b_ax, fr_ax = np.asarray(b_ax), np.asarray(fr_ax, np.float64)
    BB, FR = np.meshgrid(b_ax, fr_ax, indexing="ij")
    out, t_comp, t_run = timed_grid(sizes, theta0, BB.ravel(), FR.ravel(), f_v, t1, n_save, dt0)
    return _diagram("b", "f_r", b_ax, fr_ax, BB, FR, BB * ph.s_factor(FR, f_v),
                    BB.ravel().astype(float), out, t1, n_save, threshold, sizes, t_run, t_comp)


def _diagram(x_name, y_name, x, y, X, Y, sb, b_cells, out, t1, n_save, threshold, sizes,
             seconds, compile_seconds) -> PhaseDiagram:
    t = np.linspace(0.0, float(t1), n_save + 1)
    cells = readoff(out, t, b_cells, threshold)
    return PhaseDiagram(x_name, y_name, x, y, X, Y, t, dict(out), cells, sb,
                        ph.contour_agreement(sb, cells["icl"].reshape(X.shape)), sizes, 0,
                        float(seconds), float(compile_seconds))
