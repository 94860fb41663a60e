"""Test-size quickstart that groks in seconds on 2 cores (tests/test_quickstart.py's end-to-end).

At p = 23 with 70% of the pairs for training and lr 5e-3, every seed memorizes its training
split within ~100 steps and generalizes a few hundred steps later (measured for seeds 0-2:
train accuracy >= 0.99 at step 100, test accuracy >= 0.99 at steps 450-700), so the test's
"memorized, then grokked" checks have a phenomenon to check. ``tiny.py`` (60 steps, p = 11)
stays the plumbing config of the other tests: it does not grok.
"""
from experiments.quickstart.configs import cpu


def get_config():
    config = cpu.get_config()
    config.n_seeds = 3
    config.task.p = 23
    config.task.train_fraction = 0.7
    config.model.d_model = 32
    config.model.d_head = 8
    config.model.d_mlp = 64
    config.train.steps = 1200
    config.train.eval_every = 50
    config.chunk_evals = 8
    config.hparams.lr = 5e-3
    return config
