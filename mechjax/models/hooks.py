"""Functional caches and interventions on TransformerLens hook points.

``run_with_cache`` returns activations as a dict; ``run_with_hooks`` replaces activations by
functions of them. Both are pure, so they compose with ``jax.vmap`` over seeds and with
``jax.grad`` / ``jax.jacfwd`` (a hook that *adds* a zero-valued argument gives gradients with
respect to an activation).

Hook points (shape comments; b batch, p/q/k positions, h heads, e d_head, d d_model, m d_mlp):
  hook_embed [b, p, d]                      hook_pos_embed [p, d]
  blocks.{l}.hook_resid_pre [b, p, d]       blocks.{l}.hook_resid_mid [b, p, d]
  blocks.{l}.hook_resid_post [b, p, d]      blocks.{l}.hook_attn_out / hook_mlp_out [b, p, d]
  blocks.{l}.attn.hook_q / hook_k / hook_v [b, p, h, e]
  blocks.{l}.attn.hook_attn_scores / hook_pattern [b, h, q, k]   (scores after the causal mask)
  blocks.{l}.attn.hook_z [b, p, h, e]       ([b, p, h, d] for the merged-OV model)
  blocks.{l}.mlp.hook_pre / hook_post [b, p, m]
  blocks.{l}.ln{1,2}.hook_scale [b, p, 1] / hook_normalized [b, p, d],  ln_final.*
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

import jax
import jax.numpy as jnp

from mechjax.models.config import ModelConfig
from mechjax.models.transformer import Params, forward

NamesFilter = Callable[[str], bool] | Iterable[str] | str | None
Hooks = Mapping[str, Callable[[jax.Array], jax.Array]]


def _as_predicate(names_filter: NamesFilter) -> Callable[[str], bool]:
    if names_filter is None:
        return lambda name: True
    if callable(names_filter):
        return names_filter
    if isinstance(names_filter, str):
        return lambda name: name == names_filter
    names = frozenset(names_filter)
    return lambda name: name in names


def hook_names(cfg: ModelConfig, tokens_shape: tuple[int, int] = (1, 1)) -> list[str]:
    """Every hook point that the forward pass of ``cfg`` visits, in execution order."""
    seen: list[str] = []

    def record(name, x):
        seen.append(name)
        return x

    jax.eval_shape(lambda p, t: forward(p, t, cfg, record),
                   _abstract_params(cfg), jax.ShapeDtypeStruct(tokens_shape, jnp.int32))
    return seen


def _abstract_params(cfg: ModelConfig):
    from mechjax.models.transformer import param_shapes
    return {k: jax.ShapeDtypeStruct(s, jnp.float32) for k, s in param_shapes(cfg).items()}


def run_with_hooks(params: Params, tokens: jax.Array, cfg: ModelConfig, hooks: Hooks,
                   names_filter: NamesFilter = (), key: jax.Array | None = None,
                   ) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Forward pass where ``hooks[name](x)`` replaces the activation at ``name``.

    Returns ``(logits, cache)``; the cache holds the (post-hook) activations picked by
    ``names_filter`` (nothing by default). Unknown hook names raise, listing the valid ones.
    """
    _check_names(hooks, cfg, tokens.shape)
    wanted = _as_predicate(names_filter)
    cache: dict[str, jax.Array] = {}

    def hook(name, x):
        if name in hooks:
            x = hooks[name](x)
        if wanted(name):
            cache[name] = x
        return x

    logits = forward(params, tokens, cfg, hook, key)
    return logits, cache


def run_with_cache(params: Params, tokens: jax.Array, cfg: ModelConfig,
                   names_filter: NamesFilter = None, key: jax.Array | None = None,
                   ) -> tuple[jax.Array, dict[str, jax.Array]]:
    """``(logits, {hook_name: activation})`` for the hook points picked by ``names_filter``."""
    return run_with_hooks(params, tokens, cfg, {}, names_filter if names_filter is not None
                          else (lambda name: True), key)


def _check_names(hooks: Hooks, cfg: ModelConfig, shape) -> None:
    if not hooks:
        return
    valid = hook_names(cfg, tuple(shape))
    unknown = sorted(set(hooks) - set(valid))
    if unknown:
        raise KeyError(f"unknown hook names {unknown}; this model has {valid}")


# ---- common interventions ----------------------------------------------------------------------
def zero_ablate(x: jax.Array) -> jax.Array:
    return jnp.zeros_like(x)


def mean_ablate(mean: jax.Array) -> Callable[[jax.Array], jax.Array]:
    return lambda x: jnp.broadcast_to(mean, x.shape).astype(x.dtype)


def project_onto(basis: jax.Array, center: jax.Array | None = None,
                 keep: bool = True) -> Callable[[jax.Array], jax.Array]:
    """Hook keeping (``keep=True``) or removing the span of ``basis [d, r]`` (orthonormal columns).

    With ``center`` the projection acts on ``x - center`` and the centre is added back.
    """
    def fn(x):
        c = 0.0 if center is None else center
        xc = x - c
        proj = (xc @ basis) @ basis.T
        return (proj if keep else xc - proj) + c
    return fn


def patch(source: jax.Array, index=None) -> Callable[[jax.Array], jax.Array]:
    """Hook replacing the activation (or ``x[index]``) by ``source``."""
    if index is None:
        return lambda x: jnp.broadcast_to(source, x.shape).astype(x.dtype)
    return lambda x: x.at[index].set(source)
