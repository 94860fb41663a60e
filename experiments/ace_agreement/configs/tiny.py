"""Test-size config: seconds on 2 cores (tests/test_ace_agreement.py)."""
from experiments.ace_agreement.configs import cpu


def get_config():
    config = cpu.get_config()
    config.n_seeds = 2
    config.chunk_evals = 2
    config.prompts.n_train = 64
    config.prompts.n_test = 64
    config.corpus.n_sentences = 512
    config.corpus.n_eval = 32
    config.corpus.batch_size = 16
    config.model.d_model = 16
    config.model.n_heads = 2
    config.train.steps = 40
    config.train.eval_every = 10
    config.train.warmup_steps = 0
    config.ace.time_both = False
    config.generation.n_prompts = 16
    config.generation.n_new = 4
    return config
