"""A GPT-2 ``config.json`` (as ``transformers.GPT2Config`` writes it) to and from mechjax's
``ModelConfig``, and which ``ModelConfig`` GPT-2 can express.

transformers writes only the keys that differ from ``GPT2Config``'s defaults, so a key left out
takes that default here as it does in transformers (the format's own rule, not a guess); every
key that is there is checked for its type and allowed values.
"""
from __future__ import annotations

from typing import Any, Mapping

from mechjax.models.config import ConfigError, ModelConfig
from mechjax.interop.files import CONFIG_FILE, CheckpointError

# transformers' activation names -> mechjax's. gelu_pytorch_tanh is the same tanh approximation
# as gelu_new, computed by a fused kernel.
_ACTIVATIONS_IN = {"gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_new", "gelu": "gelu",
                   "relu": "relu"}
_ACTIVATIONS_OUT = {"gelu_new": "gelu_new", "gelu": "gelu", "relu": "relu"}

# GPT2Config's defaults: transformers fills in a missing key with these, so the loader does too.
_DEFAULTS = {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12,
             "n_head": 12, "n_inner": None, "activation_function": "gelu_new",
             "layer_norm_epsilon": 1e-5, "scale_attn_weights": True,
             "scale_attn_by_inverse_layer_idx": False, "add_cross_attention": False,
             "tie_word_embeddings": True}


class GPT2FormatError(CheckpointError):
    """A folder, config or model that is not (or cannot be written as) a GPT-2 checkpoint."""


def gpt2_model_config(n_layers: int, d_model: int, n_heads: int, d_vocab: int, n_ctx: int,
                      d_mlp: int | None = None, act_fn: str = "gelu_new", ln_eps: float = 1e-5,
                      tied_unembed: bool = True, dropout: float = 0.0,
                      attn_scale: float | None = None) -> ModelConfig:
    """The mechjax config of a GPT-2-architecture model (``d_mlp`` defaults to ``4 * d_model``)."""
    return ModelConfig(n_layers=n_layers, d_model=d_model, n_heads=n_heads, d_head=None,
                       d_mlp=4 * d_model if d_mlp is None else d_mlp, d_vocab=d_vocab,
                       n_ctx=n_ctx, act_fn=act_fn, use_bias=True, normalization="pre",
                       ln_eps=ln_eps, dropout=dropout, positional_embedding=True, causal=True,
                       tied_unembed=tied_unembed, unembed_bias=False, attn_scale=attn_scale)


# ---- config.json <-> ModelConfig -----------------------------------------------------------------
def config_from_hf(values: Mapping[str, Any], source: str = CONFIG_FILE) -> ModelConfig:
    """The ``ModelConfig`` of a GPT-2 ``config.json`` (as a dict)."""
    model_type = values.get("model_type")
    if model_type != "gpt2":
        raise GPT2FormatError(f"{source}: model_type={model_type!r}; only 'gpt2' checkpoints "
                              "(GPT2LMHeadModel / GPT2Model) are supported")
    hf = {**_DEFAULTS, **values}
    for key in ("vocab_size", "n_embd", "n_layer", "n_head"):
        _check_int(hf, key, source)
    # Configs from before transformers 4 name the context length n_ctx.
    if "n_positions" not in values and "n_ctx" in values:
        hf["n_positions"] = values["n_ctx"]
    _check_int(hf, "n_positions", source)
    if hf["n_inner"] is not None:
        _check_int(hf, "n_inner", source)
    for key in ("scale_attn_weights", "tie_word_embeddings", "scale_attn_by_inverse_layer_idx",
                "add_cross_attention"):
        if not isinstance(hf[key], bool):
            raise GPT2FormatError(f"{source}: {key}={hf[key]!r}; must be true or false")
    activation = hf["activation_function"]
    if activation not in _ACTIVATIONS_IN:
        raise GPT2FormatError(f"{source}: activation_function={activation!r}; supported: "
                              f"{sorted(_ACTIVATIONS_IN)}")
    for key, allowed in (("scale_attn_by_inverse_layer_idx", False),
                         ("add_cross_attention", False)):
        if hf[key] != allowed:
            raise GPT2FormatError(f"{source}: {key}={hf[key]!r}; mechjax supports only {allowed}")
    eps = hf["layer_norm_epsilon"]
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or eps <= 0:
        raise GPT2FormatError(f"{source}: layer_norm_epsilon={eps!r}; must be a positive number")
    if hf["n_embd"] % hf["n_head"]:
        raise GPT2FormatError(f"{source}: n_embd={hf['n_embd']} is not divisible by "
                              f"n_head={hf['n_head']}")
    try:
        return gpt2_model_config(
            n_layers=hf["n_layer"], d_model=hf["n_embd"], n_heads=hf["n_head"],
            d_vocab=hf["vocab_size"], n_ctx=hf["n_positions"], d_mlp=hf["n_inner"],
            act_fn=_ACTIVATIONS_IN[activation], ln_eps=float(eps),
            tied_unembed=bool(hf["tie_word_embeddings"]),
            attn_scale=None if hf["scale_attn_weights"] else 1.0)
    except ConfigError as err:
        raise GPT2FormatError(f"{source}: {err}") from err


