"""Test-size config: seconds on 2 cores (used by tests/test_ace_grokking.py). It does not grok."""
from experiments.ace_grokking.configs import paper


def get_config():
    config = paper.get_config()
    config.n_seeds = 2
    config.task.p = 7
    config.task.train_fraction = 0.6
    config.task.batch_size = 16        # 29 training pairs: 2 steps per epoch
    config.model.d_model = 8
    config.model.n_heads = 2
    config.model.d_mlp = 16
    config.train.epochs = 8
    config.train.eval_every_epochs = 1
    config.hparams.lr = 3e-3
    config.branch.epoch = 4
    config.checkpoints.dense_every = 2
    config.checkpoints.dense_until = 4
    config.checkpoints.sparse_every = 4
    config.ace.holdout_frac = 0.15
    config.ace.checkpoint_batch = 2
    config.ace.clock_epochs = (0, 4, 8)
    return config
