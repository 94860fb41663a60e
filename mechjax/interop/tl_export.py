"""One mechjax model as a TransformerLens model, and a TransformerLens model's weights back.

``write(params, cfg, folder)`` writes ``folder/state_dict.safetensors`` (float32 tensors with
TransformerLens names and shapes, written without torch) and
``folder/hooked_transformer_config.json`` (the architecture as ``HookedTransformerConfig``
keyword arguments, which ``TransformerBridgeConfig`` accepts too). ``load(folder)`` builds the
model with whichever TransformerLens is installed:

* 3.x: a ``HookedTransformer``;
* 4.x: a ``TransformerBridge`` around TransformerLens' own native model
  (``TransformerBridge.boot_native``, no model hub), the weights mapped onto it by TransformerLens'
  converter of TransformerLens-layout state dicts (``convert_tl_checkpoint``).

Either computes the same logits as mechjax and fires the same hook names with the same
activations (``run_with_cache``, ``run_with_hooks``). A folder written before safetensors, with
``state_dict.pt``, still loads. ``params_from_tl(model, cfg)`` goes the other way: the weights of
a ``HookedTransformer`` or a ``TransformerBridge`` as mechjax parameters. Loading needs the
optional extra: ``pip install -e ".[torch]"``.

mechjax parameters already carry TransformerLens names. What TransformerLens always has but a
mechjax config may leave out is written as exact zeros, which computes the same function: biases
of a bias-free model, the position embedding of a model without one, and the MLP of a layer
without an MLP (a zero MLP adds zero to the residual). A tied unembedding is written as
``W_E.T``. Post-LayerNorm blocks and the merged ``W_KQ`` / ``W_OV`` variants have no
TransformerLens equivalent and are refused.
"""
from __future__ import annotations

import importlib.metadata
import json
import math
import os
import warnings
from typing import Any, Mapping

import numpy as np

from mechjax.interop.weights import params_from_state_dict
from mechjax.io import write_json
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import Params

STATE_FILE = "state_dict.safetensors"
LEGACY_STATE_FILE = "state_dict.pt"  # written by earlier mechjax versions (torch.save)
CONFIG_FILE = "hooked_transformer_config.json"
INSTALL = "pip install -e \".[torch]\""


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
        out[name] = np.ascontiguousarray(value)  # safetensors stores C order only
    return out


def _torch():
    try:
        import torch
    except ImportError as err:
        raise ExportError(f"loading into TransformerLens needs torch: {INSTALL}") from err
    return torch


def tl_major_version() -> int:
    """The major version of the installed ``transformer-lens`` (3 or 4 are supported)."""
    try:
        version = importlib.metadata.version("transformer-lens")
    except importlib.metadata.PackageNotFoundError as err:
        raise ExportError(f"transformer-lens is not installed: {INSTALL}") from err
    return int(version.split(".")[0])


def write(params: Mapping[str, Any], cfg: ModelConfig, folder: str) -> str:
    """Write ``folder/state_dict.safetensors`` and ``folder/hooked_transformer_config.json``;
    returns ``folder``. ``params``: one model (no seed axis). Needs no torch."""
    from safetensors.numpy import save_file
    tl_cfg = hooked_transformer_config(cfg)
    state = tl_state_dict(params, cfg)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, STATE_FILE + ".tmp")
    save_file(state, tmp)
    os.replace(tmp, os.path.join(folder, STATE_FILE))
    legacy = os.path.join(folder, LEGACY_STATE_FILE)
    if os.path.exists(legacy):  # an earlier export's weights must not outlive this one's
        os.remove(legacy)
    write_json(os.path.join(folder, CONFIG_FILE), tl_cfg)
    return folder


def read_state(folder: str) -> dict[str, np.ndarray]:
    """The exported state dict as float32 arrays: ``state_dict.safetensors``, or the
    ``state_dict.pt`` of an earlier export (reading that one needs torch)."""
    path = os.path.join(folder, STATE_FILE)
    if os.path.exists(path):
        from safetensors.numpy import load_file
        return load_file(path)
    legacy = os.path.join(folder, LEGACY_STATE_FILE)
    if not os.path.exists(legacy):
        raise ExportError(f"{folder!r} holds neither {STATE_FILE} nor {LEGACY_STATE_FILE}; "
                          "write it with tl_export.write or run.export_tl")
    state = _torch().load(legacy, weights_only=True)
    return {k: v.float().numpy() for k, v in state.items()}


def read_config(folder: str) -> dict[str, Any]:
    """The ``HookedTransformerConfig`` keyword arguments written by ``write`` (dtype a string)."""
    with open(os.path.join(folder, CONFIG_FILE)) as f:
        return json.load(f)


def load(folder: str):
    """The model written by ``write`` with the installed TransformerLens (CPU, eval mode): a
    ``HookedTransformer`` on 3.x, a ``TransformerBridge`` on 4.x."""
    return load_bridge(folder) if tl_major_version() >= 4 else load_hooked(folder)


