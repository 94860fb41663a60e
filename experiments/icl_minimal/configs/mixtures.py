"""L = N on Reddy's terms (docs/icl_minimal.md): Reddy's D = 63, batch 128 and MLP width 128, with
N = L = 8 and B = 2, over the training mixtures Reddy defines: the share of bursty sequences p_B
(the rest iid) and the share of novel-class sequences p_C; every run also reports Reddy's
label-swap test (``l_eq_n_p_b/swap_final``); ``p_b`` repeats the p_B values at L = 32. 2,000 Adam steps at lr 1e-2 as ``cpu.py``."""
from experiments.icl_minimal.configs import cpu


def get_config():
    config = cpu.get_config()
    config.task.update(dict(d=63))
    config.train.update(dict(batch_size=128, mlp_width=128))
    config.sweeps.l_eq_n_p_b.values = (0.25, 0.5, 0.75, 1.0)
    config.sweeps.l_eq_n_p_c.values = (0.0, 0.25, 0.5, 0.75)
    config.sweeps.p_b.values = (0.25, 0.5, 0.75, 1.0)
    # p_b: the same p_B values at L = 32 (is it L = N, or the iid share, that stops ICL?)
    config.run_sweeps = ("l_eq_n_p_b", "l_eq_n_p_c", "p_b")
    return config
