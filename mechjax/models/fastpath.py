"""Logits at one position, computed with algebraic shortcuts that leave the result unchanged.

Used by the trainer when a task reads one position (``Task.readout`` is an int) and the model
allows it (``applies(cfg)``); ``tests/test_fastpath.py`` checks loss and gradients against the
full ``mechjax.models.transformer.forward``, with and without dropout. Three shortcuts:

1. First layer without a LayerNorm before it (no normalization, or post-LN): its input is
   ``W_E[tokens] + W_pos``, so every linear map of it is a table lookup,
   ``x0 @ M = (W_E @ M)[tokens] + W_pos @ M``. Queries, keys and the output-value product
   ``W_V W_O`` become [d_vocab, ...] tables computed once per step instead of per token.
2. Last layer read at one position: only that query is needed. Keys fold into the query
   (``q K^T = (q W_K^T) X^T``) and values into the output (``A (X W_V) W_O = (A X)(W_V W_O)``), so
   no per-position key or value is ever formed, and the MLP, the LayerNorms and the unembedding
   run on one row.
3. Two layers, layer 0 attention only, no LayerNorm, no dropout drawn (the Assign-and-Add
   model): layer 1's input is never formed as ``[b, p, d]``; the last layer reads it through
   embedding-sized tables and layer 0's pattern (``mechjax.models.fastpath_tables``).

Dropout draws the full forward's masks (same keys, same shapes) and keeps the read row, so a
training step is the one ``forward`` would take, not merely one with the same statistics.
``attn_rate`` mixes every pattern towards a constant one (``attn_mixing``: ``"uniform"`` or the
paper's ``"ones"``, ``mechjax.models.attention_mix``) as ``mechjax.models.attention_rate`` does.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from mechjax.models import fastpath_tables
from mechjax.models.attention_mix import Rate, mix, rate_hook
from mechjax.models.config import ModelConfig
from mechjax.models.fastpath_tables import Tables
from mechjax.models.transformer import (DropFn, Params, _dropout, identity_hook, _layer_norm, _split,
                           _sublayer, block, embed, mlp, unembed)


def applies(cfg: ModelConfig, dropout_active: bool = False) -> bool:
    """Whether ``readout_logits`` computes exactly what ``forward`` does for this config
    (any normalization, with or without dropout; not the merged KQ / OV maps of the IMIR
    models). ``dropout_active`` is kept for callers that ask about training."""
    del dropout_active  # dropout is reproduced exactly (module docstring)
    return not cfg.merged_kq and not cfg.merged_ov


def _table(params: Params, w: jax.Array, tokens: jax.Array, cfg: ModelConfig) -> jax.Array:
    """``(W_E[tokens] + W_pos) @ w`` for ``w [h, d, f]`` as a lookup -> ``[b, p, h, f]``."""
    out = jnp.einsum("vd,hdf->vhf", params["embed.W_E"], w)[tokens]
    if cfg.positional_embedding:
        out = out + jnp.einsum("pd,hdf->phf", params["pos_embed.W_pos"][: tokens.shape[1]], w)
    return out


def _first_attention(params: Params, tokens: jax.Array, cfg: ModelConfig,
                     key: jax.Array | None = None, rate: Rate = None,
                     mixing: str = "uniform") -> jax.Array:
    """Layer-0 attention output ``[b, p, d]`` from embedding tables (``key``: pattern dropout)."""
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
    pattern = mix(jax.nn.softmax(scores, axis=-1), rate, cfg.causal, mixing)
    pattern = _dropout(pattern, cfg.dropout, key)
    out = jnp.einsum("bhqk,bkhd->bqd", pattern, vo)  # b_V rides in vo: exact under dropout too
    return out + params[pre + "b_O"] if cfg.use_bias else out


def _row_of(full_shape: tuple[int, ...], axis: int, index: int) -> DropFn:
    """Dropout of one slice of a tensor of ``full_shape``: the full draw's mask at ``index`` of
    ``axis``, so the kept entries are the ones ``forward``'s dropout keeps."""
    def drop(x: jax.Array, rate: float, key: jax.Array | None) -> jax.Array:
        if key is None or rate == 0.0:
            return x
        keep = jnp.take(jax.random.bernoulli(key, 1.0 - rate, full_shape), index, axis=axis)
        return jnp.where(keep, x / (1.0 - rate), 0.0)
    return drop


