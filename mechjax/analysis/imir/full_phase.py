"""Phase diagram from the *full-manifold* reduced ODE (every coordinate of ``make_basis``, exact:
it is full training, docs/imir.md sections 2-4) on a tiny enumerated recall spec.

The 4-coordinate closed form (``reduced``) is fast enough for 64 x 64 grids but its sub-manifold
is not closed (section 5); this module solves the exact dynamics on a coarse grid of the same
task for comparison. The population is the orbit quotient of the enumerated support (42
sequences for the 8-token, 3-block spec), whose probabilities are traced in ``(f_r, f_v)``, so the
grid is one ``vmap``.

Read-offs match ``phase``: ``p_rare`` = mean target probability over sequences whose relevant
item is rare (``given_rare``: conditional, so defined at ``f_r = 0``); ``p_iwl`` = mean
probability of ``C(a)`` on common, faithful queries whose relevant
block was removed from the context (in-weights only; ``enumerate_support(with_relevant=False)``).
"""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir import basis as ib
from mechjax.analysis.imir import ode
from mechjax.analysis.imir import phase as ph
from mechjax.analysis.imir import project as proj
from mechjax.analysis.imir import reduced as rd
from mechjax.model import forward
from mechjax.tasks import blocklist as bl


def given_rare(support: bl.Support, task_params) -> jax.Array:
    """``P(sequence | relevant item rare)`` up to a constant: the support's probabilities without
    the relevant item's rare/common draw (``rare0``), restricted to ``rare0 = 1``. Defined at
    ``f_r = 0`` (the distractors keep the training distribution)."""
    p = jnp.asarray(support.count, jnp.float32) * support.base
    keep = None
    for j, v in enumerate(support.param_vars):
        if v.name == "rare0":
            keep = jnp.asarray(support.param_draws[:, j] == 1, jnp.float32)
            continue
        p = p * bl.var_probs(v, task_params)[support.param_draws[:, j]]
    if keep is None:
        raise ValueError("support has no 'rare0' draw")
    return p * keep


def full_manifold_grid(spec: bl.BlockListSpec, init_sub, f_r: np.ndarray, f_v: np.ndarray,
                       t1: float, n_save: int, dt0: float | None = None,
                       ) -> dict[str, np.ndarray]:
    """Full reduced ODE from ``W(init_sub)`` on the (alpha, beta, gamma, delta) directions, for
    each cell ``(f_r[c], f_v[c])``. Returns ``theta_abgd [G, n_save + 1, 4]`` (Gram-weighted
    projection), ``p_rare``, ``p_iwl``, ``loss`` ``[G, n_save + 1]`` and ``n_coords``."""
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len)
    basis = ib.make_basis(frame)
    _, phi = ode.abgd_coordinates(basis)
    to_sub = jnp.asarray(ode.abgd_projector(basis), jnp.float32)  # [4, n]
    sup = bl.enumerate_support(spec).orbit_quotient(spec)
    iwl = bl.enumerate_support(spec, with_relevant=False).orbit_quotient(spec)
    loss = ode.population_loss_fn(basis, sup)
    field = ode.vector_field(basis, loss)
    cfg, fixed = ib.imir_config(frame), ib.fixed_params(frame)
    th0 = jnp.asarray(init_sub, jnp.float32) @ jnp.asarray(phi, jnp.float32)
    w_iwl = iwl.probs({"f_r": jnp.float32(0.0), "f_v": jnp.float32(0.0)})

    def target_prob(theta, support, w):
        params = {**fixed, **proj.weights(basis, theta)}
        b = support.batch
        qpos = jnp.argmax(b["weights"], 1)
        logits = forward(params, b["tokens"], cfg)
        logits = jnp.take_along_axis(logits, qpos[:, None, None], 1)[:, 0]
        p = jax.nn.softmax(logits, -1)
        p = jnp.take_along_axis(p, b["target"][:, None], 1)[:, 0]
        return jnp.sum(w * p) / jnp.sum(w)

    def one(fr, fv):
        tp = {"f_r": fr, "f_v": fv}
        traj = ode.integrate(field, th0, tp, t1, n_save, dt0=dt0)
        w_rare = given_rare(sup, tp)
        each = jax.vmap(lambda th: (target_prob(th, sup, w_rare), target_prob(th, iwl, w_iwl),
                                    loss(proj.weights(basis, th), tp)))
        p_rare, p_iwl, ls = each(traj)
        return traj @ to_sub.T, p_rare, p_iwl, ls

    out = jax.jit(jax.vmap(one))(jnp.asarray(f_r, jnp.float32), jnp.asarray(f_v, jnp.float32))
    sub, p_rare, p_iwl, ls = (np.asarray(x) for x in out)
    return {"theta_abgd": sub, "p_rare": p_rare, "p_iwl": p_iwl, "loss": ls,
            "n_coords": basis.size}


