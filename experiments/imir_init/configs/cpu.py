"""Default config (minutes on 2 shared CPU cores): a 6 x 6 map at two scales and 64 trained
initializations, horizon t = 800."""
from experiments.imir_init.configs import paper


def get_config():
    c = paper.get_config()
    c.ode.t1 = 800.0
    c.grid.update(scales=[0.2, 0.3], n=6)
    c.trained.update(n_inits=64, init_std=0.15)
    return c
