"""Test-size quickstart: seconds on 2 cores (used by tests/test_quickstart.py)."""
from experiments.quickstart.configs import cpu


def get_config():
    config = cpu.get_config()
    config.n_seeds = 3
    config.task.p = 11
    config.model.d_model = 16
    config.model.d_head = 4
    config.model.d_mlp = 32
    config.train.steps = 60
    config.train.eval_every = 10
    config.chunk_evals = 2
    return config
