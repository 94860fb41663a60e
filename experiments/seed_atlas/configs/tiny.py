"""Test-size seed atlas (used by tests/test_seed_atlas_experiment.py): a tiny quickstart run
(p = 11, 5 frequencies), grouped by its Fourier sparsity (the planted mechanism there)."""
from experiments.seed_atlas.configs import cpu


def get_config():
    config = cpu.get_config()
    config.fourier_k = 1
    config.group_by = ("fourier/top1",)
    return config
