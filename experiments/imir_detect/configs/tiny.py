"""Test-size config (seconds): the ICL recall setting on a 5-position spec, 2 seeds."""
from experiments.imir_detect.configs import paper


def get_config():
    c = paper.get_config()
    c.n_seeds = 2
    c.recall_icl.update(n_common=4, n_rare=4, n_blocks=3, steps=100, eval_every=50,
                        batch_size=32, lr=0.03)
    c.recall_iwl.enabled = False
    c.khop.enabled = False
    c.tau_curve = (0.02, 0.1, 0.5)
    c.detect.update(batch_size=64, eval_size=64, exact_max=8, overshoot=4, curve_points=8)
    return c
