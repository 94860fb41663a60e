"""Paper-scale settings (the ACE paper's agreement setting, self-trained LMs at their upper size):
16 seeds of a 4-layer, d_model 128 GPT-2, a larger corpus and longer training, generation from
every test prompt. Meant for an accelerator; on 2 CPU cores use cpu.py. Add GPT-2 checkpoints with
--config.gpt2_paths=PATH,PATH (e.g. GPT-2 small/medium/large saved by transformers)."""
from experiments.ace_agreement.configs import cpu


def get_config():
    config = cpu.get_config()
    config.n_seeds = 16
    config.chunk_evals = 4
    config.corpus.n_sentences = 100000
    config.corpus.batch_size = 64
    config.model.n_layers = 4
    config.model.d_model = 128
    config.model.n_heads = 4
    config.train.steps = 4000
    config.train.eval_every = 250
    config.train.warmup_steps = 200
    config.hparams.lr = 1e-3
    config.generation.n_prompts = 600
    return config
