"""Theorem 2 of the IMIR paper (ICL-gradient suppression by in-weights learning) on the exact
model of every manifold coordinate (``dynamics.model``; docs/imir.md, section 9), where
``theorems.four_coord`` checks it on the closed-form 4-coordinate model; Theorem 3 on the exact
classes is ``theorems.burstiness``, the emergence order ``theorems.emergence``.

The ICL gradient at a full-coordinate point ``theta`` is the loss derivative along the
(alpha, beta, gamma) directions of ``submanifold.abgd_coordinates``, ``-(phi[:3] @ grad_theta L)``
(``icl_gradient``). On the 4-dim sub-manifold ``theta = (alpha, beta, gamma, delta) @ phi`` this
is ``theorems.four_coord.icl_gradient`` of the same spec whenever the exact loss restricted to the
sub-manifold is ``dynamics.four_coord.loss``: that holds at ``f_v = 0``; at ``f_v > 0`` the exact
population
also has varied partners that collide with a context token, which ``dynamics.four_coord``'s ideal
population
excludes, so the two differ by a few per cent there (measured in
tests/test_imir_theorems.py).

The in-weights part of ``theta`` (``IWL_PARTS``, ``in_weights_indices``):

* ``"delta"``: the one coordinate ``U I|C``, the direct path's unembedding of the association
  ``C`` (Theorem 2's ``delta``: the statement "IWL formed" is ``delta`` large with the ICL
  coordinates held, which is what resetting ``delta`` alone undoes);
* ``"direct"``: every unembedding coordinate of the direct (identity) path, ``U I|*``: ``delta``
  plus the class priors ``U I|I_common``, ``U I|I_rare`` and ``U I|J[common,common]``, which the
  exact dynamics also learn in weights (they read only the query token);
* ``"assoc"``: the association ``C`` read out on every path, ``U *|C`` (``delta`` and
  ``U O1|C``, ``U O2|C``, ``U O1*O2|C``): with attention near uniform the head outputs carry the
  query token too, so the exact dynamics store part of the in-weights association there.
"""
from __future__ import annotations

import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.dynamics import grid
from mechjax.analysis.imir.manifold import submanifold as subm
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.analysis.imir.dynamics import four_coord as rd
from mechjax.analysis.imir.theorems import four_coord as th

IWL_PARTS = ("delta", "direct", "assoc")


def in_weights_indices(basis: ib.Basis, part: str) -> np.ndarray:
    """Indices of the in-weights part ``part`` (``IWL_PARTS``) of a 2-layer, 1-head basis."""
    if part == "delta":
        return np.flatnonzero(subm.abgd_coordinates(basis)[1][3])
    (g,) = [g for g in basis.groups if g.param == "unembed.W_U"]
    if part == "direct":
        # path 0 of the frame is the identity path (no head on the way): the direct readout
        i = g.paths_q.index(0)
        return np.arange(g.offset + i * g.n_sel, g.offset + (i + 1) * g.n_sel)
    if part == "assoc":
        # unembedding coordinates are path-major, selections in sel_out_names order
        j = basis.sel_out_names.index("C")
        return g.offset + np.arange(len(g.paths_q)) * g.n_sel + j
    raise ValueError(f"part={part!r}: allowed {IWL_PARTS}")


