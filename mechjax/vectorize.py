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

    Measured on 2 CPU cores at the Assign-and-Add size (BUILD_NOTES.md, issue 31 stop 47): 16
    seeds by ``vmap`` on one device ran at 0.79x the per-model speed of a sequential loop (the
    seeds' weights differ, so no product grows, and 16 models' activations spill the caches), by
    ``lax.map`` at 0.93x, and ``lax.map`` over 2 host devices at 1.20x; on an accelerator,
    batching the seeds is what fills the device.
    """
    _check(vectorize, VECTORIZE)
    if vectorize == "auto":
        return "map" if jax.default_backend() == "cpu" else "vmap"
    return vectorize


def resolve_analysis_vectorize(vectorize: str) -> str:
    """Analyses: ``auto`` is a Python loop of one compiled single-seed program on CPUs, one
    vmapped program elsewhere.

    Measured on 2 CPU cores (BUILD_NOTES.md, "Batched analyses on CPU"): ACE over Markov seeds by
    ``vmap`` first ran at about 0.5-0.6x the speed of the loop. Since ACE validates from the
    activations it read and vmaps 4 seeds at a time (``ace.ACE_SEED_BLOCK``), the vmapped form
    runs at 1.05-1.22x the loop at the ace_markov CPU config (issue 31, stops 46-47); ``auto``
    still loops on CPU because the other analyses (``ace_agreement``, the binding cores) have
    not been compared at their sizes.
    """
    _check(vectorize, ANALYSIS_VECTORIZE)
    if vectorize == "auto":
        return "loop" if jax.default_backend() == "cpu" else "vmap"
    return vectorize
