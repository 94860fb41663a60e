"""Matrix decompositions that never deadlock XLA's CPU thread pool (docs/design.md).

On CPU, jaxlib's LAPACK custom calls (``gesdd``, ``syevd``, ``geqrf``, ``geev``, ``potrf``,
``trsm``, ``getrf``) split a *batch* of matrices into chunks, schedule the chunks on XLA's intra-op
pool and block until they finish (``jax::ParallelBatchMap``, jaxlib 0.10.2). The custom call itself
runs on a worker of that same pool. When as many batched calls as the pool has threads run at once
(two on a 2-core machine; the thunk executor runs independent ops concurrently), every worker is
blocked waiting for chunks that no free worker is left to run: the process sits at 0% CPU forever.
A call on a single matrix never fans out (jaxlib runs a batch of one inline), so it cannot block.

The functions here are ``jnp.linalg``'s with the same arguments and results, but on CPU a batch
of matrices -- leading axes, or axes added by ``vmap`` -- is computed one matrix per LAPACK call
in a ``lax.map`` loop. Each matrix goes through the same LAPACK routine with the same workspace,
so float64 results are bitwise those of the batched call; the matrices in mechjax's analyses are
small (d_model-sized), so the loop costs little (measured; docs/design.md). Elsewhere (GPU, TPU)
the batched solvers are used unchanged. Every decomposition in mechjax goes through this module.
"""
from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

Array = jax.Array
UNROLL = 16  # single-matrix calls per loop iteration (measured; docs/design.md)


def _on_cpu() -> bool:
    return jax.default_backend() == "cpu"


@functools.lru_cache(maxsize=None)
def _one_matrix_per_call(fn: Callable, options: tuple, core_ndims: tuple[int, ...]) -> Callable:
    """``fn(*arrays, **options)`` (arrays with ``core_ndims`` dimensions each -> pytree) extended
    to leading batch axes and to ``vmap``, looping over the batch so each LAPACK call sees one
    matrix. Cached so each variant is one ``custom_vmap`` function (stable under tracing)."""

    @jax.custom_batching.custom_vmap
    def single(*args):
        return fn(*args, **dict(options))

    @single.def_vmap
    def _vmap_rule(axis_size, in_batched, *args):
        # vmap would batch the LAPACK call; loop instead (nested vmaps land here again).
        args = tuple(a if b else jnp.broadcast_to(a, (axis_size, *a.shape))
                     for a, b in zip(args, in_batched))
        out = _each(single, args)
        return out, jax.tree.map(lambda _: True, out)

    def looped(*args):
        args = tuple(jnp.asarray(a) for a in args)
        extra = [a.ndim - n for a, n in zip(args, core_ndims)]
        if any(e < 0 for e in extra):
            raise ValueError(f"{getattr(fn, '__name__', fn)}: inputs need at least {core_ndims} "
                             f"dimensions, got shapes {[a.shape for a in args]}")
        batch = jnp.broadcast_shapes(*(a.shape[:e] for a, e in zip(args, extra)))
        if not batch:
            return single(*args)
        flat = tuple(jnp.broadcast_to(a, (*batch, *a.shape[e:])).reshape(-1, *a.shape[e:])
                     for a, e in zip(args, extra))
        out = _each(single, flat)
        return jax.tree.map(lambda o: o.reshape(*batch, *o.shape[1:]), out)

    return looped


def _each(single: Callable, args: tuple) -> object:
    """``single`` on each row of ``args`` (leading axis ``n``): ``UNROLL`` single-matrix calls
    side by side per iteration of a ``lax.map`` (they may run concurrently: none blocks), so
    neither the loop's per-iteration overhead nor compile size grows with ``n``."""
    n = args[0].shape[0]
    if n <= UNROLL:
        rows = [single(*(a[i] for a in args)) for i in range(n)]
        return jax.tree.map(lambda *r: jnp.stack(r), *rows)
    n_blocks = -(-n // UNROLL)
    pad = n_blocks * UNROLL - n  # repeat the last matrix (a valid input), dropped below
    blocks = tuple(jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)]).reshape(
        n_blocks, UNROLL, *a.shape[1:]) for a in args)
    out = jax.lax.map(lambda block: _each(single, block), blocks)
    return jax.tree.map(lambda o: o.reshape(n_blocks * UNROLL, *o.shape[2:])[:n], out)


def _dispatch(fn: Callable, core_ndims: tuple[int, ...], *args, **options):
    if not _on_cpu():
        return fn(*args, **options)
    return _one_matrix_per_call(fn, tuple(sorted(options.items())), core_ndims)(*args)


def svd(a: Array, full_matrices: bool = True, compute_uv: bool = True):
    """``jnp.linalg.svd``: ``a [..., m, n]`` -> ``(u, s, vh)`` or ``s``."""
    return _dispatch(jnp.linalg.svd, (2,), a, full_matrices=full_matrices,
                     compute_uv=compute_uv)


def eigh(a: Array):
    """``jnp.linalg.eigh``: symmetric ``a [..., n, n]`` -> ``(eigenvalues [..., n], vectors)``."""
    return _dispatch(jnp.linalg.eigh, (2,), a)


def eig(a: Array):
    """``jnp.linalg.eig`` (CPU only, as in JAX): ``a [..., n, n]`` -> complex ``(w, v)``."""
    return _dispatch(jnp.linalg.eig, (2,), a)


def qr(a: Array, mode: str = "reduced"):
    """``jnp.linalg.qr``: ``a [..., m, n]`` -> ``(q, r)``."""
    return _dispatch(jnp.linalg.qr, (2,), a, mode=mode)


def cholesky(a: Array):
    """``jnp.linalg.cholesky``: positive definite ``a [..., n, n]`` -> lower ``L``."""
    return _dispatch(jnp.linalg.cholesky, (2,), a)


def lstsq(a: Array, b: Array):
    """``jnp.linalg.lstsq(a [m, n], b [m] or [m, k])`` -> ``(x, residuals, rank, s)``."""
    return _dispatch(jnp.linalg.lstsq, (2, jnp.ndim(b)), a, b)


def solve(a: Array, b: Array):
    """``jnp.linalg.solve(a [..., n, n], b [..., n] or [..., n, k])``."""
    return _dispatch(jnp.linalg.solve, (2, 1 if jnp.ndim(b) == jnp.ndim(a) - 1 else 2), a, b)


def solve_triangular(a: Array, b: Array, lower: bool = False):
    """``jax.scipy.linalg.solve_triangular(a [..., n, n], b [..., n, k], lower)``."""
    return _dispatch(jsl.solve_triangular, (2, 1 if jnp.ndim(b) == jnp.ndim(a) - 1 else 2), a, b,
                     lower=lower)
