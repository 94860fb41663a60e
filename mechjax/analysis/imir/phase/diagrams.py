"""The exact model's phase diagrams beyond the (f_r, f_v) grid (which is one
``dynamics.grid.timed_cells`` call): the (b, f_r) grid (one class set per b), and where the
regimes of an (f_r, f_v) diagram end (``boundary``). Read-offs: ``phase.readoff`` (ICL level
``threshold``: the full manifold can use positions, so rare-token ICL is not capped).
"""
from __future__ import annotations


import numpy as np

from mechjax.analysis.imir.dynamics import grid
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.analysis.imir.dynamics import solver as solve
from mechjax.tasks import blocklist as bl


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
