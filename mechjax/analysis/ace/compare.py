"""Comparing cores across seeds (the ACE paper's cross-seed comparison; docs/ace.md): projector
overlap, principal angles, CCA of core coordinates, whole-weight cosine, and their seeds x seeds
matrices (one nested vmap each).

Shape legend: n seeds, D activation width, R basis columns, N inputs.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import jax
from jax.flatten_util import ravel_pytree
import jax.numpy as jnp
import numpy as np

from mechjax import linalg
from mechjax.analysis.ace.basis import as_float, mask_basis, rank_mask, symmetric

Array = jax.Array


def _masked(q: Array, rank: Array | int | None) -> Array:
    return q if rank is None else mask_basis(q, rank)


@jax.jit
def projector_overlap(qa: Array, qb: Array, ra: Array | int | None = None,
                      rb: Array | int | None = None) -> Array:
    """``||Q_A^T Q_B||_F^2 / sqrt(r_A r_B)``: 1 identical, 0 orthogonal, ~r/D at random.

    ``qa [D, Ra], qb [D, Rb]``; ranks (optional, traced ok) mask columns beyond them.
    """
    qa, qb = _masked(as_float(qa), ra), _masked(as_float(qb), rb)
    ra = qa.shape[-1] if ra is None else ra
    rb = qb.shape[-1] if rb is None else rb
    return jnp.sum((qa.T @ qb) ** 2) / jnp.sqrt(jnp.asarray(ra * rb, qa.dtype))


@jax.jit
def principal_angles(qa: Array, qb: Array, ra: Array | int | None = None,
                     rb: Array | int | None = None) -> Array:
    """Principal angles (radians, ascending) between span(qa) and span(qb): ``[min(Ra, Rb)]``.

    With rank masks only the first ``min(ra, rb)`` entries are meaningful (the rest are pi/2).
    """
    qa, qb = _masked(as_float(qa), ra), _masked(as_float(qb), rb)
    cos = linalg.svd(qa.T @ qb, compute_uv=False)
    return jnp.arccos(jnp.clip(cos, 0.0, 1.0))


@jax.jit
def cca(za: Array, zb: Array, r: Array | int | None = None, eps: float = 1e-8,
        ) -> tuple[Array, Array]:
    """CCA between core coordinates of two models on the same inputs.

    ``za [N, ra], zb [N, rb]``. Centre; whiten each side with the inverse Cholesky factor of
    ``cov + eps I``; SVD of the whitened cross-covariance. Returns ``(mean of the top r
    correlations, correlations [min(ra, rb)] descending)``; ``r`` defaults to ``min(ra, rb)``.
    Zero columns (masked bases) whiten to zero and add zero correlations.
    """
    za, zb = as_float(za), as_float(zb)
    n = za.shape[0]

    def whiten(z):
        z = z - z.mean(0)
        scale = jnp.sqrt(jnp.maximum((z ** 2).mean(), jnp.finfo(z.dtype).tiny))
        z = z / scale  # correlations are scale-free; this keeps eps relative in float32
        c = z.T @ z / (n - 1) + eps * jnp.eye(z.shape[1], dtype=z.dtype)
        chol = linalg.cholesky(symmetric(c))
        return linalg.solve_triangular(chol, z.T, lower=True).T  # z L^{-T}

    wa, wb = whiten(za), whiten(zb)
    corr = linalg.svd(wa.T @ wb / (n - 1), compute_uv=False)
    r = min(za.shape[1], zb.shape[1]) if r is None else r
    top = rank_mask(r, corr.shape[0]).astype(corr.dtype)
    return (corr * top).sum() / jnp.maximum(top.sum(), 1.0), corr


def flatten_params(params: Mapping[str, Array]) -> Array:
    """All parameters as one vector (keys in sorted order, as ``ravel_pytree`` flattens a dict)."""
    return ravel_pytree(dict(params))[0]


@jax.jit
def weight_cosine(pa: Mapping[str, Array], pb: Mapping[str, Array]) -> Array:
    """Cosine between two whole flattened parameter dicts."""
    a, b = as_float(flatten_params(pa)), as_float(flatten_params(pb))
    return a @ b / jnp.maximum(jnp.linalg.norm(a) * jnp.linalg.norm(b), jnp.finfo(a.dtype).tiny)


def pairwise(fn: Callable[[Any, Any], Any], xs: Any) -> Any:
    """``fn(x_i, x_j)`` for every seed pair: ``xs`` a pytree with leading axis n -> ``[n, n, ...]``.

    A nested vmap, so all n^2 pairs run as one batched computation.
    """
    return jax.vmap(lambda a: jax.vmap(lambda b: fn(a, b))(xs))(xs)


@jax.jit
def overlap_matrix(bases: Array, ranks: Array | None = None) -> Array:
    """Projector overlap of every seed pair. ``bases [n, D, R]``, ``ranks [n]`` -> ``[n, n]``."""
    if ranks is None:
        return pairwise(lambda a, b: projector_overlap(a, b), bases)
    return pairwise(lambda a, b: projector_overlap(a[0], b[0], a[1], b[1]), (bases, ranks))


@jax.jit
def principal_angle_matrix(bases: Array, ranks: Array | None = None) -> Array:
    """Principal angles of every seed pair: ``[n, n, R]``."""
    if ranks is None:
        return pairwise(lambda a, b: principal_angles(a, b), bases)
    return pairwise(lambda a, b: principal_angles(a[0], b[0], a[1], b[1]), (bases, ranks))


def cca_matrix(z: Array, ranks: Array | None = None, r: int | None = None,
               allow_truncation: bool = False) -> Array:
    """Mean top-r CCA of every seed pair: ``z [n, N, K]`` core coordinates -> ``[n, n]``.

    ``r`` fixed, or (None) ``min(r_A, r_B)`` per pair from ``ranks`` (all columns if no ranks).
    Each pair needs the coordinates of both whole cores, so ``K`` (``Pipeline.keep_coords``) must
    be at least the larger rank of the pair: a smaller ``K`` compares only the first ``K``
    coordinates, a different (lower) CCA. That is refused unless ``allow_truncation``: here,
    with concrete ``ranks``, as a ``ValueError``; under an outer jit or vmap (ranks traced) the
    check cannot raise, so those pairs come back NaN.
    """
    if not allow_truncation and ranks is not None and not isinstance(ranks, jax.core.Tracer):
        check_keep_coords(z.shape[-1], int(np.max(np.asarray(ranks), initial=0)))
    return _cca_matrix(z, ranks, r, allow_truncation)


def check_keep_coords(keep: int, rank: int) -> None:
    """Raise unless ``keep`` core coordinates hold a core of rank ``rank`` whole."""
    if keep < rank:
        raise ValueError(f"keep_coords={keep} is below the core rank {rank}; pass "
                         f"allow_truncation=True to compare only the first {keep} coordinates")


@functools.partial(jax.jit, static_argnames=("allow_truncation",))
def _cca_matrix(z: Array, ranks: Array | None, r: int | None, allow_truncation: bool) -> Array:
    if ranks is None:
        return pairwise(lambda a, b: cca(a, b, r)[0], z)
    keep = z.shape[-1]

    def fn(a, b):
        za, zb = a[0] * rank_mask(a[1], keep), b[0] * rank_mask(b[1], keep)
        mean = cca(za, zb, jnp.minimum(a[1], b[1]) if r is None else r)[0]
        if allow_truncation:
            return mean
        return jnp.where(jnp.maximum(a[1], b[1]) > keep, jnp.nan, mean)  # traced refusal

    return pairwise(fn, (z, ranks))


@jax.jit
def weight_cosine_matrix(params: Mapping[str, Array]) -> Array:
    """Whole-weight cosine of every seed pair: stacked ``{name: [n, ...]}`` -> ``[n, n]``."""
    return pairwise(weight_cosine, dict(params))


def offdiag_mean(m: np.ndarray) -> float:
    """Mean of the off-diagonal entries of a seeds x seeds matrix ``[n, n]`` (NaN for n = 1)."""
    m = np.asarray(m)
    n = m.shape[0]
    return float(m[~np.eye(n, dtype=bool)].mean()) if n > 1 else float("nan")
