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


def boundary_figure(sb: np.ndarray, icl_final: np.ndarray, sweep: list[str],
                    threshold: float | None, formed_at: float, title: str = "") -> Figure:
    """The theory's predicted boundary over the trained outcomes: one point per trained run
    (``sb``, ``icl_final``: ``[n_runs]``; ``sweep``: the sweep of each run, one colour each), the
    predicted contour ``s * b = threshold`` as a vertical line and the ICL-formed level as a
    horizontal one. Runs in the upper-right and lower-left quadrants are the ones it predicts."""
    fig = Figure(figsize=(5.5, 4))
    ax = fig.subplots()
    sb, icl_final = np.asarray(sb, float), np.asarray(icl_final, float)
    # a small deterministic spread so the seeds of one grid point do not hide each other
    spread = 0.01 * (np.arange(len(sb)) % 7 - 3) * max(np.ptp(sb), 1e-9)
    for i, name in enumerate(dict.fromkeys(sweep)):
        at = np.asarray([s == name for s in sweep])
        ax.scatter(sb[at] + spread[at], icl_final[at], s=18, alpha=0.7, color=f"C{i}", label=name)
    if threshold is not None:  # None: every run or none formed ICL, no contour to draw
        ax.axvline(threshold, color="k", ls="--", lw=1, label=f"predicted s*b = {threshold:.2f}")
    ax.axhline(formed_at, color="0.5", ls=":", lw=1, label=f"ICL formed ({formed_at})")
    ax.set_xlabel("s * b (theory)")
    ax.set_ylabel("final ICL probe accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7, loc="best")
    ax.set_title(title or "predicted ICL/IWL boundary over trained runs")
    fig.tight_layout()
    return fig
