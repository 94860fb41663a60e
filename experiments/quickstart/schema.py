"""The quickstart config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.models.config import ModelConfig
from mechjax.cli.schema import (SEEDS, DataclassSection, Schema, Section, choice, fraction,
                                   hparams, integer)
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig

SCHEMA = Schema(
    "quickstart",
    **SEEDS,
    chunk_evals=integer("evaluations per compiled call (and per checkpoint)"),
    grok_threshold=fraction("test accuracy that counts as generalized"),
    task=Section(
        "a op b mod p",
        p=integer("modulus (also the vocabulary)", min=2),
        op=choice(modular.OPERATIONS, "the operation"),
        train_fraction=fraction("share of all p^2 pairs used for training"),
        split_seed=integer("which pairs are training pairs", min=0),
    ),
    model=DataclassSection(ModelConfig, fixed=("d_vocab", "d_vocab_out", "n_ctx")),
    train=DataclassSection(TrainConfig),
    hparams=hparams("lr", "weight_decay", "init_scale"),
)
