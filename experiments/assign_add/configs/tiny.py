"""Test-size Assign and Add: a small model, a few dozen steps (tests/test_assign_add_experiment.py).

Shows no phases; it exercises every output of the run (metrics, analyses, figures, summary).
"""
from experiments.assign_add.configs import cpu


def get_config():
    config = cpu.get_config()
    config.n_seeds = 2
    config.chunk_evals = 1
    config.task.batch_size = 32
    config.task.pool_size = 32
    config.model.d_model = 16
    config.model.d_mlp = 32
    config.train.steps = 40
    config.train.eval_every = 20
    config.analysis.probe_size = 32
    config.analysis.grad_batch = 16
    config.analysis.final_size = 32
    config.analysis.union_sample = 2000
    return config
