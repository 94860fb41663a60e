"""An experiment's command line run in this process (``python -m MODULE ARGS`` without a fresh
interpreter: no second import of JAX, and the worker's compiled programs are reused)."""
from __future__ import annotations

import runpy
import sys


def run_module_here(module: str, argv: list[str]) -> int | str | None:
    """Run ``module``'s ``__main__`` with ``argv`` as its arguments; returns its exit code (None
    or 0: success; an ``error: ...`` string for a one-line refusal). The absl flags the module
    defines are removed again, so the next call (or another module) can define them anew."""
    from absl import flags

    saved_argv, defined = sys.argv[:], set(flags.FLAGS)
    sys.argv[:] = [module, *argv]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=False)
    except SystemExit as done:
        return done.code
    finally:
        sys.argv[:] = saved_argv
        for name in set(flags.FLAGS) - defined:
            delattr(flags.FLAGS, name)
    return None
