"""The seed atlas figure: every seed's trajectory of each measure, coloured by its group."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure, SubFigure

from mechjax.plots.canvas import figure_or_new, root_figure


def seed_curves(steps: np.ndarray, table: Mapping[str, np.ndarray], labels: np.ndarray,
                names: Sequence[str] | None = None, marks: Sequence[float] = (),
                title: str = "", group_names: Sequence[str] | None = None, *,
                fig: Figure | SubFigure | None = None) -> Figure:
    """One panel per measure in ``names`` (default all of ``table``, ``{name: [n_seeds,
    n_steps]}``): one line per seed coloured by ``labels [n_seeds]`` (group ids, as
    ``Grouping.labels``); dashed vertical ``marks`` (an earliest separating step). The legend
    names each group (``group_names[i]`` for the i-th smallest label, default
    ``group <label>``) with its seed count."""
    names = list(table) if names is None else list(names)
    labels = np.asarray(labels)
    groups = sorted(set(labels.tolist()))
    group_names = [f"group {g}" for g in groups] if group_names is None else list(group_names)
    if len(group_names) != len(groups):
        raise ValueError(f"group_names has {len(group_names)} entries for {len(groups)} groups")
    cols = min(len(names), 3)
    rows = -(-len(names) // cols)
    fig = figure_or_new(fig, (4.0 * cols, 3.0 * rows))
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    colors = [f"C{i % 10}" for i in range(len(groups))]
    for ax, name in zip(axes, names):
        values = np.asarray(table[name], float)
        for i, g in enumerate(groups):
            members = labels == g
            for j, row in enumerate(values[members]):
                ax.plot(steps, row, color=colors[i], lw=1.0, alpha=0.7,
                        label=f"{group_names[i]} (n={members.sum()})" if j == 0 else None)
        for x in marks:
            ax.axvline(x, color="grey", ls="--", lw=0.8)
        ax.set_title(name)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return root_figure(fig)
