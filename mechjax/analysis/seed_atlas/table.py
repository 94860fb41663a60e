"""The per-seed table of mechanism measures at a run's saved steps, read through ``mechjax.sweeps.runs``.

    table = measure_table(run, {"top5": top5_fraction, "qk_identity": qk_identity})
    table["top5"]                                 # [n_seeds, n_steps], columns = run.steps_saved

A measure is ``fn(params, model_cfg) -> float`` on one model's parameters (TransformerLens names,
no seed axis), or ``-> {key: float}`` for several numbers from one pass (one forward, one
compile): those become the columns ``name/key``. Nothing is retrained: every column is one parameter snapshot of the run. A measure
written in JAX is vmapped over the seeds and compiled once (one program per measure, reused at
every step); one that is not traceable (it converts to numpy, branches on values) is called once
per seed instead.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Sequence

import jax
import numpy as np

from mechjax.models.config import ModelConfig

Measure = Callable[[Mapping[str, Any], ModelConfig], Any]
Table = dict[str, np.ndarray]

# what a measure that is not a JAX function raises when vmapped: then it runs seed by seed
_NOT_TRACEABLE = (jax.errors.JAXTypeError, jax.errors.ConcretizationTypeError)


def measure_table(run, measures: Mapping[str, Measure], steps: Sequence[int] | None = None,
                  grid: int = 0) -> Table:
    """``{name: [n_seeds, n_steps]}``: every measure of every seed at ``steps`` (default: all of
    ``run.steps_saved``, ascending) of grid point ``grid``.

    ``run`` is a ``mechjax.sweeps.runs.Run`` (or anything with ``steps_saved``, ``model_cfg`` and
    ``stacked_params(step, grid)``). A measure must return one finite or NaN number per model.
    """
    if not measures:
        raise ValueError("measures is empty: give {name: fn(params, model_cfg) -> float}")
    steps = list(run.steps_saved) if steps is None else [int(s) for s in steps]
    if not steps:
        raise ValueError(f"no saved steps to measure in {getattr(run, 'path', run)!r}")
    cfg = run.model_cfg
    columns: dict[str, list[np.ndarray]] = {}
    for step in steps:
        stacked = run.stacked_params(step, grid)
        for name, fn in measures.items():
            for column, values in _per_seed(name, fn, stacked, cfg).items():
                columns.setdefault(column, []).append(values)
    return {name: np.stack(cols, axis=1) for name, cols in columns.items()}


@functools.lru_cache(maxsize=64)
def _vmapped(fn: Measure):
    """``fn`` over a seed axis of the parameters, jitted with the config static: one trace and
    one compile per measure (and config), shared by every step of every table."""
    return jax.jit(jax.vmap(fn, in_axes=(0, None)), static_argnums=1)


def _per_seed(name: str, fn: Measure, stacked: Mapping[str, np.ndarray],
              cfg: ModelConfig) -> dict[str, np.ndarray]:
    """``fn`` of each seed's parameters: ``{column: [n_seeds]}`` floats (vmapped when ``fn``
    traces); the column is ``name``, or ``name/key`` for each key of a measure giving a dict."""
    n = len(next(iter(stacked.values())))
    try:
        out = _vmapped(fn)(dict(stacked), cfg)
    except _NOT_TRACEABLE:
        rows = [fn({k: v[i] for k, v in stacked.items()}, cfg) for i in range(n)]
        out = ({key: [r[key] for r in rows] for key in rows[0]}
               if isinstance(rows[0], Mapping) else rows)
    named = ({f"{name}/{key}": v for key, v in out.items()} if isinstance(out, Mapping)
             else {name: out})
    values = {column: np.asarray(v, np.float64) for column, v in named.items()}
    for column, v in values.items():
        if v.shape != (n,):
            raise ValueError(f"measure {column!r} returned shape {v.shape[1:]} per seed; a "
                             "measure gives one number per model (or a dict of them)")
    return values


def varies(values: np.ndarray) -> bool:
    """Whether ``values`` vary by more than float32 rounding: standard deviation above 1e-6 of
    the largest magnitude (NaNs ignored). A measure that does not is treated as constant, since
    standardizing rounding noise would turn it into unit-variance noise."""
    v = np.asarray(values, np.float64)
    if not np.isfinite(v).any():
        return False
    return bool(np.nanstd(v) > 1e-6 * np.nanmax(np.abs(v)))


def check_table(table: Mapping[str, np.ndarray]) -> tuple[int, int]:
    """``(n_seeds, n_steps)`` of a table whose measures all share that shape (else ValueError)."""
    if not table:
        raise ValueError("the table has no measures")
    shapes = {name: np.shape(v) for name, v in table.items()}
    first = next(iter(shapes.values()))
    if len(first) != 2 or any(s != first for s in shapes.values()):
        raise ValueError(f"every measure must be [n_seeds, n_steps] of one shape, got {shapes}")
    return first
