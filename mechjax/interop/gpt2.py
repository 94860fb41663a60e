"""GPT-2-format checkpoints (the folder ``transformers.GPT2LMHeadModel.save_pretrained`` writes) to
and from mechjax's ``ModelConfig`` plus TransformerLens-named parameters.

GPT-2 is mechjax's ``normalization="pre"`` architecture with biases, learned positions, a causal
mask, a final LayerNorm and an unembedding tied to ``W_E`` with no bias. What has to be converted:
  * ``Conv1D`` weights are stored ``[in, out]`` (``y = x @ W + b``), like TransformerLens' plain
    matrices, so MLP weights need no transpose;
  * ``attn.c_attn`` fuses Q, K and V into one ``[d, 3d]`` matrix whose columns are ``(qkv, head,
    d_head)``; TransformerLens keeps ``W_Q [h, d, e]`` per head;
  * ``attn.c_proj`` reads the heads' outputs concatenated as ``(head, d_head)``: ``W_O [h, e, d]``.
The attention mask buffers of older checkpoints (``attn.bias``, ``attn.masked_bias``) are the
causal mask mechjax builds itself and are ignored. Dropout is not carried over: the loaded model
is for analysis, and GPT-2 drops at places (the embeddings) mechjax's dropout does not.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

from mechjax import filecheck
from mechjax.models.config import ModelConfig
from mechjax.io import write_json
from mechjax.interop.files import (CONFIG_FILE, SAFETENSORS_FILE, read_config, read_state_dict,
                                   weights_path)
from mechjax.interop.gpt2_config import (GPT2FormatError, check_gpt2_compatible,  # noqa: F401
                                         config_from_hf, config_to_hf, gpt2_model_config)
from mechjax.models.transformer import Params
from mechjax.interop.tl_export import ExportError, tl_state_dict
from mechjax.interop.weights import WeightsError, params_from_state_dict

_MASK_BUFFERS = ("bias", "masked_bias")  # h.{l}.attn.<buffer>

# ---- state dict <-> params ---------------------------------------------------------------------
def hf_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor of a GPT-2 state dict (without the ``transformer.`` prefix) and its shape."""
    d, m, v = cfg.d_model, cfg.d_mlp, cfg.d_vocab
    shapes: dict[str, tuple[int, ...]] = {"wte.weight": (v, d), "wpe.weight": (cfg.n_ctx, d),
                                          "ln_f.weight": (d,), "ln_f.bias": (d,)}
    for layer in range(cfg.n_layers):
        pre = f"h.{layer}."
        shapes.update({pre + "ln_1.weight": (d,), pre + "ln_1.bias": (d,),
                       pre + "attn.c_attn.weight": (d, 3 * d), pre + "attn.c_attn.bias": (3 * d,),
                       pre + "attn.c_proj.weight": (d, d), pre + "attn.c_proj.bias": (d,),
                       pre + "ln_2.weight": (d,), pre + "ln_2.bias": (d,),
                       pre + "mlp.c_fc.weight": (d, m), pre + "mlp.c_fc.bias": (m,),
                       pre + "mlp.c_proj.weight": (m, d), pre + "mlp.c_proj.bias": (d,)})
    if not cfg.tied_unembed:
        shapes["lm_head.weight"] = (v, d)
    return shapes


# Tensors that only change name (Conv1D's [in, out] is TransformerLens' layout already); the fused
# c_attn and c_proj.weight change shape and are converted on their own.
_SAME_LAYOUT = {"wte.weight": "embed.W_E", "wpe.weight": "pos_embed.W_pos",
                "ln_f.weight": "ln_final.w", "ln_f.bias": "ln_final.b"}
_SAME_LAYOUT_PER_LAYER = {"ln_1.weight": "ln1.w", "ln_1.bias": "ln1.b", "ln_2.weight": "ln2.w",
                          "ln_2.bias": "ln2.b", "attn.c_proj.bias": "attn.b_O",
                          "mlp.c_fc.weight": "mlp.W_in", "mlp.c_fc.bias": "mlp.b_in",
                          "mlp.c_proj.weight": "mlp.W_out", "mlp.c_proj.bias": "mlp.b_out"}


