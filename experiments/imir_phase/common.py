"""Helpers the stages of ``experiments.imir_phase.run`` share: the solver's first step, a spec
from a config section, the grid runner's settings, and the (b, f_r) diagram's records."""
from __future__ import annotations

import numpy as np

from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.tasks import blocklist as bl


def first_step(t1: float, n_steps: int) -> float:
    """The adaptive solver's first step: ``n_steps`` in the config sets the initial resolution."""
    return float(t1) / n_steps


def record_b_grid(suffix: str, d, summary: dict, metrics: dict) -> None:
    """A (b, f_r) diagram's (``PhaseDiagram`` or the 4-coordinate one's fields) summary
    (``grid_b<suffix>/*``) and metrics (``bfr<suffix>/*``)."""
    summary.update({f"grid_b{suffix}/seconds": d.seconds, f"grid_b{suffix}/cells": int(d.X.size),
                    f"grid_b{suffix}/contour_sb": d.contour,
                    f"grid_b{suffix}/winner_counts": ph.winner_counts(d.cells["winner"])})
    for k in ("winner", "p_rare", "p_iwl", "emergence"):
        metrics[f"bfr{suffix}/{k}"] = d.grid(k)
    metrics[f"bfr{suffix}/b"], metrics[f"bfr{suffix}/f_r"] = d.x, d.y


def spec_of(e: dict, b: int | None = None) -> bl.BlockListSpec:
    return bl.BlockListSpec(kind="recall", n_common=e["n_common"], n_rare=e["n_rare"],
                            n_blocks=e["n_blocks"], burstiness=e["b"] if b is None else b)


def grid_settings(e: dict) -> dict:
    """The grids' solver settings (``grid.timed_cells``)."""
    return {"solver": e["solver"], "step_cap": e["step_cap"] or None, "chunk": e["chunk"]}


def winner_panel(d, title: str) -> dict:
    """One panel of ``plots.imir.winner_panels`` from a ``PhaseDiagram``."""
    return {"x": d.x, "y": d.y, "winner": d.grid("winner"), "sb": d.sb, "c": d.contour["c"],
            "title": title}