def load_hooked(folder: str):
    """The ``transformer_lens.HookedTransformer`` (TransformerLens 3.x) of ``folder``."""
    torch = _torch()
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    tl_cfg = read_config(folder)
    tl_cfg["dtype"] = getattr(torch, tl_cfg["dtype"])
    with warnings.catch_warnings():  # 3.x warns that HookedTransformer goes away in 4.0
        warnings.simplefilter("ignore", DeprecationWarning)
        model = HookedTransformer(HookedTransformerConfig(**tl_cfg))
    state = model.state_dict()  # keeps TransformerLens' own buffers (attention mask, IGNORE)
    state.update({k: torch.from_numpy(v) for k, v in read_state(folder).items()})
    model.load_state_dict(state, strict=True)
    return model.eval()


def load_bridge(folder: str):
    """The ``transformer_lens.TransformerBridge`` (TransformerLens 4.x) of ``folder``: the
    native model booted from the config, the state dict converted onto it (strict)."""
    torch = _torch()
    from transformer_lens import TransformerBridge
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.utilities.tl_checkpoint_conversion import convert_tl_checkpoint
    tl_cfg = read_config(folder)
    scale = float(tl_cfg["attn_scale"])
    # The native attention refuses attn_scale 1 for d_head > 1 (a guard against a mistaken
    # "standard" scale); mechjax means it (GPT-2 without scale_attn_weights), so it is set after
    # the boot on the modules that divide by it.
    unscaled = tl_cfg["d_head"] > 1 and math.isclose(scale, 1.0, abs_tol=1e-9)
    tl_cfg.update(dtype=getattr(torch, tl_cfg["dtype"]), device="cpu",
                  seed=0,  # the boot's random init runs on a forked RNG: the caller's is untouched
                  attn_scale=math.sqrt(tl_cfg["d_head"]) if unscaled else scale)
    bridge = TransformerBridge.boot_native(TransformerBridgeConfig.from_dict(tl_cfg),
                                           device="cpu")
    if unscaled:
        for block in bridge.blocks:
            block.attn.original_component.scale = scale
    state = {k: torch.from_numpy(v) for k, v in read_state(folder).items()}
    bridge.load_state_dict(convert_tl_checkpoint(state, bridge.cfg), strict=True)
    try:
        _hook_like_mechjax(bridge)
    except (AttributeError, KeyError, TypeError) as err:  # bridge internals of another 4.x
        warnings.warn(f"transformer-lens {importlib.metadata.version('transformer-lens')}: "
                      f"hook_attn_scores / hook_resid_mid keep the bridge's own semantics "
                      f"(reads agree with mechjax, edits may not): {err}")
    return bridge.eval()


def _hook_like_mechjax(bridge) -> None:
    """Make the bridge's two hook points that differ from mechjax (and HookedTransformer) on
    an edit act as mechjax's: ``attn.hook_attn_scores`` fires on the scaled, masked scores
    before the softmax (the native attention otherwise fires it afterwards, on the pattern,
    and discards edits), and ``hook_resid_mid`` is the residual stream itself (otherwise an
    alias of ``ln2.hook_in``, whose edit reaches the MLP input but not the residual).
    Reads at every other hook point, and edits, already agree."""
    from transformer_lens.hook_points import HookPoint
    template = bridge.adapter.component_mapping["blocks"]  # this bridge's own adapter
    template.hook_aliases = {k: v for k, v in template.hook_aliases.items()
                             if k != "hook_resid_mid"}
    for block in bridge.blocks:
        native = block.original_component
        block.hook_aliases = {k: v for k, v in block.hook_aliases.items()
                              if k != "hook_resid_mid"}
        block._hook_alias_registry.pop("hook_resid_mid", None)  # the resolved copy
        block.hook_resid_mid = HookPoint()  # registered by the bridge component's setattr
        native.forward = _block_forward(native, block.hook_resid_mid)
        native.attn.original_component.forward = _attention_forward(
            native.attn.original_component, native.attn.hook_attn_scores)
    bridge.clear_hook_registry()  # rescan: the new hook points under their full names
    bridge._initialize_hook_registry()


def _block_forward(native, resid_mid):
    """The native pre-LN block with ``resid_mid`` on the residual between the sublayers."""
    def forward(hidden_states, attention_mask=None, position_ids=None, **kwargs):
        attn_out, _ = native.attn(native.ln1(hidden_states), attention_mask=attention_mask,
                                  position_ids=position_ids)
        x = resid_mid(hidden_states + attn_out)
        if not native.cfg.attn_only:
            x = x + native.mlp(native.ln2(x))
        return (x,)
    return forward


