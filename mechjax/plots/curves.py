"""Curves over training with a mean line and a band over seeds."""
from __future__ import annotations

import os
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def band_plot(ax, steps: np.ndarray, values: np.ndarray, label: str, color=None,
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


def metric_curves(path: str, steps: np.ndarray, curves: Mapping[str, np.ndarray],
                  title: str = "", ylabel: str = "", logx: bool = False,
                  marks: Sequence[float] = ()) -> str:
    """One panel of several ``{label: [n_seeds, n_steps]}`` curves; saved as PNG at ``path``."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for label, values in curves.items():
        band_plot(ax, steps, values, label)
    for x in marks:
        ax.axvline(x, color="grey", ls="--", lw=0.8)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, path)


def save(fig, path: str) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
