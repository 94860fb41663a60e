"""Figures of algorithmic-core experiments (ACE paper): causal bars with per-seed dots, eigenvalues
on the unit circle, and seeds x seeds comparison heatmaps (via ``plots.heatmaps``).

Each function draws on ``ax`` when given (else on a new figure) and returns the Figure.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from mechjax.plots import heatmaps
from mechjax.plots.canvas import axes_or_new, root_figure


def bars_with_dots(values: Mapping[str, np.ndarray | float], title: str = "",
                   ylabel: str = "accuracy", hlines: Mapping[str, float] | None = None,
                   ylim: tuple[float, float] | None = (0.0, 1.0), seed: int = 0, *,
                   ax: Axes | None = None) -> Figure:
    """One bar per entry of ``values`` (``{label: [n_seeds] or scalar}``): height the mean, error
    bar the std over seeds, and one jittered dot per seed. ``hlines`` draws labelled references.
    """
    labels = list(values)
    rng = np.random.default_rng(seed)
    ax = axes_or_new(ax, (1.2 + 1.1 * len(labels), 3.8))
    for i, label in enumerate(labels):
        v = np.atleast_1d(np.asarray(values[label], float))
        color = f"C{i}"
        ax.bar(i, np.nanmean(v), color=color, alpha=0.5, width=0.7,
               yerr=np.nanstd(v) if v.size > 1 else None, capsize=4)
        if v.size > 1:
            ax.scatter(i + rng.uniform(-0.2, 0.2, v.size), v, s=12, color=color,
                       edgecolor="k", linewidth=0.4, zorder=3)
    for name, y in (hlines or {}).items():
        ax.axhline(y, color="grey", ls="--", lw=0.8)
        ax.text(len(labels) - 0.5, y, name, ha="right", va="bottom", fontsize=7, color="grey")
    ax.set_xticks(range(len(labels)), labels, rotation=20, fontsize=8)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return root_figure(ax)


def circle_outline(ax: Axes) -> None:
    """The unit circle in grey, behind eigenvalue scatters."""
    theta = np.linspace(0, 2 * np.pi, 361)
    ax.plot(np.cos(theta), np.sin(theta), color="grey", lw=0.8)


def unit_circle(fitted: Sequence[np.ndarray], true: np.ndarray | None = None, title: str = "",
                *, ax: Axes | None = None) -> Figure:
    """Eigenvalues in the complex plane with the unit circle.

    ``fitted``: one array of complex eigenvalues per seed (lengths may differ); ``true``: the
    reference eigenvalues (drawn as large open markers).
    """
    ax = axes_or_new(ax, (4.4, 4.4))
    circle_outline(ax)
    ax.axhline(0, color="grey", lw=0.4)
    ax.axvline(0, color="grey", lw=0.4)
    points = [np.asarray(f, complex).ravel() for f in fitted]
    if points:
        allp = np.concatenate(points)
        ax.scatter(allp.real, allp.imag, s=14, alpha=0.6, color="C0",
                   label=f"fitted ({len(points)} seeds)")
    if true is not None:
        true = np.asarray(true, complex)
        ax.scatter(true.real, true.imag, s=120, facecolors="none", edgecolors="C3", lw=1.5,
                   label="true", zorder=3)
    ax.set_xlim(-1.1, 1.1)
    ax.set_ylim(-1.1, 1.1)
    ax.set_aspect("equal")
    ax.set_xlabel("Re")
    ax.set_ylabel("Im")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="lower left")
    return root_figure(ax)


def seed_matrix(values: np.ndarray, title: str, seeds: Sequence[int] | None = None,
                vmin: float | None = None, vmax: float | None = None, *,
                ax: Axes | None = None) -> Figure:
    """A seeds x seeds comparison heatmap ``[n_seeds, n_seeds]`` (overlap, CCA, weight cosine)."""
    values = np.asarray(values, float)
    ticks = list(seeds) if seeds is not None else list(range(values.shape[0]))
    return heatmaps.matrix(values, xlabel="seed", ylabel="seed", title=title, xticks=ticks,
                           yticks=ticks, vmin=vmin, vmax=vmax, annotate=values.shape[0] <= 8,
                           ax=ax)
