"""Default config: the paper's settings (SPEC 2.5, 16 seeds).

They fit a 2-core CPU: measured on 2 shared cores, training 16 seeds takes about TRAIN_MIN
minutes and batched ACE about ACE_MIN.
"""
from experiments.ace_markov.configs import paper


def get_config():
    return paper.get_config()
