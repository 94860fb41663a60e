"""Training: ``make_train(task, model_cfg, train_cfg) -> train(key, hparams)``, one pure function
over ``lax.scan`` with the data sampled from keys inside the step.

* ``train``           -- ``TrainConfig``, ``TrainState``, the ``Trainer`` and ``make_train``
* ``rate``            -- training at a traced attention rate (``RateTrainer``)
* ``icl_minimal``     -- training Reddy's minimal network (``IclTrainer``)
* ``compile_options`` -- the XLA options the training programs are compiled with, per model and backend
"""
from mechjax.training import compile_options, icl_minimal, rate
from mechjax.training.rate import RateTrainer
from mechjax.training.train import (OPTIMIZERS, TrainConfig, Trainer, TrainState, make_train,
                                    split_hparams)

__all__ = ["OPTIMIZERS", "RateTrainer", "TrainConfig", "TrainState", "Trainer", "compile_options",
           "icl_minimal", "make_train", "rate", "split_hparams"]
