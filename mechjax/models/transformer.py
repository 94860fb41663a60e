"""The transformer: a flat parameter dict with TransformerLens names, and a pure forward pass.

Parameters are ``dict[str, Array]`` keyed exactly as a TransformerLens state dict
(``"blocks.0.attn.W_Q"`` with shape ``[n_heads, d_model, d_head]``, ...), so weights move between
mechjax and TransformerLens by renaming nothing. The forward pass calls ``hook(name, x)`` at every
TransformerLens hook point; ``mechjax.models.hooks`` builds caches and interventions on top of that.

Shape legend: b batch, p/q/k positions, h heads, e d_head, d d_model, m d_mlp, v vocab.
"""
from __future__ import annotations

from typing import Callable, Mapping

import jax
import jax.numpy as jnp

from mechjax.models.config import ModelConfig

Params = dict[str, jax.Array]
HookFn = Callable[[str, jax.Array], jax.Array]


def identity_hook(name: str, x: jax.Array) -> jax.Array:
    del name
    return x


# ------------------------------------------------------------------------------------------------
# Parameter shapes and initialization
# ------------------------------------------------------------------------------------------------
def param_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter the config has, with its TransformerLens shape."""
    d, h, e, m = cfg.d_model, cfg.n_heads, cfg.head_dim, cfg.d_mlp
    shapes: dict[str, tuple[int, ...]] = {"embed.W_E": (cfg.d_vocab, d)}
    if cfg.positional_embedding:
        shapes["pos_embed.W_pos"] = (cfg.n_ctx, d)
    for layer in range(cfg.n_layers):
        pre = f"blocks.{layer}."
        if cfg.normalization != "none":
            shapes.update({pre + "ln1.w": (d,), pre + "ln1.b": (d,)})
            if cfg.has_mlp(layer):  # ln2 belongs to the MLP sublayer (before it or after it)
                shapes.update({pre + "ln2.w": (d,), pre + "ln2.b": (d,)})
        if cfg.merged_kq:
            shapes[pre + "attn.W_KQ"] = (h, d, d)
        else:
            shapes.update({pre + "attn.W_Q": (h, d, e), pre + "attn.W_K": (h, d, e)})
            if cfg.use_bias:
                shapes.update({pre + "attn.b_Q": (h, e), pre + "attn.b_K": (h, e)})
        if cfg.merged_ov:
            shapes[pre + "attn.W_OV"] = (h, d, d)
        else:
            shapes.update({pre + "attn.W_V": (h, d, e), pre + "attn.W_O": (h, e, d)})
            if cfg.use_bias:
                shapes[pre + "attn.b_V"] = (h, e)
        if cfg.use_bias:
            shapes[pre + "attn.b_O"] = (d,)
        if cfg.has_mlp(layer):
            shapes.update({pre + "mlp.W_in": (d, m), pre + "mlp.W_out": (m, d)})
            if cfg.use_bias:
                shapes.update({pre + "mlp.b_in": (m,), pre + "mlp.b_out": (d,)})
    if cfg.normalization == "pre":
        shapes.update({"ln_final.w": (d,), "ln_final.b": (d,)})
    if not cfg.tied_unembed:
        shapes["unembed.W_U"] = (d, cfg.vocab_out)
    if cfg.has_unembed_bias:
        shapes["unembed.b_U"] = (cfg.vocab_out,)
    return shapes


def _fan_in(name: str, shape: tuple[int, ...]) -> int:
    # Per-head matrices [h, in, out] read `in`; plain matrices [in, out] read `in`.
    if name.endswith(("W_Q", "W_K", "W_V", "W_O", "W_KQ", "W_OV")):
        return shape[1] if not name.endswith("W_O") else shape[0] * shape[1]
    return shape[0]


def _init_one(key: jax.Array, name: str, shape: tuple[int, ...], cfg: ModelConfig) -> jax.Array:
    leaf = name.rsplit(".", 1)[-1]
    if leaf == "w":  # LayerNorm gain
        return jnp.ones(shape, jnp.float32)
    if leaf == "W_OV":  # frozen-able orthogonal output-value map per head (the IMIR model)
        return jax.random.orthogonal(key, cfg.d_model, shape=(shape[0],)).astype(jnp.float32)
    if cfg.init == "transformer_lens":
        if leaf.startswith("b") or leaf == "b":
            return jnp.zeros(shape, jnp.float32)
        std = 0.8 / cfg.d_model ** 0.5
        return std * jax.random.normal(key, shape, jnp.float32)
    # PyTorch defaults: nn.Embedding N(0, 1); nn.MultiheadAttention in-projections xavier-uniform
    # over the stacked [3d, d] matrix with zero biases; nn.Linear U(+-1/sqrt(fan_in)) for weight
    # and bias; MultiheadAttention zeroes its out-projection bias.
    if leaf in ("W_E", "W_pos"):
        return jax.random.normal(key, shape, jnp.float32)
    if leaf in ("W_Q", "W_K", "W_V", "W_KQ"):
        bound = (6.0 / (cfg.d_model + 3 * cfg.d_model)) ** 0.5
        return jax.random.uniform(key, shape, jnp.float32, -bound, bound)
    if leaf in ("b_Q", "b_K", "b_V", "b_O", "b"):
        return jnp.zeros(shape, jnp.float32)
    fan_in = {"b_in": cfg.d_model, "b_out": cfg.d_mlp, "b_U": cfg.d_model}.get(leaf)
    bound = 1.0 / (fan_in if fan_in is not None else _fan_in(name, shape)) ** 0.5
    return jax.random.uniform(key, shape, jnp.float32, -bound, bound)


def init_params(key: jax.Array, cfg: ModelConfig, scale: float | jax.Array = 1.0) -> Params:
    """Initial parameters. ``scale`` multiplies every weight matrix (a traced hyperparameter).

    LayerNorm gains and frozen parameters are not rescaled.
    """
    shapes = param_shapes(cfg)
    keys = jax.random.split(key, len(shapes))
    params = {}
    for k, (name, shape) in zip(keys, sorted(shapes.items())):
        value = _init_one(k, name, shape, cfg)
        if not (name.endswith(".w") or cfg.is_frozen(name)):
            value = value * scale
        params[name] = value
    return params


def count_params(params: Mapping[str, jax.Array], cfg: ModelConfig | None = None) -> int:
    """Number of trainable scalars (frozen parameters excluded when a config is given)."""
    return sum(int(v.size) for k, v in params.items() if cfg is None or not cfg.is_frozen(k))


# ------------------------------------------------------------------------------------------------
# Forward pass
# ------------------------------------------------------------------------------------------------
def _act(cfg: ModelConfig, x: jax.Array) -> jax.Array:
    if cfg.act_fn == "relu":
        return jax.nn.relu(x)
    return jax.nn.gelu(x, approximate=cfg.act_fn == "gelu_new")


def _layer_norm(params: Params, prefix: str, x: jax.Array, cfg: ModelConfig,
                hook: HookFn) -> jax.Array:
    x = x - x.mean(-1, keepdims=True)
    scale = hook(prefix + "hook_scale", jnp.sqrt((x * x).mean(-1, keepdims=True) + cfg.ln_eps))
    x = hook(prefix + "hook_normalized", x / scale)
    return x * params[prefix + "w"] + params[prefix + "b"]


def _dropout(x: jax.Array, rate: float, key: jax.Array | None) -> jax.Array:
    if key is None or rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


DropFn = Callable[[jax.Array, float, "jax.Array | None"], jax.Array]


def _split(key: jax.Array | None, n: int) -> list[jax.Array | None]:
    return [None] * n if key is None else list(jax.random.split(key, n))


def attention(params: Params, layer: int, x: jax.Array, cfg: ModelConfig, hook: HookFn,
              key: jax.Array | None = None) -> jax.Array:
    """Multi-head attention of one layer. ``x [b, p, d]`` -> ``attn_out [b, p, d]``."""
    pre = f"blocks.{layer}.attn."
    n_pos = x.shape[-2]
    if cfg.merged_kq:
        scores = jnp.einsum("bqd,hde,bke->bhqk", x, params[pre + "W_KQ"], x)
    else:
        q = x @ params[pre + "W_Q"][:, None]  # [h, b, p, e]
        k = x @ params[pre + "W_K"][:, None]
        q, k = jnp.moveaxis(q, 0, 2), jnp.moveaxis(k, 0, 2)  # [b, p, h, e]
        if cfg.use_bias:
            q, k = q + params[pre + "b_Q"], k + params[pre + "b_K"]
        q, k = hook(pre + "hook_q", q), hook(pre + "hook_k", k)
        scores = jnp.einsum("bqhe,bkhe->bhqk", q, k)
    scores = scores / cfg.scale
    if cfg.causal:
        allowed = jnp.tril(jnp.ones((n_pos, n_pos), bool))
        scores = jnp.where(allowed, scores, -jnp.inf)
    scores = hook(pre + "hook_attn_scores", scores)
    pattern = hook(pre + "hook_pattern", jax.nn.softmax(scores, axis=-1))
    pattern = _dropout(pattern, cfg.dropout, key)
    if cfg.merged_ov:
        # z holds each head's attention-weighted residual [b, p, h, d]; W_OV maps it out.
        z = hook(pre + "hook_z", jnp.einsum("bhqk,bkd->bqhd", pattern, x))
        out = jnp.einsum("bqhd,hdf->bqf", z, params[pre + "W_OV"])
    else:
        v = jnp.moveaxis(x @ params[pre + "W_V"][:, None], 0, 2)
        if cfg.use_bias:
            v = v + params[pre + "b_V"]
        v = hook(pre + "hook_v", v)
        z = hook(pre + "hook_z", jnp.einsum("bhqk,bkhe->bqhe", pattern, v))
        out = jnp.einsum("bqhe,hed->bqd", z, params[pre + "W_O"])
    if cfg.use_bias:
        out = out + params[pre + "b_O"]
    return out


def mlp(params: Params, layer: int, x: jax.Array, cfg: ModelConfig, hook: HookFn,
        key: jax.Array | None = None, drop: DropFn | None = None) -> jax.Array:
    """The layer's MLP. ``x [..., d]`` -> ``mlp_out [..., d]``.

    ``drop`` replaces the hidden layer's dropout (``mechjax.models.fastpath`` runs one row of a wider
    batch and needs that row's mask of the full-width draw)."""
    pre = f"blocks.{layer}.mlp."
    h = x @ params[pre + "W_in"]
    if cfg.use_bias:
        h = h + params[pre + "b_in"]
    h = hook(pre + "hook_post", _act(cfg, hook(pre + "hook_pre", h)))
    h = (drop or _dropout)(h, cfg.dropout, key)
    out = h @ params[pre + "W_out"]
    return out + params[pre + "b_out"] if cfg.use_bias else out


