"""What ACE reads from a model: the activation ``H`` at a hook, and the Jacobians ``J_s`` of the
tail after it (the ACE paper's core extraction; docs/ace.md).

Shape legend: N activations, D activation width, S Jacobian samples, K tail-output width.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.ace.basis import as_float
from mechjax.chunks import map_chunks
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_cache, run_with_hooks
from mechjax.models.transformer import Params

Array = jax.Array

# Sequences per chunk of ACE's whole-model passes (activation read, interventions). Larger than
# ``mechjax.chunks.DEFAULT_CHUNK`` because the chunked program is slower: ACE on the ace_markov
# CPU config (3000 sequences, per-seed loop, one process, forms alternated, best of 3) took
# 18.7 s for 4 seeds in chunks of 1024 against 10.7 s unchunked (measured; docs/design.md). On
# CPU seeds are analysed one at a time
# (``vectorize.resolve_analysis_vectorize``), so memory still follows one seed's chunk.
ACE_CHUNK = 4096
# Seeds per block of a vmapped ACE program over seeds (``timing.vmap_in_seed_blocks``): 16 seeds
# vmapped at once at the ace_markov CPU config ran at 0.97x the per-seed loop, blocks of 1, 2
# and 4 seeds in one program at 1.18x, 1.10x and 1.13x (4: the same numbers as the plain vmap;
# measured, docs/design.md).
ACE_SEED_BLOCK = 4


@functools.partial(jax.jit, static_argnames=("cfg", "hook_name", "position", "chunk_size"))
def activations(params: Params, tokens: Array, cfg: ModelConfig, hook_name: str,
                position: int | None = None, chunk_size: int | None = ACE_CHUNK) -> Array:
    """``H``: the activation at ``hook_name`` for ``tokens [b, p]``, ``chunk_size`` sequences
    per forward pass (``mechjax.chunks``; None: all at once).

    ``position=None`` stacks every position (``[b * p, D]``); an int picks one (``[b, D]``).
    A ``hook_name`` that is no hook point of ``cfg`` raises ``HookNameError`` (a ``KeyError``)
    naming its near matches.
    """
    def read(toks):
        _, cache = run_with_cache(params, toks, cfg, names_filter=hook_name)
        h = cache[hook_name]
        return h if position is None else h[:, position]

    h = map_chunks(read, tokens, chunk_size)
    return h.reshape(-1, h.shape[-1]) if position is None else h


@functools.partial(jax.jit, static_argnames=("f",))
def tail_jacobians(f: Callable[..., Array], h: Array, ctx: Any = None) -> Array:
    """Jacobians ``J_s = df/dh`` of a tail ``f: R^D -> R^K`` at ``h [S, D]`` -> ``[S, K, D]``.

    ``f(h)`` or, with ``ctx`` (a pytree with leading axis S), ``f(h, ctx_s)`` -- e.g. the tokens of
    sample s when the tail runs the rest of the model. A scalar output (a task margin) gives K = 1.

    Mode is picked by shape: forward mode costs one JVP per *input* dimension (D passes), reverse
    mode one VJP per *output* dimension (K passes). So ``jacrev`` when K < D (a scalar margin: one
    backward pass) and ``jacfwd`` when K >= D (full logits of a large vocabulary).
    """
    h = as_float(h)
    d = h.shape[-1]
    args = (h[0],) if ctx is None else (h[0], jax.tree.map(lambda x: x[0], ctx))
    k = math.prod(jax.eval_shape(f, *args).shape)
    jac_fn = jax.jacrev(f) if k < d else jax.jacfwd(f)
    if ctx is None:
        return jax.vmap(lambda x: jac_fn(x).reshape(k, d))(h)
    return jax.vmap(lambda x, c: jac_fn(x, c).reshape(k, d))(h, ctx)


# Jacobian samples per chunk of ``hook_jacobians``: each sample runs one forward pass per
# input (or output) dimension of the tail, so 16 samples at D = 64 are 1,024 one-sequence passes,
# the work of about 1,000 sequences.
JACOBIAN_CHUNK = 16


@functools.partial(jax.jit, static_argnames=("cfg", "hook_name", "out_fn", "chunk_size"))
def hook_jacobians(params: Params, tokens: Array, cfg: ModelConfig, hook_name: str,
                   position: int | Array, out_fn: Callable[[Array], Array] | None = None,
                   read_position: int | Array | None = None,
                   chunk_size: int | None = JACOBIAN_CHUNK) -> Array:
    """Tail Jacobians through the model's own forward pass (``run_with_hooks``).

    For each sample s the tail is ``h -> out_fn(logits[read_position])`` where ``h`` replaces the
    activation at ``hook_name``, position ``position`` of sequence ``tokens[s]``; every other
    activation keeps its value. ``tokens [S, p]``; ``position`` an int or ``[S]`` ints;
    ``read_position`` defaults to ``position``; ``out_fn`` maps logits ``[V]`` to ``[K]`` or a
    scalar (identity by default). Returns ``[S, K, D]``, evaluated at the actual activations.
    ``chunk_size`` samples are differentiated at a time (``mechjax.chunks``; None: all at once).
    """
    n, p = tokens.shape
    pos = jnp.broadcast_to(jnp.asarray(position), (n,)) % p
    read = pos if read_position is None else jnp.broadcast_to(jnp.asarray(read_position), (n,)) % p

    def tail(h, ctx):
        toks, q, r = ctx
        hooks = {hook_name: lambda x: x.at[0, q].set(h.astype(x.dtype))}
        logits, _ = run_with_hooks(params, toks[None], cfg, hooks)
        out = logits[0, r]
        return out if out_fn is None else out_fn(out)

    def per_chunk(rows):
        toks, q, _ = rows
        _, cache = run_with_cache(params, toks, cfg, names_filter=hook_name)
        h0 = jnp.take_along_axis(cache[hook_name], q[:, None, None], axis=1)[:, 0]
        return tail_jacobians(tail, h0, rows)

    return map_chunks(per_chunk, (tokens, pos, read), chunk_size)


def jacobian_samples(tokens: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` distinct (sequence, position) pairs of ``tokens [B, T]``, drawn with numpy's
    ``default_rng(seed)``: where ``hook_jacobians`` samples the tail.

    Returns ``(tokens [n, T], pos [n])``: the sequence of each pair and the position in it.
    """
    b, t = tokens.shape
    if not 0 < n <= b * t:
        raise ValueError(f"n={n!r} Jacobian samples: must be in 1..{b * t} (the activations)")
    flat = np.random.default_rng(seed).choice(b * t, size=n, replace=False)
    return tokens[flat // t], (flat % t).astype(np.int32)
