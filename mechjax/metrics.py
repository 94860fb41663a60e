"""Scores of a model's predictions, one definition each: accuracy, cross-entropy, ROC-AUC.

The trainer, ACE validation, the grokking causal scans and the IMIR readout all score with these,
so "accuracy" means the same number everywhere. All are pure jax functions (jit/vmap/grad safe).

Weights (optional, same shape as ``labels``) make a weighted mean ``sum(w * x) / sum(w)``; a
zero total weight gives 0 rather than NaN (an empty evaluation pool scores 0). ``dtype`` is the
dtype the score is computed in: float32 by default even under x64 (a score does not need
float64); pass ``None`` to compute in the promoted dtype of the logits and weights instead (the
IMIR population losses, whose float64 weights must not be rounded).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

Array = jax.Array


def _compute_dtype(logits: Array, weights: Array | None, dtype: Any):
    if dtype is not None:
        return jnp.dtype(dtype)
    return jnp.result_type(logits.dtype, *(() if weights is None else (weights.dtype,)))


def weighted_mean(values: Array, weights: Array | None = None) -> Array:
    """``mean(values)``, or ``sum(w * values) / sum(w)`` (0 when ``sum(w)`` is 0).

    ``values [...]``, ``weights`` broadcastable to ``values``."""
    if weights is None:
        return values.mean()
    weights = weights.astype(values.dtype)
    total = weights.sum()
    return (values * weights).sum() / jnp.where(total > 0, total, 1.0)


def token_nll(logits: Array, labels: Array, dtype: Any = jnp.float32) -> Array:
    """``-log softmax(logits)[label]`` at every position: ``logits [..., V]`` -> ``[...]``."""
    logp = jax.nn.log_softmax(logits.astype(dtype), axis=-1)
    return -jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]


def token_hits(logits: Array, labels: Array, dtype: Any = jnp.float32) -> Array:
    """``argmax(logits) == labels`` as 0/1 in ``dtype``: ``logits [..., V]`` -> ``[...]``."""
    return (jnp.argmax(logits, axis=-1) == labels).astype(dtype)


def cross_entropy(logits: Array, labels: Array, weights: Array | None = None,
                  dtype: Any = jnp.float32) -> Array:
    """(Weighted) mean cross-entropy. ``logits [..., V]``, ``labels [...]`` int,
    ``weights [...]``."""
    dt = _compute_dtype(logits, weights, dtype)
    return weighted_mean(token_nll(logits, labels, dt), weights)


def accuracy(logits: Array, labels: Array, weights: Array | None = None,
             dtype: Any = jnp.float32) -> Array:
    """(Weighted) share of positions with ``argmax(logits) == labels``. Shapes as
    ``cross_entropy``. Ties in the logits go to the lowest index (``jnp.argmax``)."""
    dt = _compute_dtype(logits, weights, dtype)
    return weighted_mean(token_hits(logits, labels, dt), weights)


@jax.jit
def roc_auc(scores: Array, positive: Array) -> Array:
    """ROC-AUC of ``scores [N]`` for the bool labels ``positive [N]`` (ties count one half).

    Mann-Whitney form with mid-ranks: O(N log N), no N x N matrix. With no positive or no negative
    example the AUC is undefined; 0 is returned then.
    """
    scores = jnp.asarray(scores)
    if not jnp.issubdtype(scores.dtype, jnp.floating) or jnp.finfo(scores.dtype).bits < 32:
        scores = scores.astype(jnp.float32)
    pos = positive.astype(bool)
    srt = jnp.sort(scores)
    lo = jnp.searchsorted(srt, scores, side="left")
    hi = jnp.searchsorted(srt, scores, side="right")
    ranks = 0.5 * (lo + hi + 1)  # 1-based mid-rank
    n_pos = pos.sum()
    n_neg = pos.shape[0] - n_pos
    u = jnp.where(pos, ranks, 0.0).sum() - n_pos * (n_pos + 1) / 2
    return u / jnp.maximum(n_pos * n_neg, 1)
