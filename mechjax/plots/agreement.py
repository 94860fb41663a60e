"""Figures of the subject-verb agreement experiment (ACE paper; docs/ace.md): AUC against depth for
the four conditions, the core coordinate against the margin, margin boxplots under the
interventions, and one continuation clean vs steered as text.

Each function draws on ``ax`` when given (else on a new figure) and returns the Figure.
"""
from __future__ import annotations

import textwrap
from typing import Mapping

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from mechjax.plots.canvas import axes_or_new, root_figure

CONDITION_COLORS = {"base": "k", "keep": "C0", "remove": "C1", "flip": "C3"}


def auc_vs_depth(aucs: Mapping[str, np.ndarray], base: np.ndarray, title: str = "", *,
                 ax: Axes | None = None) -> Figure:
    """ROC-AUC of the margin against normalized depth ``(layer + 1) / L``. ``aucs``:
    ``{'keep', 'remove', 'flip'}: [n_models, L]``; ``base [n_models]`` (no intervention, the same
    at every depth). One thin line per model, the mean in bold, a band of +- one std."""
    ax = axes_or_new(ax, (5.0, 3.6))
    base = np.atleast_1d(np.asarray(base, float))
    n_layers = np.asarray(next(iter(aucs.values()))).shape[-1]
    depth = np.arange(1, n_layers + 1) / n_layers
    curves = {"base": np.repeat(base[:, None], n_layers, 1),
              **{k: np.atleast_2d(np.asarray(v, float)) for k, v in aucs.items()}}
    for name, values in curves.items():
        color = CONDITION_COLORS.get(name, None)
        for row in values:
            ax.plot(depth, row, color=color, lw=0.6, alpha=0.35)
        mean, std = values.mean(0), values.std(0)
        ax.plot(depth, mean, color=color, lw=2.0, marker="o", ms=4, label=name)
        ax.fill_between(depth, mean - std, mean + std, color=color, alpha=0.15, lw=0)
    ax.axhline(0.5, color="grey", ls="--", lw=0.8)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("normalized depth (layer + 1) / L")
    ax.set_ylabel("ROC-AUC of the margin (plural)")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="center left")
    ax.grid(alpha=0.3)
    return root_figure(ax)


def core_vs_margin(coord: np.ndarray, margin: np.ndarray, labels: np.ndarray, title: str = "",
                   *, ax: Axes | None = None) -> Figure:
    """Scatter of the core coordinate ``z [B]`` against the margin ``[B]``, coloured by the
    label (plural head noun or singular), with the affine fit."""
    ax = axes_or_new(ax, (4.4, 3.8))
    coord, margin, labels = (np.asarray(a, float) for a in (coord, margin, labels))
    for value, name, color in ((0, "singular", "C0"), (1, "plural", "C3")):
        pick = labels == value
        ax.scatter(coord[pick], margin[pick], s=8, alpha=0.6, color=color, label=name)
    slope, intercept = np.polyfit(coord, margin, 1)
    xs = np.linspace(coord.min(), coord.max(), 2)
    ax.plot(xs, slope * xs + intercept, color="k", lw=1)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("core coordinate z = (h - mu) . q")
    ax.set_ylabel("margin m")
    ax.set_title(title)
    ax.legend(fontsize=7)
    return root_figure(ax)


def margin_boxplots(margins: Mapping[str, np.ndarray], labels: np.ndarray, title: str = "", *,
                    ax: Axes | None = None) -> Figure:
    """Boxplots of the margin per condition (``{'base', 'removed', 'flipped'}: [B]``), one box
    per label within each condition."""
    ax = axes_or_new(ax, (5.0, 3.6))
    labels = np.asarray(labels)
    data, positions, colors = [], [], []
    for i, values in enumerate(margins.values()):
        values = np.asarray(values, float)
        for j, color in ((0, "C0"), (1, "C3")):
            data.append(values[labels == j])
            positions.append(3 * i + j)
            colors.append(color)
    boxes = ax.boxplot(data, positions=positions, widths=0.8, patch_artist=True,
                       showfliers=False)
    for patch, color in zip(boxes["boxes"], colors):
        patch.set_facecolor(color)
        patch.set_alpha(0.5)
    ax.set_xticks([3 * i + 0.5 for i in range(len(margins))], list(margins))
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_ylabel("margin m (blue: singular, red: plural)")
    ax.set_title(title)
    return root_figure(ax)


def generation_text(texts: Mapping[str, str], title: str = "", width: int = 70, *,
                    ax: Axes | None = None) -> Figure:
    """One continuation per condition (``{'clean': text, 'pushed': text, ...}``) as text."""
    ax = axes_or_new(ax, (7.0, 0.8 + 0.7 * len(texts)))
    lines = []
    for name, text in texts.items():
        wrapped = textwrap.wrap(text.replace("<|endoftext|>", " | "), width) or [""]
        lines.append(f"{name:>17s}: " + ("\n" + " " * 19).join(wrapped))
    ax.text(0.0, 1.0, "\n".join(lines), family="monospace", fontsize=8, va="top",
            transform=ax.transAxes)
    ax.set_axis_off()
    ax.set_title(title, fontsize=9)
    return root_figure(ax)


__all__ = ["auc_vs_depth", "core_vs_margin", "generation_text", "margin_boxplots"]
