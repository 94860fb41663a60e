"""XLA compiler options for the programs that run training steps, chosen per backend.

On CPU, XLA (jaxlib 0.10) hands dots and the elementwise ops around them to YNNPACK "library
fusions" by default. At the sizes mechjax trains (the Assign-and-Add step: ``[512, 128] x
[128, 512]`` MLP products, many small products of layer-1 attention) XLA's own dot and loop
emitters run the same step faster: 1.12-1.16x on 2 cores, every piece measured in
BUILD_NOTES.md ("Issue 31, stop 47"). The option is per program (``jax.jit(...,
compiler_options=...)``), so other programs of the same process keep XLA's defaults.
``MECHJAX_CPU_LIBRARY_FUSIONS=1`` in the environment keeps the defaults everywhere (to compare).
"""
from __future__ import annotations

import os
from typing import Any, Callable

import jax

CPU_TRAIN_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}  # no YNNPACK fusions
KEEP_DEFAULTS_ENV = "MECHJAX_CPU_LIBRARY_FUSIONS"


def train_compiler_options() -> dict[str, Any] | None:
    """The options for a training program on this process's default backend (None: XLA's own
    defaults, as on GPU and TPU)."""
    if jax.default_backend() != "cpu" or os.environ.get(KEEP_DEFAULTS_ENV) == "1":
        return None
    return dict(CPU_TRAIN_OPTIONS)


def jit_train(fn: Callable[..., Any], **jit_kwargs: Any) -> Callable[..., Any]:
    """``jax.jit(fn, **jit_kwargs)`` compiled with ``train_compiler_options()``: for top-level
    programs only (JAX refuses compiler options on a jit nested in another)."""
    return jax.jit(fn, compiler_options=train_compiler_options(), **jit_kwargs)
