"""Statistics of one quantity measured per seed: the schema every ``summary.json`` uses.

A per-seed quantity (a final accuracy, a grokking step, a core dimension) is summarised as

    {"mean", "std", "min", "max", "n", "n_never", "per_seed"}

``per_seed`` keeps one entry per seed in seed order; a seed without a value (NaN, +-inf or None:
a threshold never reached, a diverged run) is None there, is left out of ``mean`` / ``std`` /
``min`` / ``max`` and counted in ``n_never``; ``n`` counts the seeds with a value. With no value
at all the four statistics are None. ``std`` is the population standard deviation (ddof 0).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

STAT_KEYS = ("mean", "std", "min", "max", "n", "n_never", "per_seed")


def _value(v: Any) -> float | int | None:
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    v = float(v)
    return v if math.isfinite(v) else None


def seed_stats(values: Sequence[Any] | np.ndarray) -> dict[str, Any]:
    """The summary of ``values [n_seeds]`` (see the module docstring). Integers stay integers
    in ``per_seed``; the statistics are floats."""
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"seed_stats takes one value per seed, got shape {arr.shape}")
    per_seed = [_value(v) for v in arr]
    got = np.asarray([v for v in per_seed if v is not None], float)
    have = got.size > 0
    return {"mean": float(got.mean()) if have else None,
            "std": float(got.std()) if have else None,
            "min": float(got.min()) if have else None,
            "max": float(got.max()) if have else None,
            "n": int(got.size), "n_never": len(per_seed) - int(got.size),
            "per_seed": per_seed}


def format_stats(v: Any) -> str:
    """One line for a ``seed_stats`` entry: ``mean +- std (n=..) [per seed, '-' for none]``;
    anything else as ``str``."""
    if not (isinstance(v, dict) and "per_seed" in v):
        return str(v)
    mean = "n/a" if v["mean"] is None else f"{v['mean']:.3f} +- {v['std']:.3f}"
    per = ["-" if x is None else (f"{x:.2f}" if isinstance(x, float) else str(x))
           for x in v["per_seed"]]
    return f"{mean} (n={v['n']}) [{', '.join(per)}]"
