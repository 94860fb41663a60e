"""What the trainer needs from a task: pure samplers of batches from keys.

A batch is a dict of arrays:
  tokens  [b, p] int32
  labels  [b] int32 when the task reads one position (``Task.readout`` is an int), else [b, p]
  weights optional, same shape as labels: loss/accuracy weight of each label (0 drops it)

``sample(key, task_params)`` draws one training batch; ``eval_pools[name](key, task_params)`` draws
(or returns a fixed) evaluation batch. ``task_params`` is a dict of traced scalars (data fraction,
keep-probability, ...) so a sweep can vmap over them; their defaults are ``default_params``.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import jax
import jax.numpy as jnp

Batch = dict[str, jax.Array]
TaskParams = Mapping[str, jax.Array]
Sampler = Callable[[jax.Array, TaskParams], Batch]


@dataclasses.dataclass(frozen=True)
class Task:
    """A training task. ``readout``: the position scored (e.g. -1), or ``None`` for every position."""

    name: str
    sample: Sampler
    eval_pools: Mapping[str, Sampler]
    readout: int | None = -1
    default_params: Mapping[str, float] = dataclasses.field(default_factory=dict)
    seq_len: int | None = None
    vocab_size: int | None = None
    vocab_out: int | None = None

    def params_with_defaults(self, overrides: Mapping[str, object] | None = None) -> dict:
        overrides = dict(overrides or {})
        unknown = sorted(set(overrides) - set(self.default_params))
        if unknown:
            raise KeyError(f"task {self.name!r} has no parameters {unknown}; "
                           f"it has {sorted(self.default_params)}")
        out = {k: jnp.asarray(v, jnp.float32) for k, v in self.default_params.items()}
        out.update({k: jnp.asarray(v, jnp.float32) for k, v in overrides.items()})
        return out


def fixed_dataset_sampler(tokens: jax.Array, labels: jax.Array, batch_size: int | None = None,
                          weights: jax.Array | None = None, replace: bool = False) -> Sampler:
    """Sampler over a fixed dataset: the full batch (``batch_size=None``) or random minibatches.

    Minibatches are drawn with replacement-free shuffles per call, which is what a PyTorch
    ``DataLoader(shuffle=True)`` epoch approximates one batch at a time. ``replace=True`` draws
    the rows uniformly with replacement instead: for a large dataset the per-step permutation of
    all n rows costs about as much as a small model's step (measured at n = 20000 on CPU), and
    with n much larger than the batch, repeats within a batch are rare.
    """
    n = tokens.shape[0]
    if batch_size is not None and not 0 < batch_size <= n:
        raise ValueError(f"batch_size={batch_size} must be in [1, {n}] for a dataset of {n} rows")

    def sample(key: jax.Array, task_params: TaskParams) -> Batch:
        del task_params
        batch = {"tokens": tokens, "labels": labels}
        if weights is not None:
            batch["weights"] = weights
        if batch_size is None:
            return batch
        idx = (jax.random.randint(key, (batch_size,), 0, n) if replace
               else jax.random.permutation(key, n)[:batch_size])
        return {k: v[idx] for k, v in batch.items()}

    return sample
