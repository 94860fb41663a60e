"""Full-size config (a GPU or a long CPU run): a finer map, three scales, 256 trained inits."""
import ml_collections


def get_config():
    c = ml_collections.ConfigDict()
    c.task = dict(n_common=6, n_rare=6, n_blocks=4, f_r=1.0, f_v=0.0)
    c.model = dict(n_layers=3, n_heads=1)
    c.ode = dict(t1=1000.0, n_save=10, rtol=1e-4, min_rise=0.01)
    c.grid = dict(axis_routes=["L1>L2", "L1>L3"], scales=[0.1, 0.2, 0.3], factor_min=0.0,
                  factor_max=2.5, n=24)
    c.trained = dict(n_inits=256, init_std=0.1, lr=4.0, batch_size=32, seed=0,
                     confident_margin=0.3)
    return c
