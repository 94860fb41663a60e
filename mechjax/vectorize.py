"""How the seeds (or models) of one device share it, chosen per backend: one rule for training
sweeps (``sweep.sweep_program``) and one for analyses over seeds (``timing.over_seeds``: ACE,
core comparisons).
"""
from __future__ import annotations

import jax

VECTORIZE = ("auto", "vmap", "map")
ANALYSIS_VECTORIZE = ("auto", "vmap", "loop")


def _check(vectorize: str, allowed: tuple[str, ...]) -> None:
    if vectorize not in allowed:
        raise ValueError(f"vectorize={vectorize!r}: allowed {allowed}")


def resolve_vectorize(vectorize: str) -> str:
    """Training: ``auto`` is a per-device loop (``lax.map``) on CPUs, ``vmap`` elsewhere.

    Measured on 2 CPU cores at the Assign-and-Add size (BUILD_NOTES.md): 16 seeds by ``vmap`` ran
    at 0.85-0.90x the per-model speed of a sequential loop, by ``lax.map`` at 1.08x; on an
    accelerator, batching the seeds is what fills the device.
    """
    _check(vectorize, VECTORIZE)
    if vectorize == "auto":
        return "map" if jax.default_backend() == "cpu" else "vmap"
    return vectorize


def resolve_analysis_vectorize(vectorize: str) -> str:
    """Analyses: ``auto`` is a Python loop of one compiled single-seed program on CPUs, one
    vmapped program elsewhere.

    Measured on 2 CPU cores (BUILD_NOTES.md, "Batched analyses on CPU"): ACE over Markov seeds by
    ``vmap`` ran at about 0.5-0.6x the speed of the loop, and by ``lax.map`` inside one program
    at about 0.3x, so on CPU the loop is the fastest form; ``ace_agreement`` measured the same.
    """
    _check(vectorize, ANALYSIS_VECTORIZE)
    if vectorize == "auto":
        return "loop" if jax.default_backend() == "cpu" else "vmap"
    return vectorize
