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

import difflib
import functools
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


class HookNameError(KeyError, ValueError):
    """A hook name that is not a hook point of the model; one line naming the near matches."""

    def __str__(self) -> str:  # KeyError's own would quote the message
        return str(self.args[0])


def hook_names(cfg: ModelConfig, tokens_shape: tuple[int, int] = (1, 1)) -> list[str]:
    """Every hook point that the forward pass of ``cfg`` visits, in execution order."""
    try:
        return list(_cached_hook_names(cfg, tuple(tokens_shape)))
    except TypeError:  # a config holding a list is not hashable: no cache
        return _traced_hook_names(cfg, tuple(tokens_shape))


@functools.lru_cache(maxsize=64)
def _cached_hook_names(cfg: ModelConfig, tokens_shape: tuple[int, int]) -> tuple[str, ...]:
    # every checked call would otherwise trace the whole forward pass again
    return tuple(_traced_hook_names(cfg, tokens_shape))


def _traced_hook_names(cfg: ModelConfig, tokens_shape: tuple[int, int]) -> list[str]:
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
    ``names_filter`` (nothing by default). A name in ``hooks`` or in a listed ``names_filter``
    that is not a hook point of the model raises ``HookNameError`` naming the near matches.
    """
    listed: tuple[str, ...] = ()  # names to check; a predicate is the caller's to get right
    if isinstance(names_filter, str):
        listed = (names_filter,)
    elif names_filter is not None and not callable(names_filter):
        names_filter = listed = tuple(names_filter)  # an iterator is read once: here
    check_hook_names(cfg, [*hooks, *listed], tokens.shape)
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


def check_hook_names(cfg: ModelConfig, names: Iterable[str],
                     tokens_shape: tuple[int, ...] = (1, 1)) -> None:
    """Raise ``HookNameError`` (one line) for any of ``names`` that is not a hook point of
    ``cfg``, with its near matches among ``hook_names(cfg)``."""
    names = list(names)
    if not names:
        return
    valid = hook_names(cfg, tuple(tokens_shape))
    unknown = sorted(set(names) - set(valid), key=names.index)
    if not unknown:
        return
    raise unknown_names_error(unknown, valid, "hook name",
                              f"hook_names(cfg) lists all {len(valid)} of this model")


def unknown_names_error(unknown: list[str], valid: list[str], what: str,
                        listing: str) -> HookNameError:
    """One line naming each unknown ``what`` with its near matches among ``valid`` (difflib),
    then ``listing``: where the user finds them all."""
    parts = []
    for name in unknown:
        near = difflib.get_close_matches(str(name), valid, n=3, cutoff=0.6)
        parts.append(f"{name!r} (near matches: {', '.join(near)})" if near
                     else f"{name!r} (no near match)")
    return HookNameError(f"unknown {what}{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(parts)}; {listing}")


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
