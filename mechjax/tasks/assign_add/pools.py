"""Evaluation data: the nine random pools (``POOLS``) and the two exhaustive sets."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.tasks.assign_add.operands import Restriction
from mechjax.tasks.assign_add.sampling import as_batch, sample_sequences
from mechjax.tasks.assign_add.sequence import build_sequences_jit
from mechjax.tasks.assign_add.splits import PairSplit
from mechjax.tasks.assign_add.vocab import N_PAIRS, P, TWO_VAR, ZERO_VAR
from mechjax.tasks.base import Batch, TaskParams

POOL_SIZE = 2000

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
        return as_batch(sample_sequences(key, size, jnp.asarray(kinds, jnp.float32), split,
                                          task_params["f"], heldout, mode, restriction))

    return sample


def exhaustive_0var_heldout(key: jax.Array, heldout_pairs) -> Batch:
    """Every held-out pair once as a 0-var sequence (random distractor prefixes from ``key``)."""
    pairs = np.asarray(heldout_pairs, np.int32).reshape(-1, 2)
    return as_batch(build_sequences_jit(key, jnp.full(len(pairs), ZERO_VAR, jnp.int32),
                                        pairs[:, 0], pairs[:, 1], jnp.zeros(len(pairs), jnp.int32),
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
    return as_batch(build_sequences_jit(key, jnp.full(len(xy), TWO_VAR, jnp.int32), xy[:, 0],
                                        xy[:, 1], vv[:, 0], vv[:, 1]))
