"""The Assign-and-Add ``Task``: the training sampler plus the nine evaluation pools."""
from __future__ import annotations

from typing import Literal

from mechjax.tasks.assign_add.operands import Restriction
from mechjax.tasks.assign_add.pools import POOL_SIZE, POOLS, make_pool_sampler
from mechjax.tasks.assign_add.sampling import make_train_sampler
from mechjax.tasks.assign_add.splits import PairSplit, authors_split
from mechjax.tasks.assign_add.vocab import D_VOCAB, P, SEQ_LEN
from mechjax.tasks.base import Task


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
