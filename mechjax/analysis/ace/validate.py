"""ACE validation (the ACE paper's causal validation; docs/ace.md): interventions on the core
through hooks, the causal rank scans, and the necessary and sufficient ranks read from them.

Shape legend: D activation width, R basis columns, b sequences, p positions, V vocabulary.
"""
from __future__ import annotations

import functools
from typing import Callable, Literal

import jax
import jax.numpy as jnp

from mechjax.analysis.ace.reads import ACE_CHUNK
from mechjax.chunks import map_chunks
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import project_onto, run_with_hooks
from mechjax.metrics import accuracy, cross_entropy, roc_auc
from mechjax.models.transformer import Params, unembed

Array = jax.Array
Metric = Literal["accuracy", "loss"] | Callable[[Array, Array, Array | None], Array]


def core_only_hook(basis: Array) -> Callable[[Array], Array]:
    """``h <- h Q Q^T`` at every position, uncentred (toy models). Masked bases are fine."""
    return project_onto(basis, None, keep=True)


def core_removed_hook(basis: Array) -> Callable[[Array], Array]:
    """``h <- h - h Q Q^T`` at every position, uncentred (toy models)."""
    return project_onto(basis, None, keep=False)


def centred_hook(basis: Array, mean: Array, mode: Literal["keep", "remove", "flip"],
                 position: int | Array = -1) -> Callable[[Array], Array]:
    """LLM intervention at one position, centred on the training mean ``mu`` (docs/ace.md).

    ``x = h - mu``, ``xp = x Q Q^T``; keep ``x' = xp``; remove ``x' = x - xp``; flip
    ``x' = x - 2 xp``; ``h <- x' + mu``. Acts on ``h [b, p, D]`` at ``position`` only: an int
    (the same for every row), or ``[b]`` ints, one per row (right-padded prompts of different
    lengths end at different positions).
    """
    if mode not in ("keep", "remove", "flip"):
        raise ValueError(f"mode={mode!r}: allowed 'keep', 'remove', 'flip'")

    def fn(h):
        rows = jnp.arange(h.shape[0])
        pos = jnp.broadcast_to(jnp.asarray(position), rows.shape) % h.shape[1]
        x = h[rows, pos] - mean
        xp = (x @ basis) @ basis.T
        new = {"keep": xp, "remove": x - xp, "flip": x - 2.0 * xp}[mode]
        return h.at[rows, pos].set((new + mean).astype(h.dtype))

    return fn


def _score(kind: Metric, logits: Array, labels: Array, weights: Array | None) -> Array:
    if callable(kind):
        return kind(logits, labels, weights)
    if kind == "accuracy":
        return accuracy(logits, labels, weights)
    if kind == "loss":
        return cross_entropy(logits, labels, weights)
    raise ValueError(f"metric={kind!r}: allowed 'accuracy', 'loss' or a callable")


def intervened_metric(params: Params, tokens: Array, labels: Array, cfg: ModelConfig,
                      hook_name: str, hook_fn: Callable[[Array], Array] | None,
                      metric: Metric = "accuracy", readout: int | None = None,
                      weights: Array | None = None, chunk_size: int | None = ACE_CHUNK,
                      ) -> Array:
    """Metric of the model with ``hook_fn`` applied at ``hook_name`` (None: no intervention).

    ``readout`` follows ``Task.readout``: an int scores that position (``labels [b]``), None
    scores every position (``labels [b, p]``). The logits are computed ``chunk_size`` sequences
    at a time (``mechjax.chunks``; ``hook_fn`` must act on each sequence alone), then scored
    together, so any ``metric`` works.
    """
    hooks = {} if hook_fn is None else {hook_name: hook_fn}

    def read(toks):
        logits, _ = run_with_hooks(params, toks, cfg, hooks)
        return logits if readout is None else logits[:, readout]

    return _score(metric, map_chunks(read, tokens, chunk_size), labels, weights)


def _core_only_and_removed(params: Params, tokens: Array, labels: Array, cfg: ModelConfig,
                           hook_name: str, basis: Array, metric: Metric, readout: int | None,
                           weights: Array | None, chunk_size: int | None = ACE_CHUNK
                           ) -> tuple[Array, Array]:
    """The metric with the activation projected onto ``basis`` and with it projected out."""
    run = lambda fn: intervened_metric(params, tokens, labels, cfg, hook_name, fn, metric,
                                       readout, weights, chunk_size)
    return run(core_only_hook(basis)), run(core_removed_hook(basis))


@functools.partial(jax.jit,
                   static_argnames=("cfg", "hook_name", "metric", "readout", "chunk_size"))
