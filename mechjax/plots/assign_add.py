"""Figures of the Assign-and-Add reproduction (docs/assign_add.md): curves over training with a
band over seeds and phase marks, phase close-ups aligned per seed, QK heatmaps, attention patterns,
cosine histograms, the Fourier fit of one neuron, and the f / r data-requirement sweeps.

Every function takes arrays (``[n_seeds, n_evals]`` curves, ``{phase: [n_seeds]}`` steps), draws
on ``ax`` / ``fig`` when given (else on a new figure) and returns the Figure. ``all_figures``:
every figure of one training run, by file stem.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure

from mechjax.plots.canvas import axes_or_new, figure_or_new, root_figure
from mechjax.plots.curves import band_plot

PHASE_COLORS = {"phase1": "tab:green", "phase2": "tab:orange", "phase3": "tab:red"}
POOL_GROUPS = (("0-var", ("0var_train", "0var_heldout")),
               ("1-var", ("1var_train", "1var_heldout", "1var_restricted")),
               ("2-var", ("2var_train", "2var_heldout", "2var_one_misplaced",
                          "2var_two_misplaced")))


def _phase_marks(ax, phases: Mapping[str, np.ndarray] | None) -> None:
    """Dashed line at the mean step of each phase; ticks at the top for every seed."""
    for name, at in (phases or {}).items():
        at = np.asarray(at, float)
        ok = np.isfinite(at)
        if not ok.any():
            continue
        color = PHASE_COLORS.get(name, "grey")
        ax.axvline(at[ok].mean(), color=color, ls="--", lw=1,
                   label=f"{name} ({ok.sum()}/{at.size} seeds)")
        ax.plot(at[ok], np.full(ok.sum(), 1.0), "|", color=color, ms=8,
                transform=ax.get_xaxis_transform(), clip_on=False)


def _panels(fig: Figure | SubFigure | None, n: int, ncols: int = 3, size=(4.2, 3.0)):
    """``n`` panels in rows of ``ncols`` (each ``size`` inches when the figure is new)."""
    nrows = -(-n // ncols)
    fig = figure_or_new(fig, (size[0] * ncols, size[1] * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    return fig, axes.ravel()


def accuracy_per_pool(steps: np.ndarray, pools: Mapping[str, np.ndarray],
                      phases: Mapping[str, np.ndarray] | None = None, *,
                      fig: Figure | SubFigure | None = None) -> Figure:
    """Accuracy on every evaluation pool vs step (mean line, min-max band over seeds), grouped by
    sequence kind, with phase marks."""
    groups = [(title, [p for p in names if p in pools]) for title, names in POOL_GROUPS]
    other = sorted(set(pools) - {p for _, names in POOL_GROUPS for p in names})
    if other:
        groups.append(("other", other))
    groups = [g for g in groups if g[1]]
    fig, axes = _panels(fig, len(groups))
    n_seeds = next(iter(pools.values())).shape[0] if pools else 0
    for ax, (title, names) in zip(axes, groups):
        for name in names:
            band_plot(ax, steps, pools[name], name, individual=False)
        _phase_marks(ax, phases)
        ax.set_title(f"{title} accuracy ({n_seeds} seeds)")
        ax.set_xlabel("step")
        ax.set_ylim(-0.02, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    return root_figure(fig)


def _measure_panels(fig: Figure | SubFigure | None, steps: np.ndarray,
                    measures: Mapping[str, np.ndarray],
                    phases: Mapping[str, np.ndarray] | None, ncols: int,
                    size: tuple[float, float], titles: Mapping[str, str], fontsize: float,
                    zero_line: bool):
    """One panel per measure ``[n_seeds, n_evals]``: mean, band and every seed, phase marks."""
    fig, axes = _panels(fig, len(measures), ncols=ncols, size=size)
    for ax, (name, values) in zip(axes, measures.items()):
        band_plot(ax, steps, values, name)
        _phase_marks(ax, phases)
        if zero_line:
            ax.axhline(0.0, color="k", lw=0.5)
        ax.set_title(titles.get(name, name), fontsize=fontsize)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    return fig, axes


def progress_measures(steps: np.ndarray, measures: Mapping[str, np.ndarray],
                      phases: Mapping[str, np.ndarray] | None = None, *,
                      fig: Figure | SubFigure | None = None) -> Figure:
    """One panel per progress measure (mean, band and every seed), with phase marks."""
    fig, axes = _measure_panels(fig, steps, measures, phases, 4, (3.6, 2.8), {}, 9, False)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles[1:], labels[1:], loc="lower right", fontsize=7)
    return root_figure(fig)


QK2_TITLES = {"identity": "-dL/dQK2 on A.A^T: diag - offdiag",
              "identity_cos": "cos(-A dL/dQK2 A^T, I - J/12)",
              "block_fraction": "||grad in span(A)|| / ||grad||",
              "weights_identity": "A QK2 A^T: diag - offdiag",
              "weights_identity_cos": "cos(A QK2 A^T, I - J/12)"}


def qk2_gradient(steps: np.ndarray, measures: Mapping[str, np.ndarray],
                 phases: Mapping[str, np.ndarray] | None = None, *,
                 fig: Figure | SubFigure | None = None) -> Figure:
    """The layer-2 QK gradient projected on the variable-identity block over training."""
    fig, _ = _measure_panels(fig, steps, measures, phases, 3, (4.2, 3.0), QK2_TITLES, 8, True)
    return root_figure(fig)


def phase_closeup(steps: np.ndarray, curves: Mapping[str, np.ndarray], phase_step: np.ndarray,
                  window: float, title: str, *,
                  fig: Figure | SubFigure | None = None) -> Figure:
    """Curves of the seeds that reached a phase, shifted so each seed's phase step is 0."""
    phase_step = np.asarray(phase_step, float)
    ok = np.isfinite(phase_step)
    fig, axes = _panels(fig, len(curves), ncols=min(len(curves), 3), size=(4.0, 3.0))
    for ax, (name, values) in zip(axes, curves.items()):
        if not ok.any():
            ax.text(0.5, 0.5, "no seed reached this phase", ha="center", va="center",
                    transform=ax.transAxes)
        for i in np.flatnonzero(ok):
            rel = np.asarray(steps, float) - phase_step[i]
            sel = np.abs(rel) <= window
            ax.plot(rel[sel], np.asarray(values)[i, sel], lw=1, alpha=0.8, marker=".", ms=3)
        ax.axvline(0, color="grey", ls="--", lw=0.8)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("step - phase step")
        ax.grid(alpha=0.3)
    fig.suptitle(f"{title}: {int(ok.sum())}/{ok.size} seeds", fontsize=10)
    return root_figure(fig)


