"""XLA compiler options for the programs that run training steps and analyses over seeds, chosen
per model and backend.

On CPU, XLA (jaxlib 0.10) hands dots and the elementwise ops around them to YNNPACK "library
fusions" by default. Without them (XLA's own dot and loop emitters), on 2 cores:

- the Assign-and-Add model's fast-path step (layer 0 read as tables, ``fastpath.tabled``) runs
  1.12-1.16x faster (docs/design.md, "CPU compile options"), so its training programs are compiled
  without them. Every other model's training keeps XLA's defaults: unmeasured there, and a
  trained result is a chaotic function of float32 rounding (two of the suite's tiny trained runs,
  grokking and clock/pizza, crossed their thresholds the other way under the option);
- the analyses over seeds (``timing.over_seeds``: ACE on the Markov seeds, the agreement cores,
  the binding cores) run 1.1-1.4x faster, and their vmapped form gains most (docs/design.md,
  "CPU compile options"), so they are compiled without them too (no training loop: their
  outputs change at float32 rounding only).

The option is per program (``jax.jit(..., compiler_options=...)``).
``MECHJAX_CPU_LIBRARY_FUSIONS=1`` in the environment keeps the defaults everywhere (to compare).
"""
from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Callable

import jax
import jax.numpy as jnp

from mechjax.models import fastpath

if TYPE_CHECKING:
    from mechjax.training.train import Trainer

CPU_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}  # no YNNPACK fusions
KEEP_DEFAULTS_ENV = "MECHJAX_CPU_LIBRARY_FUSIONS"


def _cpu_options() -> dict[str, Any] | None:
    """``CPU_OPTIONS`` on a CPU backend whose XLA knows them, unless the environment keeps the
    defaults (None: XLA's own defaults)."""
    if (jax.default_backend() != "cpu" or os.environ.get(KEEP_DEFAULTS_ENV) == "1"
            or not _xla_knows(tuple(CPU_OPTIONS.items()))):
        return None
    return dict(CPU_OPTIONS)


def train_compiler_options(trainer: "Trainer") -> dict[str, Any] | None:
    """The options for a program of ``trainer``'s training steps on this process's default
    backend (None: XLA's own defaults)."""
    if not (trainer.use_fastpath and fastpath.tabled(trainer.model_cfg, True)):
        return None
    return _cpu_options()


def analysis_compiler_options() -> dict[str, Any] | None:
    """The options for an analysis program over seeds (``timing.over_seeds``) on this process's
    default backend (None: XLA's own defaults)."""
    return _cpu_options()


@functools.lru_cache(maxsize=None)
def _xla_knows(options: tuple[tuple[str, Any], ...]) -> bool:
    """Whether this jaxlib's XLA accepts ``options`` (an experimental option may be renamed or
    dropped in another release; the training programs then compile with the defaults)."""
    try:
        jax.jit(lambda x: x + 1, compiler_options=dict(options)).lower(jnp.zeros(())).compile()
    except Exception:  # noqa: BLE001 (TypeError, ValueError or XLA's error, by jax version)
        return False
    return True


def jit_train(fn: Callable[..., Any], trainer: "Trainer", **jit_kwargs: Any
              ) -> Callable[..., Any]:
    """``jax.jit(fn, **jit_kwargs)`` compiled with ``train_compiler_options(trainer)``: for
    top-level programs only (JAX refuses compiler options on a jit nested in another; lower a
    returned program with its own ``.lower``)."""
    return jax.jit(fn, compiler_options=train_compiler_options(trainer), **jit_kwargs)


def jit_analysis(fn: Callable[..., Any], **jit_kwargs: Any) -> Callable[..., Any]:
    """``jax.jit(fn, **jit_kwargs)`` compiled with ``analysis_compiler_options()`` (top-level
    programs only, as ``jit_train``)."""
    return jax.jit(fn, compiler_options=analysis_compiler_options(), **jit_kwargs)
