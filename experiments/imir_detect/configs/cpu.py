"""Default config (minutes on 2 shared CPU cores): the two 2-layer recall settings, 4 seeds
each, exact greedy elimination; the 5-layer 2-hop setting has its own CPU config
(``khop_cpu.py``: about 8 minutes for 4 seeds).

The elimination runs on 2048 sequences: with exact greedy on these models the kept set at every
budget of the curve no longer changes when the batch doubles from 2048 to 8192 in 6 of 8 seeds
(a 7th changes at tau = 0.2 only; in-context seed 1 has not settled by 8192), while from 512 to
1024 it changed in 3 of 8 (measured)."""
from experiments.imir_detect.configs import paper


def get_config():
    c = paper.get_config()
    c.n_seeds = 4
    c.khop.enabled = False
    c.detect.batch_size = 2048
    c.detect.eval_size = 1024
    return c
