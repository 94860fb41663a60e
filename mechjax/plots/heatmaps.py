"""Matrix heatmaps: QK matrices, seeds x seeds comparisons, spectra per seed."""
from __future__ import annotations

from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mechjax.plots.curves import save  # noqa: E402


def matrix(path: str, values: np.ndarray, xlabel: str = "", ylabel: str = "", title: str = "",
           xticks: Sequence | None = None, yticks: Sequence | None = None, cmap: str = "viridis",
           annotate: bool = False, vmin: float | None = None, vmax: float | None = None) -> str:
    """Heatmap of a 2-D array saved as PNG at ``path``."""
    values = np.asarray(values, float)
    fig, ax = plt.subplots(figsize=(min(2 + 0.35 * values.shape[1], 10),
                                    min(1.5 + 0.3 * values.shape[0], 8)))
    im = ax.imshow(values, cmap=cmap, aspect="auto", vmin=vmin, vmax=vmax)
    fig.colorbar(im, ax=ax)
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
    return save(fig, path)