def validate(params: Params, tokens: Array, labels: Array, cfg: ModelConfig, hook_name: str,
             basis: Array, metric: Metric = "accuracy", readout: int | None = None,
             weights: Array | None = None, chunk_size: int | None = ACE_CHUNK,
             ) -> dict[str, Array]:
    """Toy-model validation: ``{'full', 'core_only', 'core_removed'}`` metrics (docs/ace.md).

    ``basis [D, R]``: the core (a masked ``[D, D]`` basis works). Uncentred, every position.
    ``chunk_size``: sequences per forward pass (``intervened_metric``).
    """
    full = intervened_metric(params, tokens, labels, cfg, hook_name, None, metric, readout,
                             weights, chunk_size)
    only, removed = _core_only_and_removed(params, tokens, labels, cfg, hook_name, basis, metric,
                                           readout, weights, chunk_size)
    return {"full": full, "core_only": only, "core_removed": removed}


def reads_last_block(cfg: ModelConfig, hook_name: str) -> bool:
    """Whether ``hook_name`` is the last block's output, after which the model is only its
    unembedding (``model.unembed``: ``ln_final`` for pre-LN, then ``W_U`` and the bias)."""
    return hook_name == f"blocks.{cfg.n_layers - 1}.hook_resid_post"


@functools.partial(jax.jit, static_argnames=("cfg", "metric"))
def validate_last_block(params: Params, h: Array, labels: Array, cfg: ModelConfig, basis: Array,
                        metric: Metric = "accuracy", weights: Array | None = None,
                        ) -> dict[str, Array]:
    """``validate`` at the last block's output (``reads_last_block``) from the activations read
    there, without running the blocks again: ``{'full', 'core_only', 'core_removed'}``.

    ``h [b, p, D]`` with ``labels [b, p]`` (every position), or ``h [b, D]`` with ``labels [b]``
    (``readout``'s position: the unembedding acts on each position alone, so the other positions'
    interventions do not reach it). The same hooks and unembedding as ``validate``'s passes, so
    the same numbers (tested); one forward pass fewer per intervention, and an ACE program whose
    only pass over the model is the activation read, which can then be chunked to fit the cache.
    """
    def score(x):
        return _score(metric, unembed(params, x, cfg, lambda name, y: y), labels, weights)

    return {"full": score(h), "core_only": score(core_only_hook(basis)(h)),
            "core_removed": score(core_removed_hook(basis)(h))}


@functools.partial(jax.jit, static_argnames=("cfg", "hook_name", "score_fn", "position"))
def validate_centred(params: Params, tokens: Array, cfg: ModelConfig, hook_name: str,
                     basis: Array, mean: Array, score_fn: Callable[[Array], Array],
                     positive: Array, position: int = -1) -> dict[str, Array]:
    """LLM validation: ROC-AUC of ``score_fn(logits[:, position]) [b]`` for ``positive [b]``.

    Returns ``{'base', 'keep', 'remove', 'flip'}`` (expected: keep ~ base, remove ~ 0.5,
    flip ~ 1 - base), interventions centred on ``mean`` at ``position`` only.
    """
    def auc(hooks):
        logits, _ = run_with_hooks(params, tokens, cfg, hooks)
        return roc_auc(score_fn(logits[:, position]), positive)

    out = {"base": auc({})}
    for mode in ("keep", "remove", "flip"):
        out[mode] = auc({hook_name: centred_hook(basis, mean, mode, position)})
    return out


