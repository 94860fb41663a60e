"""Logits at one position, computed with algebraic shortcuts that leave the result unchanged.

Used by the trainer when a task reads one position (``Task.readout`` is an int) and the model
allows it (``applies(cfg)``); ``tests/test_fastpath.py`` checks loss and gradients against the
full ``mechjax.model.forward``. Two shortcuts:

1. First layer without normalization: its input is ``W_E[tokens] + W_pos``, so every linear map of
   it is a table lookup, ``x0 @ M = (W_E @ M)[tokens] + W_pos @ M``. Queries, keys and the
   output-value product ``W_V W_O`` become [d_vocab, ...] tables computed once per step instead of
   per token.
2. Last layer read at one position: only that query is needed. Keys fold into the query
   (``q K^T = (q W_K^T) X^T``) and values into the output (``A (X W_V) W_O = (A X)(W_V W_O)``), so
   no per-position key or value is ever formed, and the MLP and unembedding run on one row.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from mechjax.config import ModelConfig
from mechjax.model import Params, _identity_hook, block, embed, mlp, unembed


def applies(cfg: ModelConfig, dropout_active: bool = False) -> bool:
    """Whether ``readout_logits`` computes exactly what ``forward`` does for this config."""
    return (cfg.normalization == "none" and not cfg.merged_kq and not cfg.merged_ov
            and not (dropout_active and cfg.dropout > 0))


def _table(params: Params, w: jax.Array, tokens: jax.Array, cfg: ModelConfig) -> jax.Array:
    """``(W_E[tokens] + W_pos) @ w`` for ``w [h, d, f]`` as a lookup -> ``[b, p, h, f]``."""
    out = jnp.einsum("vd,hdf->vhf", params["embed.W_E"], w)[tokens]
    if cfg.positional_embedding:
        out = out + jnp.einsum("pd,hdf->phf", params["pos_embed.W_pos"][: tokens.shape[1]], w)
    return out


def _first_attention(params: Params, tokens: jax.Array, cfg: ModelConfig) -> jax.Array:
    """Layer-0 attention output ``[b, p, d]`` from embedding tables."""
    pre = "blocks.0.attn."
    w_vo = jnp.einsum("hde,hef->hdf", params[pre + "W_V"], params[pre + "W_O"])
    q = _table(params, params[pre + "W_Q"], tokens, cfg)
    k = _table(params, params[pre + "W_K"], tokens, cfg)
    vo = _table(params, w_vo, tokens, cfg)  # [b, k, h, d]: each key's value already through W_O
    if cfg.use_bias:
        q, k = q + params[pre + "b_Q"], k + params[pre + "b_K"]
        vo = vo + jnp.einsum("he,hed->hd", params[pre + "b_V"], params[pre + "W_O"])
    scores = jnp.einsum("bqhe,bkhe->bhqk", q, k) / cfg.scale
    n_pos = tokens.shape[1]
    if cfg.causal:
        scores = jnp.where(jnp.tril(jnp.ones((n_pos, n_pos), bool)), scores, -jnp.inf)
    pattern = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqd", pattern, vo)
    return out + params[pre + "b_O"] if cfg.use_bias else out


def _last_layer_at(params: Params, layer: int, x: jax.Array, position: int,
                   cfg: ModelConfig) -> jax.Array:
    """Residual after ``layer`` at one position ``[b, d]``, from its input ``x [b, p, d]``."""
    pre = f"blocks.{layer}.attn."
    xq = x[:, position]
    keys = x[:, : position + 1] if cfg.causal else x
    q = jnp.einsum("bd,hde->bhe", xq, params[pre + "W_Q"])
    if cfg.use_bias:
        q = q + params[pre + "b_Q"]  # b_K adds the same score to every key: softmax ignores it
    u = jnp.einsum("bhe,hde->bhd", q, params[pre + "W_K"])
    pattern = jax.nn.softmax(jnp.einsum("bhd,bkd->bhk", u, keys) / cfg.scale, axis=-1)
    mixed = jnp.einsum("bhk,bkd->bhd", pattern, keys)
    w_vo = jnp.einsum("hde,hef->hdf", params[pre + "W_V"], params[pre + "W_O"])
    out = jnp.einsum("bhd,hdf->bf", mixed, w_vo)
    if cfg.use_bias:  # rows of the pattern sum to one, so b_V passes through unchanged
        out = out + jnp.einsum("he,hed->d", params[pre + "b_V"], params[pre + "W_O"])
        out = out + params[pre + "b_O"]
    resid = xq + out
    if cfg.has_mlp(layer):
        resid = resid + mlp(params, layer, resid, cfg, _identity_hook)
    return resid


def readout_logits(params: Params, tokens: jax.Array, cfg: ModelConfig,
                   position: int) -> jax.Array:
    """Logits ``[b, d_vocab_out]`` at ``position`` (static int, may be negative).

    Equal to ``forward(params, tokens, cfg)[:, position]`` whenever ``applies(cfg)``.
    """
    if not applies(cfg):
        raise ValueError("fast readout needs normalization='none' and separate Q/K/V/O matrices")
    n_pos = tokens.shape[1]
    position = position % n_pos
    last = cfg.n_layers - 1
    if last == 0:
        x = embed(params, tokens, cfg, _identity_hook)
    else:
        x = embed(params, tokens, cfg, _identity_hook) + _first_attention(params, tokens, cfg)
        if cfg.has_mlp(0):
            x = x + mlp(params, 0, x, cfg, _identity_hook)
        for layer in range(1, last):
            x = block(params, layer, x, cfg, _identity_hook)
    return unembed(params, _last_layer_at(params, last, x, position, cfg), cfg, _identity_hook)
