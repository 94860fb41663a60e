"""Shared plumbing of ``python -m experiments.<name>``: configs to dataclasses, checks, start-up.

Every experiment validates its whole config (model, training, task, seeds) *before* it compiles
anything or writes to the workdir, so a typo costs seconds, not a half-written run.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from mechjax import watchdog
from mechjax.config import ConfigError, ModelConfig
from mechjax.train import TrainConfig
from mechjax.workdir import enable_compilation_cache, prepare


def as_dict(config: Any) -> dict:
    """An ml_collections ConfigDict (or a mapping) as a plain nested dict."""
    return config.to_dict() if hasattr(config, "to_dict") else dict(config)


def model_config(values: Mapping[str, Any]) -> ModelConfig:
    return ModelConfig.from_dict(as_dict(values))


def train_config(values: Mapping[str, Any]) -> TrainConfig:
    values = as_dict(values)
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown train config keys {unknown}; allowed: {sorted(known)}")
    if values.get("eval_pools") is not None:
        values["eval_pools"] = tuple(values["eval_pools"])
    return TrainConfig(**values)


def seeds(config: Any) -> list[int]:
    """``config.n_seeds`` consecutive seeds from ``config.seed_offset`` (default 0)."""
    n = config.n_seeds
    offset = config.get("seed_offset", 0) if hasattr(config, "get") else 0
    if not isinstance(n, int) or n <= 0:
        raise ConfigError(f"n_seeds={n!r}: must be a positive integer")
    if not isinstance(offset, int) or offset < 0:
        raise ConfigError(f"seed_offset={offset!r}: must be a non-negative integer")
    return list(range(offset, offset + n))


def check_keys(name: str, values: Any, allowed: set[str], required: set[str] | None = None
               ) -> dict:
    """``values`` (config section ``name``) as a dict; unknown keys, and missing ``required`` ones
    (default: all of ``allowed``), raise a ConfigError that lists what is allowed."""
    values = as_dict(values)
    required = allowed if required is None else required
    unknown, missing = sorted(set(values) - allowed), sorted(required - set(values))
    if unknown or missing:
        where = f"config.{name}" if name else "config"
        raise ConfigError(f"{where}: unknown keys {unknown}, missing keys {missing}; "
                          f"allowed: {sorted(allowed)}")
    return values


def positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """``value`` if it is an int (not a bool) >= ``minimum``, else a ConfigError naming it."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{name}={value!r}: must be an integer >= {minimum}")
    return value


def check_fraction(name: str, value: float, low_open: bool = True) -> float:
    """Fractions are in (0, 1]; the error names the value."""
    ok = (0.0 < value <= 1.0) if low_open else (0.0 <= value <= 1.0)
    if not ok:
        raise ConfigError(f"{name}={value!r}: must be in {'(0' if low_open else '[0'}, 1]")
    return float(value)


def start(workdir: str, config: Any, overwrite: bool) -> bool:
    """Prepare the workdir (refusing a different run) and enable the compilation cache.

    Returns True when an earlier run of the same config is being resumed.
    """
    resuming = prepare(workdir, as_dict(config), overwrite)
    enable_compilation_cache()
    return resuming


def quiet_library_logs() -> None:
    """Keep absl/orbax INFO chatter out of the progress output (warnings still show)."""
    from absl import logging
    logging.set_verbosity(logging.WARNING)


def _user_errors() -> tuple[type[Exception], ...]:
    from mechjax.weights import WeightsError
    from mechjax.workdir import WorkdirError
    return (ConfigError, WorkdirError, WeightsError)


USER_ERRORS = _user_errors()


def run_cli(run_fn, format_fn, main_file: str, default_config: str = "cpu.py") -> None:
    """The whole ``__main__`` of an experiment: ``--workdir``, ``--config`` (an ml_collections
    file beside ``main_file`` in ``configs/``, overridable as ``--config.key=value``) and
    ``--overwrite``; then ``run_fn(config, workdir, overwrite=...)`` and a printed summary."""
    import os
    import sys

    from absl import app, flags
    from ml_collections import config_flags

    config = config_flags.DEFINE_config_file(
        "config", os.path.join(os.path.dirname(os.path.abspath(main_file)), "configs",
                               default_config), "experiment config file")
    workdir = flags.DEFINE_string("workdir", None,
                                  "run folder (config, checkpoints, metrics, figures, summary)")
    overwrite = flags.DEFINE_bool("overwrite", False,
                                  "replace a run of a different config in --workdir")

    def main(argv):
        if len(argv) > 1:
            raise app.UsageError(f"unexpected arguments {argv[1:]}")
        quiet_library_logs()
        try:
            # A deadlocked XLA call on CPU ends the run with one line instead of hanging.
            with watchdog.watch(f"python -m {os.path.basename(os.path.dirname(main_file))}"):
                summary = run_fn(config.value, workdir.value, overwrite=overwrite.value)
        except USER_ERRORS as err:  # a bad flag or file: say what and stop, no traceback
            sys.exit(f"error: {err}")
        print(format_fn(summary))

    flags.mark_flag_as_required("workdir")
    app.run(main)
