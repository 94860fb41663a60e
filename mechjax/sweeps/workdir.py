"""The run folder: config identity, refusal to mix runs, JSON outputs, compilation cache."""
from __future__ import annotations

import json
import os
import shutil
from typing import Any, Mapping, Sequence

from mechjax.io import to_jsonable, write_json

CONFIG_FILE = "config.json"


class WorkdirError(ValueError):
    """The workdir holds something that must not be overwritten."""


class SaveError(WorkdirError):
    """A checkpoint or metrics write failed mid-run: one line saying what and how to resume."""

    def __init__(self, workdir: str, chunk: int, n_chunks: int, last_saved: int | None,
                 cause: BaseException):
        reason = (str(cause).strip().splitlines() or [""])[0][:300]
        resume = (f"rerunning the same command resumes from the last checkpoint (chunk "
                  f"{last_saved}/{n_chunks})" if last_saved else
                  "no checkpoint was saved, so rerunning the same command starts from scratch")
        super().__init__(f"saving chunk {chunk}/{n_chunks} to {workdir!r} failed "
                         f"({type(cause).__name__}: {reason}); {resume}")


def prepare(workdir: str, config: Mapping[str, Any], overwrite: bool = False) -> bool:
    """Make ``workdir`` ready for a run of ``config``; returns True when resuming.

    A workdir holding a run of the same config resumes it; one of a *different* config is
    refused. ``overwrite`` always starts from scratch: everything in the workdir (every sweep,
    checkpoint, metric and figure of the old run, in any subfolder) is deleted first, whether or
    not the config changed. A folder that holds files but no ``config.json`` is not a run and is
    never deleted. Nothing is written or deleted before these checks pass.
    """
    action = check(workdir, config, overwrite)
    if action == "resume":
        return True
    if action == "overwrite":
        clear(workdir)
    os.makedirs(workdir, exist_ok=True)
    write_json(os.path.join(workdir, CONFIG_FILE), to_jsonable(config))
    return False


def check(workdir: str, config: Mapping[str, Any], overwrite: bool = False) -> str:
    """What ``prepare`` would do, reading only: ``'new'``, ``'resume'`` or ``'overwrite'``;
    raises ``WorkdirError`` where it would refuse. (Every process of a multi-process run checks,
    so each refuses by itself; only one then writes.)"""
    if not workdir:
        raise WorkdirError("--workdir is required")
    if os.path.exists(workdir) and not os.path.isdir(workdir):
        raise WorkdirError(f"--workdir={workdir!r} is a file, not a folder; give a folder path "
                           "(it is created if missing)")
    config = to_jsonable(config)
    path = os.path.join(workdir, CONFIG_FILE)
    if os.path.exists(path):
        with open(path) as f:
            try:
                old = json.load(f)
            except json.JSONDecodeError as err:
                if not overwrite:
                    raise WorkdirError(f"{path} is not valid JSON ({err}); pass --overwrite to "
                                       "replace this run") from err
                old = None
        if overwrite:
            return "overwrite"
        if old == config:
            return "resume"
        changed = sorted(_diff_keys(old, config))
        raise WorkdirError(
            f"workdir {workdir!r} holds a run of a different config (differing keys: "
            f"{changed[:10]}); use another --workdir or pass --overwrite to replace it")
    if os.path.isdir(workdir) and os.listdir(workdir):
        entries = sorted(os.listdir(workdir))
        raise WorkdirError(f"workdir {workdir!r} is not empty ({entries[:5]}) but has no "
                           f"{CONFIG_FILE}, so it is no run to resume or replace; nothing was "
                           "deleted: use a new or empty folder")
    return "new"


def clear(workdir: str, last: Sequence[str] = (CONFIG_FILE,)) -> None:
    """Delete everything in the run folder ``workdir``; the files named in ``last`` go last, in
    that order (those present), so a deletion cut short still leaves a folder that is recognized
    as a run (``config.json`` for ``--overwrite``, ``sweep.json`` for ``run_sweep``)."""
    for name in sorted(os.listdir(workdir)):
        if name in last:
            continue
        target = os.path.join(workdir, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        else:
            os.remove(target)
    for name in last:
        if os.path.exists(os.path.join(workdir, name)):
            os.remove(os.path.join(workdir, name))


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