def compare_with_four_coordinates(spec: bl.BlockListSpec, init_sub, n: int, t1: float,
                                  n_save: int, threshold: float, dt0: float | None = None,
                                  ) -> tuple[dict, dict[str, np.ndarray]]:
    """The exact (full-manifold) reduced ODE on an ``n x n`` (f_r, f_v) grid over [0, 1]^2 and
    the 4-coordinate closed form on the same grid and spec: where do the phase diagrams agree?
    Returns summary entries ``full_grid/*`` and arrays ``[n, n]`` (read-offs of both, ``s``)."""
    ax = np.linspace(0.0, 1.0, n)
    fr, fv = np.meshgrid(ax, ax, indexing="ij")
    t = np.linspace(0.0, t1, n_save + 1)
    t0 = time.perf_counter()
    full = full_manifold_grid(spec, init_sub, fr.ravel(), fv.ravel(), t1, n_save, dt0=dt0)
    secs = time.perf_counter() - t0
    b1 = np.ones(fr.size)
    # the full model is not capped at b / (b + 1) on rare tokens: its ICL level is threshold * 1
    ro_full = ph.readoff(full | {"acc_rare": full["p_rare"]}, t, b1, threshold, capped=False)
    four = ph.solve_grid(rd.RecallSizes.from_spec(spec), init_sub, 1, fr.ravel(), fv.ravel(), t1,
                         n_save, dt0=dt0)
    ro_four = ph.readoff({k: np.asarray(v) for k, v in four.items()}, t, b1, threshold)
    sb = ph.s_factor(fr, fv)
    contour = ph.contour_agreement(sb, ro_full["icl"].reshape(fr.shape))
    summary = {
        "full_grid/seconds": secs, "full_grid/cells": int(fr.size),
        "full_grid/n_coords": int(full["n_coords"]), "full_grid/contour_sb": contour,
        "full_grid/winner_counts": ph.winner_counts(ro_full["winner"]),
        "full_grid/winner_counts_4coord": ph.winner_counts(ro_four["winner"]),
        "full_grid/winner_agreement_with_4coord": float(np.mean(
            ro_full["winner"] == ro_four["winner"])),
        "full_grid/icl_agreement_with_4coord": float(np.mean(ro_full["icl"] == ro_four["icl"])),
        "full_grid/iwl_final_mean": float(np.mean(ro_full["p_iwl"])),
        "full_grid/iwl_final_mean_4coord": float(np.mean(ro_four["p_iwl"]))}
    arrays = {"axis": ax, "s": sb, "theta_abgd": full["theta_abgd"],
              "contour_c": contour["c"],
              "contour_c_4coord": ph.contour_agreement(sb, ro_four["icl"].reshape(fr.shape))["c"]}
    for name, ro in (("", ro_full), ("_4coord", ro_four)):
        for k in ("winner", "p_rare", "p_iwl", "emergence"):
            arrays[k + name] = ro[k].reshape(fr.shape)
    return summary, arrays
