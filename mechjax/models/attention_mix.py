"""Attention patterns interpolated towards a constant one (Zhong et al. 2023's attention rate).

Two constants, one per ``mixing``:

- ``"uniform"`` (ours): ``1 / n_keys`` over the keys a query may see, so every row of
  ``rate * softmax + (1 - rate) * uniform`` still sums to one; rate 0 averages the values.
- ``"ones"`` (the paper's released code, ``softmax * a + (1 - a)``): the all-ones matrix over
  the allowed keys, so rows sum to ``rate + (1 - rate) * n_keys``; rate 0 sums the values.

Rate 1 is the softmax bit for bit under both (``1 * p + 0 * c == p``). Used by
``mechjax.models.fastpath`` (the trainer's readout) and ``mechjax.models.attention_rate`` (the full forward).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from mechjax.models.config import ConfigError, ModelConfig

MIXINGS = ("uniform", "ones")
Rate = "jax.Array | float | None"


def check_mixing(mixing: str) -> str:
    """``mixing`` if it is one of ``MIXINGS`` (a ConfigError naming it if not)."""
    if mixing not in MIXINGS:
        raise ConfigError(f"attn_mixing={mixing!r}: allowed {MIXINGS}")
    return mixing


def uniform_pattern(shape: tuple[int, ...], causal: bool) -> jax.Array:
    """``[..., q, k]`` uniform attention: ``1 / n_keys`` (causal: over the keys ``<= q``)."""
    n_q, n_k = shape[-2], shape[-1]
    if not causal:
        return jnp.full(shape, 1.0 / n_k, jnp.float32)
    allowed = jnp.tril(jnp.ones((n_q, n_k), jnp.float32))
    return jnp.broadcast_to(allowed / allowed.sum(-1, keepdims=True), shape)


def constant_pattern(shape: tuple[int, ...], causal: bool, mixing: str = "uniform") -> jax.Array:
    """``[..., q, k]`` the pattern rate 0 gives: uniform, or ones over the allowed keys."""
    if mixing == "uniform":
        return uniform_pattern(shape, causal)
    ones = jnp.tril(jnp.ones(shape[-2:], jnp.float32)) if causal else jnp.ones(shape[-2:])
    return jnp.broadcast_to(ones, shape)


def mix(pattern: jax.Array, rate: Rate, causal: bool, mixing: str = "uniform") -> jax.Array:
    """``rate * pattern + (1 - rate) * constant_pattern``; ``rate=None`` leaves ``pattern``."""
    if rate is None:
        return pattern
    return rate * pattern + (1.0 - rate) * constant_pattern(pattern.shape, causal, mixing)


def rate_hook(rate: Rate, cfg: ModelConfig, mixing: str = "uniform"):
    """A ``model.forward`` hook mixing every attention pattern at ``rate``."""
    def hook(name: str, x: jax.Array) -> jax.Array:
        return mix(x, rate, cfg.causal, mixing) if name.endswith("attn.hook_pattern") else x
    return hook
