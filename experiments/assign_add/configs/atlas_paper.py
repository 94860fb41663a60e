"""Assign and Add for the seed atlas at the paper's batch and learning rate (docs/seed_atlas.md).

``configs/atlas.py`` (32 seeds, snapshots every 200 steps) with the paper's batch 512 and lr 1e-3,
where the 8-seed paper-scale run left 2 of 8 seeds never bound in 40,000 steps and bound the other
6 at step 3,250 +- 1,209 (measured). 5,000 steps, not 40,000: what fits a CPU session (32 x
5,000 model-steps at batch 512). "Never bound" here therefore means "not bound by step 5,000".
Then ``python -m experiments.seed_atlas.assign_add --run=WORKDIR ...``.
"""
from experiments.assign_add.configs import atlas


def get_config():
    config = atlas.get_config()
    config.task.batch_size = 512
    config.hparams.lr = 1e-3
    config.train.steps = 5000
    return config
