"""Seeds x seeds similarity matrices for the seed atlas.

From measure trajectories (``trajectory_similarity``) and from a run's weights
(``weight_similarity``, which calls ``ace.weight_cosine_matrix``). Core subspaces and core
coordinates already have theirs in ``mechjax.analysis.ace``: ``ace.overlap_matrix(bases, ranks)``
and ``ace.cca_matrix(z, ranks)`` give ``[n, n]`` matrices that ``cluster_seeds`` takes as they are.
Every similarity here is 1 on the diagonal and larger for more alike seeds.
"""
from __future__ import annotations

from typing import Literal, Mapping, Sequence

import numpy as np

from mechjax.analysis.ace.compare import weight_cosine_matrix
from mechjax.analysis.seed_atlas.table import check_table, varies

Kind = Literal["correlation", "distance"]


def standardize(table: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each measure minus its mean over all seeds and steps, over its standard deviation there,
    so that measures of any unit weigh alike. A measure that does not vary beyond rounding
    (``table.varies``) becomes zeros."""
    check_table(table)
    out = {}
    for name, v in table.items():
        v = np.asarray(v, np.float64)
        out[name] = (v - np.nanmean(v)) / np.nanstd(v) if varies(v) else np.zeros_like(v)
    return out


def trajectory_similarity(table: Mapping[str, np.ndarray], names: Sequence[str] | None = None,
                          kind: Kind = "correlation") -> np.ndarray:
    """``[n_seeds, n_seeds]`` similarity of the seeds' standardized trajectories of ``names``
    (default all measures), each seed's trajectories joined into one vector.

    ``kind="correlation"``: Pearson correlation of the two vectors (in [-1, 1]).
    ``kind="distance"``: ``1 - d / max d`` with ``d`` the Euclidean distance (in [0, 1]).
    NaN entries (a diverged seed) are set to the measure's mean before comparing.
    """
    if kind not in ("correlation", "distance"):
        raise ValueError(f"kind={kind!r}: allowed 'correlation', 'distance'")
    z = standardize(table)
    names = list(z) if names is None else list(names)
    unknown = [n for n in names if n not in z]
    if unknown or not names:
        raise ValueError(f"names={names!r}: allowed measures {sorted(z)}")
    x = np.nan_to_num(np.concatenate([z[n] for n in names], axis=1), nan=0.0)  # [n_seeds, F]
    if kind == "correlation":
        x = x - x.mean(1, keepdims=True)
        norm = np.linalg.norm(x, axis=1)
        x = x / np.where(norm > 0, norm, 1.0)[:, None]
        sim = x @ x.T
        np.fill_diagonal(sim, 1.0)
        return np.clip(sim, -1.0, 1.0)
    d = np.sqrt(np.maximum(((x[:, None] - x[None]) ** 2).sum(-1), 0.0))
    return 1.0 - d / d.max() if d.max() > 0 else np.ones_like(d)


def weight_similarity(run, step: int | None = None, grid: int = 0,
                      prefixes: Sequence[str] = ()) -> np.ndarray:
    """``[n_seeds, n_seeds]`` whole-weight cosine of the run's seeds at ``step`` (default the
    latest saved), over the parameters whose names start with one of ``prefixes`` (default all;
    for example ``("blocks.0.attn.",)`` for the first layer's attention)."""
    params = run.stacked_params(step, grid)
    chosen = {k: v for k, v in params.items()
              if not prefixes or any(k.startswith(p) for p in prefixes)}
    if not chosen:
        raise ValueError(f"prefixes={tuple(prefixes)!r} match no parameter; names: {sorted(params)}")
    return np.asarray(weight_cosine_matrix(chosen), np.float64)
