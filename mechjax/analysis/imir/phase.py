"""Phase diagrams of in-context vs in-weights learning from the reduced (alpha, beta, gamma, delta)
dynamics (``reduced``), and the numerical checks of Theorems 2 and 3 (docs/imir.md, section 6).

Read-offs (all from the closed-form population, so they are exact for the reduced model):
  ICL formed   mean target probability on *rare* items ``p_rare >= threshold`` (rare tokens are
               resampled per sequence: only the induction circuit can predict them);
  IWL formed   probability of ``C(a)`` from the in-weights readout alone ``p_iwl >= threshold``;
  winner       0 neither, 1 ICL only, 2 IWL only, 3 both (at the end of the horizon);
  emergence    time at which ``p_rare`` reaches the threshold, linearly interpolated between
               saved times (``curves.first_crossing``; ``inf``: never).
"""
from __future__ import annotations

import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.curves import first_crossing
from mechjax.analysis.imir import reduced as rd

WINNERS = ("neither", "ICL", "IWL", "both")


def s_factor(f_r, f_v):
    """Theorem 2's suppression factor ``s = f_r + (1 - f_r) f_v``: the fraction of sequences whose
    answer the in-weights association does not already give."""
    return f_r + (1 - f_r) * f_v


def solve_grid(sizes: rd.RecallSizes, theta0: Sequence[float], b, f_r, f_v, t1: float,
               n_steps: int, n_save: int, dtype=jnp.float32) -> dict[str, jax.Array]:
    """Reduced ODE for every cell of a flat grid (``b``, ``f_r``, ``f_v`` broadcast to ``[G]``):
    one jitted ``vmap``. Returns ``theta [G, n_save + 1, 4]`` and the ``reduced.metrics``
    ``[G, n_save + 1]`` along the trajectories."""
    b, f_r, f_v = (jnp.asarray(np.ravel(x), dtype)
                   for x in np.broadcast_arrays(b, f_r, f_v))
    th0 = jnp.asarray(theta0, dtype)
    return _solve(sizes, t1, n_steps, n_save)(th0, b, f_r, f_v)


def _solve(sizes, t1, n_steps, n_save):
    def one(th0, b, fr, fv):
        traj = rd.integrate(sizes, th0, b, fr, fv, t1, n_steps, n_save)
        m = jax.vmap(lambda th: rd.metrics(sizes, th, b, fr, fv))(traj)
        return {"theta": traj, **m}

    return jax.jit(jax.vmap(one, in_axes=(None, 0, 0, 0)))


def classify(p_rare: np.ndarray, p_iwl: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """Winner codes (``WINNERS``): ICL formed adds 1, IWL formed adds 2."""
    return ((np.asarray(p_rare) >= threshold).astype(int)
            + 2 * (np.asarray(p_iwl) >= threshold).astype(int))


def coordinate_emergence(t: np.ndarray, theta: np.ndarray,
                         names: Sequence[str] = rd.NAMES) -> dict[str, float]:
    """First time each coordinate covers half of its total change (``theta [n_t, n]``)."""
    theta = np.asarray(theta, np.float64)
    change = np.abs(theta - theta[0])
    total = change[-1]
    return {n: float(first_crossing(t, change[:, j] / max(total[j], 1e-30), 0.5,
                                    interpolate="linear", never=np.inf))
            for j, n in enumerate(names)}


def departure_times(t: np.ndarray, theta: np.ndarray, level: float = 0.5,
                    names: Sequence[str] = rd.NAMES) -> dict[str, float]:
    """First time each coordinate has moved ``level`` from its initial value (``inf``: never).
    Unlike ``coordinate_emergence`` this does not depend on the horizon (gamma, a readout
    scale, keeps growing after the induction head has formed)."""
    change = np.abs(np.asarray(theta, np.float64) - np.asarray(theta, np.float64)[0])
    return {n: float(first_crossing(t, change[:, j], level, interpolate="linear", never=np.inf))
            for j, n in enumerate(names)}


def emergence_order(times: dict[str, float], which: Sequence[str] = ("gamma", "beta", "alpha"),
                    ) -> list[str]:
    """The coordinates of ``which`` sorted by emergence time."""
    return sorted(which, key=lambda n: times[n])


# ------------------------------------------------------------------------------------------------
# Theorems 2 and 3
# ------------------------------------------------------------------------------------------------
def icl_gradient(sizes: rd.RecallSizes, theta, b, f_r, f_v) -> jax.Array:
    """``-dL/d(alpha, beta, gamma)``: the loss gradient on the induction (ICL) coordinates."""
    th = jnp.asarray(theta, jnp.float32)
    return _icl_grad(sizes)(th, *(jnp.float32(x) for x in (b, f_r, f_v)))


@functools.lru_cache(maxsize=None)
def _icl_grad(sizes: rd.RecallSizes):
    return jax.jit(lambda th, b, fr, fv: -jax.grad(rd.loss, argnums=1)(sizes, th, b, fr, fv)[:3])


def delta_for_p_iwl(sizes: rd.RecallSizes, p: float) -> float:
    """The ``delta`` at which the in-weights readout gives ``C(a)`` probability ``p`` (bisection
    on the monotone ``reduced.p_iwl``)."""
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


def contour_agreement(sb: np.ndarray, formed: np.ndarray) -> dict[str, float]:
    """The best single threshold ``c`` of ``s * b`` predicting ``formed`` (ICL emerged) and the
    fraction of cells it classifies correctly: how well the predicted contour ``s b = c``
    separates the phases."""
    sb, formed = np.ravel(sb), np.ravel(formed).astype(bool)
    cands = np.unique(sb)
    best_c, best = float(cands[0]), -1.0
    for c in np.concatenate([cands, [cands[-1] + 1]]):
        acc = float(np.mean((sb >= c) == formed))
        if acc > best:
            best_c, best = float(c), acc
    return {"c": best_c, "agreement": best}