def qk_heatmaps(qk1: np.ndarray, qk2: np.ndarray, title: str = "", *,
                fig: Figure | SubFigure | None = None) -> Figure:
    """Positional QK1 ``[16, 16]`` (query rows; masked above the diagonal) and variable QK2
    ``[12, 12]`` side by side."""
    fig = figure_or_new(fig, (11, 4.6))
    a1, a2 = fig.subplots(1, 2)
    q1 = np.where(np.isfinite(qk1), qk1, np.nan)
    im = a1.imshow(q1, cmap="viridis")
    fig.colorbar(im, ax=a1)
    a1.set_title(f"W_pos QK1 W_pos^T / sqrt(d) {title}", fontsize=9)
    a1.set_xlabel("key position")
    a1.set_ylabel("query position")
    lim = np.abs(qk2).max() or 1.0
    im = a2.imshow(qk2, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(im, ax=a2)
    names = list("abcdefghijkl")[:qk2.shape[0]]
    a2.set_xticks(range(len(names)), names)
    a2.set_yticks(range(len(names)), names)
    a2.set_title(f"(e_v OV1) QK2 (e_w OV1)^T / sqrt(d) {title}", fontsize=9)
    a2.set_xlabel("key variable w")
    a2.set_ylabel("query variable v")
    return root_figure(fig)


def attention_patterns(tokens: Sequence[str], pattern1: np.ndarray, pattern2: np.ndarray,
                       title: str = "", *, fig: Figure | SubFigure | None = None) -> Figure:
    """Layer-1 and layer-2 attention patterns ``[16, 16]`` of one sequence."""
    fig = figure_or_new(fig, (12, 5.4))
    for ax, pat, name in zip(fig.subplots(1, 2), (pattern1, pattern2), ("layer 1", "layer 2")):
        im = ax.imshow(pat, cmap="Blues", vmin=0, vmax=1)
        fig.colorbar(im, ax=ax)
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(len(tokens)), tokens, fontsize=7)
        ax.set_xlabel("key")
        ax.set_ylabel("query")
        ax.set_title(f"{name} attention {title}", fontsize=9)
    return root_figure(fig)


