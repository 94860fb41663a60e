"""Default config: the ACE paper's settings (16 seeds), evaluated every 375 steps.

Training is identical to ``paper.py`` (evaluation draws no training randomness); only the
accuracy curves are sparser (5 points instead of 25; by a FLOP count the 25 full-data
evaluations are about a fifth of the run).
Measured on 2 CPU cores shared with other jobs: this config trained 16 seeds in 21 min (paper.py:
56 min under heavier load), and ACE on 16 seeds x 93,000 activations took 12-37 s per tail.
"""
from experiments.ace_markov.configs import paper


def get_config():
    config = paper.get_config()
    config.train.eval_every = 375
    config.chunk_evals = 1
    return config
