"""The clock / pizza figure: every seed's two diagnostics, coloured by its attention rate."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure, SubFigure

from mechjax.plots.canvas import figure_or_new


def diagnostics_scatter(per_rate: Sequence[Mapping[str, Any]], *,
                        fig: Figure | SubFigure | None = None) -> Figure:
    """Gradient symmetricity (x) against distance irrelevance (y), one point per seed, one
    colour per rate (``per_rate[i]``: ``attn_rate``, per-seed ``grad_sym``, ``dist_irr``,
    ``algorithm``); seeds that did not learn the task are hollow. The pizza corner is bottom
    right, the clock corner top left."""
    fig = figure_or_new(fig, (5.5, 4.5))
    ax = fig.subplots()
    for i, r in enumerate(per_rate):
        gs, di = np.asarray(r["grad_sym"]), np.asarray(r["dist_irr"])
        learned = np.asarray(r["algorithm"]) != "not learned"
        color = f"C{i % 10}"
        ax.scatter(gs[learned], di[learned], color=color, s=25,
                   label=f"rate {r['attn_rate']:.2f} ({learned.sum()} learned)")
        ax.scatter(gs[~learned], di[~learned], facecolors="none", edgecolors=color, s=25)
    ax.set_xlabel("gradient symmetricity")
    ax.set_ylabel("distance irrelevance")
    ax.set_title("clock (top left) or pizza (bottom right), per seed")
    ax.legend(fontsize=7)
    return fig
