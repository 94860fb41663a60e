"""Random sequences: kind, addition pair and operand variables drawn per row, then built; the
training sampler (its ``r`` realised by resampling or by loss weights)."""
from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from mechjax.tasks.assign_add.operands import Restriction, var_tables
from mechjax.tasks.assign_add.sequence import build_sequences
from mechjax.tasks.assign_add.splits import PairSplit
from mechjax.tasks.assign_add.vocab import N_PAIRS, P, TRAIN_ROWS, TWO_VAR
from mechjax.tasks.base import Batch, TaskParams


def _sample_impl(key: jax.Array, n: int, kind_weights: jax.Array, ranking: jax.Array,
                 n_train: jax.Array, heldout: jax.Array, table: jax.Array, counts: jax.Array
                 ) -> dict[str, jax.Array]:
    k_draw, k_seq = jax.random.split(key)
    u = jax.random.uniform(k_draw, (3, n))
    # kind: inverse CDF of the (unnormalised) weights; kinds without candidates are excluded
    w = jnp.asarray(kind_weights, jnp.float32) * (counts > 0)
    cdf = jnp.cumsum(w) / jnp.sum(w)
    kind = jnp.minimum(jnp.sum(u[0][:, None] >= cdf[None, :], axis=1), 3).astype(jnp.int32)
    # pair: uniform rank in [0, n_train) (training) or [n_train, 3481) (held-out), clamped so an
    # empty side (f = 0 or f = 1) still yields valid, if wrong-side, pairs
    lo = jnp.where(heldout, n_train, 0)
    hi = jnp.where(heldout, N_PAIRS, n_train)
    rank = lo + jnp.floor(u[1] * (hi - lo)).astype(jnp.int32)
    pair = ranking[jnp.clip(rank, 0, N_PAIRS - 1)]
    # operand variables: uniform over this kind's candidates
    idx = jnp.minimum(jnp.floor(u[2] * counts[kind]).astype(jnp.int32),
                      jnp.maximum(counts[kind] - 1, 0))
    vars_ = table[kind, idx]
    return build_sequences(k_seq, kind, pair // P, pair % P, vars_[:, 0], vars_[:, 1])


# one compilation per batch size, shared by every pool and split (all else are array arguments)
_sample_jit = jax.jit(_sample_impl, static_argnums=1)


def sample_sequences(key: jax.Array, n: int, kind_weights, split: PairSplit, f=0.7,
                     heldout: bool = False, var_mode: str = "allowed",
                     restriction: Restriction = Restriction()) -> dict[str, jax.Array]:
    """``n`` sequences: kind ~ ``kind_weights [4]`` (traced, unnormalised), pair uniform over the
    training or held-out pairs of ``split`` at ``f`` (traced), operand variables uniform over
    ``var_mode``'s candidates for that kind (``allowed``, ``restricted``, ``one_misplaced``,
    ``two_misplaced``, ``any``).

    Returns the fields of ``build_sequence`` stacked over ``[n]``.
    """
    table, counts = var_tables(restriction, var_mode)
    return _sample_jit(key, n, jnp.asarray(kind_weights, jnp.float32),
                       jnp.asarray(split.ranking, jnp.int32), split.n_train(f),
                       jnp.asarray(heldout), jnp.asarray(table), jnp.asarray(counts))


def as_batch(seqs: dict[str, jax.Array]) -> Batch:
    return {"tokens": seqs["tokens"], "labels": seqs["label"]}


def make_train_sampler(batch_size: int, split: PairSplit, restriction: Restriction = Restriction(),
                       r_mode: Literal["resample", "weight"] = "resample"):
    """Training sampler ``(key, {'f', 'r'}) -> batch`` (traced ``f`` and ``r``).

    ``r_mode='resample'`` (default): a row is drawn uniformly from the training rows of a uniform
    training pair (12 0-var, 10 LHS, 10 RHS, 10 2-var) and a 2-var row is kept with probability
    ``r``, a dropped one being redrawn. Rejection sampling in closed form: the kind is drawn with
    probabilities proportional to ``(12, 10, 10, 10 r)``, which is exactly the distribution of a
    uniformly drawn row of the authors' dataset after dropping each 2-var row independently with
    probability ``1 - r`` (in expectation over that drop; every batch row is a real example).
    ``r_mode='weight'``: kinds in proportion ``(12, 10, 10, 10)`` and each 2-var row gets loss
    weight Bernoulli(r) (``batch['weights']``); same expected loss direction, fewer live rows.
    """
    if r_mode not in ("resample", "weight"):
        raise ValueError(f"r_mode={r_mode!r}: allowed 'resample', 'weight'")
    rows = jnp.asarray(TRAIN_ROWS, jnp.float32)

    def sample(key: jax.Array, task_params: TaskParams) -> Batch:
        f, r = task_params["f"], jnp.clip(jnp.asarray(task_params["r"], jnp.float32), 0.0, 1.0)
        k_seq, k_keep = jax.random.split(key)
        if r_mode == "resample":
            return as_batch(sample_sequences(k_seq, batch_size, rows.at[TWO_VAR].multiply(r),
                                              split, f, False,
                                              "allowed", restriction))
        seqs = sample_sequences(k_seq, batch_size, rows, split, f, False, "allowed", restriction)
        keep = jax.random.bernoulli(k_keep, r, (batch_size,))
        batch = as_batch(seqs)
        batch["weights"] = jnp.where(seqs["kind"] == TWO_VAR, keep, True).astype(jnp.float32)
        return batch

    return sample
