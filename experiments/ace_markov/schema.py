"""The ace_markov config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.models.config import ModelConfig
from mechjax.cli.schema import (SEEDS, DataclassSection, Schema, Section, boolean, choice,
                                   fraction, hparams, integer, sequence)
from mechjax.training.train import TrainConfig
from mechjax.sweeps.vectorize import ANALYSIS_VECTORIZE

# The tails from the block output to what the Jacobians differentiate (``run.TAILS``).
TAIL_NAMES = ("log_probs", "logits")

SCHEMA = Schema(
    "ace_markov",
    **SEEDS,
    chunk_evals=integer("evaluations per compiled call (and per checkpoint)"),
    task=Section(
        "the 4-state Markov chain",
        data_seed=integer("which sequences", min=0),
        n_train=integer("training sequences"),
        n_test=integer("test sequences (ACE's activations)"),
        batch_size=integer("sequences per step (<= n_train)"),
    ),
    model=DataclassSection(ModelConfig, fixed=("d_vocab", "d_vocab_out", "n_ctx")),
    train=DataclassSection(TrainConfig),
    hparams=hparams("lr", "weight_decay", "init_scale"),
    ace=Section(
        "ACE on the block output",
        tau=fraction("energy kept by the core"),
        tails=sequence(choice(TAIL_NAMES), "tails analysed; the first is the primary one",
                       distinct=True),
        jac_samples=integer("S: (sequence, position) pairs of the test set for the Jacobians"),
        jac_seed=integer("which pairs (the same for every model seed)", min=0),
        compare_dims=integer("core coordinates kept for CCA (<= model.d_model)"),
        float64=boolean("Gramians, balanced truncation and fits in float64"),
        time_per_seed_loop=boolean("also time the same ACE as a per-seed loop and as one vmapped "
                                   "program"),
        vectorize=choice(ANALYSIS_VECTORIZE, "seeds as one vmapped program or a loop of one "
                         "compiled single-seed program ('auto': vmapped)",
                         default="auto"),
    ),
)
