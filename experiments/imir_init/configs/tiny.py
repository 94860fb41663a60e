"""Test-size config (seconds): a 2 x 2 map at one scale, 2 trained initializations, short
horizon (nothing forms; the pipeline runs end to end)."""
from experiments.imir_init.configs import paper


def get_config():
    c = paper.get_config()
    c.ode.update(t1=40.0, n_save=2)
    c.grid.update(scales=[0.2], n=2)
    c.trained.update(n_inits=2, lr=4.0)
    return c
