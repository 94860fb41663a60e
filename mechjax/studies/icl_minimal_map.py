"""Reddy's knobs on the block-list symmetries (docs/icl_minimal.md): rare fraction f_r from K and
the Zipf exponent, within-class variability f_v from the noise, b from B; then Theorem 2's
suppression ``s = f_r + (1 - f_r) f_v`` and the contour variable ``s * b``."""
from __future__ import annotations

import numpy as np


def rare_fraction(k: float, alpha: float, queries_seen: float, min_count: float = 1.0) -> float:
    """Share of training queries whose class is seen fewer than ``min_count`` times in
    ``queries_seen`` training queries (Zipf ``p_k ~ k^-alpha`` over K classes): those classes
    cannot be answered from weights within the horizon, the block list's rare tokens."""
    p = np.arange(1, int(k) + 1, dtype=float) ** -float(alpha)
    p /= p.sum()
    return float(p[p * queries_seen < min_count].sum())


def within_class_variability(eps: float) -> float:
    """Share of an item's variance not explained by its class mean: ``eps^2 / (1 + eps^2)``
    (items are ``(mu + eps eta) / sqrt(1 + eps^2)`` with equal-norm ``mu`` and ``eta``)."""
    return float(eps ** 2 / (1.0 + eps ** 2))


def contour_variable(k: float, alpha: float, eps: float, b: float, queries_seen: float,
                     min_count: float = 1.0) -> float:
    """``s * b`` with ``s = f_r + (1 - f_r) f_v``: larger means ICL is predicted to win."""
    f_r = rare_fraction(k, alpha, queries_seen, min_count)
    s = f_r + (1.0 - f_r) * within_class_variability(eps)
    return s * float(b)
