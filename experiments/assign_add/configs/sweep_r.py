"""Data-requirement sweep over r (keep-probability of each 2-var training row), CPU scale.

12 values of r (0.01 .. 1, roughly log-spaced) x 4 seeds = 48 runs as ONE compiled program
(``task.r`` is a traced hyperparameter), f = 0.7 with the authors' split. Measured: accuracy on the
exhaustive 2-var union (held-out pairs with allowed variables plus training pairs with misplaced
variables, 193,580 sequences) after training; threshold where the mean curve reaches 0.9
(interpolated in log r), per-seed crossings as spread. Paper: 2-var generalization needs r >= ~0.2.

Scale: CPU. The paper's model, batch 512, lr 3e-3, 3,000 steps per run (at r = 1, 7 of 8 seeds of
configs/cpu.py completed all three phases by step 2,400 at this rate): about 48 x 3,000 x 22 ms =
53 minutes on 2 unloaded cores. Fewer 2-var rows slow phases 2-3, so the threshold measured is
"within 3,000 steps".
Paper scale: ``--config.train.steps=40000 --config.hparams.lr=1e-3``.
"""
from experiments.assign_add.configs import sweep_f


def get_config():
    config = sweep_f.get_config()
    config.mode = "r"
    config.grid = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 0.85, 1.0)
    config.train.steps = 3000
    return config
