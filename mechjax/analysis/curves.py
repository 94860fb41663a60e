"""Read-offs from curves shared by the experiments: where a curve first reaches a threshold."""
from __future__ import annotations

from typing import Literal

import numpy as np

Interpolate = Literal["none", "linear", "log"]


def first_crossing(x: np.ndarray, values: np.ndarray, threshold: float, *,
                   interpolate: Interpolate = "none", never: float = np.nan) -> np.ndarray:
    """Where ``values [..., n]`` first reaches ``threshold`` (``>=``) along ``x [n]``.

    ``x`` is the curve's axis in increasing order: optimizer steps, saved ODE times or a swept
    parameter. ``steps[i]`` is the step after which ``values[..., i]`` was measured. NaN values
    (steps past a run's end, diverged runs) never count as reaching the threshold.

    ``interpolate``:
      ``"none"``    the first ``x[i]`` with ``values[..., i] >= threshold`` (a measured point).
      ``"linear"``  the threshold's position on the straight line between the last point below
                    and the first at or above (in ``x``); ``x[0]`` if the curve starts above,
                    ``x[i]`` if the point before is NaN.
      ``"log"``     as ``"linear"`` in ``log x`` (``x > 0``).
    ``never``: the value returned for a curve that never gets there (NaN by default; ``np.inf``
    where "later than anything measured" should sort last).

    Returns ``[...]`` floats.
    """
    if interpolate not in ("none", "linear", "log"):
        raise ValueError(f"interpolate={interpolate!r}: allowed 'none', 'linear', 'log'")
    values = np.asarray(values, np.float64)
    x = np.asarray(x, np.float64)
    if x.ndim != 1 or values.shape[-1:] != x.shape:
        raise ValueError(f"values have {values.shape[-1:]} points but x has shape {x.shape}")
    if interpolate == "log" and not (x > 0).all():
        raise ValueError(f"interpolate='log' needs x > 0, got min(x)={x.min()}")
    hit = np.nan_to_num(values, nan=-np.inf) >= threshold
    i = np.argmax(hit, -1)
    reached = hit.any(-1)
    out = x[i]
    if interpolate != "none":
        u = np.log(x) if interpolate == "log" else x
        prev = np.maximum(i - 1, 0)
        v1 = np.take_along_axis(values, i[..., None], -1)[..., 0]
        v0 = np.take_along_axis(values, prev[..., None], -1)[..., 0]
        ok = (i > 0) & np.isfinite(v0)  # then v0 < threshold <= v1, so v1 > v0
        frac = np.where(ok, (threshold - v0) / np.where(ok, v1 - v0, 1.0), 1.0)
        at = np.where(ok, u[prev] + frac * (u[i] - u[prev]), u[i])
        out = np.exp(at) if interpolate == "log" else at
    return np.where(reached, out, never)


def late_change(x: np.ndarray, values: np.ndarray, fraction: float = 0.25
                ) -> tuple[np.ndarray, int]:
    """How much ``values [..., n]`` still moved over the last ``fraction`` of a budget ``x [n]``
    counted from 0 (optimizer steps, epochs).

    The window starts at the first point with ``x >= (1 - fraction) * x[-1]``; the
    change is the last value minus the value there (a plateaued curve gives about 0, a curve
    still climbing a positive number). Returns ``(change [...], index of the window's start)``.
    """
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction={fraction}: must be in (0, 1]")
    x = np.asarray(x, np.float64)
    values = np.asarray(values, np.float64)
    if x.ndim != 1 or values.shape[-1:] != x.shape or x.size < 2:
        raise ValueError(f"values have {values.shape[-1:]} points but x has shape {x.shape}"
                         " (need 2 or more)")
    start = int(np.argmax(x >= (1.0 - fraction) * x[-1]))
    start = min(start, x.size - 2)  # at least one interval, however short the window
    return values[..., -1] - values[..., start], start
