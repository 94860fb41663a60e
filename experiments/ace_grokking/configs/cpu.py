"""Default config: the ACE paper's model and optimizer at CPU scale (a + b mod 23, d_model 64).

What changed from paper.py and why (2 shared CPU cores):
- p = 23 (529 pairs), train fraction 0.7 (370 pairs), full batch, so one epoch = one step.
- d_model 64, 4 heads, MLP 256 (post-LN, ReLU, dropout 0.1, learned positions, head with bias).
- AdamW lr 3e-3 (paper 1e-3), weight decay 1.0, betas (0.9, 0.999).
- 2000 epochs; branch to weight decay 0 (optimizer reset) at epoch 900; checkpoints every 50
  epochs to 1000, then every 200.
Exploration (p = 23, d_model 64, wd 1, full batch, one program per grid, 2 loaded cores):
lr 3e-3 grokked (test >= 0.99) at steps 650-700 with train fraction 0.7 (3/3 seeds) and at
950-1000 with 0.6 (3/3); with 0.5 it reached only 0.81 test accuracy by step 1500; lr 1e-2
grokked faster but spiked back to 0.2-0.5 test accuracy (unstable). Memorization (train >= 0.99)
came by step 50 in every case.
"""
from experiments.ace_grokking.configs import paper


def get_config():
    config = paper.get_config()
    config.n_seeds = 8
    config.task.p = 23
    config.task.train_fraction = 0.7
    config.task.batch_size = None
    config.model.d_model = 64
    config.model.n_heads = 4
    config.model.d_mlp = 256
    config.train.epochs = 2000
    config.train.eval_every_epochs = 10
    config.hparams.lr = 3e-3
    config.branch.epoch = 900
    config.checkpoints.dense_every = 50
    config.checkpoints.dense_until = 1000
    config.checkpoints.sparse_every = 200
    config.ace.checkpoint_batch = 13
    config.ace.clock_epochs = (0, 300, 700, 900, 2000)
    return config
