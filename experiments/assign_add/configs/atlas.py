"""Assign and Add for the seed atlas (docs/seed_atlas.md): 32 seeds at a CPU-reachable setting where
some seeds bind variables and others do not, snapshots every 200 steps.

The paper's model, AdamW (wd 0.02) and the authors' split, but batch 128 (not 512), lr 3e-3 (not
1e-3), 3,000 steps (not 40,000), 256-sequence pools, a 128-sequence probe. Chosen from an 8-seed
probe over lr 1.5e-3 / 3e-3 / 6e-3 at batch 128 (measured); what
"never bound" means here is "not bound by step 3,000", which the paper-scale run does not
settle either way. Then ``python -m experiments.seed_atlas.assign_add --run=WORKDIR ...``.
"""
from experiments.assign_add.configs import cpu


def get_config():
    config = cpu.get_config()
    config.n_seeds = 32
    config.chunk_evals = 2
    config.snapshot_every_chunks = 1  # step 0 and every 200 steps: what the atlas reads
    config.task.batch_size = 128
    config.task.pool_size = 256
    config.train.steps = 3000
    config.hparams.lr = 3e-3
    config.analysis.probe_size = 128
    config.analysis.grad_batch = 64
    config.analysis.final_size = 512
    config.analysis.union_sample = 20_000
    return config
