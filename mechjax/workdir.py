"""The run folder: config identity, refusal to mix runs, JSON outputs, compilation cache."""
from __future__ import annotations

import json
import os
import shutil
from typing import Any, Mapping

from mechjax.io import to_jsonable, write_json

CONFIG_FILE = "config.json"
RUN_OUTPUTS = ("checkpoints", "metrics.npz", "summary.json", "figures")


class WorkdirError(ValueError):
    """The workdir holds something that must not be overwritten."""


def prepare(workdir: str, config: Mapping[str, Any], overwrite: bool = False) -> bool:
    """Make ``workdir`` ready for a run of ``config``; returns True when resuming.

    A workdir holding a run of a *different* config is refused unless ``overwrite``, in which
    case that run's outputs are deleted. Nothing is written before the check passes.
    """
    if not workdir:
        raise WorkdirError("--workdir is required")
    config = to_jsonable(config)
    path = os.path.join(workdir, CONFIG_FILE)
    if os.path.exists(path):
        with open(path) as f:
            try:
                old = json.load(f)
            except json.JSONDecodeError as err:
                raise WorkdirError(f"{path} is not valid JSON ({err}); pass --overwrite to "
                                   "replace this run") from err
        if old == config:
            return True
        if not overwrite:
            changed = sorted(_diff_keys(old, config))
            raise WorkdirError(
                f"workdir {workdir!r} holds a run of a different config (differing keys: "
                f"{changed[:10]}); use another --workdir or pass --overwrite to replace it")
        for name in RUN_OUTPUTS:
            target = os.path.join(workdir, name)
            if os.path.isdir(target):
                shutil.rmtree(target)
            elif os.path.exists(target):
                os.remove(target)
    elif os.path.isdir(workdir) and os.listdir(workdir) and not overwrite:
        stray = [n for n in os.listdir(workdir) if n in RUN_OUTPUTS]
        if stray:
            raise WorkdirError(f"workdir {workdir!r} has run outputs {stray} but no {CONFIG_FILE}; "
                               "pass --overwrite to replace them")
    os.makedirs(workdir, exist_ok=True)
    write_json(path, config)
    return False


def _diff_keys(a: Any, b: Any, prefix: str = "") -> set[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = set()
        for k in set(a) | set(b):
            out |= _diff_keys(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return set() if a == b else {prefix.rstrip(".")}


def enable_compilation_cache(path: str | None = None) -> str:
    """Turn on JAX's persistent compilation cache so a relaunch skips compilation."""
    import jax
    path = path or os.environ.get("MECHJAX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "mechjax", "jax")
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
