"""Test-size clock/pizza sweep (tests/test_clock_pizza_experiment.py): a + b mod 11 with 90% of
the pairs for training, 2 rates x 3 seeds, 1000 steps at lr 1e-2 (about 10 s on 2 cores). Every
seed fits its training pairs at both rates, and the rates give opposite gradients: rate 0
symmetricity 0.97-0.98, rate 1 0.20-0.47 (seeds 0-2, over XLA's CPU float paths; from 0.30-0.41
at step 0 in both). Distance irrelevance is lower at rate 0 in every seed, by 0.12-0.39 (mean
0.29); at 600 steps one seed's gap was 0.05, which another CPU's rounding reversed. Test
accuracy stays at 0.67-0.83 of the 12 held-out pairs, so no seed counts as learned."""
from experiments.clock_pizza.configs import cpu


def get_config():
    config = cpu.get_config()
    config.n_seeds = 3
    config.attn_rates = (0.0, 1.0)
    config.chunk_evals = 2
    config.n_triples = 20
    config.task.p = 11
    config.task.train_fraction = 0.9
    config.model.d_model = 16
    config.model.d_head = 4
    config.model.d_mlp = 32
    config.hparams.lr = 1e-2
    config.train.steps = 1000
    config.train.eval_every = 100
    return config
