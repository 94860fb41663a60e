"""The readout cross-entropy of the IMIR model, through the real forward pass (``mechjax.models.transformer``).

A batch holds ``tokens [b, T]``, ``labels [b, T]`` and ``weights [b, T]`` (one-hot at the query for
Monte Carlo batches; probability times one-hot for an enumerated population batch, see
``mechjax.tasks.blocklist.Support.weighted``). The loss is ``sum(w * CE) / sum(w)``: the sample
mean for Monte Carlo batches and the exact expectation for a population batch.
"""
from __future__ import annotations

from typing import Mapping

import jax
import jax.numpy as jnp

from mechjax.models.config import ModelConfig
from mechjax.metrics import accuracy, token_nll
from mechjax.models.transformer import forward

Params = Mapping[str, jax.Array]


def _weighted_ce_sum(params: Params, cfg: ModelConfig, tokens, labels, weights):
    logits = forward(dict(params), tokens, cfg)
    ce = token_nll(logits, labels, jnp.result_type(logits.dtype, weights.dtype))
    return jnp.sum(weights * ce), jnp.sum(weights)


def readout_loss(params: Params, cfg: ModelConfig, batch: Mapping[str, jax.Array],
                 chunk: int | None = None) -> jax.Array:
    """Weighted readout cross-entropy. ``chunk`` evaluates the batch in rematerialised chunks
    (bounded memory for large enumerated supports)."""
    tokens, labels, weights = batch["tokens"], batch["labels"], batch["weights"]
    n = tokens.shape[0]
    if chunk is None or chunk >= n:
        total, mass = _weighted_ce_sum(params, cfg, tokens, labels, weights)
        return total / mass
    n_chunks = -(-n // chunk)
    pad = n_chunks * chunk - n

    def padded(x):
        x = jnp.concatenate([x, jnp.zeros((pad,) + x.shape[1:], x.dtype)]) if pad else x
        return x.reshape((n_chunks, chunk) + x.shape[1:])

    step = jax.checkpoint(lambda xs: _weighted_ce_sum(params, cfg, *xs))
    totals, masses = jax.lax.map(step, (padded(tokens), padded(labels), padded(weights)))
    return jnp.sum(totals) / jnp.sum(masses)


def readout_accuracy(params: Params, cfg: ModelConfig, batch: Mapping[str, jax.Array],
                     ) -> jax.Array:
    """Weighted accuracy of the argmax prediction at the weighted positions."""
    logits = forward(dict(params), batch["tokens"], cfg)
    return accuracy(logits, batch["labels"], batch["weights"], dtype=batch["weights"].dtype)