def _row(x: jax.Array | Tables, position: int) -> jax.Array:
    return x.row(position) if isinstance(x, Tables) else x[:, position]


def _last_layer_at(params: Params, layer: int, x: jax.Array | Tables, position: int,
                   cfg: ModelConfig, key: jax.Array | None = None, rate: Rate = None,
                   mixing: str = "uniform") -> jax.Array:
    """Residual after ``layer`` at one position ``[b, d]``, from its input ``x [b, p, d]``
    (``Tables`` only without a LayerNorm before the layer)."""
    pre = f"blocks.{layer}."
    k_attn, k_attn_out, k_mlp, k_mlp_out = _split(key, 4)
    batch, n_pos, d_model = x.shape
    row = lambda *tail: _row_of((batch, n_pos) + tail, 1, position)
    inp = _layer_norm(params, pre + "ln1.", x, cfg, identity_hook) \
        if cfg.normalization == "pre" else x
    n_keys = position + 1 if cfg.causal else n_pos
    keys = (inp.keys(n_keys) if isinstance(inp, Tables) else inp[:, :n_keys]) \
        if cfg.causal else inp
    # Tables: the row is read once (it is products, and so is its gradient: 1.03x the step);
    # an array is sliced where it is used, as before (a slice is free, and another order of the
    # gradient's float32 sums changes what training reaches)
    x_row = _row(x, position) if isinstance(x, Tables) and inp is x else None
    q = jnp.einsum("bd,hde->bhe", _row(inp, position) if x_row is None else x_row,
                   params[pre + "attn.W_Q"])
    if cfg.use_bias:
        q = q + params[pre + "attn.b_Q"]  # b_K adds the same score to every key: softmax ignores it
    u = jnp.einsum("bhe,hde->bhd", q, params[pre + "attn.W_K"])
    scores = keys.dot(u) if isinstance(keys, Tables) else jnp.einsum("bhd,bkd->bhk", u, keys)
    pattern = jax.nn.softmax(scores / cfg.scale, axis=-1)
    pattern = mix(pattern, rate, False, mixing)  # the keys are the allowed ones already
    dropping = k_attn is not None and cfg.dropout > 0.0
    if dropping:
        pattern_drop = _row_of((batch, cfg.n_heads, n_pos, n_pos), 2, position)
        pattern = pattern_drop(jnp.pad(pattern, ((0, 0), (0, 0), (0, n_pos - n_keys))),
                               cfg.dropout, k_attn)[..., :n_keys]
    mixed = keys.mix(pattern) if isinstance(keys, Tables) else jnp.einsum("bhk,bkd->bhd",
                                                                            pattern, keys)
    w_vo = jnp.einsum("hde,hef->hdf", params[pre + "attn.W_V"], params[pre + "attn.W_O"])
    out = jnp.einsum("bhd,hdf->bf", mixed, w_vo)
    if cfg.use_bias and (dropping or (rate is not None and mixing == "ones")):
        # b_V enters weighted by each row's pattern mass (dropped out, or the ones mixing's)
        b_vo = jnp.einsum("he,hed->hd", params[pre + "attn.b_V"], params[pre + "attn.W_O"])
        out = out + jnp.einsum("bh,hd->bd", pattern.sum(-1), b_vo) + params[pre + "attn.b_O"]
    elif cfg.use_bias:  # rows of the pattern sum to one, so b_V passes through unchanged
        out = out + jnp.einsum("he,hed->d", params[pre + "attn.b_V"], params[pre + "attn.W_O"])
        out = out + params[pre + "attn.b_O"]
    resid = _add_and_norm(params, pre + "ln1.", _row(x, position) if x_row is None else x_row,
                          row(d_model)(out, cfg.dropout, k_attn_out), cfg)
    if cfg.has_mlp(layer):
        inp = _layer_norm(params, pre + "ln2.", resid, cfg, identity_hook) \
            if cfg.normalization == "pre" else resid
        out = mlp(params, layer, inp, cfg, identity_hook, k_mlp, drop=row(cfg.d_mlp))
        resid = _add_and_norm(params, pre + "ln2.", resid,
                              row(d_model)(out, cfg.dropout, k_mlp_out), cfg)
    return resid


