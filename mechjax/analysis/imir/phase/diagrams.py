"""The exact model's phase diagrams as data (``PhaseDiagram``): over (f_r, f_v)
(``fr_fv_diagram``, one ``dynamics.grid.timed_cells`` call) and over (b, f_r) (``b_fr_diagram``:
one class set per b, ``b_grid``), and where the regimes of an (f_r, f_v) diagram end
(``boundary``). Read-offs: ``phase.readoff`` (ICL level ``threshold``: the full manifold can use
positions, so rare-token ICL is not capped).
"""
from __future__ import annotations

import dataclasses
from typing import Any

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


@dataclasses.dataclass(frozen=True)
class PhaseDiagram:
    """One phase diagram of the exact reduced dynamics: what its figure is drawn from.

    ``x`` ``[n_x]`` and ``y`` ``[n_y]`` are the axes (``x_name``, ``y_name``), ``X``/``Y``
    ``[n_x, n_y]`` each cell's coordinates; ``t`` ``[n_t]`` the saved times; ``curves`` the
    solver's per-cell curves (``p_rare``, ``p_iwl``, ``acc_rare`` ``[n_x * n_y, n_t]``, x-major);
    ``cells`` the read-offs per cell (``readoffs.readoff``: ``winner``, ``icl``, ``p_rare``,
    ``acc_rare``, ``p_iwl``, ``emergence``, each ``[n_x * n_y]``); ``sb`` ``[n_x, n_y]`` Theorem
    2's ``s * b`` and ``contour`` its best threshold (``readoffs.contour_agreement``);
    ``n_capped`` the cells the step cap stopped (solved again uncapped), ``seconds`` /
    ``compile_seconds`` the solve's run and compile time, ``n_coords`` / ``n_classes`` the exact
    model's size (one class set: the (f_r, f_v) diagram only).
    """

    x_name: str
    y_name: str
    x: np.ndarray
    y: np.ndarray
    X: np.ndarray
    Y: np.ndarray
    t: np.ndarray
    curves: dict[str, np.ndarray]
    cells: dict[str, np.ndarray]
    sb: np.ndarray
    contour: dict
    spec: Any  # the exact model's BlockListSpec; the 4-coordinate model's RecallSizes
    n_capped: int
    seconds: float
    compile_seconds: float
    n_coords: int | None = None
    n_classes: int | None = None

    def grid(self, name: str) -> np.ndarray:
        """The read-off ``name`` (a key of ``cells``) as ``[n_x, n_y]``."""
        return np.asarray(self.cells[name]).reshape(self.X.shape)


def fr_fv_diagram(spec: bl.BlockListSpec, init_sub, fr_ax, fv_ax, t1: float, n_save: int,
                  threshold: float, rtol: float = solve.RTOL, dt0: float | None = None,
                  solver: str = "tsit5", step_cap: int | None = None, chunk: int = 256,
                  theta0=None) -> PhaseDiagram:
    """The (f_r, f_v) diagram of ``spec``'s exact dynamics from ``init_sub`` (the start point,
    ``grid.abgd_init``; or, given, from ``theta0 [n_coords]``, any point of the manifold), read
    at ``threshold``: one compiled vmapped solve over the cells (``grid.timed_cells``)."""
    model = exact.make(spec)
    fr_ax, fv_ax = np.asarray(fr_ax, np.float64), np.asarray(fv_ax, np.float64)
    FR, FV = np.meshgrid(fr_ax, fv_ax, indexing="ij")
    out, t_comp, t_run = grid.timed_cells(model, init_sub, FR.ravel(), FV.ravel(), t1, n_save,
                                          rtol, dt0, chunk, solver=solver, step_cap=step_cap,
                                          theta0=theta0)
    diagram = _diagram("f_r", "f_v", fr_ax, fv_ax, FR, FV,
                       spec.burstiness * ph.s_factor(FR, FV), out, t1, n_save, threshold, spec,
                       t_run, t_comp)
    return dataclasses.replace(diagram, n_coords=model.n_coords, n_classes=model.classes.size)


def b_fr_diagram(spec: bl.BlockListSpec, init_sub, b_ax, fr_ax, f_v: float, t1: float,
                 n_save: int, threshold: float, rtol: float = solve.RTOL,
                 dt0: float | None = None, solver: str = "tsit5", step_cap: int | None = None,
                 chunk: int = 256) -> PhaseDiagram:
    """The (b, f_r) diagram at ``f_v`` (``b_grid``: one class set, one solve per burstiness);
    ``spec`` gives the sizes, its burstiness is ignored."""
    b_ax, fr_ax = np.asarray(b_ax), np.asarray(fr_ax, np.float64)
    BB, FR = np.meshgrid(b_ax, fr_ax, indexing="ij")
    out, secs = b_grid(spec, init_sub, b_ax, fr_ax, f_v, t1, n_save, rtol, dt0, solver,
                       step_cap, chunk)
    return _diagram("b", "f_r", b_ax, fr_ax, BB, FR, BB * ph.s_factor(FR, f_v), out, t1, n_save,
                    threshold, spec, secs, float("nan"))


def _diagram(x_name, y_name, x, y, X, Y, sb, out, t1, n_save, threshold, spec, seconds,
             compile_seconds) -> PhaseDiagram:
    t = np.linspace(0.0, float(t1), n_save + 1)
    cells = ph.readoff(out, t, threshold)
    contour = ph.contour_agreement(sb, cells["icl"].reshape(X.shape))
    curves = {k: np.asarray(v) for k, v in out.items() if k != "n_capped"}
    return PhaseDiagram(x_name, y_name, x, y, X, Y, t, curves, cells, sb, contour, spec,
                        int(out["n_capped"]), float(seconds), float(compile_seconds))
