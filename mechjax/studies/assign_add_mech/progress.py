"""Attention measures, the variable probe and the seven progress measures (one cached run on
the probe data)."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from mechjax import linalg
from mechjax.studies.assign_add_mech.data import ProbeData, resolve_cfg
from mechjax.studies.assign_add_mech.weight_space import (ov_mlp_accuracy, qk1_prev_token_fraction,
                                                          qk2_diagonal_fraction)
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_cache
from mechjax.metrics import accuracy
from mechjax.models.transformer import Params
from mechjax.tasks import assign_add as aa

_ATTN_NAMES = ("blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern",
               "blocks.0.hook_resid_mid")


def _cache(params: Params, data: ProbeData, cfg: ModelConfig) -> dict[str, jax.Array]:
    _, cache = run_with_cache(params, data.tokens, cfg, _ATTN_NAMES)
    return cache


def attention_measures(params: Params, data: ProbeData, cfg: ModelConfig | None = None
                       ) -> dict[str, jax.Array]:
    """``attn1_eq_operands``, ``attn1_value_to_var``, ``attn2_eq_values`` (batch means; patterns
    averaged over heads)."""
    cfg = resolve_cfg(cfg)
    cache = _cache(params, data, cfg)
    return _attention_from_cache(cache, data)


def _attention_from_cache(cache, data: ProbeData) -> dict[str, jax.Array]:
    p1 = cache["blocks.0.attn.hook_pattern"].mean(1)  # [b, q, k] averaged over heads
    p2 = cache["blocks.1.attn.hook_pattern"].mean(1)
    eq1 = p1[:, aa.POS_EQ]
    eq2 = p2[:, aa.POS_EQ]
    pos = jnp.arange(aa.PREFIX_LEN)
    prev = p1[:, pos, jnp.maximum(pos - 1, 0)]  # [b, 12] attention from q to q - 1
    mask = data.value_mask.astype(jnp.float32)
    two_values = jnp.take_along_axis(eq2, data.value_pos, axis=1).sum(-1)
    return {"attn1_eq_operands": jnp.mean(eq1[:, aa.POS_X] + eq1[:, aa.POS_Y]),
            "attn1_value_to_var": jnp.sum(prev * mask) / jnp.maximum(mask.sum(), 1.0),
            "attn2_eq_values": jnp.mean(two_values)}


def ridge_probe_accuracy(features: jax.Array, labels: jax.Array, mask: jax.Array,
                         n_classes: int, ridge: float = 1e-2) -> jax.Array:
    """Closed-form ridge probe: fit one-hot targets on the first half of the rows, score the
    second half. ``features [n, d]``, ``labels [n]``, ``mask [n]`` (rows that count).

    Features are standardised with the training rows' mean and scale; ``ridge`` is relative to the
    mean diagonal of the Gram matrix. Pure and vmappable.
    """
    n = features.shape[0]
    train = (jnp.arange(n) < n // 2) & mask
    test = (jnp.arange(n) >= n // 2) & mask
    w_tr = train.astype(features.dtype)[:, None]
    count = jnp.maximum(w_tr.sum(), 1.0)
    mu = jnp.sum(features * w_tr, 0) / count
    sd = jnp.sqrt(jnp.sum(((features - mu) ** 2) * w_tr, 0) / count) + 1e-6
    x = (features - mu) / sd
    x = jnp.concatenate([x, jnp.ones((n, 1), x.dtype)], axis=1)
    y = jax.nn.one_hot(labels, n_classes, dtype=x.dtype)
    gram = (x * w_tr).T @ x
    reg = ridge * jnp.trace(gram) / gram.shape[0]
    coef = linalg.solve(gram + reg * jnp.eye(gram.shape[0], dtype=x.dtype), (x * w_tr).T @ y)
    return accuracy(x @ coef, labels, test)


def variable_probe_accuracy(params: Params, data: ProbeData, cfg: ModelConfig | None = None,
                            ridge: float = 1e-2) -> jax.Array:
    """Ridge probe of the owning variable from ``blocks.0.hook_resid_mid`` at value positions."""
    cfg = resolve_cfg(cfg)
    cache = _cache(params, data, cfg)
    return _probe_from_cache(cache, data, ridge)


def _probe_from_cache(cache, data: ProbeData, ridge: float) -> jax.Array:
    resid = cache["blocks.0.hook_resid_mid"][:, :aa.PREFIX_LEN]  # [b, 12, d]
    d = resid.shape[-1]
    return ridge_probe_accuracy(resid.reshape(-1, d), data.owner.reshape(-1),
                                data.value_mask.reshape(-1), aa.N_VARS, ridge)


def progress_measures(params: Params, data: ProbeData, cfg: ModelConfig | None = None,
                      ridge: float = 1e-2) -> dict[str, jax.Array]:
    """The seven progress measures the Assign-and-Add authors track (scalars). Vmap over stacked
    params with ``jax.vmap(progress_measures, in_axes=(0, None))``."""
    cfg = resolve_cfg(cfg)
    cache = _cache(params, data, cfg)
    out = {"ov_mlp_accuracy": ov_mlp_accuracy(params, cfg),
           "qk1_prev_token": qk1_prev_token_fraction(params, cfg),
           "qk2_diagonal": qk2_diagonal_fraction(params, cfg),
           "probe_accuracy": _probe_from_cache(cache, data, ridge)}
    out.update(_attention_from_cache(cache, data))
    return out