def _map_ranks(one: Callable[[Array], tuple[Array, Array]], width: int,
               batch_size: int | None) -> tuple[Array, Array]:
    """``one(mask)`` for the column masks of ranks r = 0..width: ``([width+1], [width+1])``.

    ``batch_size`` ranks are vmapped at a time (None: one by one). The masks are padded to a
    whole number of batches (copies of the last, dropped again): ``lax.map``'s own
    ``batch_size`` would run a second, differently batched body on the remainder."""
    masks = jnp.arange(width + 1)[:, None] > jnp.arange(width)[None]
    if batch_size is None:
        return jax.lax.map(one, masks)
    n = width + 1
    rows = jnp.minimum(jnp.arange(-(-n // batch_size) * batch_size), n - 1)
    blocks = masks[rows].reshape(-1, batch_size, width)
    out = jax.lax.map(jax.vmap(one), blocks)
    return jax.tree.map(lambda x: x.reshape(-1)[:n], out)


@functools.partial(jax.jit, static_argnames=("cfg", "hook_name", "metric", "readout",
                                             "batch_size", "chunk_size"))
def causal_scan(params: Params, tokens: Array, labels: Array, cfg: ModelConfig, hook_name: str,
                basis: Array, metric: Metric = "accuracy", readout: int | None = None,
                weights: Array | None = None, batch_size: int | None = None,
                chunk_size: int | None = ACE_CHUNK) -> tuple[Array, Array]:
    """Core-only and core-removed metric at every rank r = 0..R: ``([R+1], [R+1])``.

    ``basis [D, R]`` is the full ordered basis; rank r uses its first r columns via a mask. Each
    rank intervenes at ``hook_name`` (every position) and runs the rest of the model through
    ``run_with_hooks``, so any tail works (a final LayerNorm included). The ranks run through
    ``lax.map`` (``batch_size`` of them vmapped at a time; None = one by one), not a Python loop,
    so this jits and vmaps over seeds; ``chunk_size``: sequences per forward pass.
    """
    def one(mask):
        return _core_only_and_removed(params, tokens, labels, cfg, hook_name,
                                      basis * mask.astype(basis.dtype), metric, readout, weights,
                                      chunk_size)

    return _map_ranks(one, basis.shape[-1], batch_size)


@functools.partial(jax.jit, static_argnames=("cfg", "metric", "batch_size"))
def causal_scan_last_block(params: Params, h: Array, labels: Array, cfg: ModelConfig,
                           basis: Array, metric: Metric = "accuracy",
                           weights: Array | None = None, batch_size: int | None = None,
                           ) -> tuple[Array, Array]:
    """``causal_scan`` at the last block's output from the activations read there (``h`` and
    ``labels`` as in ``validate_last_block``): the same hooks and tail (``ln_final`` for pre-LN,
    then the unembedding), without running the blocks again."""
    def one(mask):
        out = validate_last_block(params, h, labels, cfg, basis * mask.astype(basis.dtype),
                                  metric, weights)
        return out["core_only"], out["core_removed"]

    return _map_ranks(one, basis.shape[-1], batch_size)


@jax.jit
def r_nec(core_removed: Array, r_energy: Array | int, n_classes: int) -> Array:
    """Smallest r >= r_energy with core-removed accuracy <= 2 / n_classes (docs/ace.md).

    ``core_removed [R+1]`` from ``causal_scan``. Returns R when no rank qualifies (check
    ``core_removed[R]`` to tell that case apart).
    """
    r = jnp.arange(core_removed.shape[0])
    ok = (r >= r_energy) & (core_removed <= 2.0 / n_classes)
    return jnp.where(ok.any(), jnp.argmax(ok), r[-1]).astype(jnp.int32)


@jax.jit
def r_suf(core_only: Array, full: Array | float, tol: float = 1e-3) -> Array:
    """Smallest r with core-only accuracy >= full - tol (docs/ace.md); R when none qualifies."""
    ok = core_only >= full - tol
    return jnp.where(ok.any(), jnp.argmax(ok), core_only.shape[0] - 1).astype(jnp.int32)


@jax.jit
def linear_tail_scan(h: Array, basis: Array, w_u: Array, b_u: Array, labels: Array,
                     ) -> tuple[Array, Array, Array]:
    """Core-only and core-removed accuracy at every rank r = 0..D for ``logits = h W_U + b``.

    ``h [N, D]``, ``basis [D, D]`` (orthonormal columns in core order), ``w_u [D, V]``,
    ``b_u [V]``, ``labels [N]``. Core-only at rank r: ``h Q_r Q_r^T W_U + b``; core-removed:
    ``(h - h Q_r Q_r^T) W_U + b`` (uncentred; docs/ace.md). Returns ``(core_only [D+1],
    core_removed [D+1], full [])``.

    Why no forward passes: when the hooked activation feeds the logits through ``h W_U + b`` (the
    last block's output of a model without a final LayerNorm), intervening on h at rank r changes
    the logits by a rank-r term, so all D + 1 ranks come from one running sum of outer products.
    Memory O(N V). Agrees with ``causal_scan`` through hooks (tested).
    """
    z = h @ basis                     # [N, D] core coordinates
    g = basis.T @ w_u                 # [D, V] each direction's effect on the logits
    full_logits = h @ w_u + b_u
    acc = lambda logits: accuracy(logits, labels, dtype=logits.dtype)  # noqa: E731 (f64 under x64)

    def step(partial, i):
        out = (acc(partial + b_u), acc(full_logits - partial))
        return partial + z[:, i, None] * g[i][None, :], out

    last, (only, removed) = jax.lax.scan(step, jnp.zeros_like(full_logits),
                                         jnp.arange(h.shape[1]))
    only = jnp.append(only, acc(last + b_u))
    removed = jnp.append(removed, acc(full_logits - last))
    return only, removed, acc(full_logits)
