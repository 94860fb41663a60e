"""Matrix heatmaps: QK matrices, seeds x seeds comparisons, spectra per seed."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from mechjax.plots.canvas import axes_or_new, root_figure


def matrix(values: np.ndarray, xlabel: str = "", ylabel: str = "", title: str = "",
           xticks: Sequence | None = None, yticks: Sequence | None = None, cmap: str = "viridis",
           annotate: bool = False, vmin: float | None = None, vmax: float | None = None, *,
           ax: Axes | None = None) -> Figure:
    """Heatmap of a 2-D array ``[rows, cols]`` with a colorbar (on ``ax`` or a new figure sized
    to the array)."""
    values = np.asarray(values, float)
    ax = axes_or_new(ax, (min(2 + 0.35 * values.shape[1], 10),
                          min(1.5 + 0.3 * values.shape[0], 8)))
    im = ax.imshow(values, cmap=cmap, aspect="auto", vmin=vmin, vmax=vmax)
    ax.figure.colorbar(im, ax=ax)
    if xticks is not None:
        ax.set_xticks(range(len(xticks)), [str(t) for t in xticks], fontsize=7)
    if yticks is not None:
        ax.set_yticks(range(len(yticks)), [str(t) for t in yticks], fontsize=7)
    if annotate:
        for (i, j), v in np.ndenumerate(values):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6, color="w")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return root_figure(ax)
