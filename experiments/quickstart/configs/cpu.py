"""CPU-scale quickstart: 8 seeds of a 1-layer transformer learning a + b mod 31 from half the pairs (a few minutes)."""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.n_seeds = 8
    config.seed_offset = 0
    config.chunk_evals = 4

    config.task = ml_collections.ConfigDict()
    config.task.p = 31
    config.task.op = "add"
    config.task.train_fraction = 0.5
    config.task.split_seed = 0

    config.model = ml_collections.ConfigDict()
    config.model.n_layers = 1
    config.model.d_model = 64
    config.model.n_heads = 4
    config.model.d_head = 16
    config.model.d_mlp = 256
    config.model.act_fn = "relu"
    config.model.causal = False

    config.train = ml_collections.ConfigDict()
    config.train.steps = 3000
    config.train.eval_every = 50

    config.hparams = ml_collections.ConfigDict()
    config.hparams.lr = 3e-3
    config.hparams.weight_decay = 1.0
    config.hparams.init_scale = 1.0

    config.grok_threshold = 0.99
    return config
