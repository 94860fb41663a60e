"""IMIR figures: ICL/IWL phase diagrams with the predicted contour and trained cells, coordinate
trajectories (reduced ODE vs full training), and the Theorem 2/3 checks. Each function draws on
``ax`` / ``fig`` when given (else on a new figure) and returns the Figure."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure, SubFigure

from mechjax.plots.canvas import axes_or_new, figure_or_new, root_figure

WINNER_COLORS = ("#bbbbbb", "#1f77b4", "#d62728", "#9467bd")  # neither, ICL, IWL, both
MARKERS = {"s": "squares", "o": "circles", "^": "triangles", "D": "diamonds"}  # for titles


def phase_diagram(x: np.ndarray, y: np.ndarray, winner: np.ndarray, p_rare: np.ndarray,
                  emergence: np.ndarray, sb: np.ndarray, contour_c: float, xlabel: str,
                  ylabel: str, title: str, winners: Sequence[str],
                  cells: Mapping | Sequence[Mapping] | None = None, *,
                  fig: Figure | SubFigure | None = None) -> Figure:
    """Three panels over the grid (arrays ``[len(x), len(y)]``): winner, final rare-token ICL
    probability, ICL emergence time; the predicted contour ``s b = contour_c`` on each, and the
    trained cells coloured on the same scale: ``cells`` is one set or a sequence of sets, each
    with ``x``, ``y``, ``winner``, ``p_rare``, optionally ``emergence`` (left off that panel
    without it: e.g. a time in optimizer steps, not on the diagram's axis), ``marker``
    (matplotlib, default ``s``), ``size`` (default 90: a smaller one stays visible inside another
    set's marker on the same cell) and ``label`` (default ``trained transformers``)."""
    fig = figure_or_new(fig, (16, 4.6))
    axes = fig.subplots(1, 3)
    ext = [x[0], x[-1], y[0], y[-1]]
    cmap = ListedColormap(WINNER_COLORS)
    panels = [
        (winner, cmap, BoundaryNorm(np.arange(-0.5, 4.5), 4), "winner"),
        (p_rare, "viridis", None, "final ICL prob. on rare tokens"),
        (np.where(np.isfinite(emergence), emergence, np.nan), "magma", None,
         "ICL emergence time (blank: never)"),
    ]
    sets = [] if cells is None else [cells] if isinstance(cells, Mapping) else list(cells)
    for i, (ax, (val, cm, norm, name)) in enumerate(zip(axes, panels)):
        im = ax.imshow(np.asarray(val, float).T, origin="lower", extent=ext, aspect="auto",
                       cmap=cm, norm=norm, interpolation="nearest")
        cb = fig.colorbar(im, ax=ax)
        if norm is not None:
            cb.set_ticks(range(4), labels=list(winners))
        if contour_c is not None and np.nanmin(sb) < contour_c < np.nanmax(sb):
            ax.contour(x, y, np.asarray(sb, float).T, levels=[contour_c], colors="w",
                       linestyles="--", linewidths=1.5)
        for j, cs in enumerate(sets):
            if i == 2 and "emergence" not in cs:
                continue
            vals = (cs["winner"], cs["p_rare"])[i] if i < 2 else np.where(
                np.isfinite(cs["emergence"]), cs["emergence"], np.nan)
            lim = {} if norm is not None else {"vmin": im.norm.vmin, "vmax": im.norm.vmax}
            ax.scatter(cs["x"], cs["y"], c=vals, cmap=cm, norm=norm, s=cs.get("size", 90),
                       edgecolors="k", linewidths=1.5, marker=cs.get("marker", "s"),
                       zorder=3 + j, plotnonfinite=True, **lim)
            if i > 0:  # the trained value in numbers (it may lie outside the ODE's colour range)
                for cx, cy, cv in zip(cs["x"], cs["y"], vals):
                    ax.annotate("never" if not np.isfinite(cv) else f"{cv:.2g}", (cx, cy),
                                xytext=(6, 6 - 12 * j), textcoords="offset points", fontsize=7,
                                color="w", bbox={"fc": "k", "alpha": 0.5, "pad": 1})
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(name, fontsize=10)
    marks = "".join(f"; {MARKERS.get(cs.get('marker', 's'), cs.get('marker'))}: "
                    f"{cs.get('label', 'trained transformers')}" for cs in sets)
    contour = "none: one phase only" if contour_c is None else f"{contour_c:.3g}"
    fig.suptitle(f"{title}\n(dashed: predicted contour s*b = {contour}{marks})",
                 fontsize=10)
    return root_figure(fig)


def trajectories(curves: Mapping[str, tuple[np.ndarray, np.ndarray]], names: Sequence[str],
                 title: str, *, fig: Figure | SubFigure | None = None) -> Figure:
    """One panel per coordinate; ``curves``: label -> (t [n_t], theta [n_t, len(names)])."""
    fig = figure_or_new(fig, (4 * len(names), 3.4))
    axes = fig.subplots(1, len(names))
    for j, (ax, name) in enumerate(zip(np.atleast_1d(axes), names)):
        for i, (label, (t, th)) in enumerate(curves.items()):
            ax.plot(t, np.asarray(th)[:, j], label=label, ls="-" if i % 2 == 0 else "--",
                    marker="" if i % 2 == 0 else ".", ms=3)
        ax.set_title(name)
        ax.set_xlabel("t (= step x lr)")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return root_figure(fig)


def theorem2(rows: Mapping[str, Sequence[Mapping[str, float]]], title: str, *,
             ax: Axes | None = None) -> Figure:
    """Measured ICL-gradient ratio against ``s = f_r + (1 - f_r) f_v``, one series per protocol."""
    ax = axes_or_new(ax, (5.5, 4.5))
    for label, rs in rows.items():
        ax.scatter([r["s"] for r in rs], [r["ratio_gamma"] for r in rs], label=label, s=25)
    ax.plot([0, 1], [0, 1], "k-", lw=1, label="ratio = s")
    ax.fill_between([0, 1], [0, 0.9], [0, 1.1], color="k", alpha=0.08, label="+-10%")
    ax.set_xlabel("s = f_r + (1 - f_r) f_v")
    ax.set_ylabel("ICL gradient with IWL / without")
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=9)
    return root_figure(ax)


def theorem3(series: Mapping[str, tuple[Sequence[float], Sequence[float], float]], title: str,
             *, ax: Axes | None = None) -> Figure:
    """ICL gradient against ``b``; ``series``: label -> (b values, gradient, R^2)."""
    ax = axes_or_new(ax, (5.5, 4.5))
    for label, (b, g, r2) in series.items():
        g = np.asarray(g, float)
        ax.plot(b, g / np.max(np.abs(g)), "o-", label=f"{label} (R^2 {r2:.3f})")
    ax.set_xlabel("burstiness b")
    ax.set_ylabel("ICL gradient (normalised)")
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=9)
    return root_figure(ax)


