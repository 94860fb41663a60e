"""The f sweep below its 8,000-step threshold at a 3x longer budget than ``sweep_f_plateau.py``
(docs/assign_add.md): 5 values of f from 0.15 to 0.35 x 4 seeds, 24,000 steps at batch 256, a
checkpoint every 2,000 steps. A long run: 480,000 model-steps, about 2.5 hours on 2 unloaded cores
at the ~55 model-steps/s measured for sweep_f_plateau; it resumes from its last checkpoint.

Why: at 8,000 steps held-out accuracy at f = 0.3 was still climbing (0.36 -> 0.78 over the last
quarter) and f = 0.2 had started to (docs/assign_add.md), so
the 8,000-step threshold (0.37) is still a property of the budget.
"""
import ml_collections

from experiments.assign_add.configs import sweep_f_plateau


def get_config() -> ml_collections.ConfigDict:
    config = sweep_f_plateau.get_config()
    config.grid = (0.15, 0.2, 0.25, 0.3, 0.35)
    config.train.steps = 24000
    config.train.eval_every = 500
    config.chunk_evals = 4  # a checkpoint every 2,000 steps
    return config
