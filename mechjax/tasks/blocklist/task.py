"""The block-list ``Task`` (training sampler and the ICL / IWL evaluation pools)."""
from __future__ import annotations

import jax.numpy as jnp

from mechjax.tasks.base import Task
from mechjax.tasks.blocklist.sampling import sample
from mechjax.tasks.blocklist.spec import BlockListSpec


def blocklist_task(spec: BlockListSpec, batch_size: int = 256, eval_size: int = 1024) -> Task:
    """A ``Task`` for ``spec``. Eval pools: ``train`` (training distribution), ``icl_rare``
    (every relevant item rare: only in-context learning can answer), ``icl_common`` (every item
    common), ``iwl`` (common items, relevant blocks removed from the context: only in-weights
    learning can answer; needs a distractor block)."""

    def train(key, task_params):
        return sample(spec, key, task_params, batch_size)

    def pool(f_r: float | None, with_relevant: bool = True):
        def fn(key, task_params):
            tp = dict(task_params)
            if f_r is not None:
                tp["f_r"] = jnp.asarray(f_r, jnp.float32)
            return sample(spec, key, tp, eval_size, with_relevant)
        return fn

    pools = {"train": pool(None), "icl_rare": pool(1.0), "icl_common": pool(0.0)}
    if spec.n_items > 1:
        pools["iwl"] = pool(0.0, with_relevant=False)
    return Task(name=f"blocklist_{spec.kind}", sample=train, eval_pools=pools, readout=None,
                default_params=spec.default_params(), seq_len=spec.seq_len,
                vocab_size=spec.vocab_in, vocab_out=spec.n_tokens)
