"""Comparisons of two phase diagrams that need no shared clock (docs/imir.md, section 9).

The exact diagram's time is gradient-flow time; a trained transformer's is optimizer steps
(Adam at that). A winner at one shared horizon therefore compares speeds as much as phases.
These measures use each side's own time axis only:

  order             per run, which of ICL and IWL reaches the threshold first
                    (``ORDERS``: 0 neither, 1 ICL first, 2 IWL first, 3 same saved time);
  emergence         the first time ICL's curve reaches the threshold (``inf``: never), and the
                    Spearman correlation of emergence times across cells (a ranking; ties get
                    their mean rank, so ``inf`` ties rank last together);
  stable winner     the winner (``readoffs.WINNERS``) at every saved time in ``[t, 2t]`` when it
                    is the same there, ``UNSTABLE`` otherwise: only runs stable on both sides
                    are compared.

Curves are ``[cell, seed, n_t]`` (the exact side has one seed, or ``[cell, n_t]``) on their own
time axis ``t [n_t]``, increasing.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from mechjax.analysis.curves import first_crossing
from mechjax.analysis.imir.phase.readoffs import classify
from mechjax.models.config import ConfigError

ORDERS = ("neither", "ICL first", "IWL first", "same time")
UNSTABLE = -1


def formation_time(t: np.ndarray, curve: np.ndarray, threshold: float) -> np.ndarray:
    """First time ``curve [..., n_t]`` reaches ``threshold`` along ``t [n_t]`` (linear between
    saved times; ``inf``: never). Returns ``[...]``."""
    return first_crossing(t, curve, threshold, interpolate="linear", never=np.inf)


def emergence_time(t: np.ndarray, icl: np.ndarray, threshold: float) -> np.ndarray:
    """ICL emergence: first time ``icl [..., n_t]`` (``p_rare``) reaches ``threshold``."""
    return formation_time(t, icl, threshold)


def first_to_form(t: np.ndarray, icl: np.ndarray, iwl: np.ndarray, threshold: float,
                  ) -> np.ndarray:
    """``ORDERS`` code per run of ``icl``/``iwl [..., n_t]``: which crosses ``threshold`` first."""
    a, b = formation_time(t, icl, threshold), formation_time(t, iwl, threshold)
    return np.where(np.isinf(a) & np.isinf(b), 0,
                    np.where(a < b, 1, np.where(b < a, 2, 3))).astype(int)


def stable_winner(t: np.ndarray, icl: np.ndarray, iwl: np.ndarray, threshold: float,
                  horizon: float) -> np.ndarray:
    """The winner of ``icl``/``iwl [..., n_t]`` where it is the same at every saved time in
    ``[horizon, 2 horizon]``, ``UNSTABLE`` where it changes there. ``2 horizon`` must lie
    within ``t`` (a winner cannot be called stable past the last measurement)."""
    t = np.asarray(t, np.float64)
    if not (horizon > 0 and t[0] <= horizon and 2 * horizon <= t[-1] * (1 + 1e-9)):
        raise ConfigError(f"horizon={horizon}: allowed 0 < horizon with [horizon, 2 horizon] "
                          f"inside the saved times [{t[0]}, {t[-1]}]")
    # the last saved time at or before the horizon starts the window: it is the winner "at t"
    lo = int(np.searchsorted(t, horizon * (1 + 1e-9), side="right")) - 1
    hi = int(np.searchsorted(t, 2 * horizon * (1 + 1e-9), side="right"))
    w = classify(np.asarray(icl)[..., lo:hi], np.asarray(iwl)[..., lo:hi], threshold)
    same = (w == w[..., :1]).all(-1)
    return np.where(same, w[..., 0], UNSTABLE)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation of ``a``, ``b [n]`` (ties: mean rank; ``inf`` ranks last).
    NaN when either side has a single rank (no ordering to compare) or ``n < 2``."""
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    if a.shape != b.shape or np.isnan(a).any() or np.isnan(b).any():
        raise ValueError(f"spearman needs two NaN-free arrays of one shape, got {a.shape}, "
                         f"{b.shape}")
    ra, rb = rankdata(a), rankdata(b)
    if len(a) < 2 or np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _seeds(trained: np.ndarray, n_cells: int) -> np.ndarray:
    trained = np.asarray(trained)
    if trained.ndim != 2 or trained.shape[0] != n_cells:
        raise ValueError(f"trained side must be [cell={n_cells}, seed], got {trained.shape}")
    return trained


def agreement(exact: np.ndarray, trained: np.ndarray) -> dict[str, float | int]:
    """Codes ``exact [cell]`` against ``trained [cell, seed]`` where neither is ``UNSTABLE``:
    ``value`` (fraction of compared (cell, seed) runs that agree), ``majority`` (cells whose
    stable seeds' most common code agrees), ``cells`` / ``runs`` compared, and the spread of
    the per-seed agreement (``seed_min``, ``seed_max``, ``seed_std``; over seeds with any
    compared cell). NaN values when nothing is compared."""
    exact = np.asarray(exact)
    trained = _seeds(trained, len(exact))
    ok = (exact[:, None] != UNSTABLE) & (trained != UNSTABLE)
    hit = (trained == exact[:, None]) & ok
    per_seed = [hit[:, s].sum() / ok[:, s].sum() for s in range(ok.shape[1]) if ok[:, s].any()]
    cells = ok.any(1)
    major = [np.bincount(trained[i][ok[i]]).argmax() == exact[i] for i in np.flatnonzero(cells)]
    nan = float("nan")
    return {"value": float(hit.sum() / ok.sum()) if ok.any() else nan,
            "majority": float(np.mean(major)) if major else nan,
            "cells": int(cells.sum()), "runs": int(ok.sum()),
            "seed_min": float(np.min(per_seed)) if per_seed else nan,
            "seed_max": float(np.max(per_seed)) if per_seed else nan,
            "seed_std": float(np.std(per_seed)) if per_seed else nan}


def emergence_spearman(exact: np.ndarray, trained: np.ndarray) -> dict[str, float | int]:
    """Spearman of ICL emergence times across cells, ``exact [cell]`` against each seed of
    ``trained [cell, seed]`` (``seed_min``/``seed_max``/``seed_std``) and against the seeds'
    median time (``value``); ``cells``: how many cells are ranked."""
    exact = np.asarray(exact, np.float64)
    trained = _seeds(trained, len(exact)).astype(np.float64)
    per_seed = np.array([spearman(exact, trained[:, s]) for s in range(trained.shape[1])])
    return {"value": spearman(exact, np.median(trained, 1)), "cells": int(len(exact)),
            "seed_min": float(np.nanmin(per_seed)) if np.isfinite(per_seed).any() else np.nan,
            "seed_max": float(np.nanmax(per_seed)) if np.isfinite(per_seed).any() else np.nan,
            "seed_std": float(np.nanstd(per_seed)) if np.isfinite(per_seed).any() else np.nan}
