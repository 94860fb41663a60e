"""Test-size config: seconds on 2 cores (used by tests/test_ace_markov.py)."""
from experiments.ace_markov.configs import paper


def get_config():
    config = paper.get_config()
    config.n_seeds = 3
    config.chunk_evals = 2
    config.task.n_train = 128
    config.task.n_test = 64
    config.task.batch_size = 32
    config.model.d_model = 16
    config.model.n_heads = 2
    config.model.d_mlp = 32
    config.train.steps = 40
    config.train.eval_every = 10
    config.hparams.lr = 3e-3
    config.ace.jac_samples = 8
    config.ace.compare_dims = 4
    return config
