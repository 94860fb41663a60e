"""Helpers the stages of ``experiments.imir_phase.run`` share: the solver's first step, a spec
from a config section, the grid runner's settings, and the (b, f_r) diagram's records."""
from __future__ import annotations

import numpy as np

from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.tasks import blocklist as bl


def first_step(t1: float, n_steps: int) -> float:
    """The adaptive solver's first step: ``n_steps`` in the config sets the initial resolution."""
    return float(t1) / n_steps


def record_b_grid(suffix: str, ro: dict, BB: np.ndarray, b_ax: np.ndarray, fr_ax: np.ndarray,
                   sb: np.ndarray, seconds: float, summary: dict, metrics: dict) -> dict:
    """A (b, f_r) diagram's summary (``grid_b<suffix>/*``) and metrics (``bfr<suffix>/*``);
    returns the s*b contour fit."""
    contour = ph.contour_agreement(sb, ro["icl"].reshape(BB.shape))
    summary.update({f"grid_b{suffix}/seconds": seconds, f"grid_b{suffix}/cells": int(BB.size),
                    f"grid_b{suffix}/contour_sb": contour,
                    f"grid_b{suffix}/winner_counts": ph.winner_counts(ro["winner"])})
    for k in ("winner", "p_rare", "p_iwl", "emergence"):
        metrics[f"bfr{suffix}/{k}"] = ro[k].reshape(BB.shape)
    metrics[f"bfr{suffix}/b"], metrics[f"bfr{suffix}/f_r"] = b_ax, fr_ax
    return contour


def spec_of(e: dict, b: int | None = None) -> bl.BlockListSpec:
    return bl.BlockListSpec(kind="recall", n_common=e["n_common"], n_rare=e["n_rare"],
                            n_blocks=e["n_blocks"], burstiness=e["b"] if b is None else b)


def grid_settings(e: dict) -> dict:
    """The grids' solver settings (``grid.timed_cells``)."""
    return {"solver": e["solver"], "step_cap": e["step_cap"] or None, "chunk": e["chunk"]}
