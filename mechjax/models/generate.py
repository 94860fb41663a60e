"""Sampling continuations of right-padded prompts, with temperature and top-k, as one compiled loop.

The prompts sit in a fixed buffer ``tokens [B, T]`` (``T`` >= longest prompt + new tokens); step t
reads the logits at each row's current last position ``lengths - 1 + t`` and writes the sampled
token after it. The whole prefix is recomputed each step (no KV cache): the models this is for
are small, and it keeps every step an ordinary forward pass that hooks can intervene in.
``logits_fn(args, tokens, pos)`` supplies the logits at ``pos`` -- a plain forward, or one with
an intervention at the current position (what steering during generation needs). It is a static
argument, so it should compare by value (a frozen dataclass such as ``PlainLogits``) and take
everything traced (parameters, directions) through ``args``.

Shape legend: B prompts, T buffer positions, V vocabulary, N new tokens.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp

from mechjax.models.config import ModelConfig
from mechjax.models.transformer import Params, apply

Array = jax.Array
# (args, tokens [B, T], pos [B]) -> logits [B, V]
LogitsFn = Callable[[Any, Array, Array], Array]


@dataclasses.dataclass(frozen=True)
class PlainLogits:
    """``logits_fn`` of the model without intervention; ``args`` are its parameters."""

    cfg: ModelConfig

    def __call__(self, params: Params, tokens: Array, pos: Array) -> Array:
        return apply(params, tokens, self.cfg)[jnp.arange(tokens.shape[0]), pos]


def sample_token(key: Array, logits: Array, temperature: float = 1.0,
                 top_k: int | None = None, greedy: bool | Array = False) -> Array:
    """One token per row from ``softmax(logits / temperature)`` restricted to the ``top_k``
    largest logits (all when None), or the most likely one with ``greedy`` (traced, so greedy
    and sampled decoding share one program): ``logits [B, V]`` -> ``[B]`` int32."""
    logits = logits.astype(jnp.float32)
    best = jnp.argmax(logits, axis=-1).astype(jnp.int32)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = jax.lax.top_k(logits, top_k)[0][:, -1:]
        logits = jnp.where(logits >= kth, logits, -jnp.inf)
    drawn = jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
    return jnp.where(greedy, best, drawn)


@functools.partial(jax.jit, static_argnames=("logits_fn", "n_new", "top_k"))
def generate(logits_fn: LogitsFn, args: Any, tokens: Array, lengths: Array, key: Array,
             n_new: int, temperature: float = 1.0, top_k: int | None = None,
             greedy: bool | Array = False) -> Array:
    """``tokens [B, T]`` with ``n_new`` sampled (or, with ``greedy``, most likely) tokens
    written after each row's prompt (``lengths [B]``); step t uses ``fold_in(key, t)``, so two
    ``logits_fn`` given the same key draw with the same random numbers. ``T`` must hold every
    continuation."""
    if n_new < 1:
        raise ValueError(f"n_new={n_new!r}: must be >= 1")
    rows = jnp.arange(tokens.shape[0])

    def step(toks, t):
        pos = lengths - 1 + t
        new = sample_token(jax.random.fold_in(key, t), logits_fn(args, toks, pos), temperature,
                           top_k, greedy)
        return toks.at[rows, pos + 1].set(new), new

    out, _ = jax.lax.scan(step, tokens, jnp.arange(n_new))
    return out


def check_room(lengths, n_new: int, n_ctx: int) -> None:
    """Raise unless the longest prompt plus ``n_new`` tokens fits in the model's context."""
    longest = int(max(lengths))
    if longest + n_new > n_ctx:
        raise ValueError(f"prompts of up to {longest} tokens + {n_new} new tokens exceed the "
                         f"model's n_ctx={n_ctx}")


__all__ = ["LogitsFn", "check_room", "PlainLogits", "generate", "sample_token"]
