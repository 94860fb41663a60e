"""CPU-scale grokking law (default): the same experiment at a size 2 shared cores can run.

What changes from ``paper.py`` and why (measured with one-seed probes on 2 cores shared with
other jobs, load average 9-12, ~25 model-steps/s at this size):
  * p = 23 for the omega sweep (paper 53) and p in {17, 19, 23, 31} for the p sweep: the cost of a
    step grows as p^2 (full-set evaluation after every step included).
  * d_model 64, 4 heads, MLP 256 (paper 128 / 4 / 512, same ratios): the paper width ran at
    ~7 model-steps/s here, too slow for a sweep in minutes.
  * train fraction 0.7 (paper 0.5) and lr 5e-3 (paper 1e-3): at p = 23 and fraction 0.5 the
    training set has only 264 pairs and grokking took > 1,500 steps at omega = 1 (lr 3e-3,
    d_model 128); fraction 0.7 and lr 5e-3 grokked at omega = 0.5 / 1 / 3 after
    tau = 616 / 333 / 147 steps (one seed), i.e. within the budget below for every omega.
  * full batch in both sweeps (the 370 training pairs are fewer than the paper's batch 512),
    3 seeds, 1,600 / 1,200 steps, and sweeps stop once every run has grokked.
Dropout stays 0.1, AdamW betas as in the paper, omegas as in the paper.

Measured: 20 min 54 s on 2 cores shared with 2-3 other jobs (load 5-9), all 30
runs grokked; beta = -0.82 (R^2 0.99), p_crit = 16.1, Omega = 295 (R^2 0.95). On quiet cores
expect well under that (the same runs went 1.5-3x faster whenever the load dropped); 2 seeds
and ``p_sweep.ps = (19, 23, 31)`` took 11 min 52 s but cannot pin p_crit.
"""
from experiments.grokking_law.configs import paper


def get_config():
    config = paper.get_config()
    config.n_seeds = 3
    config.task.train_fraction = 0.7
    config.model.d_model = 64
    config.model.d_mlp = 256
    config.hparams.lr = 5e-3
    config.omega_sweep.p = 23
    config.omega_sweep.batch_size = 0
    config.omega_sweep.steps = 1600
    config.omega_sweep.chunk_evals = 200
    config.p_sweep.ps = (17, 19, 23, 31)
    config.p_sweep.steps = 1200
    config.p_sweep.chunk_evals = 200
    config.benchmark.steps = 100
    return config
