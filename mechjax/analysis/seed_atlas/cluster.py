"""Seeds into groups from a seeds x seeds similarity.

The rule (deterministic, no random start): average-linkage hierarchical clustering on the
distance ``1 - similarity``; every cut into k = 2 .. ``max_groups`` groups of at least
``min_group_size`` seeds is scored by its mean silhouette (``cuts.silhouette``), and the best cut
is kept only if its silhouette reaches ``min_silhouette`` (0.5, "reasonable structure" on Kaufman
and Rousseeuw's scale) and exceeds what seeds without groups reach: the 95th percentile of the
best cut of 100 group-free reference data sets of the same spread (``reference``). Otherwise all
seeds are one group.

``min_group_size`` is 2 by default: among a few seeds, one seed a little apart from a tight pair
scores 2/3 however small the difference is (similarities are relative). Groups are numbered in
the order of their first seed.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from mechjax.analysis.seed_atlas.cuts import tree_cuts
from mechjax.analysis.seed_atlas.reference import reference_silhouette


@dataclasses.dataclass(frozen=True)
class Grouping:
    """``labels [n_seeds]`` (0 .. n_groups - 1), the silhouette of the kept cut (NaN for one
    group), the silhouette of every cut tried (``{k: s}``) and the reference silhouette the best
    cut had to exceed (NaN when no reference was drawn)."""

    labels: np.ndarray
    n_groups: int
    silhouette: float
    silhouettes: dict[int, float]
    reference: float

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


def _first_seed_order(labels: np.ndarray) -> np.ndarray:
    """Renumber groups 0, 1, ... in the order their first member appears."""
    order = {g: i for i, g in enumerate(dict.fromkeys(labels.tolist()))}
    return np.asarray([order[g] for g in labels.tolist()], np.int64)


def cluster_seeds(similarity: np.ndarray, max_groups: int | None = None,
                  min_silhouette: float = 0.5, min_group_size: int = 2,
                  n_reference: int = 100) -> Grouping:
    """Groups of seeds from ``similarity [n_seeds, n_seeds]`` by the rule in the module
    docstring; ``max_groups`` defaults to ``min(n_seeds - 1, 8)``; ``min_group_size=1`` lets a
    single seed be a group (a diverged seed, say); ``n_reference=0`` drops the reference and
    keeps only the ``min_silhouette`` floor."""
    d = distances(similarity)
    n = d.shape[0]
    max_groups = min(n - 1, 8) if max_groups is None else int(max_groups)
    if not 1 <= max_groups < n:
        raise ValueError(f"max_groups={max_groups}: allowed 1 .. {n - 1} for {n} seeds")
    cuts = tree_cuts(d, max_groups, min_group_size)
    scores = {k: s for k, (_, s) in cuts.items()}
    best = max(scores, key=lambda k: (scores[k], -k)) if scores else None
    reference = (reference_silhouette(d, max_groups, min_group_size, n_reference)
                 if n_reference and best is not None else float("nan"))
    if best is None or scores[best] < min_silhouette or scores[best] <= reference:
        return Grouping(np.zeros(n, np.int64), 1, float("nan"), scores, reference)
    return Grouping(_first_seed_order(cuts[best][0]), best, scores[best], scores, reference)
