"""The f sweep near its threshold at a 3x longer budget than ``sweep_f_plateau.py`` (issue 16
part 4): 5 values of f around the threshold x 4 seeds, 24,000 steps at batch 256, a checkpoint
every 2,000 steps. A long run: 480,000 model-steps, about 2.5 hours on 2 unloaded cores at the
~55 model-steps/s measured for sweep_f_plateau; it resumes from its last checkpoint.

Why: at 8,000 steps held-out accuracy at f = 0.3 was still climbing (see BUILD_NOTES.md, "The f
sweep at a plateau budget"), so the 8,000-step threshold is still a property of the budget.
"""
import ml_collections

from experiments.assign_add.configs import sweep_f_plateau


def get_config() -> ml_collections.ConfigDict:
    config = sweep_f_plateau.get_config()
    config.grid = (0.2, 0.25, 0.3, 0.35, 0.4)
    config.train.steps = 24000
    config.train.eval_every = 500
    config.chunk_evals = 4  # a checkpoint every 2,000 steps
    return config
