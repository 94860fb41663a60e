"""Model configuration: one frozen dataclass that every architecture in mechjax is an instance of.

The config is static (hashable): it fixes shapes and code paths. Anything that should vary across a
vmapped sweep (learning rate, init scale, ...) lives in the trainer's traced hyperparameters instead.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal, Mapping

ActFn = Literal["relu", "gelu", "gelu_new"]
Norm = Literal["none", "pre", "post"]
Init = Literal["transformer_lens", "pytorch"]

ACT_FNS = ("relu", "gelu", "gelu_new")
NORMS = ("none", "pre", "post")
INITS = ("transformer_lens", "pytorch")


class ConfigError(ValueError):
    """A configuration value is out of range; the message names the value and what is allowed."""


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Architecture of a transformer; names follow TransformerLens' ``HookedTransformerConfig``.

    Attributes:
      mlp_layers: per-layer switch; ``None`` means every layer has an MLP. ``(False, True)`` drops
        layer 0's MLP (the Assign-and-Add model).
      normalization: ``none``; ``pre`` (LN before attention/MLP plus ``ln_final``, GPT-2 style);
        ``post`` (LN after each residual addition, PyTorch ``TransformerEncoderLayer`` style).
      merged_kq: attention scores use one trained ``W_KQ [n_heads, d_model, d_model]`` per layer
        instead of ``W_Q``/``W_K`` (the IMIR model).
      merged_ov: each head writes through one ``W_OV [n_heads, d_model, d_model]`` map.
      frozen: parameter names (exact keys, or suffixes such as ``"attn.W_OV"``) the optimizer must
        not update.
      attn_scale: scores are divided by this; ``None`` means ``sqrt(d_head)``.
    """

    n_layers: int = 2
    d_model: int = 128
    n_heads: int = 1
    d_head: int | None = None
    d_mlp: int | None = 512
    d_vocab: int = 74
    d_vocab_out: int | None = None
    n_ctx: int = 16
    act_fn: ActFn = "relu"
    use_bias: bool = False
    normalization: Norm = "none"
    ln_eps: float = 1e-5
    dropout: float = 0.0
    positional_embedding: bool = True
    causal: bool = True
    tied_unembed: bool = False
    unembed_bias: bool | None = None
    mlp_layers: tuple[bool, ...] | None = None
    attn_only: bool = False
    merged_kq: bool = False
    merged_ov: bool = False
    frozen: tuple[str, ...] = ()
    init: Init = "transformer_lens"
    attn_scale: float | None = None

    def __post_init__(self):
        self.validate()

    # ---- derived sizes ------------------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        return self.d_head if self.d_head is not None else self.d_model // self.n_heads

    @property
    def vocab_out(self) -> int:
        return self.d_vocab_out if self.d_vocab_out is not None else self.d_vocab

    @property
    def has_unembed_bias(self) -> bool:
        return self.use_bias if self.unembed_bias is None else self.unembed_bias

    @property
    def scale(self) -> float:
        return self.attn_scale if self.attn_scale is not None else float(self.head_dim) ** 0.5

    def has_mlp(self, layer: int) -> bool:
        if self.attn_only or not self.d_mlp:
            return False
        return True if self.mlp_layers is None else bool(self.mlp_layers[layer])

    def is_frozen(self, name: str) -> bool:
        return any(name == f or name.endswith("." + f) for f in self.frozen)

    # ---- validation ---------------------------------------------------------------------------
    def validate(self) -> None:
        for field in ("n_layers", "d_model", "n_heads", "d_vocab", "n_ctx"):
            value = getattr(self, field)
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f"model.{field}={value!r}: must be a positive integer")
        for field in ("d_head", "d_mlp", "d_vocab_out"):
            value = getattr(self, field)
            if value is not None and (not isinstance(value, int) or value < 0 or
                                      (value == 0 and field != "d_mlp")):
                raise ConfigError(f"model.{field}={value!r}: must be a positive integer or None")
        if self.d_head is None and self.d_model % self.n_heads:
            raise ConfigError(
                f"model.d_model={self.d_model} is not divisible by model.n_heads={self.n_heads}; "
                "set model.d_head explicitly or choose n_heads dividing d_model")
        if self.act_fn not in ACT_FNS:
            raise ConfigError(f"model.act_fn={self.act_fn!r}: allowed {ACT_FNS}")
        if self.normalization not in NORMS:
            raise ConfigError(f"model.normalization={self.normalization!r}: allowed {NORMS}")
        if self.init not in INITS:
            raise ConfigError(f"model.init={self.init!r}: allowed {INITS}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"model.dropout={self.dropout!r}: must be in [0, 1)")
        if self.mlp_layers is not None and len(self.mlp_layers) != self.n_layers:
            raise ConfigError(f"model.mlp_layers={self.mlp_layers!r}: needs one entry per layer "
                              f"(n_layers={self.n_layers})")
        if self.tied_unembed and self.vocab_out != self.d_vocab:
            raise ConfigError(f"model.tied_unembed=True needs d_vocab_out == d_vocab, got "
                              f"{self.vocab_out} != {self.d_vocab}")
        if self.attn_scale is not None and self.attn_scale <= 0:
            raise ConfigError(f"model.attn_scale={self.attn_scale!r}: must be positive")

    # ---- (de)serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "ModelConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown model config keys {unknown}; allowed: {sorted(known)}")
        values = dict(values)
        for key in ("mlp_layers", "frozen"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        return cls(**values)
