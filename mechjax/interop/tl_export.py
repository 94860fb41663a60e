"""One mechjax model as a TransformerLens 3.x ``HookedTransformer``: state dict and config.

``write(params, cfg, folder)`` writes ``folder/state_dict.pt`` (``torch.save`` of a dict of
float32 tensors with TransformerLens names and shapes) and ``folder/hooked_transformer_config.json``
(keyword arguments of ``HookedTransformerConfig``); ``load(folder)`` builds the
``HookedTransformer`` from them. Both need the optional extra: ``pip install -e ".[torch]"``.

mechjax parameters already carry TransformerLens names. What TransformerLens always has but a
mechjax config may leave out is written as exact zeros, which computes the same function: biases
of a bias-free model, the position embedding of a model without one, and the MLP of a layer
without an MLP (a zero MLP adds zero to the residual). A tied unembedding is written as
``W_E.T``. Post-LayerNorm blocks and the merged ``W_KQ`` / ``W_OV`` variants have no
TransformerLens equivalent and are refused.
"""
from __future__ import annotations

import json
import os
import warnings
from typing import Any, Mapping

import numpy as np

from mechjax.models.config import ModelConfig
from mechjax.io import write_json

STATE_FILE = "state_dict.pt"
CONFIG_FILE = "hooked_transformer_config.json"


class ExportError(ValueError):
    """A model that TransformerLens cannot express, or the torch extra is missing."""


def hooked_transformer_config(cfg: ModelConfig) -> dict[str, Any]:
    """``HookedTransformerConfig(**kwargs)`` arguments of the same architecture."""
    if cfg.normalization == "post":
        raise ExportError("model.normalization='post': TransformerLens has no post-LayerNorm "
                          "blocks; allowed for export: 'none', 'pre'")
    if cfg.merged_kq or cfg.merged_ov:
        raise ExportError("model.merged_kq / merged_ov: TransformerLens has no merged W_KQ or "
                          "W_OV; export needs the separate W_Q, W_K, W_V, W_O")
    any_mlp = any(cfg.has_mlp(layer) for layer in range(cfg.n_layers))
    return {
        "n_layers": cfg.n_layers, "d_model": cfg.d_model, "n_heads": cfg.n_heads,
        "d_head": cfg.head_dim, "d_mlp": cfg.d_mlp if any_mlp else None,
        "d_vocab": cfg.d_vocab, "d_vocab_out": cfg.vocab_out, "n_ctx": cfg.n_ctx,
        "act_fn": cfg.act_fn, "normalization_type": "LN" if cfg.normalization == "pre" else None,
        "eps": cfg.ln_eps, "attention_dir": "causal" if cfg.causal else "bidirectional",
        "attn_only": not any_mlp, "positional_embedding_type": "standard",
        "use_attn_scale": True, "attn_scale": float(cfg.scale),
        "default_prepend_bos": False, "dtype": "float32",
    }


def tl_state_dict(params: Mapping[str, Any], cfg: ModelConfig) -> dict[str, np.ndarray]:
    """Every TransformerLens parameter (buffers excluded) as a float32 array."""
    tl_cfg = hooked_transformer_config(cfg)
    d, h, e, m = cfg.d_model, cfg.n_heads, cfg.head_dim, cfg.d_mlp
    shapes: dict[str, tuple[int, ...]] = {"embed.W_E": (cfg.d_vocab, d),
                                          "pos_embed.W_pos": (cfg.n_ctx, d)}
    for layer in range(cfg.n_layers):
        pre = f"blocks.{layer}."
        if tl_cfg["normalization_type"] == "LN":
            shapes.update({pre + "ln1.w": (d,), pre + "ln1.b": (d,)})
            if not tl_cfg["attn_only"]:
                shapes.update({pre + "ln2.w": (d,), pre + "ln2.b": (d,)})
        for name in ("Q", "K", "V"):
            shapes[f"{pre}attn.W_{name}"], shapes[f"{pre}attn.b_{name}"] = (h, d, e), (h, e)
        shapes[pre + "attn.W_O"], shapes[pre + "attn.b_O"] = (h, e, d), (d,)
        if not tl_cfg["attn_only"]:
            shapes.update({pre + "mlp.W_in": (d, m), pre + "mlp.b_in": (m,),
                           pre + "mlp.W_out": (m, d), pre + "mlp.b_out": (d,)})
    if tl_cfg["normalization_type"] == "LN":
        shapes.update({"ln_final.w": (d,), "ln_final.b": (d,)})
    shapes.update({"unembed.W_U": (d, cfg.vocab_out), "unembed.b_U": (cfg.vocab_out,)})

    given = {k: np.asarray(v, np.float32) for k, v in params.items()}
    if cfg.tied_unembed:
        given["unembed.W_U"] = given["embed.W_E"].T
    unused = sorted(set(given) - set(shapes))
    if unused:
        raise ExportError(f"parameters {unused} have no TransformerLens counterpart")
    out = {}
    for name, shape in shapes.items():
        value = given.get(name, np.zeros(shape, np.float32))
        if value.shape != shape:
            raise ExportError(f"{name}: shape {value.shape}, TransformerLens expects {shape}")
        out[name] = value
    return out


def _torch():
    try:
        import torch
    except ImportError as err:
        raise ExportError("exporting to TransformerLens needs torch: pip install -e "
                          "\".[torch]\"") from err
    return torch


def write(params: Mapping[str, Any], cfg: ModelConfig, folder: str) -> str:
    """Write ``folder/state_dict.pt`` and ``folder/hooked_transformer_config.json``; returns
    ``folder``. ``params``: one model (no seed axis)."""
    tl_cfg = hooked_transformer_config(cfg)
    state = tl_state_dict(params, cfg)
    torch = _torch()
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, STATE_FILE + ".tmp")
    torch.save({k: torch.tensor(np.array(v)) for k, v in state.items()}, tmp)
    os.replace(tmp, os.path.join(folder, STATE_FILE))
    write_json(os.path.join(folder, CONFIG_FILE), tl_cfg)
    return folder


def load(folder: str):
    """The ``transformer_lens.HookedTransformer`` written by ``write`` (CPU, eval mode)."""
    torch = _torch()
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    with open(os.path.join(folder, CONFIG_FILE)) as f:
        tl_cfg = json.load(f)
    tl_cfg["dtype"] = getattr(torch, tl_cfg["dtype"])
    with warnings.catch_warnings():  # 3.x warns that HookedTransformer goes away in 4.0
        warnings.simplefilter("ignore", DeprecationWarning)
        model = HookedTransformer(HookedTransformerConfig(**tl_cfg))
    state = model.state_dict()  # keeps TransformerLens' own buffers (attention mask, IGNORE)
    state.update(torch.load(os.path.join(folder, STATE_FILE), weights_only=True))
    model.load_state_dict(state, strict=True)
    return model.eval()