def reset(theta: np.ndarray, theta0: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``theta`` with the coordinates ``idx`` set back to ``theta0``'s."""
    out = np.array(theta, np.float64)
    out[idx] = np.asarray(theta0, np.float64)[idx]
    return out


@functools.lru_cache(maxsize=None)
def _icl_grad(model: exact.ExactRecall):
    phi3 = subm.abgd_coordinates(model.basis)[1][:3]

    def f(theta, fr, fv):
        g = jax.grad(model.loss)(theta, {"f_r": fr, "f_v": fv})
        return -(jnp.asarray(phi3, theta.dtype) @ g)

    return jax.jit(f)


@functools.lru_cache(maxsize=None)
def _p_iwl(model: exact.ExactRecall):
    # jitted: the eager coordinate forward is op by op (seconds per call on a loaded CPU)
    return jax.jit(lambda theta, tp: model.readouts(theta, tp)["p_iwl"])


def icl_gradient(model: exact.ExactRecall, theta, f_r: float, f_v: float,
                 dtype=jnp.float32) -> np.ndarray:
    """``-dL/d(alpha, beta, gamma)`` at full coordinates ``theta``: the exact loss's derivative
    along the three ICL directions ``phi[:3]`` (float64 numpy)."""
    th_ = jnp.asarray(theta, dtype)
    return np.asarray(_icl_grad(model)(th_, jnp.asarray(f_r, dtype), jnp.asarray(f_v, dtype)),
                      np.float64)


def suppression(model: exact.ExactRecall, theta, theta0, f_r: float, f_v: float,
                parts: Sequence[str] = IWL_PARTS, dtype=jnp.float32) -> dict:
    """The ICL gradient ``g`` at ``theta`` against ``g0`` at ``theta`` with the in-weights part
    reset to ``theta0``'s, per part: ``ratio_gamma`` = ``g[2] / g0[2]`` (``-dL/dgamma``, the
    theorem's ratio), ``ratio_norm`` = ``|g| / |g0|``, ``ratio_proj`` = ``g . g0 / |g0|^2`` (the
    part of ``g`` along ``g0``: defined when ``g0[2]`` is near a zero crossing, where
    ``ratio_gamma`` is not; ``gamma_ill_conditioned`` flags ``|g0[2]| < 0.1 |g0|``).
    Predictions: ``s = f_r + (1 - f_r) f_v``; ``s_partial = s + (1 - s)(1 - p_iwl)`` with
    ``p_iwl`` the exact in-weights read-off at ``theta`` (the 4-coordinate model's factor when
    the reset point has ``p_iwl ~ 0``); ``s_two_sided = s_partial / (s + (1 - s)(1 - p0))``
    with ``p0`` the read-off at the reset point (the same argument when the reset leaves some
    in-weights probability, as it does along trajectories)."""
    tp = {"f_r": jnp.asarray(f_r, dtype), "f_v": jnp.asarray(f_v, dtype)}
    p_iwl = float(_p_iwl(model)(jnp.asarray(theta, dtype), tp))
    s = float(ph.s_factor(f_r, f_v))
    with_ = icl_gradient(model, theta, f_r, f_v, dtype)
    out = {"f_r": float(f_r), "f_v": float(f_v), "s": s, "p_iwl": p_iwl,
           "s_partial": s + (1 - s) * (1 - p_iwl), "grad_with": with_.tolist()}
    for part in parts:
        th0 = reset(theta, theta0, in_weights_indices(model.basis, part))
        without = icl_gradient(model, th0, f_r, f_v, dtype)
        r = float(with_[2] / without[2])
        p0 = float(_p_iwl(model)(jnp.asarray(th0, dtype), tp))
        n0 = float(np.linalg.norm(without))
        out[part] = {"ratio_gamma": r, "ratio_norm": float(np.linalg.norm(with_)) / n0,
                     "ratio_proj": float(with_ @ without) / n0 ** 2,
                     "gamma_ill_conditioned": bool(abs(without[2]) < 0.1 * n0),
                     "p_iwl_reset": p0,
                     "s_two_sided": out["s_partial"] / (s + (1 - s) * (1 - p0)),
                     "grad_without": without.tolist(),
                     "rel_error_vs_s": abs(r - s) / s if s > 0 else None,
                     "rel_error_vs_s_partial": abs(r - out["s_partial"]) / out["s_partial"]}
    return out


def solve_settings(model: exact.ExactRecall, init_sub: Sequence[float],
                   cells: Sequence[tuple[float, float]], t1: float, n_save: int,
                   rtol: float = 1e-3, dt0: float | None = None) -> dict[str, np.ndarray]:
    """The exact reduced ODE from ``exact.abgd_init(model, init_sub)`` for every ``(f_r, f_v)``
    of ``cells`` to ``t1`` (one vmapped solve; Tsit5, ``rtol``, ``atol = rtol / 100``):
    ``theta [G, n_save + 1, n]``, the read-offs ``[G, n_save + 1]`` and ``t [n_save + 1]``."""
    fr = np.array([float(a) for a, _ in cells])
    fv = np.array([float(b) for _, b in cells])
    out = grid.solve_cells(model, exact.abgd_init(model, init_sub), fr, fv, float(t1), n_save,
                            rtol=rtol, atol=rtol / 100, dt0=dt0)
    return {**{k: np.asarray(v, np.float64) for k, v in out.items()},
            "t": np.linspace(0.0, float(t1), n_save + 1), "f_r": fr, "f_v": fv}


def theorem2_trajectories(model: exact.ExactRecall, init_sub: Sequence[float],
                          solved: dict[str, np.ndarray], p_levels: Sequence[float] = (0.9, 0.99),
                          ) -> dict:
    """Theorem 2 measured along exact trajectories. Protocol, per cell ``(f_r, f_v)`` of
    ``solved`` (``solve_settings``: the exact reduced ODE from
    ``theta0 = exact.abgd_init(model, init_sub)``, equally spaced saved times):

    1. for each ``p`` of ``p_levels`` take the first saved time ``t`` with the exact in-weights
       read-off ``p_iwl(theta(t)) >= p`` (none: ``never``, with the largest ``p_iwl`` along the
       trajectory and where);
    2. ``suppression(theta(t), theta0)``: the ICL gradient ``-(phi[:3] @ grad L)`` at
       ``theta(t)`` against ``theta(t)`` with its in-weights part (``IWL_PARTS``) reset to
       ``theta0``'s; everything else (the induction coordinates and the rest of the manifold)
       stays at ``theta(t)``.

    Returns ``rows`` (one per cell and level reached) and ``never``.
    """
    theta0 = exact.abgd_init(model, init_sub)
    theta, p_iwl, t = solved["theta"], solved["p_iwl"], solved["t"]
    fr, fv = solved["f_r"], solved["f_v"]
    rows, never = [], []
    for i in range(len(fr)):
        for p in p_levels:
            hit = np.flatnonzero(p_iwl[i] >= p)
            if not hit.size:
                never.append({"f_r": float(fr[i]), "f_v": float(fv[i]), "p": float(p),
                              "p_iwl_max": float(p_iwl[i].max()),
                              "at_t": float(t[int(np.argmax(p_iwl[i]))])})
                continue
            k = int(hit[0])
            rows.append({"p_level": float(p), "t": float(t[k]),
                         "p_rare": float(solved["p_rare"][i, k]),
                         **suppression(model, theta[i, k], theta0, fr[i], fv[i])})
    return {"rows": rows, "never": never, "t1": float(t[-1]), "n_save": len(t) - 1}


def prediction_errors(rows: Sequence[dict]) -> dict:
    """Per in-weights part, over the ``theorem2_trajectories`` rows whose ``-dL/dgamma`` without
    IWL is not near a zero crossing: the median and largest ``|ratio_gamma - prediction|`` for
    ``s``, ``s_partial`` and ``s_two_sided`` (which factor the measurement follows, if any)."""
    out = {}
    for part in IWL_PARTS:
        ok = [r for r in rows if not r[part]["gamma_ill_conditioned"]]
        errs = {name: [abs(r[part]["ratio_gamma"] - (r[part][name] if name == "s_two_sided"
                                                      else r[name])) for r in ok]
                for name in ("s", "s_partial", "s_two_sided")}
        out[part] = {"rows": len(ok), **{
            name: ({"median": float(np.median(e)), "max": float(np.max(e))} if e else None)
            for name, e in errs.items()}}
    return out


def theorem2_protocol_point(model: exact.ExactRecall, init_sub: Sequence[float], p_iwl: float,
                            settings: Sequence[tuple[float, float]]) -> dict:
    """The 4-coordinate protocol on the exact loss: ICL at ``init_sub[:3]``, ``delta`` at the
    value where ``dynamics.four_coord.p_iwl`` is ``p_iwl`` (``theorems.four_coord.delta_for_p_iwl``
    on the model's
    spec), against ``delta = init_sub[3]``; every other coordinate 0 (the sub-manifold). Per
    setting the exact ``ratio_gamma`` and ``theorems.four_coord.theorem2_ratio`` on the same spec
    (equal
    where the exact loss restricted to the sub-manifold is ``dynamics.four_coord.loss``, i.e. ``f_v
    = 0``).
    """
    sizes = rd.RecallSizes.from_spec(model.spec)
    d = th.delta_for_p_iwl(sizes, p_iwl)
    icl0 = [float(x) for x in init_sub[:3]]
    theta = exact.abgd_init(model, icl0 + [d])
    theta0 = exact.abgd_init(model, init_sub)
    rows = []
    for fr, fv in settings:
        e = suppression(model, theta, theta0, fr, fv, parts=("delta",))
        four = th.theorem2_ratio(sizes, icl0, d, model.spec.burstiness, fr, fv,
                                 delta_null=float(init_sub[3]))
        rows.append({"f_r": float(fr), "f_v": float(fv), "s": e["s"],
                     "ratio_gamma_exact": e["delta"]["ratio_gamma"],
                     "ratio_gamma_4coord": four["ratio_gamma"],
                     "abs_diff": abs(e["delta"]["ratio_gamma"] - four["ratio_gamma"]),
                     "p_iwl_exact_readoff": e["p_iwl"]})
    at0 = [r["abs_diff"] for r in rows if r["f_v"] == 0.0]
    return {"delta": d, "p_iwl": float(p_iwl), "rows": rows,
            "max_abs_diff": max(r["abs_diff"] for r in rows),
            "max_abs_diff_f_v_0": max(at0) if at0 else None}