def _add_and_norm(params: Params, ln: str, resid: jax.Array, out: jax.Array,
                  cfg: ModelConfig) -> jax.Array:
    """``resid + out``, through the LayerNorm ``ln`` when the model is post-LN."""
    resid = resid + out
    return _layer_norm(params, ln, resid, cfg, identity_hook) \
        if cfg.normalization == "post" else resid


def readout_logits(params: Params, tokens: jax.Array, cfg: ModelConfig, position: int,
                   key: jax.Array | None = None, attn_rate: Rate = None,
                   attn_mixing: str = "uniform") -> jax.Array:
    """Logits ``[b, d_vocab_out]`` at ``position`` (static int, may be negative).

    Equal to ``forward(params, tokens, cfg, key=key)[:, position]`` whenever ``applies(cfg)``
    (``key``: dropout on, with the same masks as ``forward``); with ``attn_rate``, to
    ``attention_rate.forward(params, tokens, cfg, attn_rate, key,
    mixing=attn_mixing)[:, position]``.
    """
    if not applies(cfg):
        raise ValueError("fast readout needs separate Q/K/V/O matrices (not merged_kq/merged_ov)")
    n_pos = tokens.shape[1]
    position = position % n_pos
    last = cfg.n_layers - 1
    if tabled(cfg, dropout_drawn=key is not None):
        x = fastpath_tables.first_layer(params, tokens, cfg, attn_rate, attn_mixing)
        return unembed(params, _last_layer_at(params, last, x, position, cfg, None, attn_rate,
                                              attn_mixing), cfg, identity_hook)
    keys = _split(key, cfg.n_layers)
    x = embed(params, tokens, cfg, identity_hook)
    hook = identity_hook if attn_rate is None else rate_hook(attn_rate, cfg, attn_mixing)
    for layer in range(last):
        if layer == 0 and cfg.normalization != "pre":
            x = _first_block(params, tokens, x, cfg, keys[0], attn_rate, attn_mixing)
        else:
            x = block(params, layer, x, cfg, hook, keys[layer])
    resid = _last_layer_at(params, last, x, position, cfg, keys[last], attn_rate, attn_mixing)
    return unembed(params, resid, cfg, identity_hook)


def tabled(cfg: ModelConfig, dropout_drawn: bool) -> bool:
    """Whether layer 0 runs as tables (``mechjax.models.fastpath_tables``): two layers, attention only
    in layer 0, no LayerNorm, no dropout drawn (``dropout_drawn``: a dropout key is given, as in
    training)."""
    return (cfg.n_layers == 2 and not cfg.has_mlp(0) and cfg.normalization == "none"
            and (not dropout_drawn or cfg.dropout == 0.0))


def _first_block(params: Params, tokens: jax.Array, x: jax.Array, cfg: ModelConfig,
                 key: jax.Array | None, rate: Rate = None, mixing: str = "uniform") -> jax.Array:
    """``model.block`` for layer 0 with its attention read from embedding tables."""
    k_attn, k_attn_out, k_mlp, k_mlp_out = _split(key, 4)
    x = _sublayer(params, "blocks.0.", "ln1.", "attn", x, cfg, identity_hook,
                  lambda _: _first_attention(params, tokens, cfg, k_attn, rate, mixing),
                  k_attn_out)
    if cfg.has_mlp(0):
        x = _sublayer(params, "blocks.0.", "ln2.", "mlp", x, cfg, identity_hook,
                      lambda h: mlp(params, 0, h, cfg, identity_hook, k_mlp), k_mlp_out)
    return x