def _check_int(values: Mapping[str, Any], key: str, source: str) -> None:
    value = values[key]
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise GPT2FormatError(f"{source}: {key}={value!r}; must be a positive integer")


def check_gpt2_compatible(cfg: ModelConfig) -> None:
    """Raise ``GPT2FormatError`` naming every setting of ``cfg`` that GPT-2 cannot express.

    A bias-free model is allowed (its biases are written as exact zeros, the same function).
    """
    problems = []
    for field, want in (("normalization", "pre"), ("positional_embedding", True),
                        ("causal", True), ("merged_kq", False), ("merged_ov", False),
                        ("attn_only", False)):
        if getattr(cfg, field) != want:
            problems.append(f"{field}={getattr(cfg, field)!r} (GPT-2 needs {want!r})")
    if cfg.act_fn not in _ACTIVATIONS_OUT:
        problems.append(f"act_fn={cfg.act_fn!r} (allowed {sorted(_ACTIVATIONS_OUT)})")
    if not all(cfg.has_mlp(layer) for layer in range(cfg.n_layers)):
        problems.append(f"mlp_layers={cfg.mlp_layers!r}, d_mlp={cfg.d_mlp!r} (GPT-2 has an MLP "
                        "in every layer)")
    if cfg.head_dim * cfg.n_heads != cfg.d_model:
        problems.append(f"d_head={cfg.head_dim} with n_heads={cfg.n_heads} (GPT-2 needs "
                        f"d_head * n_heads == d_model={cfg.d_model})")
    if cfg.scale not in (float(cfg.head_dim) ** 0.5, 1.0):
        problems.append(f"attn_scale={cfg.attn_scale!r} (GPT-2 divides scores by sqrt(d_head) "
                        "or, with scale_attn_weights=False, by 1)")
    if cfg.has_unembed_bias:
        problems.append("an unembedding bias (GPT2LMHeadModel's lm_head has none; set "
                        "unembed_bias=False)")
    if problems:
        raise GPT2FormatError("model config is not GPT-2-compatible: " + "; ".join(problems))


def config_to_hf(cfg: ModelConfig, bos_eos_id: int | None = None) -> dict[str, Any]:
    """``config.json`` contents of ``cfg`` (after ``check_gpt2_compatible``)."""
    check_gpt2_compatible(cfg)
    return {
        "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
        "vocab_size": cfg.d_vocab, "n_positions": cfg.n_ctx, "n_embd": cfg.d_model,
        "n_layer": cfg.n_layers, "n_head": cfg.n_heads, "n_inner": cfg.d_mlp,
        "activation_function": _ACTIVATIONS_OUT[cfg.act_fn],
        "layer_norm_epsilon": cfg.ln_eps,
        "resid_pdrop": cfg.dropout, "embd_pdrop": cfg.dropout, "attn_pdrop": cfg.dropout,
        "scale_attn_weights": cfg.scale != 1.0 or cfg.head_dim == 1,
        "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False,
        "add_cross_attention": False, "tie_word_embeddings": cfg.tied_unembed,
        "bos_token_id": bos_eos_id, "eos_token_id": bos_eos_id, "use_cache": True,
        "dtype": "float32",
    }