def _sublayer(params: Params, prefix: str, ln: str, name: str, x: jax.Array, cfg: ModelConfig,
              hook: HookFn, compute: Callable[[jax.Array], jax.Array],
              dropout_key: jax.Array | None) -> jax.Array:
    """``x`` plus one sublayer's output (``hook_{name}_out``), with its LayerNorm ``ln`` before
    the sublayer (pre-LN) or after the addition (post-LN)."""
    inp = _layer_norm(params, prefix + ln, x, cfg, hook) if cfg.normalization == "pre" else x
    out = hook(f"{prefix}hook_{name}_out", _dropout(compute(inp), cfg.dropout, dropout_key))
    x = x + out
    if cfg.normalization == "post":
        x = _layer_norm(params, prefix + ln, x, cfg, hook)
    return x


def block(params: Params, layer: int, x: jax.Array, cfg: ModelConfig, hook: HookFn,
          key: jax.Array | None = None) -> jax.Array:
    """One transformer block ``[b, p, d] -> [b, p, d]`` (pre-LN, post-LN or no normalization)."""
    pre = f"blocks.{layer}."
    k_attn, k_attn_out, k_mlp, k_mlp_out = _split(key, 4)
    x = hook(pre + "hook_resid_pre", x)
    x = _sublayer(params, pre, "ln1.", "attn", x, cfg, hook,
                  lambda h: attention(params, layer, h, cfg, hook, k_attn), k_attn_out)
    x = hook(pre + "hook_resid_mid", x)
    if cfg.has_mlp(layer):
        x = _sublayer(params, pre, "ln2.", "mlp", x, cfg, hook,
                      lambda h: mlp(params, layer, h, cfg, hook, k_mlp), k_mlp_out)
    return hook(pre + "hook_resid_post", x)


