"""Training: ``make_train(task, model, train_cfg) -> train(key, hparams)``, one pure function over
``lax.scan`` with the data sampled from keys inside the step, for any ``mechjax.models.Model``.

* ``train``           -- ``TrainConfig``, ``TrainState``, the ``Trainer`` and ``make_train``
* ``compile_options`` -- the XLA options the training programs are compiled with, per model and backend
"""
from mechjax.training import compile_options
from mechjax.training.train import (OPTIMIZERS, TrainConfig, Trainer, TrainState, make_train,
                                    split_hparams)

__all__ = ["OPTIMIZERS", "TrainConfig", "TrainState", "Trainer", "compile_options", "make_train",
           "split_hparams"]
