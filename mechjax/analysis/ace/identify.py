"""ACE identification (docs/ace.md): the linear operator a core's coordinates follow -- across
positions (a Markov chain) or across answers (the cyclic shift of modular addition).

Shape legend: B sequences, T positions, r core coordinates, N inputs, P classes (answers).
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mechjax import linalg
from mechjax.analysis.ace.basis import as_float, rank_mask

Array = jax.Array


def _eig_sorted(a: Array) -> Array:
    """Eigenvalues of a real square matrix, by decreasing modulus (then decreasing angle)."""
    lam = linalg.eig(a)[0]
    order = jnp.lexsort((-jnp.angle(lam), -jnp.round(jnp.abs(lam), 6)))
    return lam[order]


class MarkovFit(NamedTuple):
    operator: Array       # [r, r] A with z_{t+1} ~ A z_t (centred)
    eigenvalues: Array    # [r] complex, by decreasing modulus; masked coordinates give zeros
    r2: Array             # [] R^2, mean over (active) coordinates
    r2_per_coord: Array   # [r]
    r2_ratio: Array       # [] r2 / r2_oracle


@jax.jit
def markov_operator(z: Array, rank: Array | int | None = None, r2_oracle: float = 0.5,
                    ) -> MarkovFit:
    """Least-squares linear operator across consecutive positions (the Markov chain; docs/ace.md).

    ``z [B, T, r]`` core coordinates per sequence (``H Q``); pairs (z_t, z_{t+1}) pooled over B and
    t; each side centred separately; ``Z_{t+1} ~ Z_t A^T`` without intercept. ``rank`` restricts
    the R^2 mean to the first ``rank`` coordinates (columns beyond it should be zero, as with a
    masked basis).
    """
    z = as_float(z)
    r = z.shape[-1]
    x = z[:, :-1].reshape(-1, r)
    y = z[:, 1:].reshape(-1, r)
    x, y = x - x.mean(0), y - y.mean(0)
    a_t = linalg.lstsq(x, y)[0]  # [r, r] = A^T
    ss_res = ((y - x @ a_t) ** 2).sum(0)
    ss_tot = (y ** 2).sum(0)
    per = 1.0 - ss_res / jnp.maximum(ss_tot, jnp.finfo(z.dtype).tiny)
    active = (ss_tot > 0) if rank is None else rank_mask(rank, r) & (ss_tot > 0)
    r2 = jnp.where(active, per, 0.0).sum() / jnp.maximum(active.sum(), 1)
    return MarkovFit(a_t.T, _eig_sorted(a_t.T), r2, jnp.where(active, per, jnp.nan),
                     r2 / r2_oracle)


@functools.partial(jax.jit, static_argnames=("n_classes",))
def class_means(z: Array, classes: Array, n_classes: int) -> Array:
    """Mean of ``z [N, r]`` per class ``classes [N]`` -> ``[n_classes, r]`` (empty classes: 0)."""
    z = as_float(z)
    sums = jax.ops.segment_sum(z, classes, n_classes)
    counts = jax.ops.segment_sum(jnp.ones(z.shape[0], z.dtype), classes, n_classes)
    return sums / jnp.maximum(counts, 1.0)[:, None]


class ShiftFit(NamedTuple):
    operator: Array       # [r, r] A with Y[c] A ~ Y[c+1] in principal coordinates (row vectors)
    eigenvalues: Array    # [r] complex, by decreasing modulus; dropped directions give zeros
    r2: Array             # [] pooled R^2 of the fit on all P shifts
    heldout_r2: Array     # [] pooled R^2 on the held-out block, fit without it
    on_circle: Array      # [r] bool, ||lambda| - 1| <= sin(pi / P)
    n_rotational: Array   # [] int32, distinct folded frequencies among on-circle eigenvalues
    n_directions: Array   # [] int32, principal directions kept (relative tolerance)


def _shift_fit(reps: Array, use: Array, rel_tol: float):
    """Centre on the ``use`` classes, keep principal directions above ``rel_tol`` of the top
    singular value, and least-squares fit ``Y[c] A ~ Y[c+1]`` over shifts with both ends used."""
    w = use.astype(reps.dtype)
    mu = (reps * w[:, None]).sum(0) / jnp.maximum(w.sum(), 1.0)
    xc = reps - mu
    _, s, vt = linalg.svd(xc * w[:, None], full_matrices=False)
    keep = s > rel_tol * s[0]
    y = (xc @ vt.T) * keep.astype(reps.dtype)  # [P, k]; dropped directions are zero columns
    y_next = jnp.roll(y, -1, axis=0)
    pair = (use & jnp.roll(use, -1)).astype(reps.dtype)[:, None]
    a = linalg.lstsq(y * pair, y_next * pair)[0]
    return a, y, y_next, keep


def _pooled_r2(pred: Array, target: Array, rows: Array) -> Array:
    rows = rows.astype(pred.dtype)[:, None]
    ss_res = (((pred - target) ** 2) * rows).sum()
    ss_tot = ((target ** 2) * rows).sum()  # targets are centred on the fitted classes' mean
    return 1.0 - ss_res / jnp.maximum(ss_tot, jnp.finfo(pred.dtype).tiny)


@functools.partial(jax.jit, static_argnames=("holdout_frac",))
def cyclic_shift(reps: Array, rel_tol: float = 1e-3, holdout_start: int | Array = 0,
                 holdout_frac: float = 0.075) -> ShiftFit:
    """Cyclic-shift operator over class means (modular addition; docs/ace.md).

    ``reps [P, r]``: class means of core coordinates per answer c (``class_means``). Fit
    ``reps[c] A ~ reps[c+1 mod P]`` after centring, in the principal directions of reps whose
    singular values exceed ``rel_tol`` times the largest. Eigenvalues and R^2 come from the fit on
    all P shifts. Held-out R^2: the block of ``round(holdout_frac * P)`` answers starting at
    ``holdout_start`` is dropped (centring, directions and fit use the other classes and the
    shifts between them) and the fit predicts every held-out answer from its predecessor.
    R^2 is pooled over coordinates (1 - total SS_res / total SS_tot), so near-degenerate
    directions do not dominate it.
    """
    reps = as_float(reps)
    p = reps.shape[0]
    every = jnp.ones(p, bool)
    a, y, y_next, keep = _shift_fit(reps, every, rel_tol)
    r2 = _pooled_r2(y @ a, y_next, every)

    m = int(math.floor(holdout_frac * p + 0.5))
    held = jnp.zeros(p, bool).at[(holdout_start + jnp.arange(m)) % p].set(True)
    a_tr, y_tr, y_tr_next, _ = _shift_fit(reps, ~held, rel_tol)
    target_held = jnp.roll(held, -1)  # row c predicts answer c+1; score rows whose target is held
    heldout_r2 = _pooled_r2(y_tr @ a_tr, y_tr_next, target_held)

    lam = _eig_sorted(a)
    on_circle = jnp.abs(jnp.abs(lam) - 1.0) <= math.sin(math.pi / p)
    k = jnp.round(jnp.angle(lam) * p / (2 * math.pi)).astype(jnp.int32) % p
    folded = jnp.minimum(k, p - k)
    present = jnp.zeros(p // 2 + 1, bool).at[folded].max(on_circle)
    return ShiftFit(a, lam, r2, heldout_r2, on_circle, present.sum().astype(jnp.int32),
                    keep.sum().astype(jnp.int32))


def eigenvalue_errors(fitted: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Max |fitted - true| under the best matching, per seed (host side, numpy).

    ``fitted [n, R]`` complex, sorted by decreasing modulus (the first ``len(true)`` are matched
    against ``true [k]`` over every permutation: k is small).
    """
    k = len(true)
    out = []
    for row in np.asarray(fitted):
        lead = row[:k]
        out.append(min(np.max(np.abs(lead[list(p)] - true))
                       for p in itertools.permutations(range(k))))
    return np.asarray(out)
