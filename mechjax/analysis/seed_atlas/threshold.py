"""A one-measure threshold classifier of two seed groups, fit on half the seeds and scored on the
other half: the predictor behind ``rank_measures`` and ``earliest_separating_step``."""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Threshold:
    """Predict group 1 where ``sign * (value - at) > 0`` (``sign`` is +1 or -1)."""

    at: float
    sign: int

    def predict(self, values: np.ndarray) -> np.ndarray:
        return (self.sign * (np.asarray(values, np.float64) - self.at) > 0).astype(np.int64)


def halves(in_group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint halves of the seeds, each holding about half of either group: within each
    group the seeds in index order go alternately to the first and the second half. Returns two
    index arrays (deterministic)."""
    in_group = np.asarray(in_group, bool)
    first, second = [], []
    for members in (np.flatnonzero(~in_group), np.flatnonzero(in_group)):
        first += members[0::2].tolist()
        second += members[1::2].tolist()
    return np.sort(first), np.sort(second)


def fit_threshold(values: np.ndarray, in_group: np.ndarray) -> Threshold:
    """The threshold and side with the best accuracy on ``values [n]`` for ``in_group [n]``
    (bool); among equally accurate cuts, the one in the widest gap between sorted values (then
    the lowest). NaN values count as misclassified."""
    x = np.asarray(values, np.float64)
    y = np.asarray(in_group, bool)
    finite = np.unique(x[np.isfinite(x)])
    if finite.size == 0:
        return Threshold(0.0, 1)
    cuts = np.concatenate([[finite[0] - 1.0], (finite[1:] + finite[:-1]) / 2, [finite[-1] + 1.0]])
    gaps = np.concatenate([[0.0], np.diff(finite), [0.0]])
    best, best_key = Threshold(float(cuts[0]), 1), (-1.0, -1.0)
    for at, gap in zip(cuts, gaps):
        for sign in (1, -1):
            guess = Threshold(float(at), sign)
            key = (accuracy(guess, x, y), gap)
            if key > best_key:
                best, best_key = guess, key
    return best


def accuracy(threshold: Threshold, values: np.ndarray, in_group: np.ndarray) -> float:
    """Share of seeds ``threshold`` puts on their side (NaN values count as wrong)."""
    x = np.asarray(values, np.float64)
    right = (threshold.predict(x) == np.asarray(in_group, bool)) & np.isfinite(x)
    return float(right.mean())


def held_out_accuracy(values: np.ndarray, in_group: np.ndarray) -> float:
    """Mean accuracy over the two folds of ``halves``: fit on one half, scored on the other."""
    a, b = halves(in_group)
    x, y = np.asarray(values, np.float64), np.asarray(in_group, bool)
    return 0.5 * (accuracy(fit_threshold(x[a], y[a]), x[b], y[b])
                  + accuracy(fit_threshold(x[b], y[b]), x[a], y[a]))
