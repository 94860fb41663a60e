"""Phase-diagram read-offs of in-context vs in-weights learning, the same for every model
(docs/imir.md, section 6):

  ICL formed   mean target probability on *rare* items ``p_rare >= threshold`` (times the
               model's ceiling; rare tokens are resampled per sequence: only the induction
               circuit can predict them);
  IWL formed   probability of ``C(a)`` from the in-weights readout alone ``p_iwl >= threshold``;
  winner       0 neither, 1 ICL only, 2 IWL only, 3 both (at the end of the horizon);
  emergence    time at which ``p_rare`` reaches the threshold, linearly interpolated between
               saved times (``curves.first_crossing``; ``inf``: never);

and the contour ``s b = c`` of Theorem 2's factor (``s_factor``, ``contour_agreement``), the
coordinates' emergence times and order.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from mechjax.analysis.curves import first_crossing
from mechjax.analysis.imir.dynamics.four_coord import NAMES

WINNERS = ("neither", "ICL", "IWL", "both")


def s_factor(f_r, f_v):
    """Theorem 2's suppression factor ``s = f_r + (1 - f_r) f_v``: the fraction of sequences whose
    answer the in-weights association does not already give."""
    return f_r + (1 - f_r) * f_v


def readoff(out: dict, t: np.ndarray, threshold: float, icl_ceiling: np.ndarray | float = 1.0,
            ) -> dict[str, np.ndarray]:
    """Per cell of ``out`` (``p_rare``, ``p_iwl``, ``acc_rare`` ``[G, n_t]`` at times ``t``):
    ``winner`` (``WINNERS`` code), final ``p_rare`` / ``acc_rare`` / ``p_iwl``, ICL
    ``emergence`` time and ``icl`` (formed at the end). ICL counts as formed when ``p_rare``
    reaches ``threshold * icl_ceiling`` (the exact model can use positions: ceiling 1; the
    4-coordinate model's is ``b / (b + 1)``, ``phase.four_coord.readoff``)."""
    p_rare = np.asarray(out["p_rare"])
    icl_level = threshold * np.broadcast_to(np.asarray(icl_ceiling, np.float64), len(p_rare))
    emergence = np.array([first_crossing(t, p_rare[i], icl_level[i], interpolate="linear",
                                         never=np.inf) for i in range(len(p_rare))])
    p_iwl = np.asarray(out["p_iwl"])[:, -1]
    return {"winner": classify(p_rare[:, -1], p_iwl, threshold, icl_level),
            "p_rare": p_rare[:, -1],
            "acc_rare": np.asarray(out["acc_rare"])[:, -1],
            "p_iwl": p_iwl, "emergence": emergence, "icl": p_rare[:, -1] >= icl_level}


def winner_counts(winner: np.ndarray) -> dict[str, int]:
    """How many cells each of ``WINNERS`` takes."""
    return {w: int(np.sum(np.asarray(winner) == i)) for i, w in enumerate(WINNERS)}


def nearest_cells(f_r_grid: np.ndarray, f_v_grid: np.ndarray, f_r, f_v) -> np.ndarray:
    """Flat index of the grid cell nearest each ``(f_r, f_v)``."""
    d = (np.ravel(f_r_grid)[None] - np.asarray(f_r)[:, None]) ** 2 + (
        np.ravel(f_v_grid)[None] - np.asarray(f_v)[:, None]) ** 2
    return np.argmin(d, 1)


def classify(p_rare: np.ndarray, p_iwl: np.ndarray, threshold: float = 0.5,
             icl_threshold: np.ndarray | float | None = None) -> np.ndarray:
    """Winner codes (``WINNERS``): ICL formed (``p_rare >= icl_threshold``, default
    ``threshold``) adds 1, IWL formed (``p_iwl >= threshold``) adds 2."""
    icl_threshold = threshold if icl_threshold is None else icl_threshold
    return ((np.asarray(p_rare) >= icl_threshold).astype(int)
            + 2 * (np.asarray(p_iwl) >= threshold).astype(int))


def coordinate_emergence(t: np.ndarray, theta: np.ndarray,
                         names: Sequence[str] = NAMES) -> dict[str, float]:
    """First time each coordinate covers half of its total change (``theta [n_t, n]``)."""
    theta = np.asarray(theta, np.float64)
    change = np.abs(theta - theta[0])
    total = change[-1]
    return {n: float(first_crossing(t, change[:, j] / max(total[j], 1e-30), 0.5,
                                    interpolate="linear", never=np.inf))
            for j, n in enumerate(names)}


def departure_times(t: np.ndarray, theta: np.ndarray, level: float = 0.5,
                    names: Sequence[str] = NAMES) -> dict[str, float]:
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


def contour_agreement(sb: np.ndarray, formed: np.ndarray) -> dict:
    """The best single threshold ``c`` of ``s * b`` predicting ``formed`` (ICL emerged) and the
    fraction of cells it classifies correctly: how well the predicted contour ``s b = c``
    separates the phases. Where every cell or no cell formed ICL there is nothing to separate:
    ``c`` and ``agreement`` are None and ``undefined`` says why (a threshold past either end
    would score 1.0 on such a grid and mean nothing)."""
    sb, formed = np.ravel(sb), np.ravel(formed).astype(bool)
    if formed.all() or not formed.any():
        return {"c": None, "agreement": None,
                "undefined": f"{'every' if formed.all() else 'no'} cell of {formed.size} formed ICL"}
    cands = np.unique(sb)
    best_c, best = float(cands[0]), -1.0
    for c in np.concatenate([cands, [cands[-1] + 1]]):
        acc = float(np.mean((sb >= c) == formed))
        if acc > best:
            best_c, best = float(c), acc
    return {"c": best_c, "agreement": best}


EMERGENCE_LEVEL = 0.5  # coordinates start at 0.1: a move of 0.5 is well past the start
