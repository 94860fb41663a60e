"""Theorems 2 and 3 of the IMIR paper, checked numerically on the closed-form 4-coordinate model
(``dynamics.four_coord``; derivations: docs/imir.md, section 6).

Theorem 2 (ICL gradient suppression by in-weights learning): the ICL gradient with the
in-weights association formed is ``s = f_r + (1 - f_r) f_v`` times the gradient without it.
``theorem2_ratio`` measures it at one point; ``theorem2_protocols`` under the theorem's protocol,
three protocols that each break one of its conditions, and along phase-diagram trajectories.

Theorem 3 (ICL gradient linear in burstiness ``b`` when distractors dominate): ``theorem3`` fits
the gradient against ``b`` at one point; ``theorem3_protocols`` in and out of that regime.
"""
from __future__ import annotations

import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.dynamics import four_coord as rd
from mechjax.analysis.imir.phase.readoffs import nearest_cells, s_factor


def icl_gradient(sizes: rd.RecallSizes, theta, b, f_r, f_v) -> jax.Array:
    """``-dL/d(alpha, beta, gamma)``: the loss gradient on the induction (ICL) coordinates."""
    th = jnp.asarray(theta, jnp.float32)
    return _icl_grad(sizes)(th, *(jnp.float32(x) for x in (b, f_r, f_v)))


@functools.lru_cache(maxsize=None)
def _icl_grad(sizes: rd.RecallSizes):
    return jax.jit(lambda th, b, fr, fv: -jax.grad(rd.loss, argnums=1)(sizes, th, b, fr, fv)[:3])


def delta_for_p_iwl(sizes: rd.RecallSizes, p: float) -> float:
    """The ``delta`` at which the in-weights readout gives ``C(a)`` probability ``p`` (bisection
    on the monotone ``dynamics.four_coord.p_iwl``)."""
    v = sizes.vocab

    def p_of(d):  # reduced.p_iwl in float64 numpy
        top = np.exp(d * (1 - 1.0 / v))
        return top / (top + (sizes.n_common - 1) * np.exp(-d / v) + sizes.n_rare)

    lo, hi = 0.0, 200.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if p_of(mid) < p else (lo, mid)
    return 0.5 * (lo + hi)


def theorem2_ratio(sizes: rd.RecallSizes, icl_point: Sequence[float], delta_formed: float,
                   b, f_r, f_v, delta_null: float = 0.0) -> dict[str, float]:
    """Suppression of the ICL gradient by in-weights learning: ``-dL/dgamma`` (and the norm of
    ``-dL/d(alpha, beta, gamma)``) at ``(icl_point, delta_formed)`` divided by the same at
    ``(icl_point, delta_null)``; Theorem 2 predicts ``s_factor(f_r, f_v)``."""
    a, bb, g = icl_point
    with_iwl = icl_gradient(sizes, [a, bb, g, delta_formed], b, f_r, f_v)
    without = icl_gradient(sizes, [a, bb, g, delta_null], b, f_r, f_v)
    s = float(s_factor(f_r, f_v))
    r_gamma = float(with_iwl[2] / without[2])
    r_norm = float(jnp.linalg.norm(with_iwl) / jnp.linalg.norm(without))
    return {"f_r": float(f_r), "f_v": float(f_v), "s": s, "ratio_gamma": r_gamma,
            "ratio_norm": r_norm, "rel_error_gamma": abs(r_gamma - s) / s,
            "rel_error_norm": abs(r_norm - s) / s}


