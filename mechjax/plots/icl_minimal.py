"""ICL and IWL probe accuracy against one knob (K, B, eps, alpha, ...), every seed's curve."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure


def knob_figure(values, icl: np.ndarray, iwl: np.ndarray, knob: str, title: str = "") -> Figure:
    """``icl``, ``iwl``: final probe accuracies ``[n_seeds, n_values]``; thin lines are seeds,
    thick lines the seed mean."""
    fig = Figure(figsize=(8, 3.2))  # no pyplot: the backend stays the caller's
    axes = fig.subplots(1, 2, sharey=True)
    x = np.asarray(values, float)
    log_x = knob == "K" and np.all(x > 0)
    for ax, acc, name, color in ((axes[0], icl, "ICL probe", "C0"), (axes[1], iwl, "IWL probe",
                                                                      "C1")):
        for row in np.asarray(acc):
            ax.plot(x, row, color=color, alpha=0.35, lw=1, marker=".")
        ax.plot(x, np.asarray(acc).mean(0), color=color, lw=2.5)
        ax.set_xlabel(knob)
        ax.set_title(name)
        ax.set_ylim(-0.02, 1.02)
        if log_x:
            ax.set_xscale("log", base=2)
    axes[0].set_ylabel("accuracy (final)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
