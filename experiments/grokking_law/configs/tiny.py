"""Test-size config: seconds on 2 cores (tests/test_grokking_law_experiment.py). Too short to grok
reliably; it exercises every code path, including never-grokked runs."""
from experiments.grokking_law.configs import paper


def get_config():
    config = paper.get_config()
    config.n_seeds = 2
    config.model.d_model = 16
    config.model.n_heads = 2
    config.model.d_mlp = 32
    config.hparams.lr = 1e-2
    config.omega_sweep.p = 7
    config.omega_sweep.batch_size = 16
    config.omega_sweep.omegas = (0.5, 2.0)
    config.omega_sweep.steps = 30
    config.omega_sweep.chunk_evals = 15
    config.p_sweep.ps = (5, 7)
    config.p_sweep.steps = 30
    config.p_sweep.chunk_evals = 30
    config.benchmark.steps = 0  # the benchmark runs with the CPU config
    return config
