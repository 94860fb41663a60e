"""Shared plumbing of ``python -m experiments.<name>``: configs to dataclasses, start-up, the CLI.

Every experiment validates its whole config against its ``Schema`` (``mechjax.cli.schema``)
*before* it compiles anything or writes to the workdir, so a typo costs seconds, not a
half-written run.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Mapping

from mechjax.sweeps import distributed
from mechjax.sweeps import watchdog
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.cli.schema import Schema
from mechjax.training.train import TrainConfig
from mechjax.sweeps.workdir import enable_compilation_cache, prepare


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
    """``config.n_seeds`` consecutive seeds from ``config.seed_offset`` (the schema's ``SEEDS``
    keys, already checked)."""
    offset = config.get("seed_offset", 0) if hasattr(config, "get") else 0
    return list(range(offset, offset + config.n_seeds))


def start(workdir: str, config: Any, overwrite: bool) -> bool:
    """Prepare the workdir (refusing a different run) and enable the compilation cache.

    Returns True when an earlier run of the same config is being resumed. In a multi-process
    run every process checks the workdir (so each refuses a bad one by itself), then process 0
    alone writes or clears it, and the others wait for it: the folder is shared, and a process
    that looked while another was writing would see a half-prepared run.
    """
    import jax

    from mechjax.sweeps import distributed
    from mechjax.sweeps.workdir import check

    values = as_dict(config)
    if jax.process_count() == 1:
        resuming = prepare(workdir, values, overwrite)
    else:
        resuming = check(workdir, values, overwrite) == "resume"
        distributed.barrier("mechjax: workdir checked")
        if jax.process_index() == 0:
            prepare(workdir, values, overwrite)
        distributed.barrier("mechjax: workdir prepared")
    enable_compilation_cache()
    return resuming


def quiet_library_logs() -> None:
    """Keep absl/orbax INFO chatter out of the progress output (warnings still show)."""
    from absl import logging
    logging.set_verbosity(logging.WARNING)


def _user_errors() -> tuple[type[Exception], ...]:
    # FileError covers every broken file (weights, checkpoint folders, runs, JSON inputs)
    from mechjax.filecheck import FileError
    from mechjax.sweeps.workdir import WorkdirError
    return (ConfigError, WorkdirError, FileError)


USER_ERRORS = _user_errors()


def expand_aliases(argv: list[str], aliases: Mapping[str, str]) -> list[str]:
    """``--name=value`` / ``--name value`` for each alias ``name`` -> ``--config.<key>=value``
    (short flags for config keys, parsed and checked as the config key itself)."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if name in aliases:
            if not eq and i + 1 < len(argv):
                i, value = i + 1, argv[i + 1]
            arg = f"--config.{aliases[name]}={value}"
        out.append(arg)
        i += 1
    return out


def _parse_flags(schema: Schema, argv: list[str]) -> list[str]:
    """absl's flag parsing, each refusal as one line naming the override."""
    import sys

    from absl import flags
    unknown = schema.override_error(argv)
    if unknown:
        sys.exit(f"error: {unknown}")
    try:
        return flags.FLAGS(argv)
    except flags.Error as err:  # a value the flag's own parser refused (2.5 for an int)
        sys.exit(f"error: {schema.flag_error(argv, err)}")
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        # ml_collections raises these from inside flag parsing (every path is a schema key by
        # now, so this is a value it could not take): its own first line
        sys.exit(f"error: {type(err).__name__}: {err}".splitlines()[0])


def run_cli(run_fn, format_fn, main_file: str, schema: Schema,
            default_config: str = "cpu.py", aliases: Mapping[str, str] | None = None) -> None:
    """The whole ``__main__`` of an experiment: ``--workdir``, ``--config`` (an ml_collections
    file beside ``main_file`` in ``configs/``, overridable as ``--config.key=value``; its keys and
    their allowed values in ``--help`` come from ``schema``) and ``--overwrite``; then
    ``run_fn(config, workdir, overwrite=...)`` and a printed summary.

    ``--coordinator=HOST:PORT --num_processes=N --process_id=I`` (or ``--coordinator=auto``)
    make the process one of N running the same command: ``jax.distributed.initialize`` joins
    them before anything else touches JAX, and ``run_sweep`` then spans their devices.
    ``aliases`` ``{flag: config key}``: ``--flag=value`` is ``--config.<key>=value``."""
    import os
    import sys

    from absl import app, flags
    from ml_collections import config_flags

    # before the config flag is defined: ml_collections reads its --config.<key> overrides off
    # sys.argv when the flag is defined
    sys.argv[:] = expand_aliases(sys.argv, aliases or {})
    # new attributes accepted: a key the schema has but a config file leaves at its default
    # (``--config.detect.mode=exact``) is still overridable; a path the schema lacks is refused
    # in ``parse`` before ml_collections sees it, and the schema checks every value
    config = config_flags.DEFINE_config_file(
        "config", os.path.join(os.path.dirname(os.path.abspath(main_file)), "configs",
                               default_config), schema.help(), lock_config=False,
        accept_new_attributes=True)
    workdir = flags.DEFINE_string("workdir", None,
                                  "run folder (config, checkpoints, metrics, figures, summary)")
    overwrite = flags.DEFINE_bool(
        "overwrite", False, "delete everything in --workdir first and train from scratch "
        "(after a config change, or to rerun an unchanged config fresh); without it a run of "
        "the same config resumes and a different config is refused")
    # A multi-process run: every process gets the same command plus its own --process_id.
    coordinator = flags.DEFINE_string(
        "coordinator", None, "multi-process run: HOST:PORT of process 0's coordinator (JAX's "
        "distributed runtime), or 'auto' to let JAX detect the cluster (SLURM, Open MPI, TPU, "
        "JAX_COORDINATOR_ADDRESS); every process runs the same command")
    num_processes = flags.DEFINE_integer("num_processes", None,
                                         "multi-process run: how many processes join")
    process_id = flags.DEFINE_integer("process_id", None,
                                      "multi-process run: this process's index, 0..N-1")

    parse = functools.partial(_parse_flags, schema)

    def main(argv):
        if len(argv) > 1:
            raise app.UsageError(f"unexpected arguments {argv[1:]}")
        quiet_library_logs()
        try:  # before anything touches a JAX backend
            distributed.initialize(coordinator.value, num_processes.value, process_id.value)
        except ConfigError as err:
            sys.exit(f"error: {err}")
        try:
            values = config.value
            values.keys()  # a file that failed to load raises on first use
        except OSError as err:
            path = config_flags.get_config_filename(flags.FLAGS["config"])
            sys.exit(f"error: --config={path}: cannot load it "
                     f"({str(err).strip().splitlines()[-1].strip()})")
        try:
            # A deadlocked XLA call on CPU ends the run with one line instead of hanging.
            with watchdog.watch(f"python -m {os.path.basename(os.path.dirname(main_file))}"):
                summary = run_fn(values, workdir.value, overwrite=overwrite.value)
        except USER_ERRORS as err:  # a bad flag or file: say what and stop, no traceback
            sys.exit(f"error: {err}")
        print(format_fn(summary))

    flags.mark_flag_as_required("workdir")
    for name in ("config", "workdir", "overwrite", "coordinator", "num_processes", "process_id"):  # listed by --help, not only --helpfull
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[name])
    app.run(main, flags_parser=parse)