def linear_fit(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Least-squares ``y = slope x + intercept`` and its R^2."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    slope, intercept = np.polyfit(x, y, 1)
    res = y - (slope * x + intercept)
    tot = np.sum((y - y.mean()) ** 2)
    return {"slope": float(slope), "intercept": float(intercept),
            "r2": float(1 - np.sum(res ** 2) / tot) if tot > 0 else 1.0}


def theorem3(sizes: rd.RecallSizes, icl_point: Sequence[float], delta: float,
             b_values: Sequence[int], f_r: float, f_v: float) -> dict:
    """ICL gradient (``-dL/dgamma`` and ``-dL/dbeta``) against burstiness ``b`` at a fixed point."""
    grads = np.array([np.asarray(icl_gradient(sizes, list(icl_point) + [delta], b, f_r, f_v))
                      for b in b_values])
    return {"b": [int(b) for b in b_values], "grad_gamma": grads[:, 2].tolist(),
            "grad_beta": grads[:, 1].tolist(), "grad_alpha": grads[:, 0].tolist(),
            "fit_gamma": linear_fit(b_values, grads[:, 2]),
            "fit_beta": linear_fit(b_values, grads[:, 1])}


def theorem2_protocols(sizes: rd.RecallSizes, big: rd.RecallSizes, init: Sequence[float],
                       p_iwl: float, b: int, settings: Sequence[tuple[float, float]],
                       grid: dict | None = None) -> dict:
    """The ICL-gradient suppression ``-dL/dgamma (delta formed) / -dL/dgamma (delta = init)``
    against ``s`` for each ``(f_r, f_v)`` of ``settings``: the theorem's protocol (ICL at
    ``init``, delta at ``p_iwl``, the large vocabulary ``big``) and three that break one of its
    conditions (IWL half formed, the small vocabulary ``sizes``, ICL partly formed).

    ``grid`` (``{"t", "out", "f_r", "f_v", "b"}``: a ``solve_grid`` result on ``sizes`` with its
    saved times and flat cell parameters) adds the trajectory protocol: at the first saved time
    with ``p_iwl >= 0.99`` in the grid cell nearest each setting, the actual (alpha, beta, gamma)
    there against delta reset to its initial value.

    Returns summary entries ``theorem2/*`` and ``rows`` (label -> per-setting ratios, for plots).
    """
    init = [float(x) for x in init]
    icl0 = init[:3]
    settings = [tuple(map(float, p)) for p in settings]
    d_big = delta_for_p_iwl(big, p_iwl)
    protocols = {
        f"protocol: ICL at init, p_iwl={p_iwl}, V={big.vocab}, T={big.seq_len}":
            (big, icl0, d_big),
        f"IWL half formed (p_iwl=0.9), V={big.vocab}": (big, icl0, delta_for_p_iwl(big, 0.9)),
        f"small vocabulary V={sizes.vocab}, T={sizes.seq_len}, p_iwl={p_iwl}":
            (sizes, icl0, delta_for_p_iwl(sizes, p_iwl)),
        f"ICL partly formed (alpha=beta=gamma=2), V={big.vocab}": (big, [2.0, 2.0, 2.0], d_big),
    }
    rows, table = {}, {}
    for label, (sz, pt, d) in protocols.items():
        rs = [theorem2_ratio(sz, pt, d, b, fr, fv, delta_null=init[3]) for fr, fv in settings]
        rows[label] = rs
        table[label] = {"delta_formed": d, "max_rel_error": max(r["rel_error_gamma"] for r in rs),
                        "rows": rs}
    first = next(iter(table.values()))
    if grid is not None:
        traj_rows = []
        fr_g, fv_g = np.ravel(grid["f_r"]), np.ravel(grid["f_v"])
        for fr, fv in settings:
            i = int(nearest_cells(fr_g, fv_g, [fr], [fv])[0])
            hit = np.nonzero(grid["out"]["p_iwl"][i] >= 0.99)[0]
            if not len(hit):
                continue
            th = grid["out"]["theta"][i, hit[0]]
            r = theorem2_ratio(sizes, th[:3].tolist(), float(th[3]), grid["b"], fr_g[i], fv_g[i],
                               delta_null=init[3])
            traj_rows.append({**r, "t": float(grid["t"][hit[0]])})
        table["along the grid ODE when p_iwl first >= 0.99 (actual alpha, beta, gamma)"] = {
            "max_rel_error": max((r["rel_error_gamma"] for r in traj_rows), default=None),
            "rows": traj_rows}
        rows["along the ODE"] = traj_rows
    return {"theorem2/max_rel_error": first["max_rel_error"],
            "theorem2/conditions": (
                f"-dL/dgamma (the ICL gradient; dL/dalpha and dL/dbeta are O(gamma beta) there) at "
                f"(alpha, beta, gamma) = {icl0}, with delta at p_iwl = {p_iwl} "
                f"(delta = {d_big:.3f}) divided by the same with delta = {init[3]}; "
                f"recall, n_blocks = {big.n_blocks}, b = {b}, V = {big.vocab} "
                f"(T / V = {big.seq_len / big.vocab:.3f})"),
            "theorem2/protocols": table, "rows": rows}


def theorem3_protocols(sizes: rd.RecallSizes, small: rd.RecallSizes, init: Sequence[float],
                       b_max: int, f_r: float, f_v: float) -> dict:
    """ICL gradient against ``b = 1 .. b_max`` in the distractor-dominated regime (``sizes``,
    n >> b) at ``init``, with few distractors (``small``), and with ICL formed (3, 3, 3).
    Returns summary entries ``theorem3/*`` and ``series`` (label -> (b, gradient, R^2))."""
    init = [float(x) for x in init]
    bs = list(range(1, b_max + 1))
    main = theorem3(sizes, init[:3], init[3], bs, f_r, f_v)
    few = theorem3(small, init[:3], init[3], bs, f_r, f_v)
    formed = theorem3(sizes, [3.0, 3.0, 3.0], init[3], bs, f_r, f_v)
    nbig, nsmall = sizes.n_blocks, small.n_blocks
    return {"theorem3/slope_vs_b": main["fit_gamma"]["slope"],
            "theorem3/r2": main["fit_gamma"]["r2"],
            "theorem3/conditions": (
                f"-dL/dgamma at (alpha, beta, gamma, delta) = {init}, b = 1..{b_max}, "
                f"n_blocks = {nbig} (n >> b), V = {sizes.vocab}, f_r = {f_r}, f_v = {f_v}"),
            "theorem3/distractor_dominated": main,
            f"theorem3/few_distractors_n{nsmall}": few,
            "theorem3/icl_formed_point_3_3_3": formed,
            "series": {
                f"n={nbig}, near-uniform attention": (bs, main["grad_gamma"],
                                                      main["fit_gamma"]["r2"]),
                f"n={nsmall}": (bs, few["grad_gamma"], few["fit_gamma"]["r2"]),
                f"n={nbig}, alpha=beta=gamma=3": (bs, formed["grad_gamma"],
                                                  formed["fit_gamma"]["r2"])}}
