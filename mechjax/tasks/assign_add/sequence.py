"""One sequence: built from a fixed vector of uniforms (so sampling is one RNG call per batch),
and read back (operand value positions, kind, text)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.tasks.assign_add.vocab import (EQ, LHS, MAX_ASSIGN, N_VARS, P, PAD, PLUS, POS_X,
                                            POS_Y, PREFIX_LEN, RHS, SEQ_LEN, TWO_VAR, VAR0,
                                            VAR_NAMES)

# uniforms one sequence consumes: n, 12 values, 12 distractor keys, 6 shuffle keys, 12 PAD gaps
_U_N, _U_VAL, _U_PICK, _U_SHUF, _U_PAD = 0, 1, 1 + N_VARS, 1 + 2 * N_VARS, 1 + 2 * N_VARS + 6
N_UNIFORMS = _U_PAD + PREFIX_LEN  # 43


def _randint(u: jax.Array, lo, hi) -> jax.Array:
    """Integer uniform on ``[lo, hi)`` from ``u ~ U[0, 1)`` (``lo``, ``hi`` may be traced)."""
    return jnp.minimum(lo + jnp.floor(u * (hi - lo)).astype(jnp.int32), hi - 1)


def _argsort_small(keys: jax.Array) -> jax.Array:
    """Stable argsort of a short vector by pairwise comparisons (compiles much faster than a sort
    inside vmap on CPU)."""
    idx = jnp.arange(keys.shape[0])
    before = (keys[None, :] < keys[:, None]) | ((keys[None, :] == keys[:, None])
                                                 & (idx[None, :] < idx[:, None]))
    rank = jnp.sum(before, axis=1)
    return jnp.zeros_like(idx).at[rank].set(idx)


def sequence_from_uniforms(u: jax.Array, kind: jax.Array, x: jax.Array, y: jax.Array,
                           v1: jax.Array, v2: jax.Array) -> dict[str, jax.Array]:
    """One sequence of ``kind`` for the addition pair ``(x, y)`` with operand variables ``v1, v2``,
    all randomness read from ``u [43] ~ U[0, 1)`` (deterministic; see ``build_sequence``).

    ``v1`` is used iff the left operand is a variable (LHS, 2-var), ``v2`` iff the right one is
    (RHS, 2-var). Returns ``tokens [16]`` int32, ``label []`` = (x + y) mod 59,
    ``value_pos [2]`` (where layer 2 should read each operand's value: the prefix position of the
    variable's value, or 13 / 14 for a literal), ``kind []`` and ``n_assign []``.
    """
    kind = jnp.asarray(kind, jnp.int32)
    left_var = (kind == LHS) | (kind == TWO_VAR)
    right_var = (kind == RHS) | (kind == TWO_VAR)
    n_needed = left_var.astype(jnp.int32) + right_var.astype(jnp.int32)
    n = _randint(u[_U_N], jnp.maximum(n_needed, 1), MAX_ASSIGN + 1)

    # values of all 12 variables; the needed ones carry the operands
    var_ids = jnp.arange(N_VARS)
    values = _randint(u[_U_VAL:_U_VAL + N_VARS], 0, P)
    values = jnp.where(left_var & (var_ids == v1), x, values)
    values = jnp.where(right_var & (var_ids == v2), y, values)
    needed = (left_var & (var_ids == v1)) | (right_var & (var_ids == v2))
    # assigned variables: the needed ones, then fresh random distractors (each variable once)
    order = _argsort_small(jnp.where(needed, -1.0, u[_U_PICK:_U_PICK + N_VARS]))
    assigned = order[:MAX_ASSIGN]  # the first n of these are assigned
    slot = jnp.arange(MAX_ASSIGN)
    valid = slot < n
    shuffle = _argsort_small(jnp.where(valid, u[_U_SHUF:_U_SHUF + MAX_ASSIGN], 2.0))
    assigned = assigned[shuffle]  # first n: a uniform shuffle of the assigned variables

    # 12 - 2n PADs, each into one of the n + 1 gaps (gap i precedes assignment i)
    n_pad = PREFIX_LEN - 2 * n
    gap = _randint(u[_U_PAD:_U_PAD + PREFIX_LEN], 0, n + 1)
    pad_used = jnp.arange(PREFIX_LEN) < n_pad
    gap_counts = jnp.sum((gap[:, None] == jnp.arange(MAX_ASSIGN + 1)) & pad_used[:, None], axis=0)
    start = jnp.cumsum(gap_counts)[:MAX_ASSIGN] + 2 * slot  # position of each assignment's var
    where = jnp.where(valid, start, SEQ_LEN)  # out of range -> dropped
    prefix = jnp.full((PREFIX_LEN,), PAD, jnp.int32)
    prefix = prefix.at[where].set(VAR0 + assigned, mode="drop")
    prefix = prefix.at[where + 1].set(values[assigned], mode="drop")

    left_tok = jnp.where(left_var, VAR0 + v1, x)
    right_tok = jnp.where(right_var, VAR0 + v2, y)
    tokens = jnp.concatenate([prefix, jnp.stack([jnp.asarray(PLUS), left_tok, right_tok,
                                                 jnp.asarray(EQ)])]).astype(jnp.int32)

    def value_position(var, literal_pos, is_var):
        pos = jnp.sum(jnp.where(valid & (assigned == var), start + 1, 0))
        return jnp.where(is_var, pos, literal_pos)

    value_pos = jnp.stack([value_position(v1, POS_X, left_var),
                           value_position(v2, POS_Y, right_var)]).astype(jnp.int32)
    return {"tokens": tokens, "label": ((x + y) % P).astype(jnp.int32), "value_pos": value_pos,
            "kind": kind, "n_assign": n.astype(jnp.int32)}


def build_sequence(key: jax.Array, kind, x, y, v1, v2) -> dict[str, jax.Array]:
    """``sequence_from_uniforms`` with its uniforms drawn from ``key``."""
    return sequence_from_uniforms(jax.random.uniform(key, (N_UNIFORMS,)), kind, x, y, v1, v2)


def build_sequences(key: jax.Array, kind, x, y, v1, v2) -> dict[str, jax.Array]:
    """Sequences for a batch (each argument ``[b]``; ``kind``, ``v1``, ``v2`` may be scalars).

    All randomness is one ``[b, 43]`` uniform draw (a single RNG call compiles in a fraction of the
    time of one call per field per row).
    """
    b = jnp.shape(x)[0]
    kind = jnp.broadcast_to(jnp.asarray(kind, jnp.int32), (b,))
    v1 = jnp.broadcast_to(jnp.asarray(v1, jnp.int32), (b,))
    v2 = jnp.broadcast_to(jnp.asarray(v2, jnp.int32), (b,))
    u = jax.random.uniform(key, (b, N_UNIFORMS))
    return jax.vmap(sequence_from_uniforms)(u, kind, jnp.asarray(x, jnp.int32),
                                            jnp.asarray(y, jnp.int32), v1, v2)


# one compilation per batch shape, shared by every exhaustive set
build_sequences_jit = jax.jit(build_sequences)


# ---- decoding (used by tests and analyses) ------------------------------------------------------
def operand_value_positions(tokens: jax.Array) -> jax.Array:
    """``tokens [b, 16]`` -> ``[b, 2]`` position holding each query operand's value.

    A literal operand is its own position (13, 14); a variable's value sits right after the
    variable's assignment in the prefix.
    """
    prefix = tokens[:, :PREFIX_LEN]

    def one(slot):
        tok = tokens[:, slot]
        hit = prefix == tok[:, None]
        pos = jnp.argmax(hit, axis=1) + 1
        return jnp.where(tok >= VAR0, pos, slot)

    return jnp.stack([one(POS_X), one(POS_Y)], axis=1).astype(jnp.int32)


def sequence_kind(tokens: jax.Array) -> jax.Array:
    """``tokens [b, 16]`` -> kind ``[b]`` (0-var, LHS, RHS, 2-var) read off the query."""
    left = tokens[:, POS_X] >= VAR0
    right = tokens[:, POS_Y] >= VAR0
    return (left.astype(jnp.int32) + 2 * right.astype(jnp.int32)).astype(jnp.int32)


def to_string(tokens) -> str:
    """Human-readable sequence, e.g. ``PAD PAD a 40 ... + a 27 =``."""
    names = [str(i) for i in range(P)] + ["+", "=", "PAD"] + list(VAR_NAMES)
    return " ".join(names[int(t)] for t in np.asarray(tokens))
