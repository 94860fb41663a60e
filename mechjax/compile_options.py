"""XLA compiler options for the programs that run training steps, chosen per model and backend.

On CPU, XLA (jaxlib 0.10) hands dots and the elementwise ops around them to YNNPACK "library
fusions" by default. For the Assign-and-Add model's fast-path step (layer 0 read as tables,
``fastpath.tabled``: ``[512, 128] x [128, 512]`` MLP products and many small products of layer-1
attention) XLA's own dot and loop emitters run the same step 1.12-1.16x faster on 2 cores
(BUILD_NOTES.md, "Issue 31, stop 47"), so its training programs are compiled without them.
Every other model keeps XLA's defaults: unmeasured there, and a trained result is a chaotic
function of float32 rounding (two of the suite's tiny trained runs, grokking and clock/pizza,
crossed their thresholds the other way under the option). The option is per program
(``jax.jit(..., compiler_options=...)``). ``MECHJAX_CPU_LIBRARY_FUSIONS=1`` in the environment
keeps the defaults everywhere (to compare).
"""
from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Callable

import jax
import jax.numpy as jnp

from mechjax import fastpath

if TYPE_CHECKING:
    from mechjax.train import Trainer

CPU_TRAIN_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}  # no YNNPACK fusions
KEEP_DEFAULTS_ENV = "MECHJAX_CPU_LIBRARY_FUSIONS"


def train_compiler_options(trainer: "Trainer") -> dict[str, Any] | None:
    """The options for a program of ``trainer``'s training steps on this process's default
    backend (None: XLA's own defaults)."""
    if (jax.default_backend() != "cpu" or os.environ.get(KEEP_DEFAULTS_ENV) == "1"
            or not (trainer.use_fastpath and fastpath.tabled(trainer.model_cfg, True))
            or not _xla_knows(tuple(CPU_TRAIN_OPTIONS.items()))):
        return None
    return dict(CPU_TRAIN_OPTIONS)


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
