"""CPU config: Reddy's task sizes (D = 63, N = 8, L = 32), 6 seeds per setting, step counts cut to
fit 2 shared cores; far fewer steps than Reddy's, so the true induction-head ICL may not form."""
from experiments.icl_minimal.configs import paper


def get_config():
    config = paper.get_config()
    config.task.k_max = 512
    config.train.batch_size = 64
    config.train.eval_size = 512
    config.train.eval_every = 250
    config.train.mlp_width = 64
    for name, sweep in config.sweeps.items():
        sweep.steps = 2000
        sweep.chunk_evals = 4
    config.sweeps.K.values = (32, 128, 512)
    config.sweeps.long.steps = 4000
    config.run_sweeps = ("B", "K", "eps", "l_eq_n", "alpha", "long")
    return config
