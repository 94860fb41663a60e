"""Test-size config: seconds on 2 cores (tests/test_icl_minimal_experiment.py)."""
from experiments.icl_minimal.configs import paper


def get_config():
    config = paper.get_config()
    config.n_seeds = 2
    config.task.update(dict(d=16, n_ctx=4, n_labels=8, k_max=32, k=32.0, burstiness=2.0))
    config.train.update(dict(batch_size=64, eval_size=256, eval_every=100, mlp_width=32))
    config.run_sweeps = ("B",)
    config.sweeps.B.update(dict(values=(0.0, 4.0), steps=200, chunk_evals=2))
    return config
