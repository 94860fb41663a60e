"""The clock_pizza config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.models.config import ModelConfig
from mechjax.models.attention_mix import MIXINGS
from mechjax.cli.schema import (SEEDS, DataclassSection, Schema, Section, choice, fraction,
                                   hparams, integer, number, sequence, text)
from mechjax.training.train import TrainConfig

# short flag of __main__ (mechjax.cli.experiment.run_cli aliases): --run=RUN is --config.run=RUN
ALIASES = {"run": "run"}

SCHEMA = Schema(
    "clock_pizza",
    run=text("a saved run to measure instead of training (any workdir of [a, b] -> a + b models: "
             "quickstart, ace_grokking, clock_pizza; every sweep in it, read only; the training "
             "keys are then unused); '' = train; alias --run", default=""),
    **SEEDS,
    attn_rates=sequence(number(ge=0.0, le=1.0), "attention rates trained (1: softmax attention, "
                        "0: uniform), each with every seed, as one compiled grid", distinct=True),
    attn_mixing=choice(MIXINGS, "what rate 0 attends with: 'uniform' (ours; 1 / n_keys, rows sum "
                       "to one) or 'ones' (the paper's code: the all-ones matrix)",
                       default="uniform"),
    chunk_evals=integer("evaluations per compiled call (one parameter snapshot each)"),
    grok_threshold=fraction("test accuracy from which a seed counts as having learned the task "
                            "(only those are called clock or pizza)"),
    n_triples=integer("random (a, b, c) triples of the gradient symmetricity"),
    pizza_min_grad_sym=fraction("gradient symmetricity from which a seed's gradients count as "
                                "symmetric (pizza side)"),
    clock_min_dist_irr=fraction("distance irrelevance from which a seed's correct logits count "
                                "as ignoring the distance (clock side)"),
    task=Section(
        "a + b mod p",
        p=integer("modulus (also the vocabulary); odd", min=3),
        train_fraction=fraction("share of all p^2 pairs used for training"),
        split_seed=integer("which pairs are training pairs", min=0),
    ),
    model=DataclassSection(ModelConfig, fixed=("d_vocab", "d_vocab_out", "n_ctx")),
    train=DataclassSection(TrainConfig),
    hparams=hparams("lr", "weight_decay", "init_scale"),
)