def cosine_histograms(matched: np.ndarray, mismatched: np.ndarray, title: str = "", *,
                      ax: Axes | None = None) -> Figure:
    """Histograms of the layer-2 MLP-input cosine, literal vs variable twin (matched) and vs
    another sequence (mismatched)."""
    ax = axes_or_new(ax, (6.4, 4.0))
    bins = np.linspace(-1, 1, 81)
    for values, label, color in ((matched, "matched", "tab:blue"),
                                 (mismatched, "mismatched", "tab:grey")):
        values = np.asarray(values, float)
        ax.hist(values, bins=bins, alpha=0.6, color=color,
                label=f"{label} (mean {np.nanmean(values):.3f})")
    ax.set_xlabel("cosine")
    ax.set_ylabel("sequences")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return root_figure(ax)


def fourier_neuron(neuron_map: np.ndarray, fitted: np.ndarray, k: int, evr: float,
                   evr_by_k: np.ndarray, title: str = "", *,
                   fig: Figure | SubFigure | None = None) -> Figure:
    """A layer-2 MLP pre-activation map over (n, m) ``[p, p]``, its single-frequency fit, and the
    explained variance ratio per frequency ``[n_k]``."""
    fig = figure_or_new(fig, (14, 4.2))
    axes = fig.subplots(1, 3)
    centred = neuron_map - neuron_map.mean()
    lim = np.abs(centred).max() or 1.0
    for ax, values, name in ((axes[0], centred, "pre-activation (centred)"),
                             (axes[1], fitted, f"fit at k = {k} (EVR {evr:.3f})")):
        im = ax.imshow(values, cmap="RdBu_r", vmin=-lim, vmax=lim)
        fig.colorbar(im, ax=ax)
        ax.set_xlabel("m (right operand)")
        ax.set_ylabel("n (left operand)")
        ax.set_title(f"{name} {title}", fontsize=9)
    ks = np.arange(1, len(evr_by_k) + 1)
    axes[2].bar(ks, evr_by_k, color="tab:blue")
    axes[2].set_xlabel("frequency k")
    axes[2].set_ylabel("explained variance ratio")
    axes[2].set_title("single-frequency fits", fontsize=9)
    return root_figure(fig)


