"""Seeds into groups from a seeds x seeds similarity.

The rule (deterministic, no random start): average-linkage hierarchical clustering on the
distance ``1 - similarity``; every cut into k = 2 .. ``max_groups`` groups is scored by its mean
silhouette (per seed ``(b - a) / max(a, b)``, ``a`` the mean distance to its own group, ``b`` to
the nearest other group; 0 for a seed alone in its group), and the best cut is kept only if its
silhouette reaches ``min_silhouette`` (0.5, "reasonable structure" on Kaufman and Rousseeuw's
scale; unstructured seeds score near 0.1-0.3). Otherwise all seeds are one group. Cuts with a
group smaller than ``min_group_size`` (2) are not tried: among a few seeds, one seed a little
apart from a tight pair scores 2/3 however small the difference is (similarities are relative).
Groups are numbered in the order of their first seed.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform


@dataclasses.dataclass(frozen=True)
class Grouping:
    """``labels [n_seeds]`` (0 .. n_groups - 1), the silhouette of the kept cut (NaN for one
    group) and the silhouette of every cut tried (``{k: s}``)."""

    labels: np.ndarray
    n_groups: int
    silhouette: float
    silhouettes: dict[int, float]

    def members(self, group: int) -> np.ndarray:
        """Seed indices (rows of the table) in ``group``."""
        return np.flatnonzero(self.labels == group)


def distances(similarity: np.ndarray) -> np.ndarray:
    """``1 - similarity``, symmetrized, clipped at 0, zero diagonal: ``[n, n]``."""
    s = np.asarray(similarity, np.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1] or s.shape[0] < 2:
        raise ValueError(f"similarity must be a square [n_seeds, n_seeds] matrix with n >= 2, "
                         f"got shape {s.shape}")
    if not np.isfinite(s).all():
        raise ValueError("similarity has NaN or infinite entries")
    d = np.maximum(1.0 - (s + s.T) / 2.0, 0.0)
    np.fill_diagonal(d, 0.0)
    return d


def silhouette(d: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette of ``labels [n]`` under distances ``d [n, n]`` (needs 2+ groups)."""
    groups = np.unique(labels)
    if groups.size < 2:
        raise ValueError("a silhouette needs at least two groups")
    scores = np.zeros(len(labels))
    for i, g in enumerate(labels):
        own = labels == g
        if own.sum() == 1:
            continue  # alone in its group: 0 by convention
        a = d[i, own].sum() / (own.sum() - 1)
        b = min(d[i, labels == h].mean() for h in groups if h != g)
        scores[i] = (b - a) / max(a, b) if max(a, b) > 0 else 0.0
    return float(scores.mean())


def _first_seed_order(labels: np.ndarray) -> np.ndarray:
    """Renumber groups 0, 1, ... in the order their first member appears."""
    order = {g: i for i, g in enumerate(dict.fromkeys(labels.tolist()))}
    return np.asarray([order[g] for g in labels.tolist()], np.int64)


def _sizes(labels: np.ndarray) -> np.ndarray:
    return np.unique(labels, return_counts=True)[1]


def cluster_seeds(similarity: np.ndarray, max_groups: int | None = None,
                  min_silhouette: float = 0.5, min_group_size: int = 2) -> Grouping:
    """Groups of seeds from ``similarity [n_seeds, n_seeds]`` by the rule in the module
    docstring; ``max_groups`` defaults to ``min(n_seeds - 1, 8)``; ``min_group_size=1`` lets a
    single seed be a group (a diverged seed, say)."""
    d = distances(similarity)
    n = d.shape[0]
    max_groups = min(n - 1, 8) if max_groups is None else int(max_groups)
    if not 1 <= max_groups < n:
        raise ValueError(f"max_groups={max_groups}: allowed 1 .. {n - 1} for {n} seeds")
    tree = hierarchy.linkage(squareform(d, checks=False), method="average")
    cuts = {k: hierarchy.fcluster(tree, k, criterion="maxclust") for k in range(2, max_groups + 1)}
    scores = {k: silhouette(d, lab) for k, lab in cuts.items()
              if _sizes(lab).size == k and _sizes(lab).min() >= min_group_size}
    best = max(scores, key=lambda k: (scores[k], -k)) if scores else None
    if best is None or scores[best] < min_silhouette:
        return Grouping(np.zeros(n, np.int64), 1, float("nan"), scores)
    return Grouping(_first_seed_order(cuts[best]), best, scores[best], scores)
