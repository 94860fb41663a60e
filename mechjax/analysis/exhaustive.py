"""Accuracy of stacked parameters on a large fixed set (an exhaustive held-out set, a union of
every case): one compiled forward per fixed-size chunk for all seeds, so one compilation serves
every set size.

Shapes: S stacked parameter sets (seeds, or grid points), b inputs, p positions.
"""
from __future__ import annotations

from typing import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.models import fastpath
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import Params, apply


def predict_stacked(cfg: ModelConfig) -> Callable[[Params, jax.Array], jax.Array]:
    """Jitted ``(params [S, ...], tokens [b, p]) -> predictions [S, b]`` at the last position."""
    if fastpath.applies(cfg):
        logits = lambda p, t: fastpath.readout_logits(p, t, cfg, -1)  # noqa: E731
    else:
        logits = lambda p, t: apply(p, t, cfg)[:, -1]  # noqa: E731
    return jax.jit(jax.vmap(lambda p, t: jnp.argmax(logits(p, t), -1), (0, None)))


def exhaustive_accuracy(params: Params, batch: Mapping[str, jax.Array], cfg: ModelConfig,
                        chunk: int = 8192, predict=None) -> np.ndarray:
    """``[S]`` accuracy of each stacked parameter set on ``batch`` (any size), in fixed-size
    chunks (the last one padded) so one compilation serves every set. Empty sets give NaN."""
    tokens, labels = np.asarray(batch["tokens"]), np.asarray(batch["labels"])
    n_stack = jax.tree.leaves(params)[0].shape[0]
    n = tokens.shape[0]
    if n == 0:
        return np.full(n_stack, np.nan)
    predict = predict_stacked(cfg) if predict is None else predict
    correct = np.zeros(n_stack)
    for start in range(0, n, chunk):
        part = tokens[start:start + chunk]
        m = part.shape[0]
        if m < chunk:
            part = np.concatenate([part, np.repeat(part[:1], chunk - m, 0)])
        pred = np.asarray(predict(params, jnp.asarray(part)))[:, :m]
        correct += (pred == labels[start:start + m][None]).sum(1)
    return correct / n


def subsample(batch: Mapping[str, jax.Array], size: int, seed: int) -> dict:
    """``size`` rows of ``batch`` without replacement (all of it when ``size`` is 0 or larger)."""
    n = np.asarray(batch["labels"]).shape[0]
    if size <= 0 or size >= n:
        return dict(batch)
    idx = np.sort(np.random.default_rng(seed).choice(n, size, replace=False))
    return {k: np.asarray(v)[idx] for k, v in batch.items()}
