"""CPU config (the default): 8 seeds of a 2-layer, d_model 64 GPT-2 on the agreement corpus, then
ACE on the 600 + 600 prompts and flipping during generation. Measured time: see the README."""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.n_seeds = 8
    config.seed_offset = 0
    config.chunk_evals = 2
    config.gpt2_paths = ""

    config.prompts = ml_collections.ConfigDict()
    config.prompts.seed = 0
    config.prompts.split_seed = 0
    config.prompts.n_train = 600
    config.prompts.n_test = 600
    config.prompts.bos = False
    config.prompts.there = "spec"
    config.prompts.relative = "spec"

    config.corpus = ml_collections.ConfigDict()
    config.corpus.seed = 0
    config.corpus.n_sentences = 20000
    config.corpus.filler_fraction = 0.25
    config.corpus.n_eval = 256
    config.corpus.batch_size = 32
    config.corpus.bos_fraction = 0.5

    config.model = ml_collections.ConfigDict()
    config.model.n_layers = 2
    config.model.d_model = 64
    config.model.n_heads = 4
    config.model.n_ctx = 24

    config.train = ml_collections.ConfigDict()
    config.train.steps = 600
    config.train.eval_every = 150
    config.train.optimizer = "adamw"
    config.train.warmup_steps = 50
    config.train.schedule = "cosine"

    config.hparams = ml_collections.ConfigDict()
    config.hparams.lr = 3e-3
    config.hparams.weight_decay = 0.01
    config.hparams.init_scale = 1.0

    config.ace = ml_collections.ConfigDict()
    config.ace.vectorize = "auto"
    config.ace.time_both = True

    config.generation = ml_collections.ConfigDict()
    config.generation.n_prompts = 200
    config.generation.n_new = 6
    config.generation.temperature = 1.0
    config.generation.top_k = 50
    config.generation.target_margin = 1.0
    config.generation.margin = "copula"
    config.generation.newton_steps = 4
    config.generation.seed = 0
    return config
