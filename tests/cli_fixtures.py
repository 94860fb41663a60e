"""A command line run in the test's own process: ``python -m MODULE ARGS`` through the module's
real ``__main__`` (absl flags, the ml_collections config flag and its overrides, the schema
check), without a fresh interpreter (each one costs seconds of imports on 2 cores, and the
worker's compiled programs are reused)."""
from __future__ import annotations

import runpy
import sys
import warnings

import pytest


def run_module_here(module: str, argv: list[str]) -> str | int | None:
    """Run ``module``'s ``__main__`` with ``argv``; returns its exit code (None or 0: success; the
    one-line message a refusal prints, as ``sys.exit``'s argument).

    The flags it defines are deleted afterwards, so the next call (or another module's main)
    defines them afresh, as a new process would. absl's one-time process setup (its logging
    handler, ``faulthandler``) is skipped: it would rewire pytest's own."""
    from absl import app, flags
    before = set(flags.FLAGS)
    saved_argv, saved_done = sys.argv[:], app._run_init.done
    sys.argv[:] = [module, *argv]
    app._run_init.done = True  # absl then only parses the flags, as on a second app.run
    try:
        with warnings.catch_warnings():
            # runpy's note that the module is imported already (by the test): expected here
            warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    except SystemExit as done:
        return done.code
    finally:
        sys.argv[:] = saved_argv
        app._run_init.done = saved_done
        for name in set(flags.FLAGS) - before:
            delattr(flags.FLAGS, name)
    return None


def main_exit(module: str, argv: list[str]) -> str | int | None:
    """``run_module_here`` for a run that must exit (a refusal): fails the test if the module
    returns without exiting; a traceback propagates."""
    code = run_module_here(module, argv)
    if code is None:
        pytest.fail(f"python -m {module} {' '.join(argv)} returned without exiting")
    return code
