"""The ACE paper's grokking run exactly, 8 seeds: a + b mod 53 from [a, b], train fraction 0.5
(1404 / 1405).

Model: 2 post-LN encoder blocks (d_model 128, 4 heads, MLP 512, ReLU, dropout 0.1, no attention
mask), learned positions, untied head with bias, PyTorch default initialization.
Training: AdamW lr 1e-3, weight decay 1.0, betas (0.9, 0.999), batch 512, 20,000 epochs of
ceil(1404 / 512) = 3 steps (60,000 steps); at epoch 900 every seed branches to weight decay 0 with
a reset optimizer. Checkpoints every 100 epochs to 2000, then every 500.
ACE: last-position layer-2 output on the 1405 test pairs, tau 0.99, causal rank scans, cyclic
shift of class means with a held-out block of round(0.075 * 53) = 4 answers.
"""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.n_seeds = 8
    config.seed_offset = 0

    config.task = ml_collections.ConfigDict()
    config.task.p = 53
    config.task.train_fraction = 0.5
    config.task.split_seed = 0       # the same train/test split for every model seed
    config.task.batch_size = 512     # None or >= n_train: full batch (one step per epoch)

    config.model = ml_collections.ConfigDict()
    config.model.n_layers = 2
    config.model.d_model = 128
    config.model.n_heads = 4
    config.model.d_mlp = 512
    config.model.dropout = 0.1
    config.model.causal = False

    config.train = ml_collections.ConfigDict()
    config.train.epochs = 20000
    config.train.eval_every_epochs = 10   # accuracy curves; ACE runs on the checkpoints

    config.hparams = ml_collections.ConfigDict()
    config.hparams.lr = 1e-3
    config.hparams.weight_decay = 1.0

    config.branch = ml_collections.ConfigDict()
    config.branch.epoch = 900
    config.branch.weight_decay = 0.0

    config.checkpoints = ml_collections.ConfigDict()
    config.checkpoints.dense_every = 100
    config.checkpoints.dense_until = 2000
    config.checkpoints.sparse_every = 500

    config.ace = ml_collections.ConfigDict()
    config.ace.tau = 0.99
    config.ace.rel_tol = 1e-3           # principal directions of the class means kept
    config.ace.holdout_frac = 0.075     # held-out block of round(0.075 p) answers
    config.ace.holdout_start = 0
    config.ace.float64 = True
    config.ace.checkpoint_batch = 8     # checkpoints vmapped at once (x all seeds)
    config.ace.clock_epochs = (0, 300, 800, 900, 2000)
    config.ace.grok_threshold = 0.99
    return config