def winner_panels(panels: Sequence[Mapping], xlabel: str, ylabel: str, winners: Sequence[str],
                  title: str, *, fig: Figure | SubFigure | None = None) -> Figure:
    """One winner map per panel (``x``, ``y``, ``winner [len(x), len(y)]``, ``sb``, contour level
    ``c``, ``title``), side by side on one colour scale, each with its ``s b = c`` contour."""
    fig = figure_or_new(fig, (4.4 * len(panels) + 1.2, 4.2))
    axes = np.atleast_1d(fig.subplots(1, len(panels)))
    cmap, norm = ListedColormap(WINNER_COLORS), BoundaryNorm(np.arange(-0.5, 4.5), 4)
    im = None
    for ax, p in zip(axes, panels):
        x, y = p["x"], p["y"]
        im = ax.imshow(np.asarray(p["winner"], float).T, origin="lower", aspect="auto",
                       extent=[x[0], x[-1], y[0], y[-1]], cmap=cmap, norm=norm,
                       interpolation="nearest")
        if p["c"] is not None and np.nanmin(p["sb"]) < p["c"] < np.nanmax(p["sb"]):
            ax.contour(x, y, np.asarray(p["sb"], float).T, levels=[p["c"]], colors="w",
                       linestyles="--", linewidths=1.5)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(p["title"], fontsize=10)
    root_figure(fig).colorbar(im, ax=axes[-1], ticks=range(4)).ax.set_yticklabels(list(winners))
    fig.suptitle(f"{title}\n(dashed: best contour s*b = c per size)", fontsize=10)
    return root_figure(fig)
