"""The earliest saved step from which one measure tells two groups of seeds apart, on seeds the
threshold was not fit on.

At every step and for every measure, a threshold is fit on one half of the seeds and scored on
the other (both ways, averaged: ``threshold.held_out_accuracy``). A measure separates from step
s if that held-out accuracy is at least ``min_accuracy`` at s and (``sustained``) at every later
step, so a chance hit on a few seeds before the split does not count. The answer is the measure
with the earliest such step (ties: the higher mean accuracy from there on, then the name).
Choosing the best of several measures on the same held-out seeds flatters the accuracy; name a
single measure in ``names`` to score a predictor chosen beforehand.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from mechjax.analysis.seed_atlas.table import check_table
from mechjax.analysis.seed_atlas.threshold import held_out_accuracy


@dataclasses.dataclass(frozen=True)
class Separation:
    """``step`` (None if no measure separates), the ``measure`` and its held-out ``accuracy``
    there; ``accuracies[name] [n_steps]`` and ``first[name]`` (its earliest step or None) for
    every measure tried."""

    step: int | None
    measure: str | None
    accuracy: float
    accuracies: dict[str, np.ndarray]
    first: dict[str, int | None]


def _first_index(acc: np.ndarray, min_accuracy: float, sustained: bool) -> int | None:
    ok = acc >= min_accuracy
    if sustained:
        ok = np.flip(np.logical_and.accumulate(np.flip(ok)))  # ok here and at every later step
    return int(np.argmax(ok)) if ok.any() else None


def earliest_separating_step(steps: Sequence[int], table: Mapping[str, np.ndarray],
                             in_group: np.ndarray, names: Sequence[str] | None = None,
                             min_accuracy: float = 0.9, sustained: bool = True) -> Separation:
    """See the module docstring. ``steps [n_steps]`` label the table's columns, ``in_group
    [n_seeds]`` (bool) marks one group (the rest are the other; for example
    ``grouping.labels == 1``)."""
    n_seeds, n_steps = check_table(table)
    steps = [int(s) for s in steps]
    y = np.asarray(in_group, bool)
    if len(steps) != n_steps or y.shape != (n_seeds,):
        raise ValueError(f"steps ({len(steps)}) and in_group {y.shape} must match the table's "
                         f"[n_seeds={n_seeds}, n_steps={n_steps}]")
    if min(y.sum(), (~y).sum()) < 2:
        raise ValueError(f"each group needs 2+ seeds to fit and test a threshold; got "
                         f"{int(y.sum())} and {int((~y).sum())}")
    if not 0.0 < min_accuracy <= 1.0:
        raise ValueError(f"min_accuracy={min_accuracy}: must be in (0, 1]")
    names = list(table) if names is None else list(names)
    if not names or any(n not in table for n in names):
        raise ValueError(f"names={names!r}: allowed measures {sorted(table)}")
    acc = {n: np.asarray([held_out_accuracy(np.asarray(table[n])[:, t], y)
                          for t in range(n_steps)]) for n in names}
    first = {n: _first_index(acc[n], min_accuracy, sustained) for n in names}
    found = [n for n in names if first[n] is not None]
    if not found:
        return Separation(None, None, float("nan"), acc, {n: None for n in names})
    best = min(found, key=lambda n: (first[n], -acc[n][first[n]:].mean(), n))
    return Separation(steps[first[best]], best, float(acc[best][first[best]]), acc,
                      {n: None if first[n] is None else steps[first[n]] for n in names})
