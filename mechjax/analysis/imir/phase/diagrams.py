"""Phase diagrams from the exact reduced dynamics (``exact``): the (f_r, f_v) grid as one jitted
``vmap``, the (b, f_r) grid (one class set per b), and the checks of the exact dynamics against
the enumerated full-manifold ODE (``ode``) and against SGD on full weights (``cells``).

Read-offs are ``phase.readoff``'s with ``capped=False`` (the full manifold can use positions, so
rare-token ICL is not capped at ``b / (b + 1)``).
"""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.dynamics import grid
from mechjax.analysis.imir.cells import theory as imir_cells
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.dynamics import reference as ode
from mechjax.analysis.imir.phase import readoff as ph
from mechjax.analysis.imir.dynamics import solve
from mechjax.tasks import blocklist as bl
from mechjax.tasks.blocklist import population as pop


def b_grid(spec: bl.BlockListSpec, init_sub, b_values, f_r, f_v: float, t1: float,
           n_save: int, rtol: float = solve.RTOL, dt0: float | None = None,
           solver: str = "tsit5", step_cap: int | None = None, chunk: int = 256,
           ) -> tuple[dict[str, np.ndarray], float]:
    """The (b, f_r) diagram: for each ``b`` (its own class set) one vmapped solve over ``f_r``.
    Returns read-off arrays ``[len(b_values) * len(f_r), n_t]`` (b-major) and the run seconds
    (compilation excluded)."""
    parts, secs = [], 0.0
    for b in b_values:
        model = exact.make(bl.BlockListSpec(kind="recall", n_common=spec.n_common,
                                            n_rare=spec.n_rare, n_blocks=spec.n_blocks,
                                            burstiness=int(b)))
        out, _, run = grid.timed_cells(model, init_sub, f_r, np.full(len(f_r), f_v), t1, n_save,
                                  rtol, dt0, chunk, solver=solver, step_cap=step_cap)
        parts.append(out)
        secs += run
    keys = [k for k in parts[0] if k not in ("theta", "n_capped")]
    return ({**{k: np.concatenate([p[k] for p in parts]) for k in keys},
             "n_capped": np.asarray(sum(int(p["n_capped"]) for p in parts))}, secs)


def vs_full_ode(spec: bl.BlockListSpec, init_sub, f_r, f_v, t1: float, n_save: int,
                dt0: float | None = None) -> dict:
    """The exact dynamics against the enumerated full-manifold ODE (``ode.enumerated_field`` through
    the engine on ``symmetric_support``) from the same point, per cell: ``ode.max_rel_deviation``
    of the coordinate trajectories (the enumerated ODE is the reference), and seconds of each."""
    model = exact.make(spec)
    th0 = jnp.asarray(exact.abgd_init(model, init_sub), jnp.float32)
    loss = ode.population_loss_fn(model.basis, pop.symmetric_support(spec))
    field = ode.enumerated_field(model.basis, loss)
    fr, fv = (jnp.asarray(np.ravel(x), jnp.float32) for x in (f_r, f_v))

    def run(fn):
        f = jax.jit(jax.vmap(lambda a, b: solve.solve(fn, th0, {"f_r": a, "f_v": b}, t1,
                                                      n_save, dt0=dt0))).lower(fr, fv).compile()
        t0 = time.perf_counter()
        ys = np.asarray(jax.block_until_ready(f(fr, fv)))
        return ys, time.perf_counter() - t0

    ref, t_ref = run(field)
    got, t_got = run(model.field)
    devs = [ode.max_rel_deviation(got[i], ref[i]) for i in range(len(ref))]
    return {"max_rel_deviation": max(d["norm"] for d in devs),
            "max_rel_deviation_per_coordinate": max(d["coord"] for d in devs),
            "cells": len(ref), "n_coords": model.n_coords, "n_classes": model.classes.size,
            "seconds_full_ode": t_ref, "seconds_exact": t_got}


def vs_sgd(spec: bl.BlockListSpec, init_sub, f_r: float, f_v: float, lr: float, steps: int,
           n_save: int, batch_size: int, seed: int = 0, dt0: float | None = None) -> dict:
    """The exact dynamics against SGD on every weight of the IMIR transformer from the same
    on-manifold point (``cells.train_cells``, the trained weights' least-squares coordinates):
    ``ode.max_rel_deviation`` until the trained loss has dropped 90% (as ``measure.ode_vs_gd``),
    and over the whole run."""
    model = exact.make(spec)
    tr = imir_cells.train_cells(spec, init_sub, np.array([f_r]), np.array([f_v]), lr, steps,
                                n_save, batch_size, 256, seed, full_coords=True,
                                rare_pool="cell")  # p_rare unused; the grid cells' program
    t1 = float(tr["t"][-1])
    traj = grid.solve_cells(model, exact.abgd_init(model, init_sub), f_r, f_v, t1, n_save,
                             dt0=dt0)
    ode_theta = np.asarray(traj["theta"][0])
    ode_loss = np.asarray(traj["loss"][0])
    sgd_theta = tr["theta_full"][0]
    # the trained loss is a minibatch estimate; the 90% drop is read on the exact loss along
    # the ODE (same times)
    hit = ode_loss <= 0.1 * ode_loss[0]
    upto = int(np.argmax(hit)) + 1 if hit.any() else len(ode_loss)
    return {"until_90": ode.max_rel_deviation(sgd_theta, ode_theta, upto),
            "whole": ode.max_rel_deviation(sgd_theta, ode_theta),
            "loss_drop_90_at_t": float(tr["t"][upto - 1]) if hit.any() else None,
            "t1": t1, "lr": lr, "batch_size": batch_size, "n_coords": model.n_coords}


def boundary(winner: np.ndarray, icl: np.ndarray, fr_ax: np.ndarray, fv_ax: np.ndarray,
             ) -> dict:
    """Where the regimes of an (f_r, f_v) diagram (``winner``, ``icl`` ``[n_fr, n_fv]``) end:
    per f_v column the smallest f_r at which ICL has formed (None: nowhere in the column), the
    largest f_r at which IWL wins at the first f_v column (None: nowhere), and the number of
    cells where IWL wins (``phase.WINNERS``: IWL or both)."""
    winner, icl = np.asarray(winner), np.asarray(icl, bool)
    iwl = (winner == ph.WINNERS.index("IWL")) | (winner == ph.WINNERS.index("both"))
    icl_min = [float(fr_ax[np.argmax(icl[:, j])]) if icl[:, j].any() else None
               for j in range(len(fv_ax))]
    iwl_at_0 = np.flatnonzero(iwl[:, 0])
    return {"icl_f_r_min_per_f_v": icl_min, "f_v": [float(x) for x in fv_ax],
            "iwl_f_r_max_at_f_v_min": float(fr_ax[iwl_at_0.max()]) if iwl_at_0.size else None,
            "iwl_cells": int(iwl.sum()), "icl_cells": int(icl.sum())}
