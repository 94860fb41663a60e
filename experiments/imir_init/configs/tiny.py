"""Test-size config (seconds): a 2 x 2 map at one scale, 2 trained initializations, a horizon
long enough that both trained initializations settle on a route (measured: the exact ODE's
winner agrees with training on 2/2, the largest-initial-route predictor on 0/2)."""
from experiments.imir_init.configs import paper


def get_config():
    c = paper.get_config()
    c.ode.update(t1=400.0, n_save=4)
    c.grid.update(scales=[0.2], n=2)
    c.trained.update(n_inits=2, lr=4.0)
    return c
