"""Addition-pair splits: a ranking of the 3481 ordered pairs, cut at ``floor(f * 3481)``."""
from __future__ import annotations

import dataclasses
import os
import random

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.tasks.assign_add.vocab import N_PAIRS, P


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
    """``random.Random(seed).sample(lexicographic pairs, 3481)`` as the ranking (authors' split)."""
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
    a broken file raises ``mechjax.filecheck.FileError`` (a ``ValueError``) naming it."""
    from mechjax import filecheck
    if not os.path.exists(path):
        raise FileNotFoundError(f"held-out pair file {path!r} does not exist")
    what = "a list of [x, y] pairs"
    data = filecheck.read_json(path, "held-out pair file", top=(dict, list))
    pairs = filecheck.require(data, "heldout_pairs", list, path, expected=what) \
        if isinstance(data, dict) else data
    try:
        arr = np.asarray(pairs)
    except ValueError as err:  # ragged lists
        raise filecheck.FileError(f"held-out pair file {path!r}: expected {what}: {err}") from err
    if arr.size and arr.dtype.kind not in "iu":
        raise filecheck.FileError(f"held-out pair file {path!r}: pairs of {arr.dtype.name}; "
                                 "expected integers")
    arr = arr.astype(np.int32)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise filecheck.FileError(f"held-out pair file {path!r}: expected a list of [x, y], got "
                                 f"shape {arr.shape}")
    return arr
