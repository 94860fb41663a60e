"""How high a silhouette seeds without any groups reach: the yardstick ``cluster_seeds`` holds
the seeds' best cut against.

The seeds' distances are embedded by classical multidimensional scaling (the coordinates whose
Euclidean distances best match them; dimensions with non-positive eigenvalues dropped). Reference
data sets draw the same number of points from one Gaussian with the embedding's spread along each
of its principal axes (the principal-axes reference of Tibshirani, Walther and Hastie's gap
statistic), so they share the seeds' scale and dimension but have no groups; each is cut exactly
as the seeds are. Deterministic (a fixed random seed).

Why it is needed: a fixed silhouette floor says little when the seeds differ along few
directions. For points drawn from one Gaussian along one direction, the best cut of 8 points
scores >= 0.5 in 64% of draws and >= 0.7 in 26% (12 points: 73% and 20%); along 20 directions
it never reaches 0.5.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.distance import pdist, squareform

from mechjax.analysis.seed_atlas.cuts import best_silhouette


def embed(d: np.ndarray) -> np.ndarray:
    """Classical MDS of distances ``d [n, n]``: coordinates ``[n, m]`` along principal axes."""
    n = d.shape[0]
    centre = np.eye(n) - np.ones((n, n)) / n
    gram = -0.5 * centre @ (np.asarray(d, np.float64) ** 2) @ centre
    values, vectors = np.linalg.eigh((gram + gram.T) / 2)
    keep = values > 1e-9 * max(values.max(), 1e-300)
    return vectors[:, keep] * np.sqrt(values[keep])


def reference_silhouette(d: np.ndarray, max_groups: int, min_group_size: int,
                         n_reference: int = 100, quantile: float = 0.95, seed: int = 0) -> float:
    """The ``quantile`` of the best cut's silhouette over ``n_reference`` group-free reference
    data sets shaped like the seeds' distances ``d`` (see the module docstring)."""
    x = embed(d)
    if x.shape[1] == 0:
        return 0.0  # all seeds at one point
    spread = x.std(0)
    rng = np.random.default_rng(seed)
    best = []
    for _ in range(n_reference):
        z = rng.standard_normal(x.shape) * spread
        dz = squareform(pdist(z))  # [n, n], without an [n, n, m] intermediate
        best.append(best_silhouette(dz, max_groups, min_group_size))
    return float(np.quantile(best, quantile))
