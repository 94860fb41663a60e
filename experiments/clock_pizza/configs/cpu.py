"""CPU-scale clock/pizza sweep: the quickstart's model, training and hyperparameters
(``experiments/quickstart/configs/cpu.py``) on a + b mod 31 with 70% of the pairs for training,
3 attention rates x 8 seeds in one compiled program, 2000 steps (the quickstart's 3000 with
half the pairs grok at 2062 +- 490; with 70% of them for training, sooner)."""
import ml_collections

from experiments.quickstart.configs import cpu as quickstart
from mechjax.studies import clock_pizza as cp


def get_config() -> ml_collections.ConfigDict:
    base = quickstart.get_config()
    config = ml_collections.ConfigDict()
    config.n_seeds = 8
    config.seed_offset = 0
    config.run = ""  # --run=RUN: measure that saved run instead of training (saved.py)
    config.attn_rates = (0.0, 0.5, 1.0)
    config.attn_mixing = "uniform"  # or "ones": the paper's all-ones matrix (attention_mix)
    config.chunk_evals = 8
    config.grok_threshold = 0.99
    config.n_triples = 100
    config.pizza_min_grad_sym = cp.PIZZA_MIN_GRAD_SYM
    config.clock_min_dist_irr = cp.CLOCK_MIN_DIST_IRR

    config.task = ml_collections.ConfigDict()
    config.task.p = base.task.p
    config.task.train_fraction = 0.7  # the quickstart's 0.5 groks in 4-5 of 8 seeds by 3000 steps
    config.task.split_seed = base.task.split_seed
    config.model, config.train, config.hparams = base.model, base.train, base.hparams
    config.train.steps = 2000
    return config
