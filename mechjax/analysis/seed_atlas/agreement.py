"""How well a seeds x seeds similarity and the groups found in it match known labels (an outcome):
the adjusted Rand index of two labelings, and ``contrast`` -- mean similarity within and between
the labelled groups, the silhouette of the labels on ``1 - similarity``, and the agreement of a
``cluster_seeds`` grouping with the labels."""
from __future__ import annotations

from typing import Any

import numpy as np

from mechjax.analysis.seed_atlas.cluster import Grouping, distances
from mechjax.analysis.seed_atlas.cuts import silhouette


def adjusted_rand(a: np.ndarray, b: np.ndarray) -> float:
    """Adjusted Rand index of labelings ``a [n]``, ``b [n]`` (Hubert and Arabie 1985): 1 for the
    same partition (whatever the group numbers), ~0 for unrelated ones; 1 when both put every
    seed in one group (nothing to disagree on), 0 when only one of them does."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(table, (ia, ib), 1)
    pairs = lambda x: (x * (x - 1) / 2).sum()  # noqa: E731
    both, rows, cols, total = pairs(table), pairs(table.sum(1)), pairs(table.sum(0)), pairs(
        np.asarray([len(ia)]))
    expected = rows * cols / total
    top = (rows + cols) / 2
    if top == expected:
        return 1.0 if rows == cols else 0.0
    return float((both - expected) / (top - expected))


def _mean(m: np.ndarray, rows: np.ndarray, cols: np.ndarray | None) -> float | None:
    """Mean of ``m[rows][:, cols]``; ``cols=None``: of ``m[rows][:, rows]`` off its diagonal."""
    block = m[np.ix_(rows, rows if cols is None else cols)]
    if cols is None:
        block = block[~np.eye(len(rows), dtype=bool)]
    return float(block.mean()) if block.size else None


def contrast(similarity: np.ndarray, labels: np.ndarray, grouping: Grouping) -> dict[str, Any]:
    """``similarity [n, n]`` against ``labels [n]`` (two or more groups, or one): the mean
    off-diagonal similarity within each labelled group and between every pair of them, the mean
    silhouette of the labels on ``1 - similarity`` (None with one label), and ``grouping``
    (``cluster_seeds`` on the same matrix) with its adjusted Rand index against the labels."""
    m, labels = np.asarray(similarity, np.float64), np.asarray(labels)
    groups = [np.flatnonzero(labels == g) for g in np.unique(labels)]
    names = [str(g) for g in np.unique(labels)]
    out: dict[str, Any] = {
        "within": {n: _mean(m, g, None) for n, g in zip(names, groups)},
        "between": {f"{names[i]}-{names[j]}": _mean(m, groups[i], groups[j])
                    for i in range(len(groups)) for j in range(i + 1, len(groups))},
        "offdiag_mean": _mean(m, np.arange(len(m)), None),
        "label_silhouette": silhouette(distances(m), labels) if len(groups) > 1 else None,
        "clusters": {"n_groups": grouping.n_groups, "labels": grouping.labels.tolist(),
                     "silhouette": None if grouping.n_groups == 1 else grouping.silhouette,
                     "reference": None if np.isnan(grouping.reference) else grouping.reference,
                     "adjusted_rand": adjusted_rand(grouping.labels, labels)},
    }
    return out
