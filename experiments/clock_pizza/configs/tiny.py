"""Test-size clock/pizza sweep (tests/test_clock_pizza_experiment.py): p = 11, 2 rates x 3 seeds,
a few dozen steps; plumbing only (nothing groks)."""
from experiments.clock_pizza.configs import cpu


def get_config():
    config = cpu.get_config()
    config.n_seeds = 3
    config.attn_rates = (0.0, 1.0)
    config.chunk_evals = 2
    config.n_triples = 20
    config.task.p = 11
    config.model.d_model = 16
    config.model.d_head = 4
    config.model.d_mlp = 32
    config.train.steps = 40
    config.train.eval_every = 10
    return config
