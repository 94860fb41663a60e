"""Default config (minutes on 2 shared CPU cores): the two 2-layer recall settings, 4 seeds
each, exact greedy elimination; the 5-layer setting is off (see BUILD_NOTES: its engine forward
costs ~0.45 s per 256-sequence loss on these cores)."""
from experiments.imir_detect.configs import paper


def get_config():
    c = paper.get_config()
    c.n_seeds = 4
    c.khop.enabled = False
    c.detect.batch_size = 512
    c.detect.eval_size = 1024
    return c