def _renames(cfg: ModelConfig) -> dict[str, str]:
    """GPT-2 name (unprefixed) -> TransformerLens name, for the tensors of ``_SAME_LAYOUT*``."""
    names = dict(_SAME_LAYOUT)
    for layer in range(cfg.n_layers):
        names.update({f"h.{layer}.{hf}": f"blocks.{layer}.{tl}"
                      for hf, tl in _SAME_LAYOUT_PER_LAYER.items()})
    return names


def _strip_prefix(state: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    # GPT2LMHeadModel saves "transformer.h.0...", GPT2Model (and the original hub files) "h.0...".
    out = {}
    for key, value in state.items():
        key = key.removeprefix("transformer.")
        parts = key.split(".")
        if not (len(parts) == 4 and parts[2] == "attn" and parts[3] in _MASK_BUFFERS):
            out[key] = value
    return out


def params_from_hf(state: Mapping[str, np.ndarray], cfg: ModelConfig,
                   source: str = "GPT-2 state dict") -> Params:
    """TransformerLens-named parameters of ``cfg`` from a GPT-2 state dict."""
    state = _strip_prefix(state)
    if cfg.tied_unembed and "lm_head.weight" in state:
        if not np.array_equal(state.pop("lm_head.weight"), state.get("wte.weight")):
            raise GPT2FormatError(f"{source}: lm_head.weight differs from wte.weight although "
                                  "config.json has tie_word_embeddings=true")
    expected = hf_shapes(cfg)
    missing = sorted(set(expected) - set(state))
    unknown = sorted(set(state) - set(expected))
    wrong = [f"{k}: {tuple(state[k].shape)}, config.json implies {expected[k]}"
             for k in sorted(expected) if k in state and tuple(state[k].shape) != expected[k]]
    if missing or unknown or wrong:
        parts = ([f"missing tensors {missing[:6]}"] if missing else []) + \
                ([f"tensors GPT-2 does not have {unknown[:6]}"] if unknown else []) + \
                ([f"shape mismatches [{'; '.join(wrong[:6])}]"] if wrong else [])
        raise GPT2FormatError(f"{source} does not fit its config.json: " + ", ".join(parts))
    filecheck.check_floating(state, expected, source, GPT2FormatError)
    filecheck.check_finite(state, source, GPT2FormatError, names=expected)
    h, e = cfg.n_heads, cfg.head_dim
    tl = {tl_name: state[hf_name] for hf_name, tl_name in _renames(cfg).items()}
    for layer in range(cfg.n_layers):
        hf, pre = f"h.{layer}.", f"blocks.{layer}."
        # c_attn columns are (qkv, head, d_head): split, then put the head axis first.
        w_qkv = state[hf + "attn.c_attn.weight"].reshape(cfg.d_model, 3, h, e)
        b_qkv = state[hf + "attn.c_attn.bias"].reshape(3, h, e)
        for i, name in enumerate("QKV"):
            tl[f"{pre}attn.W_{name}"] = w_qkv[:, i].transpose(1, 0, 2)
            tl[f"{pre}attn.b_{name}"] = b_qkv[i]
        # c_proj reads the heads concatenated as (head, d_head)
        tl[pre + "attn.W_O"] = state[hf + "attn.c_proj.weight"].reshape(h, e, cfg.d_model)
    if not cfg.tied_unembed:
        tl["unembed.W_U"] = state["lm_head.weight"].T
    try:
        return params_from_state_dict(tl, cfg, source=source)
    except WeightsError as err:  # the checks above should make this unreachable
        raise GPT2FormatError(str(err)) from err


def params_to_hf(params: Mapping[str, Any], cfg: ModelConfig) -> dict[str, np.ndarray]:
    """The ``GPT2LMHeadModel`` state dict (``transformer.`` prefixed) of mechjax ``params``."""
    check_gpt2_compatible(cfg)
    try:
        # TransformerLens' layout is a superset of the config's (zeros for absent biases).
        tl = tl_state_dict(params, cfg)
    except ExportError as err:
        raise GPT2FormatError(f"parameters do not fit the model config: {err}") from err
    if np.any(tl["unembed.b_U"] != 0):
        raise GPT2FormatError("unembed.b_U is non-zero; GPT2LMHeadModel's lm_head has no bias")
    d = cfg.d_model
    out = {hf_name: tl[tl_name] for hf_name, tl_name in _renames(cfg).items()}
    for layer in range(cfg.n_layers):
        hf, pre = f"h.{layer}.", f"blocks.{layer}."
        out[hf + "attn.c_attn.weight"] = np.concatenate(
            [tl[f"{pre}attn.W_{n}"].transpose(1, 0, 2).reshape(d, d) for n in "QKV"], axis=1)
        out[hf + "attn.c_attn.bias"] = np.concatenate(
            [tl[f"{pre}attn.b_{n}"].reshape(d) for n in "QKV"])
        out[hf + "attn.c_proj.weight"] = tl[pre + "attn.W_O"].reshape(d, d)
    out = {"transformer." + k: np.ascontiguousarray(v, np.float32) for k, v in out.items()}
    if not cfg.tied_unembed:
        out["lm_head.weight"] = np.ascontiguousarray(tl["unembed.W_U"].T, np.float32)
    return out


# ---- folders -------------------------------------------------------------------------------------
def load_gpt2(folder: str) -> tuple[ModelConfig, Params]:
    """``(cfg, params)`` of the GPT-2 checkpoint in ``folder`` (``config.json`` plus
    ``model.safetensors``, sharded safetensors, or ``pytorch_model.bin`` with torch installed).

    ``params`` have TransformerLens names and shapes, float32; ``mechjax.models.transformer.apply(params,
    tokens, cfg)`` gives ``GPT2LMHeadModel``'s logits.
    """
    values = read_config(folder)
    cfg = config_from_hf(values, source=os.path.join(folder, CONFIG_FILE))
    return cfg, params_from_hf(read_state_dict(folder), cfg,
                               source=f"checkpoint weights {weights_path(folder)!r}")


def save_gpt2(folder: str, cfg: ModelConfig, params: Mapping[str, Any], tokenizer=None) -> str:
    """Write ``params`` of a GPT-2-architecture ``cfg`` as a folder that
    ``transformers.GPT2LMHeadModel.from_pretrained(folder)`` opens; returns ``folder``.

    ``tokenizer`` (a ``mechjax.interop.tokenizer.Tokenizer``) is saved beside the weights; its
    ``<|endoftext|>`` token, when it has one, becomes the BOS/EOS id of ``config.json``.
    """
    from safetensors.numpy import save_file
    state = params_to_hf(params, cfg)  # every check happens before anything is written
    eos = tokenizer.token_to_id("<|endoftext|>") if tokenizer is not None else None
    hf_config = config_to_hf(cfg, bos_eos_id=eos)
    os.makedirs(folder, exist_ok=True)
    # transformers refuses safetensors files without the "format" metadata of torch checkpoints.
    tmp = os.path.join(folder, SAFETENSORS_FILE + f".{os.getpid()}.tmp")
    save_file(state, tmp, metadata={"format": "pt"})
    os.replace(tmp, os.path.join(folder, SAFETENSORS_FILE))
    write_json(os.path.join(folder, CONFIG_FILE), hf_config)
    if tokenizer is not None:
        tokenizer.save(folder)
    return folder


def read_hf_config(folder: str) -> ModelConfig:
    """Only the ``ModelConfig`` of the checkpoint in ``folder`` (no weights read)."""
    return config_from_hf(read_config(folder), source=os.path.join(folder, CONFIG_FILE))


__all__ = ["GPT2FormatError", "check_gpt2_compatible", "config_from_hf", "config_to_hf",
           "gpt2_model_config", "hf_shapes", "load_gpt2", "params_from_hf", "params_to_hf",
           "read_hf_config", "save_gpt2"]
