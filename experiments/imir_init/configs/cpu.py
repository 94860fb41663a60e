"""Default config (minutes on 2 shared CPU cores): a 8 x 8 map at two scales and 64 trained
initializations."""
from experiments.imir_init.configs import paper


def get_config():
    c = paper.get_config()
    c.grid.scales = [0.1, 0.2]
    c.grid.n = 8
    c.trained.n_inits = 64
    return c
