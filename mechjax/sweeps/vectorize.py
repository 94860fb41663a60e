"""How the seeds (or models) of one device share it: one rule for training sweeps
(``sweep.sweep_program``, chosen per backend) and one for analyses over seeds
(``timing.over_seeds``: ACE, core comparisons).
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

    Measured on 2 CPU cores at the Assign-and-Add size (docs/design.md, "How seeds share a
    device"): 16 seeds by ``vmap`` on one device ran at 0.87-0.88x the per-model speed of a
    sequential loop timed in the same process (the seeds' weights differ, so no product grows, and
    16 models' activations spill the caches), by ``lax.map`` at 0.96-0.98x, and ``lax.map`` over 2
    host devices at 1.10-1.25x; on an accelerator, batching the seeds is what fills the device.
    """
    _check(vectorize, VECTORIZE)
    if vectorize == "auto":
        return "map" if jax.default_backend() == "cpu" else "vmap"
    return vectorize


def resolve_analysis_vectorize(vectorize: str) -> str:
    """Analyses: ``auto`` is one vmapped program on every backend (``loop``: a Python loop of one
    compiled single-seed program, to compare).

    On CPU the loop was long the faster form. Since
    the analyses over seeds compile without YNNPACK fusions (``compile_options.jit_analysis``)
    the vmapped form is the faster one in each of them, measured on 2 cores (docs/design.md,
    "How seeds share a device"; each form compiled once, best of several alternated calls): ACE over
    the 16 ace_markov CPU seeds (in blocks of ``ace.ACE_SEED_BLOCK``) 1.40x the loop, the
    agreement cores of the 8 ace_agreement CPU seeds 1.15x, the binding cores of 16
    Assign-and-Add models 1.15x.
    """
    _check(vectorize, ANALYSIS_VECTORIZE)
    return "vmap" if vectorize == "auto" else vectorize