def sweep_curve(xs: np.ndarray, acc: np.ndarray, threshold: float, crossings: np.ndarray,
                mean_crossing: float | None, xlabel: str, ylabel: str, log_x: bool = False,
                title: str = "", *, ax: Axes | None = None) -> Figure:
    """Accuracy vs a data knob (``acc [n_seeds, n_x]``): mean, min-max band, every seed as dots,
    the threshold line and the estimated crossing (mean curve; per-seed spread as an error bar)."""
    xs = np.asarray(xs, float)
    acc = np.asarray(acc, float)
    ax = axes_or_new(ax, (6.4, 4.2))
    band_plot(ax, xs, acc, f"mean over {acc.shape[0]} seeds", individual=False)
    for row in acc:
        ax.plot(xs, row, ".", color="tab:blue", alpha=0.4, ms=5)
    ax.axhline(threshold, color="grey", ls=":", lw=1)
    crossings = np.asarray(crossings, float)
    ok = np.isfinite(crossings)
    if mean_crossing is not None and np.isfinite(mean_crossing):
        ax.axvline(mean_crossing, color="tab:red", ls="--", lw=1,
                   label=f"mean curve reaches {threshold}: {mean_crossing:.3g}")
    if ok.any():
        c = crossings[ok]
        ax.errorbar([c.mean()], [threshold], xerr=[[c.mean() - c.min()], [c.max() - c.mean()]],
                    fmt="o", color="tab:red", capsize=4,
                    label=f"per-seed {c.mean():.3g} +- {c.std():.2g} ({ok.sum()}/{ok.size})")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return root_figure(ax)


def all_figures(steps: np.ndarray, m: Mapping[str, np.ndarray], phase_at: Mapping[str, np.ndarray],
                window: int, final: Mapping[str, Any], done3: np.ndarray,
                example: Mapping[str, Any]) -> dict[str, Figure]:
    """Every figure of a training run by file stem: curves over training (``m``: the metrics
    ``{name: [n_seeds, n_evals]}`` at ``steps``, with the ``phase_at`` marks), the phase-2 / 3
    close-ups (``window`` steps either side), the cosine histograms of ``final``
    (``assign_add_final.final_analysis``; the seeds that completed phase 3 when any did), and
    one example model's views (``example``: ``index``, ``seed``, ``tokens`` as strings, ``views``
    from ``assign_add_final.example_views``)."""
    def group(prefix: str) -> dict[str, np.ndarray]:
        return {k.split("/", 1)[1]: m[k] for k in sorted(m) if k.startswith(prefix)}

    which = done3 if done3.any() else np.ones_like(done3)
    i, views, tag = example["index"], example["views"], f"seed {example['seed']}"
    return {
        "accuracy_per_pool": accuracy_per_pool(
            steps, {k[4:]: v for k, v in m.items() if k.startswith("acc/")}, phase_at),
        "progress_measures": progress_measures(steps, group("progress/"), phase_at),
        "qk2_gradient": qk2_gradient(steps, group("qk2grad/"), phase_at),
        "phase2_closeup": phase_closeup(
            steps, {"1var_train": m["acc/1var_train"], "1var_heldout": m["acc/1var_heldout"],
                    "qk2_diagonal": m["progress/qk2_diagonal"],
                    "attn2_eq_values": m["progress/attn2_eq_values"],
                    "probe_accuracy": m["progress/probe_accuracy"]},
            phase_at["phase2"], window, "phase 2 (aligned at each seed's phase-2 step)"),
        "phase3_closeup": phase_closeup(
            steps, {"2var_two_misplaced": m["acc/2var_two_misplaced"],
                    "2var_one_misplaced": m["acc/2var_one_misplaced"],
                    "1var_restricted": m["acc/1var_restricted"],
                    "2var_heldout": m["acc/2var_heldout"]},
            phase_at["phase3"], window, "phase 3 (aligned at each seed's phase-3 step)"),
        "cosine_histograms": cosine_histograms(
            final["cos_matched"][which].ravel(), final["cos_mismatched"][which].ravel(),
            title=f"layer-2 MLP input at '=' ({int(which.sum())} seeds"
                  f"{' that completed phase 3' if done3.any() else ''})"),
        "qk_heatmaps": qk_heatmaps(final["qk1"][i], final["qk2"][i], title=tag),
        "attention_patterns": attention_patterns(example["tokens"], *views["attention"],
                                                 title=tag),
        "fourier_best_neuron": fourier_neuron(
            views["neuron_map"], views["neuron_fit"], views["k"], views["evr"],
            views["evr_per_k"], title=f"{tag}, neuron {views['neuron']}"),
    }
