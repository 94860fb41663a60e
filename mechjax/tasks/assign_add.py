"""Assign and Add (arXiv 2605.31497): variable binding plus modular addition, p = 59.

A sequence is 16 tokens: a 12-token prefix of shuffled assignments ``var value`` with PAD gaps,
then the prefix-notation query ``+ x y =`` at positions 12-15. ``x`` and ``y`` are numbers or
variables; the label ``(value(x) + value(y)) mod 59`` is read at ``=`` (``readout=-1``).

Vocabulary (74): numbers 0..58, ``+`` 59, ``=`` 60, ``PAD`` 61, variables ``a..l`` 62..73.

Sequence kinds: 0-var ``+ n1 n2 =``, 1-var LHS ``+ v n2 =``, 1-var RHS ``+ n1 v =``, 2-var
``+ v1 v2 =`` (v1 != v2). The prefix holds n ~ U{1..6} assignments (U{2..6} for 2-var): the needed
ones plus distractors with fresh variables and uniform values, each variable at most once, shuffled;
the ``12 - 2n`` PADs each fall independently and uniformly into one of the ``n + 1`` gaps between
assignments, so a PAD never separates a variable from its value.

Partitions (SPEC 1.2):
  * held-out addition pairs: the 3481 ordered pairs are ranked by a fixed permutation
    (``PairSplit``); a pair is a training pair iff ``rank < n_train(f) = floor(f * 3481)``. ``f`` is
    a traced task parameter, so a sweep over ``f`` compiles once. ``authors_split()`` ranks by
    ``random.Random(42).sample(lexicographic pairs, 3481)``, whose first 2436 entries are exactly
    the authors' ``random.Random(42).sample(pairs, 2436)`` (Python's pool-based sample draws the
    same ``randbelow`` sequence for any ``k`` here), so ``f = 0.7`` reproduces their split.
    ``split_from_heldout(pairs)`` fixes the split to an explicit held-out list (``f`` is ignored).
  * positional restriction: in training 1-var/2-var queries, ``a, b`` are never the right operand
    and ``k, l`` never the left. Of the 132 ordered 2-var operand pairs, 92 are allowed, 36 have one
    misplaced variable, 4 have two.
  * training mix per training pair: 12 0-var rows, 10 LHS, 10 RHS, 10 2-var rows; each 2-var row is
    kept with probability ``r`` (traced). See ``make_train_sampler`` for how ``r`` is realised.

Exhaustive sets: all held-out pairs as 0-var sequences (1045 for the authors' split) and the
2-var "union" of 193,580 = 1045 * 92 + 2436 * 40 sequences: every held-out pair with every allowed
operand pair, plus every training pair with every misplaced operand pair (novel on exactly one
axis). Adding the 1045 * 40 = 41,800 doubly novel sequences (held-out pair *and* misplaced
variables) would give 235,380; the authors' count excludes them (1045 a + 2436 b = 193,580 has the
single solution a = 92, b = 40 with 0 <= a <= 132), ``include_doubly_novel=True`` adds them.

Choices SPEC leaves open (documented here): the 2-var operand pair is uniform over the allowed
ordered pairs (not "left uniform, then right uniform"); the 1-var pools mix LHS and RHS 50/50;
the misplaced-variable pools and the misplaced half of the union use training pairs; evaluation
pools are drawn from the key each call (a fixed key gives a fixed pool).
"""
from __future__ import annotations

import dataclasses
import os
import random
from typing import Literal, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.config import ModelConfig
from mechjax.tasks.base import Batch, Task, TaskParams

# ---- vocabulary ---------------------------------------------------------------------------------
P = 59
PLUS, EQ, PAD = 59, 60, 61
VAR0 = 62
N_VARS = 12
VAR_NAMES = "abcdefghijkl"
D_VOCAB = VAR0 + N_VARS  # 74
SEQ_LEN, PREFIX_LEN, MAX_ASSIGN = 16, 12, 6
N_PAIRS = P * P  # 3481
POS_PLUS, POS_X, POS_Y, POS_EQ = 12, 13, 14, 15

# ---- sequence kinds -----------------------------------------------------------------------------
ZERO_VAR, LHS, RHS, TWO_VAR = 0, 1, 2, 3
KIND_NAMES = ("0var", "1var_lhs", "1var_rhs", "2var")
TRAIN_ROWS = (12.0, 10.0, 10.0, 10.0)  # rows per training pair: 0-var, LHS, RHS, 2-var

# default positional restriction (variable indices 0..11 = a..l)
LEFT_FORBIDDEN = (10, 11)  # k, l never the left operand in training
RIGHT_FORBIDDEN = (0, 1)  # a, b never the right operand in training

POOL_SIZE = 2000


