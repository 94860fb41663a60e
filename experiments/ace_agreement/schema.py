"""The ace_agreement config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.cli.schema import (DataclassSection, Schema, Section, boolean, choice, fraction,
                                   hparams, integer, number, text)
from mechjax.training.train import TrainConfig
from mechjax.sweeps.vectorize import ANALYSIS_VECTORIZE

SCHEMA = Schema(
    "ace_agreement",
    n_seeds=integer("self-trained models, one per seed (0: only the gpt2_paths models)", min=0),
    seed_offset=integer("first seed", min=0, default=0),
    chunk_evals=integer("evaluations per compiled call (and per checkpoint)"),
    gpt2_paths=text("comma-separated GPT-2-format checkpoint folders (config.json + weights + "
                    "tokenizer) analysed beside the self-trained models", default=""),
    prompts=Section(
        "The ACE paper's prompts on held-out (noun, attractor, connector) triples",
        seed=integer("which prompts", min=0),
        split_seed=integer("which triples are held out of the corpus", min=0),
        n_train=integer("prompts whose activations define the cores and their centre"),
        n_test=integer("prompts (held-out triples) every number is measured on"),
        bos=boolean("put <|endoftext|> before every prompt (the ACE authors read GPT-2 without "
                    "a BOS token; the self-trained models see both forms)", default=False),
        there=choice(("spec", "article", "over_there"), "wording of the 'there' template: "
                     "the ACE paper's 'There H C A' (no article, as its authors), "
                     "'There the H C A' or 'Over there, the H C A' (both earlier runs)",
                     default="spec"),
        relative=choice(("spec", "after_attractor"), "wording of the relative-clause template: "
                        "'The H that guarded the A' (the authors' form, number-free verbs) or "
                        "'The H C A that we found' (earlier runs)", default="spec"),
    ),
    corpus=Section(
        "the synthetic training corpus (tasks.agreement_corpus)",
        seed=integer("which sentences", min=0),
        n_sentences=integer("corpus rows, sampled by key inside the training step"),
        filler_fraction=fraction("share of sentences with no agreement slot", zero_ok=True),
        n_eval=integer("rows of each evaluation pool (train rows, held-out sentences)"),
        batch_size=integer("rows per step (<= n_sentences)"),
        bos_fraction=fraction("share of rows that start with <|endoftext|> (the rest start with "
                              "the sentence)", zero_ok=True, default=0.5),
    ),
    model=Section(
        "the self-trained GPT-2 (loaders.gpt2_model_config)",
        n_layers=integer("blocks"),
        d_model=integer("residual width"),
        n_heads=integer("attention heads (divides d_model)"),
        n_ctx=integer("context: the longest sentence + 2, and prompt + generated tokens"),
    ),
    train=DataclassSection(TrainConfig),
    hparams=hparams("lr", "weight_decay", "init_scale"),
    ace=Section(
        "rank-1 ACE at every layer's residual output, last prompt position",
        vectorize=choice(ANALYSIS_VECTORIZE, "seeds as one vmapped program or a loop of one "
                         "compiled single-seed program ('auto': the vmapped program, "
                         "mechjax.sweeps.vectorize)"),
        time_both=boolean("time the vmapped program and the per-seed loop (both run)"),
    ),
    generation=Section(
        "number flipping during free generation from test prompts, greedy and sampled",
        n_prompts=integer("test prompts continued (<= prompts.n_test)"),
        n_new=integer("tokens generated after each prompt"),
        temperature=number("sampling temperature", gt=0.0),
        top_k=integer("sample among the k most likely tokens"),
        target_margin=number("each step's margin is moved to -sign(m) * this", gt=0.0),
        margin=choice(("copula", "summed"), "the margin the push sets: logsumexp(are, were) - "
                      "logsumexp(is, was) (the ACE authors'), or the paper's summed m",
                      default="copula"),
        newton_steps=integer("Newton iterations that find each step's strength"),
        seed=integer("sampling seed (the same draws for clean and steered runs)", min=0),
    ),
)
