"""Test-size config that groks in seconds on 2 cores (tests/test_ace_grokking.py's end-to-end).

At p = 23 with 85% of the pairs for training (450 / 79), full batch, d_model 32 and lr 1e-2,
both seeds memorize their training split by epoch 75-125 and generalize (test accuracy >= 0.99)
at epochs 150-275 (measured for seeds 0-1, and 1.0 from epoch 300 to 500), so the core the test
reads at epoch 350 is a grokked model's. The branch to weight decay 0 starts at epoch 300, after
grokking. Steps cost here (the suite's unoptimized XLA code: ~0.1 CPU s per step of both seeds),
so the run stops 50 epochs after the branch.
"""
from experiments.ace_grokking.configs import paper


def get_config():
    config = paper.get_config()
    config.n_seeds = 2
    config.task.p = 23
    config.task.train_fraction = 0.85
    config.task.batch_size = None      # full batch: one step per epoch
    config.model.d_model = 32
    config.model.n_heads = 4
    config.model.d_mlp = 64
    config.train.epochs = 350
    config.train.eval_every_epochs = 25
    config.hparams.lr = 1e-2
    config.branch.epoch = 300
    config.checkpoints.dense_every = 50
    config.checkpoints.dense_until = 300
    config.checkpoints.sparse_every = 50
    config.ace.checkpoint_batch = 4
    config.ace.clock_epochs = (0, 150, 350)
    return config