def model_config() -> ModelConfig:
    """The authors' architecture (SPEC 1.3): 2 layers, 1 head, no layer-0 MLP, no biases/LN."""
    return ModelConfig(n_layers=2, d_model=128, n_heads=1, d_mlp=512, d_vocab=D_VOCAB,
                       d_vocab_out=P, n_ctx=SEQ_LEN, mlp_layers=(False, True))


def var_token(name: str) -> int:
    """Token id of variable ``name`` (``'a'`` -> 62)."""
    return VAR0 + VAR_NAMES.index(name)


# ================================================================================================
# Addition-pair splits
# ================================================================================================
@dataclasses.dataclass(frozen=True, eq=False)
class PairSplit:
    """A ranking of the 3481 ordered pairs ``x * 59 + y``; the first ``n_train(f)`` are training.

    ``fixed_n_train`` (explicit held-out lists) overrides ``f``.
    """

    ranking: np.ndarray  # [3481] int32: pair index at each rank
    fixed_n_train: int | None = None

    def __post_init__(self):
        r = np.asarray(self.ranking)
        if r.shape != (N_PAIRS,) or not np.array_equal(np.sort(r), np.arange(N_PAIRS)):
            raise ValueError("PairSplit.ranking must be a permutation of range(3481)")

    def n_train(self, f) -> jax.Array:
        """Number of training pairs: ``floor(f * 3481)`` (traced ``f``), or the fixed count."""
        if self.fixed_n_train is not None:
            return jnp.asarray(self.fixed_n_train, jnp.int32)
        # +1e-3 guards float32 rounding when f * 3481 is an integer (e.g. f = k / 3481)
        return jnp.clip(jnp.floor(jnp.asarray(f, jnp.float32) * N_PAIRS + 1e-3),
                        0, N_PAIRS).astype(jnp.int32)

    def train_mask(self, f) -> jax.Array:
        """``[59, 59]`` bool: True at training pairs ``(x, y)``."""
        rank_of = np.empty(N_PAIRS, np.int32)
        rank_of[np.asarray(self.ranking)] = np.arange(N_PAIRS, dtype=np.int32)
        return (jnp.asarray(rank_of) < self.n_train(f)).reshape(P, P)

    def heldout_pairs(self, f=0.7) -> np.ndarray:
        """Held-out pairs ``[n, 2]`` in lexicographic order (concrete ``f`` only)."""
        mask = np.asarray(self.train_mask(f))
        return np.argwhere(~mask).astype(np.int32)

    def train_pairs(self, f=0.7) -> np.ndarray:
        mask = np.asarray(self.train_mask(f))
        return np.argwhere(mask).astype(np.int32)


def authors_split(seed: int = 42) -> PairSplit:
    """``random.Random(seed).sample(lexicographic pairs, 3481)`` as the ranking (SPEC 1.2)."""
    return PairSplit(np.asarray(random.Random(seed).sample(range(N_PAIRS), N_PAIRS), np.int32))


def seeded_split(seed: int) -> PairSplit:
    """A numpy-seeded random ranking (for splits other than the authors')."""
    return PairSplit(np.random.default_rng(seed).permutation(N_PAIRS).astype(np.int32))


def split_from_heldout(heldout_pairs) -> PairSplit:
    """Fixed split with the given held-out ordered pairs ``[[x, y], ...]``; ``f`` is ignored."""
    pairs = np.asarray(heldout_pairs, np.int64).reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= P):
        raise ValueError(f"held-out pairs must lie in [0, {P}), got range "
                         f"[{pairs.min()}, {pairs.max()}]")
    idx = np.unique(pairs[:, 0] * P + pairs[:, 1])
    if len(idx) != len(pairs):
        raise ValueError("held-out pair list contains duplicates")
    held = np.zeros(N_PAIRS, bool)
    held[idx] = True
    ranking = np.concatenate([np.flatnonzero(~held), np.flatnonzero(held)]).astype(np.int32)
    return PairSplit(ranking, fixed_n_train=int(N_PAIRS - len(idx)))


def load_heldout_pairs(path: str) -> np.ndarray:
    """Read ``heldout_pairs.json`` (a dict with ``heldout_pairs`` or a bare list) -> ``[n, 2]``;
    a broken file raises ``mechjax.validate.FileError`` (a ``ValueError``) naming it."""
    from mechjax import validate
    if not os.path.exists(path):
        raise FileNotFoundError(f"held-out pair file {path!r} does not exist")
    what = "a list of [x, y] pairs"
    data = validate.read_json(path, "held-out pair file", top=(dict, list))
    pairs = validate.require(data, "heldout_pairs", list, path, expected=what) \
        if isinstance(data, dict) else data
    try:
        arr = np.asarray(pairs)
    except ValueError as err:  # ragged lists
        raise validate.FileError(f"held-out pair file {path!r}: expected {what}: {err}") from err
    if arr.size and arr.dtype.kind not in "iu":
        raise validate.FileError(f"held-out pair file {path!r}: pairs of {arr.dtype.name}; "
                                 "expected integers")
    arr = arr.astype(np.int32)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise validate.FileError(f"held-out pair file {path!r}: expected a list of [x, y], got "
                                 f"shape {arr.shape}")
    return arr


