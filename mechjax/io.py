"""Atomic writes of run outputs: ``.json`` and ``.npz``.

Every output file is written to a temporary file in the same folder and renamed into place, so a
reader (or a crash) never sees a half-written file under the final name: it sees the old file or
the new one. The temporary name carries the process id, so two writers never share one.

In a multi-process run (``mechjax.sweeps.distributed``) only process 0 writes: every process holds the
same gathered result, so the other processes' writes would only race for the same path. Every
experiment's summaries, figures and arrays follow this rule without checking for it.
"""
from __future__ import annotations

import json
import math
import os
import sys
from typing import IO, Any, Callable, Mapping

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Config dicts and numpy values as plain JSON (tuples become lists; NaN becomes None)."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray) or hasattr(value, "__array__") and not isinstance(value, str):
        return to_jsonable(np.asarray(value).tolist())
    if isinstance(value, (np.floating, float)):
        return None if not math.isfinite(float(value)) else float(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def writes_here() -> bool:
    """Whether this process writes run outputs: always, except in processes other than 0 of a
    multi-process JAX run (jax is only asked when it is already imported, and only for the
    process index once ``jax.distributed`` is up: asking earlier would start the backends)."""
    jax = sys.modules.get("jax")
    return jax is None or not jax.distributed.is_initialized() or jax.process_index() == 0


def atomic_write(path: str, write: Callable[[IO], None], mode: str) -> None:
    """``write(f)`` into a temporary file beside ``path``, then renamed to ``path`` (on the
    writing process only, ``writes_here``)."""
    if not writes_here():
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, mode) as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def write_json(path: str, value: Any) -> None:
    """``value`` (via ``to_jsonable``) as indented, key-sorted JSON at ``path``, atomically."""
    atomic_write(path, lambda f: json.dump(to_jsonable(value), f, indent=2, sort_keys=True),
                  "w")


def write_npz(path: str, arrays: Mapping[str, Any]) -> None:
    """``{name: array}`` as an uncompressed ``.npz`` at exactly ``path``, atomically."""
    atomic_write(path, lambda f: np.savez(f, **{k: np.asarray(v) for k, v in arrays.items()}),
                  "wb")
