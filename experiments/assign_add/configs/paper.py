"""Paper-scale Assign and Add: the paper's setup exactly (lr 1e-3, wd 0.02, batch 512, 40,000 steps,
evaluation every 100 steps on 2000-sequence pools), 8 seeds in one program.

Hours on CPU (about 22 ms per model-step on 2 unloaded cores: 8 seeds x 40,000 steps is about
2 hours plus evaluation); minutes on one accelerator. Resumable: rerun the same command.
"""
from experiments.assign_add.configs import cpu


def get_config():
    config = cpu.get_config()
    config.chunk_evals = 20  # a checkpoint every 2,000 steps
    config.task.pool_size = 2000
    config.train.steps = 40_000
    config.train.eval_every = 100
    config.hparams.lr = 1e-3
    config.analysis.probe_size = 1024
    config.analysis.grad_batch = 512
    return config
