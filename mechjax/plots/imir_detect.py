"""Circuit-detection figures: the kept units as a circuit diagram (layers as columns, an edge
from each unit to the units it reads) and accuracy along the elimination path. Each function
draws on ``ax`` when given (else on a new figure) and returns the Figure; the budget curve
(kept coordinates, units and accuracies against tau, one line per seed) fills ``fig``."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure

from mechjax.analysis.imir.detection.circuits import Unit, unit_edges
from mechjax.plots.canvas import axes_or_new, figure_or_new, root_figure

KEPT_TICKS = [0] + [m * 10 ** e for e in range(5) for m in (1, 2, 5)]
KIND_COLORS = {"shift": "#1f77b4", "match": "#2ca02c", "copy": "#d62728", "iwl": "#9467bd",
               "helper": "#999999"}


def circuit_diagram(units: Sequence[Unit], kinds: Mapping[str, str], n_layers: int,
                    title: str = "", *, ax: Axes | None = None) -> Figure:
    """Units in columns (layer 0 .. L-1, then the unembedding ``U``), coloured by kind; an
    arrow from every unit a unit reads into it (what it reads flows into it)."""
    ax = axes_or_new(ax, (2.2 * (n_layers + 1) + 1, 1.0 + 0.45 * max(4, len(units))))
    cols: dict[int, list[Unit]] = {}
    for u in units:
        cols.setdefault(n_layers if u.layer is None else u.layer, []).append(u)
    pos = {}
    for x, us in cols.items():
        for j, u in enumerate(us):
            pos[u.name] = (x, -j)
    for reader, read in unit_edges(units):
        (x0, y0), (x1, y1) = pos[read], pos[reader]
        ax.annotate("", (x1 - 0.05, y1), (x0 + 0.05, y0),
                    arrowprops=dict(arrowstyle="->", color="#555555", lw=0.8, alpha=0.6,
                                    connectionstyle="arc3,rad=0.08"))
    for u in units:
        x, y = pos[u.name]
        ax.text(x, y, u.name.split(" ", 1)[1] if u.layer is None else u.name, ha="center",
                va="center", fontsize=7,
                bbox=dict(boxstyle="round", fc=KIND_COLORS[kinds[u.name]], alpha=0.35,
                          ec=KIND_COLORS[kinds[u.name]]))
    ax.set_xticks(range(n_layers + 1), [f"layer {l}" for l in range(n_layers)] + ["U"])
    ax.set_xlim(-0.7, n_layers + 0.7)
    low = -max(len(v) for v in cols.values()) if cols else -1
    ax.set_ylim(low - 0.2, 0.8)
    ax.set_yticks([])
    for k, c in KIND_COLORS.items():
        ax.plot([], [], "s", color=c, alpha=0.5, label=k)
    ax.legend(loc="upper right", fontsize=7, ncol=5, frameon=False)
    ax.set_title(title or "kept units")
    return root_figure(ax)


def accuracy_vs_kept(curves: Sequence[Mapping[str, np.ndarray]], labels: Sequence[str],
                     title: str = "", *, ax: Axes | None = None) -> Figure:
    """Accuracy against the number of coordinates still kept, one line per model; a marker at
    the detector's stopping point (the last accepted removal)."""
    ax = axes_or_new(ax, (6, 4))
    for curve, label in zip(curves, labels):
        n, acc, ok = curve["n_kept"], curve["acc"], curve["accepted"]
        line, = ax.plot(n, acc, ".-", label=label, lw=1)
        stop = np.flatnonzero(ok)[-1]
        ax.plot(n[stop], acc[stop], "o", ms=8, mfc="none", color=line.get_color())
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("coordinates kept (circle: where the budget stops elimination)")
    ax.set_ylabel("accuracy (held-out batch)")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8)
    ax.set_title(title)
    return root_figure(ax)


BUDGET_PANELS = (("kept", "coordinates kept", {}),
                 ("canonical_units", "units: canonical -, helpers --", {"helpers": "--"}),
                 ("acc_circuit", "accuracy: circuit -, w/o helpers --, full :",
                  {"acc_without_helpers": "--"}))


def budget_curve(curves: Sequence[Mapping[str, Sequence[float]]], chosen: Sequence[float],
                 labels: Sequence[str], title: str = "", *,
                 fig: Figure | SubFigure | None = None) -> Figure:
    """The budget curve (``detection.budget.curve``), one colour per model: kept coordinates,
    canonical units and helpers, accuracy with and without helpers (and the full model's,
    dotted) against tau; a circle at the tau each model reports (``chosen``)."""
    fig = figure_or_new(fig, (4.2 * len(BUDGET_PANELS), 3.6))
    axes = fig.subplots(1, len(BUDGET_PANELS))
    for ax, (key, ylabel, extra) in zip(axes, BUDGET_PANELS):
        for curve, tau, label in zip(curves, chosen, labels):
            t = np.asarray(curve["tau"])
            line, = ax.plot(t, curve[key], ".-", lw=1, label=label)
            for k2, style in extra.items():
                ax.plot(t, curve[k2], style, lw=1, color=line.get_color())
            if key == "acc_circuit" and "acc_full" in curve:
                ax.axhline(curve["acc_full"], ls=":", lw=1, color=line.get_color())
            i = int(np.argmin(np.abs(t - tau)))
            ax.plot(t[i], curve[key][i], "o", ms=8, mfc="none", color=line.get_color())
        ax.set_xscale("log")
        ax.set_xlabel("loss budget tau (circle: reported)")
        ax.set_ylabel(ylabel)
    axes[0].set_yscale("symlog", linthresh=10)
    # plain counts at 1-2-5 steps: symlog's own formatter labels the axis ends (8.4x10^0)
    axes[0].yaxis.set_major_locator(ticker.FixedLocator(KEPT_TICKS))
    axes[0].yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axes[0].yaxis.set_minor_locator(ticker.NullLocator())
    axes[0].set_ylim(bottom=-0.5)
    axes[1].set_ylim(bottom=-0.5)
    axes[-1].set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    return root_figure(fig)
