"""Core bases at a fixed shape: rank masks, projectors, and the dtype/symmetry helpers every ACE
module uses.

A core of data-dependent rank r is kept as a full ``[D, D]`` ordered basis plus ``r``; masking the
columns beyond r gives the same projector as truncating, so a vmapped batch of cores with different
ranks shares one shape.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

Array = jax.Array


def as_float(x: Any) -> Array:
    """``x`` as an array of at least float32 (float64 stays float64)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating) or jnp.finfo(x.dtype).bits < 32:
        x = x.astype(jnp.float32)
    return x


def symmetric(a: Array) -> Array:
    """``(a + a^T) / 2``: removes the rounding asymmetry of a Gramian product."""
    return 0.5 * (a + a.T)


def rank_mask(rank: Array | int, size: int) -> Array:
    """``[..., size]`` bool: True for the first ``rank`` entries. ``rank [...]`` may be traced."""
    return jnp.arange(size) < jnp.asarray(rank)[..., None]


def mask_basis(basis: Array, rank: Array | int) -> Array:
    """``basis [..., D, R]`` with columns ``>= rank [...]`` zeroed: the projector of
    ``basis[:, :rank]`` at a fixed shape (works on vmapped stacks of cores too)."""
    return basis * rank_mask(rank, basis.shape[-1]).astype(basis.dtype)[..., None, :]


def projector(basis: Array, rank: Array | int | None = None) -> Array:
    """``P = Q Q^T [D, D]`` of the first ``rank`` columns of ``basis [D, R]`` (all if None)."""
    q = basis if rank is None else mask_basis(basis, rank)
    return q @ q.T


def truncate(basis: Array, rank: Array | int) -> Array:
    """``basis[:, :rank]`` with a concrete rank (outside jit; for plotting and reports)."""
    return basis[:, : int(rank)]
