"""Checks of the exact model (``dynamics.model``): against the enumerated full-manifold field
(``dynamics.reference``) and against SGD on every weight of the transformer (``cells.theory``).
"""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.cells import theory as imir_cells
from mechjax.analysis.imir.dynamics import grid
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.dynamics import reference as ode
from mechjax.analysis.imir.dynamics import solver as solve
from mechjax.tasks import blocklist as bl
from mechjax.tasks.blocklist import population as pop


def vs_full_ode(spec: bl.BlockListSpec, init_sub, f_r, f_v, t1: float, n_save: int,
                dt0: float | None = None) -> dict:
    """The exact dynamics against the enumerated full-manifold ODE
    (``dynamics.reference.enumerated_field`` through
    the engine on ``symmetric_support``) from the same point, per cell:
    ``dynamics.reference.max_rel_deviation``
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
    ``dynamics.reference.max_rel_deviation`` until the trained loss has dropped 90% (as
    ``measure.ode_vs_gd``),
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
