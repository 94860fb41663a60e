"""Which measures separate the groups of seeds, ranked.

The score of a measure is its largest eta-squared over steps: the share of the seeds' variance at
a step that the group means explain (``SS_between / SS_total``, 0 .. 1; any number of groups; for
two groups a monotone function of Cohen's d). Seeds with NaN at a step are left out there.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from mechjax.analysis.seed_atlas.table import check_table, varies


@dataclasses.dataclass(frozen=True)
class MeasureRank:
    """A measure's score (max eta-squared over steps) and the step index where it peaks."""

    name: str
    score: float
    step_index: int


def eta_squared(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Between-group share of variance at each step: ``values [n_seeds, n_steps]``,
    ``labels [n_seeds]`` -> ``[n_steps]`` (0 where the seeds do not vary beyond rounding,
    ``table.varies``, or fewer than two groups have a value)."""
    v = np.asarray(values, np.float64)
    labels = np.asarray(labels)
    if v.ndim != 2 or labels.shape != v.shape[:1]:
        raise ValueError(f"values {v.shape} and labels {labels.shape} must be [n_seeds, n_steps] "
                         "and [n_seeds]")
    out = np.zeros(v.shape[1])
    for t in range(v.shape[1]):
        ok = np.isfinite(v[:, t])
        x, lab = v[ok, t], labels[ok]
        if not varies(x) or np.unique(lab).size < 2:
            continue
        total = ((x - x.mean()) ** 2).sum()
        between = sum(x[lab == g].size * (x[lab == g].mean() - x.mean()) ** 2
                      for g in np.unique(lab))
        out[t] = between / total
    return out


def rank_measures(table: Mapping[str, np.ndarray], labels: np.ndarray) -> list[MeasureRank]:
    """Every measure of ``table`` scored by how well it separates ``labels`` (a
    ``Grouping.labels``), best first (ties by name)."""
    check_table(table)
    ranks = []
    for name, values in table.items():
        eta = eta_squared(values, labels)
        ranks.append(MeasureRank(name, float(eta.max()), int(eta.argmax())))
    return sorted(ranks, key=lambda r: (-r.score, r.name))
