"""Test-size config that groks in seconds on 2 cores (tests/test_ace_grokking.py's end-to-end).

At p = 23 with 85% of the pairs for training (450 / 79), full batch, d_model 32 and lr 1e-2,
seeds memorize their training split by epoch 75-125 and generalize at epochs 150-275, so the core
the test reads at epoch 350 is a grokked model's. Grokked here means test accuracy >= 0.95 (at
most 3 of the 79 test pairs wrong; chance is 1/23): after grokking the accuracy flickers by 1-3
pairs from evaluation to evaluation, and at the paper's 0.99 (no pair wrong) seed 0 groks at epoch
300 with the suite's optimized XLA code and not by epoch 350 with unoptimized code (0.987 there).
At 0.95, seeds 0-3 grok at epochs 150-275 and end at 0.987-1.0 under both (measured). The branch to weight decay 0 starts at epoch 300, after
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
    config.ace.grok_threshold = 0.95
    return config
