"""Training Reddy's minimal network (``mechjax.models.icl_minimal``): batches carry float
``tokens [b, 2N+1, D]``, so ``run_sweep`` trains seeds x (K, B, eps, alpha, lr, weight decay) grids
as one compiled program."""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from mechjax.models.icl_minimal import IclModelConfig, forward, init_params
from mechjax.tasks import icl_minimal as icl
from mechjax.tasks.base import Task
from mechjax.training.train import Trainer, TrainConfig, TrainState


class IclTrainer(Trainer):
    """``Trainer`` with the minimal network; everything else (optimizer, scan, sweeps) shared."""

    def __init__(self, task: Task, model_cfg: IclModelConfig, train_cfg: TrainConfig):
        super().__init__(task, model_cfg, dataclasses.replace(train_cfg, fast_readout=False))

    def logits(self, params, tokens, key=None):
        return forward(params, tokens, self.model_cfg)

    def _param_names(self):
        return init_params(jax.random.PRNGKey(0), self.model_cfg)

    def init(self, key, hparams):
        k_init, k_run, k_eval = jax.random.split(key, 3)
        params = init_params(k_init, self.model_cfg, hparams["init_scale"])
        return TrainState(params, self.optimizer(hparams).init(params), k_run, k_eval,
                          jnp.zeros((), jnp.int32), jnp.ones((), bool))

def make_trainer(spec: icl.IclSpec, train_cfg: TrainConfig, batch_size: int, eval_size: int,
                 mlp_width: int = 128) -> IclTrainer:
    model_cfg = IclModelConfig(d=spec.d, n_pos=spec.seq_len, n_labels=spec.n_labels,
                               mlp_width=mlp_width)
    return IclTrainer(icl.make_task(spec, batch_size, eval_size), model_cfg, train_cfg)
