"""Cuts of an average-linkage tree of the seeds and their mean silhouettes (used by ``cluster``
for the seeds and by ``reference`` for data without groups)."""
from __future__ import annotations

import numpy as np
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform


def silhouette(d: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette of ``labels [n]`` under distances ``d [n, n]`` (needs 2+ groups): per
    seed ``(b - a) / max(a, b)``, ``a`` its mean distance to the rest of its group, ``b`` to the
    nearest other group; 0 for a seed alone in its group."""
    groups, index, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    if groups.size < 2:
        raise ValueError("a silhouette needs at least two groups")
    onehot = np.eye(groups.size)[index]             # [n, k]
    sums = np.asarray(d, np.float64) @ onehot       # [n, k] distance to each group, summed
    own = sizes[index]
    a = sums[np.arange(len(index)), index] / np.maximum(own - 1, 1)
    means = sums / sizes
    means[np.arange(len(index)), index] = np.inf
    b = means.min(1)
    top = np.maximum(a, b)
    scores = np.where((own > 1) & (top > 0), (b - a) / np.where(top > 0, top, 1.0), 0.0)
    return float(scores.mean())


def tree_cuts(d: np.ndarray, max_groups: int, min_group_size: int
              ) -> dict[int, tuple[np.ndarray, float]]:
    """``{k: (labels [n] in 1..k, mean silhouette)}`` for every cut of the average-linkage tree
    of ``d`` into exactly k = 2 .. ``max_groups`` groups of ``min_group_size`` seeds or more
    (tied distances can leave some k without a cut)."""
    tree = hierarchy.linkage(squareform(d, checks=False), method="average")
    out = {}
    for k in range(2, max_groups + 1):
        labels = hierarchy.fcluster(tree, k, criterion="maxclust")
        sizes = np.unique(labels, return_counts=True)[1]
        if sizes.size == k and sizes.min() >= min_group_size:
            out[k] = (labels, silhouette(d, labels))
    return out


def best_silhouette(d: np.ndarray, max_groups: int, min_group_size: int) -> float:
    """The highest mean silhouette of any cut ``tree_cuts`` tries (0 if it tries none)."""
    cuts = tree_cuts(d, max_groups, min_group_size)
    return max((s for _, s in cuts.values()), default=0.0)
