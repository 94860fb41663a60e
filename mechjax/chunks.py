"""A function of many sequences evaluated a fixed number of sequences at a time inside one compiled
program, so that its memory follows the chunk and not the number of sequences (nor, under
``vmap`` over seeds, seeds x sequences).

``map_chunks(fn, rows, chunk_size)`` is ``fn(rows)`` for a row-wise ``fn`` (row i of the output
depends only on row i of the input): the rows are cut into ``ceil(n / chunk_size)`` chunks,
``jax.lax.map`` runs ``fn`` on one chunk per iteration of a while loop (XLA reuses the loop
body's buffers, so only one chunk's intermediates are alive), and the outputs are put back
together. Every evaluation pool, ACE activation read and intervention, and ACE Jacobian batch
goes through it (``DEFAULT_CHUNK`` unless configured).

Why not ``jax.lax.map(f, xs, batch_size=...)``: that form vmaps a *per-row* ``f`` over each batch
and runs a second, differently batched body on the remainder (``ace.analyse_stack`` measured that
remainder path stalling for minutes on CPU). The model code here is already batched, so the rows
are reshaped to ``[n_chunks, chunk_size, ...]`` and the last chunk is padded with copies of the
last row (real inputs: no NaN or empty-softmax hazard), whose outputs are dropped.

Equality: with ``n <= chunk_size`` nothing changes (``fn(rows)`` itself). Chunked, each row's
output is computed by the same operations on a smaller batch; XLA's CPU matmuls give the same
rows at these sizes in the tests (``tests/test_chunks.py``), which allow float rounding only.
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

# Sequences per chunk where a caller gives none: a pool of up to this size runs unchanged (every
# CPU config's training pools), and a chunk of the largest models here (d_mlp 512, 16-32
# positions) keeps its activations to tens of MB.
DEFAULT_CHUNK = 1024


def check_chunk_size(chunk_size: int | None, name: str = "chunk_size") -> None:
    """Raise unless ``chunk_size`` is None (no chunking) or a positive int."""
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int)
                                   or chunk_size < 1):
        raise ValueError(f"{name}={chunk_size!r}: a positive int, or None for no chunking")


def n_rows(rows: Any) -> int:
    """The common leading size of every leaf of ``rows``; raises if they differ."""
    sizes = {x.shape[0] for x in jax.tree.leaves(rows)}
    if len(sizes) != 1:
        raise ValueError(f"rows have leading sizes {sorted(sizes)}: every leaf needs the same")
    return sizes.pop()


def map_chunks(fn: Callable[[Any], Any], rows: Any, chunk_size: int | None = DEFAULT_CHUNK
               ) -> Any:
    """``fn(rows)`` computed ``chunk_size`` rows at a time (see the module docstring).

    ``rows``: a pytree of arrays sharing the leading axis ``n``; ``fn``: row-wise, returning a
    pytree of arrays with leading axis equal to its input's. Returns ``fn(rows)``'s pytree,
    leading axis ``n``. ``chunk_size=None`` runs ``fn(rows)`` at once.
    """
    check_chunk_size(chunk_size)
    n = n_rows(rows)
    if chunk_size is None or n <= chunk_size:
        return fn(rows)
    n_chunks = -(-n // chunk_size)
    pad = n_chunks * chunk_size - n

    def split(x):
        if pad:
            x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)])
        return x.reshape((n_chunks, chunk_size) + x.shape[1:])

    out = jax.lax.map(fn, jax.tree.map(split, rows))
    return jax.tree.map(lambda y: y.reshape((n_chunks * chunk_size,) + y.shape[2:])[:n], out)
