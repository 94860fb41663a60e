"""Figures of the core-dynamics-at-grokking experiment (ACE paper): accuracy and core dimension over
epochs, core-only / core-removed accuracy, eigenvalue clocks, weight decay 1 vs 0, r_suf vs r_nec,
rotational modes. Inputs are per-checkpoint arrays ``[C, n_seeds]`` (as grokking_core returns
them) and per-evaluation metrics ``[n_seeds, E]``. Each function draws on ``ax`` / ``fig`` when
given (else on a new figure) and returns the Figure.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure

from mechjax.plots.ace import circle_outline
from mechjax.plots.canvas import axes_or_new, figure_or_new, root_figure
from mechjax.plots.curves import band_plot, label_axes


def _marks(ax, grok_epochs: Sequence, branch_epoch: int | None) -> None:
    got = [g for g in grok_epochs if g is not None]
    if got:
        ax.axvline(float(np.mean(got)), color="k", ls=":", lw=1, label="mean grok epoch")
    if branch_epoch is not None:
        ax.axvline(branch_epoch, color="grey", ls="--", lw=0.8, label="branch (wd 0)")


def accuracy_and_core(eval_epochs: np.ndarray, train_acc: np.ndarray, test_acc: np.ndarray,
                      ckpt_epochs: Sequence[int], core_dim: np.ndarray, heldout_r2: np.ndarray,
                      grok_epochs: Sequence, branch_epoch: int, d_model: int, *,
                      fig: Figure | SubFigure | None = None) -> Figure:
    """Top: train/test accuracy ``[n, E]``; middle: core dimension ``[C, n]``; bottom: held-out
    R^2 of the shift operator ``[C, n]`` (weight decay 1 run)."""
    fig = figure_or_new(fig, (6.4, 8.0))
    axes = fig.subplots(3, 1, sharex=True)
    band_plot(axes[0], eval_epochs, train_acc, "train")
    band_plot(axes[0], eval_epochs, test_acc, "test")
    axes[0].set_ylabel("accuracy")
    band_plot(axes[1], np.asarray(ckpt_epochs), np.asarray(core_dim).T, "core dimension",
              color="C2")
    axes[1].set_ylabel(f"core dimension (of {d_model})")
    band_plot(axes[2], np.asarray(ckpt_epochs), np.clip(np.asarray(heldout_r2).T, -1, 1),
              "held-out R^2 (shift)", color="C3")
    axes[2].set_ylabel("held-out R^2")
    axes[2].set_ylim(-1.05, 1.05)
    axes[2].set_xlabel("epoch")
    for ax in axes:
        _marks(ax, grok_epochs, branch_epoch)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[0].set_title("a + b mod p, weight decay 1: accuracy, core dimension, shift fit")
    return root_figure(fig)


def interventions(ckpt_epochs: Sequence[int], full: np.ndarray, core_only: np.ndarray,
                  core_removed: np.ndarray, chance: float, grok_epochs: Sequence, *,
                  ax: Axes | None = None) -> Figure:
    """Full, core-only and core-removed test accuracy at the core dimension, ``[C, n]`` each."""
    ax = axes_or_new(ax, (6.4, 4.0))
    x = np.asarray(ckpt_epochs)
    for label, v in (("full", full), ("core only", core_only), ("core removed", core_removed)):
        band_plot(ax, x, np.asarray(v).T, label)
    ax.axhline(chance, color="grey", lw=0.8, ls="-.", label="chance")
    _marks(ax, grok_epochs, None)
    label_axes(ax, "epoch", "test accuracy", "interventions on the core (weight decay 1)", 7)
    return root_figure(ax)


def eigenvalue_clocks(epochs: Sequence[int], eigenvalues: Sequence[np.ndarray],
                      n_kept: Sequence[np.ndarray], p: int, *,
                      fig: Figure | SubFigure | None = None) -> Figure:
    """One unit-circle panel per epoch: the shift operator's eigenvalues of every seed.

    ``eigenvalues[i] [n, D]`` complex and ``n_kept[i] [n]`` (the fit's directions) at
    ``epochs[i]``; points within ``sin(pi/p)`` of the circle are filled, the others hollow.
    """
    k = len(epochs)
    fig = figure_or_new(fig, (2.6 * k, 2.9))
    axes = fig.subplots(1, k, squeeze=False)
    tol = math.sin(math.pi / p)
    for ax, epoch, lam, kept in zip(axes[0], epochs, eigenvalues, n_kept):
        circle_outline(ax)
        pts = np.concatenate([row[: int(r)] for row, r in zip(np.asarray(lam), kept)])
        on = np.abs(np.abs(pts) - 1) <= tol
        ax.scatter(pts.real[on], pts.imag[on], s=10, color="C0", alpha=0.7)
        ax.scatter(pts.real[~on], pts.imag[~on], s=10, facecolor="none", edgecolor="C3",
                   alpha=0.7)
        lim = max(1.3, float(np.max(np.abs(pts), initial=0)) * 1.05)
        lim = min(lim, 3.0)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        ax.set_title(f"epoch {epoch}: {int(on.sum())}/{pts.size} on circle", fontsize=8)
        ax.tick_params(labelsize=6)
    fig.suptitle("cyclic-shift eigenvalues of the class means (all seeds)", fontsize=9)
    return root_figure(fig)


def compare_branches(series: Mapping[str, tuple[Sequence[int], np.ndarray]], ylabel: str,
                     title: str, reference: tuple[str, float] | None = None,
                     branch_epoch: int | None = None, *, ax: Axes | None = None) -> Figure:
    """``{label: (epochs [C], values [C, n])}`` as mean + band lines on one panel."""
    ax = axes_or_new(ax, (6.4, 4.0))
    for label, (x, v) in series.items():
        band_plot(ax, np.asarray(x), np.asarray(v, float).T, label)
    if reference is not None:
        ax.axhline(reference[1], color="k", lw=0.8, ls="-.", label=reference[0])
    if branch_epoch is not None:
        ax.axvline(branch_epoch, color="grey", ls="--", lw=0.8, label="branch")
    label_axes(ax, "epoch", ylabel, title, 7)
    return root_figure(ax)


def all_figures(p: int, metrics: Mapping[str, Mapping[str, np.ndarray]],
                stats: Mapping[str, Mapping[str, np.ndarray]],
                epochs: Mapping[str, Sequence[int]], grok_epochs: Sequence, branch_epoch: int,
                clock_epochs: Sequence[int]) -> dict[str, Figure]:
    """Every figure of the experiment from the runner's metrics (``{'wd1', 'wd0'}``), ACE stats
    and checkpoint epochs, by file stem (``{'accuracy_core_dim': Figure, ...}``)."""
    m1, s1, s0 = metrics["wd1"], stats["wd1"], stats["wd0"]
    e1, e0 = epochs["wd1"], epochs["wd0"]
    d_model = s1["weights"].shape[-1]

    def wd1_vs_wd0(key: str) -> dict:
        return {"weight decay 1": (e1, s1[key]), "weight decay 0 (branch)": (e0, s0[key])}

    return {
        "accuracy_core_dim": accuracy_and_core(
            m1["epoch"], m1["acc/train"], m1["acc/test"], e1, s1["core_dim"], s1["heldout_r2"],
            grok_epochs, branch_epoch, d_model),
        "core_interventions": interventions(e1, s1["acc_full"], s1["acc_core_only"],
                                            s1["acc_core_removed"], 1.0 / p, grok_epochs),
        "eigenvalue_clocks": eigenvalue_clocks(
            list(clock_epochs), [s1["eigenvalues"][e1.index(e)] for e in clock_epochs],
            [s1["n_directions"][e1.index(e)] for e in clock_epochs], p),
        "core_dim_wd1_vs_wd0": compare_branches(
            wd1_vs_wd0("core_dim"), "core dimension", "core dimension: weight decay 1 vs 0",
            branch_epoch=branch_epoch),
        "r_suf_vs_r_nec": compare_branches(
            {"r_nec (wd 1)": (e1, s1["r_nec"]), "r_suf (wd 1)": (e1, s1["r_suf"]),
             "r_nec (wd 0)": (e0, s0["r_nec"]), "r_suf (wd 0)": (e0, s0["r_suf"])},
            "rank", "necessary vs sufficient rank", branch_epoch=branch_epoch),
        "rotational_modes": compare_branches(
            wd1_vs_wd0("n_rotational"), "rotational modes",
            "rotational modes of the shift operator", reference=("floor(p/2) + 1", p // 2 + 1),
            branch_epoch=branch_epoch),
    }
