"""CPU-scale clock/pizza sweep: the quickstart's model on a + b mod 31, 5 attention rates x 8 seeds
in one compiled program (about half an hour on 2 shared cores)."""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.n_seeds = 8
    config.seed_offset = 0
    config.attn_rates = (0.0, 0.25, 0.5, 0.75, 1.0)
    config.chunk_evals = 10
    config.grok_threshold = 0.99
    config.n_triples = 100
    config.pizza_min_grad_sym = 0.9
    config.clock_min_dist_irr = 0.5

    config.task = ml_collections.ConfigDict()
    config.task.p = 31
    config.task.train_fraction = 0.7
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
    return config
