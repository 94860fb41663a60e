"""The f sweep at a budget long enough for held-out accuracy to plateau (docs/assign_add.md).

``sweep_f.py`` stops at 1,500 steps, where small f may only be slow rather than unable to
generalize; this config trains 5 values of f x 4 seeds for 8,000 steps at batch 256 (a CPU-fast
setting: about 60 model-steps/s on 2 unloaded cores, so 45 minutes), evaluating every 250 steps
so that the summary can report how much held-out accuracy still moved over the last quarter of the
budget (``plateau/*``). The threshold is then a property of f, not of the step budget, as far
as that change is small. The grid stops at 0.5: at 1,500 steps f = 0.6 already reached 0.98.
"""
import ml_collections

from experiments.assign_add.configs import sweep_f


def get_config() -> ml_collections.ConfigDict:
    config = sweep_f.get_config()
    config.grid = (0.1, 0.2, 0.3, 0.4, 0.5)
    config.task.batch_size = 256
    config.train.steps = 8000
    config.train.eval_every = 250
    config.chunk_evals = 4  # a checkpoint every 1,000 steps, to resume from
    return config
