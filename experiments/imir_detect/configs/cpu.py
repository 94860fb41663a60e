"""Default config (minutes on 2 shared CPU cores): the two 2-layer recall settings, 4 seeds
each, exact greedy elimination; the 5-layer 2-hop setting has its own CPU config
(``khop_cpu.py``: 17 min of training for 4 seeds, then minutes of elimination per seed)."""
from experiments.imir_detect.configs import paper


def get_config():
    c = paper.get_config()
    c.n_seeds = 4
    c.khop.enabled = False
    c.detect.batch_size = 512
    c.detect.eval_size = 1024
    return c
