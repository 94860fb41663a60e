"""Test-size config: seconds on 2 cores (tests/test_ace_agreement.py), and the models learn
agreement: at d_model 32, lr 1e-2 and 400 steps of batch 32, seeds 0-3 measured base AUC
0.95-1.0 (singular vs plural by the margin), flip AUC 0.02-0.09 (the flipped core reverses it)
and 0.87-1.0 of greedy generations flipped (at d_model 16 and 40 steps: base AUC 0.53 / 0.58)."""
from experiments.ace_agreement.configs import cpu


def get_config():
    config = cpu.get_config()
    config.n_seeds = 2
    config.chunk_evals = 2
    config.prompts.n_train = 64
    config.prompts.n_test = 64
    config.corpus.n_sentences = 512
    config.corpus.n_eval = 32
    config.corpus.batch_size = 32
    config.model.d_model = 32
    config.model.n_heads = 2
    config.hparams.lr = 1e-2
    config.train.steps = 400
    config.train.eval_every = 100
    config.train.warmup_steps = 0
    config.ace.time_both = False
    config.generation.n_prompts = 16
    config.generation.n_new = 4
    return config
