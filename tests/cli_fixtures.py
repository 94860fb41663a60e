"""A command line run in the test's own process: ``python -m MODULE ARGS`` through the module's
real ``__main__`` (absl flags, the ml_collections config flag and its overrides, the schema
check), without a fresh interpreter (each one costs seconds of imports on 2 cores)."""
from __future__ import annotations

import runpy
import sys
import warnings

import pytest


def main_exit(module: str, argv: list[str]) -> str | int | None:
    """Run ``module``'s ``__main__`` with ``argv`` and return its exit code (``sys.exit``'s
    argument: the one-line message a refusal prints to stderr). Fails the test if it returns
    without exiting or raises anything else (a traceback).

    The flags it defines are deleted afterwards, so the next call (or another module's main)
    defines them afresh, as a new process would. absl's one-time process setup (its logging
    handler, ``faulthandler``) is skipped: it would rewire pytest's own."""
    from absl import app, flags
    before = set(flags.FLAGS)
    saved_argv, saved_done = sys.argv[:], app._run_init.done
    sys.argv[:] = [module, *argv]
    app._run_init.done = True  # absl then only parses the flags, as on a second app.run
    try:
        with pytest.raises(SystemExit) as exit_info, warnings.catch_warnings():
            # runpy's note that the module is imported already (by the test): expected here
            warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    finally:
        sys.argv[:] = saved_argv
        app._run_init.done = saved_done
        for name in set(flags.FLAGS) - before:
            delattr(flags.FLAGS, name)
    return exit_info.value.code
