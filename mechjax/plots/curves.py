"""Curves over training with a mean line and a band over seeds."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from mechjax.plots.canvas import axes_or_new, root_figure


def band_plot(ax: Axes, steps: np.ndarray, values: np.ndarray, label: str, color=None,
              individual: bool = True) -> None:
    """Mean over seeds with a min-max band; ``values [n_seeds, n_steps]``."""
    values = np.asarray(values, float)
    mean = np.nanmean(values, 0)
    line, = ax.plot(steps, mean, label=label, color=color, lw=2)
    ax.fill_between(steps, np.nanmin(values, 0), np.nanmax(values, 0), color=line.get_color(),
                    alpha=0.2, lw=0)
    if individual:
        for row in values:
            ax.plot(steps, row, color=line.get_color(), lw=0.5, alpha=0.4)


def label_axes(ax: Axes, xlabel: str, ylabel: str, title: str, legend_fontsize: float) -> None:
    """Axis labels, title, a light grid and the legend: how every curve panel ends."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=legend_fontsize)


def metric_curves(steps: np.ndarray, curves: Mapping[str, np.ndarray], title: str = "",
                  ylabel: str = "", logx: bool = False, marks: Sequence[float] = (), *,
                  ax: Axes | None = None) -> Figure:
    """Several ``{label: [n_seeds, n_steps]}`` curves on one Axes (``ax`` or a new figure), with
    dashed vertical ``marks``."""
    ax = axes_or_new(ax, (6.4, 4.0))
    for label, values in curves.items():
        band_plot(ax, steps, values, label)
    for x in marks:
        ax.axvline(x, color="grey", ls="--", lw=0.8)
    if logx:
        ax.set_xscale("log")
    label_axes(ax, "step", ylabel, title, 8)
    return root_figure(ax)
