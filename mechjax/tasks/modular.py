"""Binary operations mod p: ``a op b mod p`` from ``[a, b]`` (ACE paper) or ``[a, b, =]`` (Nanda).

The train/test split is a seeded ranking of all valid pairs; a pair is in the training set when
its rank is below ``fraction * n_pairs``. By default the fraction is fixed when the task is made,
and a full-batch step reads the training pairs only. With ``sweep_fraction=True`` it is a traced
task parameter (``task.train_fraction``), so a sweep over it is one compiled program: the full
batch then keeps every pair and the split lives in the weights (a step reads all p^2 pairs,
1 / fraction times the rows).
"""
from __future__ import annotations

import numpy as np
import jax
import jax.numpy as jnp

from mechjax import metrics
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.models.transformer import forward
from mechjax.tasks.base import Batch, Task, TaskParams

OPERATIONS = ("add", "sub", "mul", "div")


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def all_pairs(p: int, op: str = "add") -> tuple[np.ndarray, np.ndarray]:
    """Every valid ``(a, b)`` in lexicographic order ``[n, 2]`` and its answer ``[n]``."""
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    a, b = a.ravel(), b.ravel()
    if op == "div":  # a / b = a * b^(p-2) mod p for prime p, b != 0
        a, b = a[b != 0], b[b != 0]
        answer = (a * np.array([pow(int(x), p - 2, p) for x in b])) % p
    else:
        answer = {"add": a + b, "sub": a - b, "mul": a * b}[op] % p
    return np.stack([a, b], 1).astype(np.int32), answer.astype(np.int32)


def train_mask(n_pairs: int, fraction: jax.Array, split_seed: int) -> jax.Array:
    """Boolean ``[n_pairs]``: the first ``round(fraction * n_pairs)`` pairs of a seeded ranking
    (the product in float32, as when ``fraction`` is traced: a fixed and a traced fraction of
    the same value split alike)."""
    rank = jnp.asarray(np.random.default_rng(split_seed).permutation(n_pairs))
    return rank < jnp.round(jnp.asarray(fraction, jnp.float32) * n_pairs)


def make_task(p: int = 53, op: str = "add", batch_size: int | None = None,
              train_fraction: float = 0.5, split_seed: int = 0,
              equals_token: bool = False, sweep_fraction: bool = False) -> Task:
    """The modular-arithmetic task. ``batch_size=None`` trains full-batch on the training pairs.
    ``sweep_fraction``: ``train_fraction`` is a task parameter a sweep may vary (see above)."""
    if op not in OPERATIONS:
        raise ConfigError(f"task.op={op!r}: allowed {OPERATIONS}")
    if not isinstance(p, int) or p < 2:
        raise ConfigError(f"task.p={p!r}: must be an integer >= 2")
    if op == "div" and not _is_prime(p):
        raise ConfigError(f"task.p={p}: division needs a prime modulus")
    if not 0.0 < train_fraction <= 1.0:
        raise ConfigError(f"task.train_fraction={train_fraction!r}: must be in (0, 1]")
    pairs, answers = all_pairs(p, op)
    n = len(pairs)
    if batch_size is not None and not 0 < batch_size <= n:
        raise ConfigError(f"task.batch_size={batch_size!r}: must be in [1, {n}] or None")
    tokens = pairs if not equals_token else np.concatenate([pairs, np.full((n, 1), p)], 1)
    tokens, labels = jnp.asarray(tokens, jnp.int32), jnp.asarray(answers)
    fixed = None if sweep_fraction else np.asarray(train_mask(n, train_fraction, split_seed))

    def split(task_params: TaskParams) -> jax.Array:
        if fixed is not None:
            return jnp.asarray(fixed)
        return train_mask(n, task_params["train_fraction"], split_seed)

    def sample(key: jax.Array, task_params: TaskParams) -> Batch:
        if batch_size is None and fixed is not None:  # the training pairs, nothing else
            rows = np.flatnonzero(fixed)
            return {"tokens": tokens[rows], "labels": labels[rows],
                    "weights": jnp.ones(len(rows), jnp.float32)}
        mask = split(task_params)
        if batch_size is None:
            return {"tokens": tokens, "labels": labels, "weights": mask.astype(jnp.float32)}
        # Training rows first, in random order: a minibatch without replacement.
        priority = jnp.where(mask, jax.random.uniform(key, (n,)), 2.0)
        idx = jnp.argsort(priority)[:batch_size]
        return {"tokens": tokens[idx], "labels": labels[idx],
                "weights": mask[idx].astype(jnp.float32)}

    def pool(train: bool):
        def sample_pool(key, task_params):
            del key
            mask = split(task_params)
            w = mask if train else ~mask
            return {"tokens": tokens, "labels": labels, "weights": w.astype(jnp.float32)}
        return sample_pool

    return Task(name=f"modular_{op}_{p}", sample=sample,
                eval_pools={"train": pool(True), "test": pool(False)}, readout=-1,
                default_params={"train_fraction": train_fraction} if sweep_fraction else {},
                seq_len=tokens.shape[1], vocab_size=p + int(equals_token), vocab_out=p)


def split_accuracy_eval(task: Task, model_cfg: ModelConfig):
    """``eval_fn`` for a trainer of ``task``: train and test accuracy (``acc/train``, ``acc/test``)
    from ONE deterministic forward pass over every pair, told apart by the split mask (the
    ``train`` pool holds all p^2 pairs, weighted by the training mask). Cheap enough to run after
    every optimizer step inside the compiled scan."""
    everything = task.eval_pools["train"]

    def eval_fn(params, task_params, eval_key):
        batch = everything(eval_key, task_params)
        logits = forward(params, batch["tokens"], model_cfg)[:, -1]   # no key: dropout off
        train = batch["weights"]
        return {"acc/train": metrics.accuracy(logits, batch["labels"], train),
                "acc/test": metrics.accuracy(logits, batch["labels"], 1 - train)}

    return eval_fn