# ================================================================================================
# Operand-variable classes
# ================================================================================================
@dataclasses.dataclass(frozen=True)
class Restriction:
    """Positional restriction: variables (indices 0..11) forbidden as left / right operand."""

    left_forbidden: tuple[int, ...] = LEFT_FORBIDDEN
    right_forbidden: tuple[int, ...] = RIGHT_FORBIDDEN

    def n_misplaced(self, v1: int, v2: int) -> int:
        return int(v1 in self.left_forbidden) + int(v2 in self.right_forbidden)

    def two_var_pairs(self, misplaced: int | Sequence[int]) -> np.ndarray:
        """Ordered operand pairs ``[n, 2]`` (v1 != v2) with the given number(s) of violations."""
        wanted = {misplaced} if isinstance(misplaced, int) else set(misplaced)
        return np.asarray([(a, b) for a in range(N_VARS) for b in range(N_VARS)
                           if a != b and self.n_misplaced(a, b) in wanted], np.int32).reshape(-1, 2)


VarMode = Literal["allowed", "restricted", "one_misplaced", "two_misplaced", "any"]


def _var_tables(restriction: Restriction, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Per kind, the candidate operand-variable pairs: ``table [4, 132, 2]``, ``count [4]``.

    Column 0 is the left variable (used by LHS and 2-var), column 1 the right (RHS and 2-var).
    A kind with no candidates in ``mode`` gets count 0 (it must then have zero probability).
    """
    all_vars = list(range(N_VARS))
    lf, rf = restriction.left_forbidden, restriction.right_forbidden
    if mode == "allowed":
        lhs = [v for v in all_vars if v not in lf]
        rhs = [v for v in all_vars if v not in rf]
        two = restriction.two_var_pairs(0)
    elif mode == "restricted":
        lhs, rhs, two = list(lf), list(rf), restriction.two_var_pairs((1, 2))
    elif mode == "one_misplaced":
        lhs, rhs, two = [], [], restriction.two_var_pairs(1)
    elif mode == "two_misplaced":
        lhs, rhs, two = [], [], restriction.two_var_pairs(2)
    elif mode == "any":
        lhs, rhs, two = all_vars, all_vars, restriction.two_var_pairs((0, 1, 2))
    else:
        raise ValueError(f"unknown variable mode {mode!r}")
    rows = [np.zeros((1, 2), np.int32),
            np.asarray([(v, 0) for v in lhs], np.int32).reshape(-1, 2),
            np.asarray([(0, v) for v in rhs], np.int32).reshape(-1, 2),
            np.asarray(two, np.int32).reshape(-1, 2)]
    table = np.zeros((4, N_VARS * (N_VARS - 1), 2), np.int32)
    for k, r in enumerate(rows):
        table[k, :len(r)] = r
    return table, np.asarray([len(r) for r in rows], np.int32)


# ================================================================================================
# One sequence
# ================================================================================================
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


# ================================================================================================
# Batches
# ================================================================================================
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
_build_jit = jax.jit(build_sequences)


def sample_sequences(key: jax.Array, n: int, kind_weights, split: PairSplit, f=0.7,
                     heldout: bool = False, var_mode: str = "allowed",
                     restriction: Restriction = Restriction()) -> dict[str, jax.Array]:
    """``n`` sequences: kind ~ ``kind_weights [4]`` (traced, unnormalised), pair uniform over the
    training or held-out pairs of ``split`` at ``f`` (traced), operand variables uniform over
    ``var_mode``'s candidates for that kind (``allowed``, ``restricted``, ``one_misplaced``,
    ``two_misplaced``, ``any``).

    Returns the fields of ``build_sequence`` stacked over ``[n]``.
    """
    table, counts = _var_tables(restriction, var_mode)
    return _sample_jit(key, n, jnp.asarray(kind_weights, jnp.float32),
                       jnp.asarray(split.ranking, jnp.int32), split.n_train(f),
                       jnp.asarray(heldout), jnp.asarray(table), jnp.asarray(counts))


def _as_batch(seqs: dict[str, jax.Array]) -> Batch:
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
            return _as_batch(sample_sequences(k_seq, batch_size, rows.at[TWO_VAR].multiply(r),
                                              split, f, False,
                                              "allowed", restriction))
        seqs = sample_sequences(k_seq, batch_size, rows, split, f, False, "allowed", restriction)
        keep = jax.random.bernoulli(k_keep, r, (batch_size,))
        batch = _as_batch(seqs)
        batch["weights"] = jnp.where(seqs["kind"] == TWO_VAR, keep, True).astype(jnp.float32)
        return batch

    return sample


# kind weights, pair source and variable mode of each evaluation pool
POOLS: dict[str, tuple[tuple[float, float, float, float], bool, str]] = {
    "0var_train": ((1, 0, 0, 0), False, "allowed"),
    "0var_heldout": ((1, 0, 0, 0), True, "allowed"),
    "1var_train": ((0, 1, 1, 0), False, "allowed"),
    "1var_heldout": ((0, 1, 1, 0), True, "allowed"),
    "2var_train": ((0, 0, 0, 1), False, "allowed"),
    "2var_heldout": ((0, 0, 0, 1), True, "allowed"),
    "1var_restricted": ((0, 1, 1, 0), False, "restricted"),
    "2var_one_misplaced": ((0, 0, 0, 1), False, "one_misplaced"),
    "2var_two_misplaced": ((0, 0, 0, 1), False, "two_misplaced"),
}


def make_pool_sampler(name: str, split: PairSplit, restriction: Restriction = Restriction(),
                      size: int = POOL_SIZE):
    """Evaluation sampler ``(key, task_params) -> batch`` of ``size`` sequences of pool ``name``."""
    if name not in POOLS:
        raise KeyError(f"unknown pool {name!r}; pools: {sorted(POOLS)}")
    kinds, heldout, mode = POOLS[name]

    def sample(key: jax.Array, task_params: TaskParams) -> Batch:
        return _as_batch(sample_sequences(key, size, jnp.asarray(kinds, jnp.float32), split,
                                          task_params["f"], heldout, mode, restriction))

    return sample


def make_task(batch_size: int, *, split: PairSplit | None = None,
              restriction: Restriction = Restriction(), pool_size: int = POOL_SIZE,
              r_mode: Literal["resample", "weight"] = "resample") -> Task:
    """The Assign-and-Add task: training sampler plus the nine 2000-sequence evaluation pools.

    ``split`` defaults to ``authors_split()`` (the authors' held-out pairs at f = 0.7).
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size={batch_size} must be positive")
    split = authors_split() if split is None else split
    pools = {name: make_pool_sampler(name, split, restriction, pool_size) for name in POOLS}
    return Task(name="assign_add",
                sample=make_train_sampler(batch_size, split, restriction, r_mode),
                eval_pools=pools, readout=-1, default_params={"f": 0.7, "r": 1.0},
                seq_len=SEQ_LEN, vocab_size=D_VOCAB, vocab_out=P)


# ================================================================================================
# Exhaustive sets
# ================================================================================================
def exhaustive_0var_heldout(key: jax.Array, heldout_pairs) -> Batch:
    """Every held-out pair once as a 0-var sequence (random distractor prefixes from ``key``)."""
    pairs = np.asarray(heldout_pairs, np.int32).reshape(-1, 2)
    return _as_batch(_build_jit(key, jnp.full(len(pairs), ZERO_VAR, jnp.int32), pairs[:, 0],
                                pairs[:, 1], jnp.zeros(len(pairs), jnp.int32),
                                jnp.zeros(len(pairs), jnp.int32)))


def exhaustive_2var_union(key: jax.Array, heldout_pairs, restriction: Restriction = Restriction(),
                          include_doubly_novel: bool = False) -> Batch:
    """The 2-var union: held-out pairs x allowed operand pairs (1045 x 92 = 96,140) plus training
    pairs x misplaced operand pairs (2436 x 40 = 97,440) = 193,580 for the authors' split.

    ``include_doubly_novel`` adds held-out pairs x misplaced operand pairs (1045 x 40 = 41,800).
    Rows are ordered pair-major within each part; prefixes are random from ``key``.
    """
    held = np.asarray(heldout_pairs, np.int32).reshape(-1, 2)
    held_idx = held[:, 0] * P + held[:, 1]
    is_held = np.zeros(N_PAIRS, bool)
    is_held[held_idx] = True
    train = np.stack(np.divmod(np.flatnonzero(~is_held), P), 1).astype(np.int32)
    allowed = restriction.two_var_pairs(0)
    misplaced = restriction.two_var_pairs((1, 2))
    parts = [(held, allowed), (train, misplaced)]
    if include_doubly_novel:
        parts.append((held, misplaced))
    xy = np.concatenate([np.repeat(p, len(v), 0) for p, v in parts])
    vv = np.concatenate([np.tile(v, (len(p), 1)) for p, v in parts])
    return _as_batch(_build_jit(key, jnp.full(len(xy), TWO_VAR, jnp.int32), xy[:, 0], xy[:, 1],
                                vv[:, 0], vv[:, 1]))


# ================================================================================================
# Decoding (used by tests and analyses)
# ================================================================================================
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