def _attention_forward(native, scores_hook):
    """Standard multi-head attention on the native module's projections, with ``scores_hook``
    on the scores and ``pattern_fn`` (the bridge's ``hook_pattern``) on the pattern. Returns
    no pattern, so the bridge fires no hook on it after the fact; a padding mask (never passed
    for token tensors) takes the native path."""
    import torch
    original = native.forward

    def forward(hidden_states, attention_mask=None, position_ids=None, pattern_fn=None,
                **kwargs):
        if attention_mask is not None:
            return original(hidden_states, attention_mask=attention_mask,
                            position_ids=position_ids, pattern_fn=pattern_fn, **kwargs)
        b, p, _ = hidden_states.shape
        heads = lambda t: t.view(b, p, native.n_heads, native.d_head).transpose(1, 2)
        q, k, v = (heads(f(hidden_states)) for f in (native.q, native.k, native.v))
        scores = q @ k.transpose(-2, -1) / native.scale
        if native.causal:
            scores = scores.masked_fill(native.causal_mask[:p, :p], float("-inf"))
        pattern = torch.softmax(scores_hook(scores), dim=-1)
        if pattern_fn is not None:
            pattern = pattern_fn(pattern)
        return native.o((pattern @ v).transpose(1, 2).reshape(b, p, -1)), None
    return forward


def model_config_from_tl(tl_cfg: Mapping[str, Any] | Any) -> ModelConfig:
    """The mechjax ``ModelConfig`` of a TransformerLens config (a ``TransformerBridgeConfig``,
    a ``HookedTransformerConfig`` or a dict of its fields, e.g. ``model.cfg``). Biases are kept
    (TransformerLens always has them); what mechjax cannot compute is refused."""
    get = tl_cfg.get if isinstance(tl_cfg, Mapping) else (lambda k, d=None: getattr(tl_cfg, k, d))
    norm = get("normalization_type")
    if norm not in ("LN", None):
        raise ExportError(f"normalization_type={norm!r}: mechjax computes 'LN' or None")
    unsupported = [k for k, off in (("positional_embedding_type", "standard"),
                                    ("gated_mlp", False), ("parallel_attn_mlp", False),
                                    ("final_rms", False), ("use_attn_scale", True))
                   if get(k, off) != off]
    kv_heads = get("n_key_value_heads")
    if kv_heads not in (None, get("n_heads")):
        unsupported.append("n_key_value_heads")
    if unsupported:
        raise ExportError(f"TransformerLens config {unsupported} differ from what mechjax "
                          "computes (standard positions, plain MLP, sequential blocks, LayerNorm, "
                          "scaled attention, one key/value per head)")
    scale, d_vocab_out = get("attn_scale", -1.0), get("d_vocab_out", -1)
    return ModelConfig(
        n_layers=get("n_layers"), d_model=get("d_model"), n_heads=get("n_heads"),
        d_head=get("d_head"), d_mlp=None if get("attn_only", False) else get("d_mlp"),
        d_vocab=get("d_vocab"), d_vocab_out=d_vocab_out if d_vocab_out > 0 else None,
        n_ctx=get("n_ctx"), act_fn=get("act_fn"), use_bias=True, unembed_bias=True,
        normalization="pre" if norm == "LN" else "none", ln_eps=float(get("eps", 1e-5)),
        causal=get("attention_dir", "causal") == "causal",
        attn_only=bool(get("attn_only", False)),
        # -1 is the 4.x sentinel for sqrt(d_head); 3.x stores sqrt(d_head) itself
        attn_scale=None if scale <= 0 or math.isclose(scale, math.sqrt(get("d_head"))) else
        float(scale))


def params_from_tl(model, cfg: ModelConfig | None = None) -> Params:
    """The weights of a TransformerLens model as mechjax parameters of ``cfg`` (default:
    ``model_config_from_tl(model.cfg)``): a ``TransformerBridge`` (4.x, through its
    TransformerLens-layout ``get_params()``) or a ``HookedTransformer`` (3.x, its
    ``state_dict()``). Checked by ``weights.params_from_state_dict``: every parameter ``cfg``
    has must be there with its shape, and what ``cfg`` lacks must be exactly zero. A bridge in
    compatibility mode gives its processed weights (LayerNorm scales folded into the next
    layer, writing weights and unembedding centered); mechjax then computes what that bridge
    computes, whose logits differ from the unprocessed model's by a constant per position."""
    torch = _torch()
    cfg = cfg if cfg is not None else model_config_from_tl(model.cfg)
    tensors = model.get_params() if hasattr(model, "get_params") else model.state_dict()
    with torch.no_grad():
        state = {k: v.detach().to("cpu", torch.float32).numpy() for k, v in tensors.items()
                 if not k.endswith((".mask", ".IGNORE"))}  # 3.x buffers, not parameters
    if cfg.tied_unembed and "unembed.W_U" in state:
        if not np.array_equal(state["unembed.W_U"], state["embed.W_E"].T):
            raise ExportError("model.tied_unembed=True but the model's unembed.W_U is not "
                              "embed.W_E transposed; load it with tied_unembed=False")
        del state["unembed.W_U"]
    return params_from_state_dict(state, cfg, source=f"TransformerLens {type(model).__name__}")
