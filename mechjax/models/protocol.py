"""What training, sweeps, saved runs and analyses need from a model: ``Model``.

A model is a static, hashable ``config`` (written to a run's ``model_config.json``) plus pure
functions of a parameter pytree:

* ``init(key, scale) -> params``: parameters drawn from a key (``scale``: the traced
  ``init_scale`` hyperparameter), so a sweep vmaps it over seeds;
* ``logits(params, tokens, readout, key, hparams, fast) -> logits``: the logits where a task's
  labels are read (``[b, v]`` at position ``readout``, or ``[b, p, v]`` when ``readout`` is None);
  ``key`` drives dropout, ``hparams`` carries the traced hyperparameters the model reads (e.g. an
  attention rate), and ``fast`` says the exact one-position shortcut may be taken;
* ``param_shapes() -> {name: shape}`` and ``is_frozen(name)``: what the optimizer updates;
* ``hparams``: the traced hyperparameters the model reads, with their defaults;
* ``fast_readout(dropout_drawn) -> bool`` (optional): whether an exact one-position shortcut
  exists for this config;
* ``loss(params, batch, key, hparams) -> (loss, accuracy)`` (optional): a loss computed without
  full logits, equal to the cross-entropy of ``logits``.

``transformer_model(cfg)`` is the built-in transformer; ``attention_rate.rate_model`` and
``icl_minimal.icl_model`` are the other built-in ones. ``mechjax.training.make_train`` takes any of
them (or a plain ``ModelConfig``, meaning ``transformer_model(cfg)``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import jax

from mechjax.models import fastpath
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import Params, forward, init_params, param_shapes

LogitsFn = Callable[[Params, jax.Array, "int | None", "jax.Array | None", Mapping[str, jax.Array],
                     bool], jax.Array]


@dataclasses.dataclass(frozen=True, eq=False)
class Model:
    """A model as the trainer sees it (see the module docstring)."""

    config: Any
    init: Callable[[jax.Array, Any], Params]
    logits: LogitsFn
    param_shapes: Callable[[], Mapping[str, tuple[int, ...]]]
    is_frozen: Callable[[str], bool] = lambda name: False
    hparams: Mapping[str, float] = dataclasses.field(default_factory=dict)
    fast_readout: Callable[[bool], bool] | None = None
    loss: Callable[..., tuple[jax.Array, jax.Array]] | None = None

    @property
    def has_frozen(self) -> bool:
        return bool(getattr(self.config, "frozen", ()))


def transformer_logits(cfg: ModelConfig, params: Params, tokens: jax.Array, readout: int | None,
                       key: jax.Array | None, fast: bool, **rate: Any) -> jax.Array:
    """The transformer's logits where the labels are read; ``rate``: ``attn_rate`` and
    ``attn_mixing`` for the fast path at an attention rate (the full path takes them as a hook)."""
    if readout is not None and fast:
        return fastpath.readout_logits(params, tokens, cfg, readout, key, **rate)
    out = forward(params, tokens, cfg, key=key)
    return out if readout is None else out[:, readout]


def transformer_model(cfg: ModelConfig) -> Model:
    """The built-in transformer (``mechjax.models.transformer``) as a ``Model``."""
    return Model(
        config=cfg,
        init=lambda key, scale: init_params(key, cfg, scale),
        logits=lambda params, tokens, readout, key, hparams, fast: transformer_logits(
            cfg, params, tokens, readout, key, fast),
        param_shapes=lambda: param_shapes(cfg),
        is_frozen=cfg.is_frozen,
        fast_readout=lambda dropout_drawn: fastpath.applies(cfg, dropout_active=dropout_drawn))


def as_model(model: "Model | ModelConfig") -> Model:
    """``model`` itself, or the built-in transformer of a ``ModelConfig``."""
    if isinstance(model, Model):
        return model
    if isinstance(model, ModelConfig):
        return transformer_model(model)
    raise TypeError(f"model: expected a mechjax.models.Model or a ModelConfig, got "
                    f"{type(model).__name__}")