def embed(params: Params, tokens: jax.Array, cfg: ModelConfig, hook: HookFn) -> jax.Array:
    """Token plus learned absolute position embedding. ``tokens [b, p]`` -> ``[b, p, d]``."""
    x = hook("hook_embed", params["embed.W_E"][tokens])
    if cfg.positional_embedding:
        x = x + hook("hook_pos_embed", params["pos_embed.W_pos"][: tokens.shape[-1]])
    return x


def unembed(params: Params, x: jax.Array, cfg: ModelConfig, hook: HookFn) -> jax.Array:
    """Residual ``[..., d]`` -> logits ``[..., d_vocab_out]`` (through ``ln_final`` for pre-LN)."""
    if cfg.normalization == "pre":
        x = _layer_norm(params, "ln_final.", x, cfg, hook)
    w_u = params["embed.W_E"].T if cfg.tied_unembed else params["unembed.W_U"]
    logits = x @ w_u
    return logits + params["unembed.b_U"] if cfg.has_unembed_bias else logits


def forward(params: Params, tokens: jax.Array, cfg: ModelConfig, hook: HookFn = identity_hook,
            key: jax.Array | None = None) -> jax.Array:
    """Logits ``[b, p, d_vocab_out]`` for ``tokens [b, p]``, calling ``hook`` at every hook point.

    ``key`` switches dropout on (training); without it the pass is deterministic.
    """
    _check_tokens(tokens, cfg)
    keys = _split(key, cfg.n_layers)
    x = embed(params, tokens, cfg, hook)
    for layer in range(cfg.n_layers):
        x = block(params, layer, x, cfg, hook, keys[layer])
    return unembed(params, x, cfg, hook)


def apply(params: Params, tokens: jax.Array, cfg: ModelConfig,
          key: jax.Array | None = None) -> jax.Array:
    """Plain forward pass: ``tokens [b, p]`` -> logits ``[b, p, d_vocab_out]``. Pure, jittable."""
    return forward(params, tokens, cfg, identity_hook, key)


def _check_tokens(tokens: jax.Array, cfg: ModelConfig) -> None:
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape [batch, pos], got {tokens.shape}")
    if tokens.shape[-1] > cfg.n_ctx:
        raise ValueError(f"sequence length {tokens.shape[-1]} exceeds n_ctx={cfg.n_ctx}")
