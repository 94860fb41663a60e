"""The ace_grokking config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.cli.schema import (SEEDS, Schema, Section, boolean, fraction, hparams, integer,
                                   number, optional, sequence)

SCHEMA = Schema(
    "ace_grokking",
    **SEEDS,
    task=Section(
        "a + b mod p from [a, b]",
        p=integer("modulus (also the vocabulary)", min=3),
        train_fraction=fraction("share of all p^2 pairs used for training"),
        split_seed=integer("which pairs are training pairs (the same for every seed)", min=0),
        batch_size=optional(integer("pairs per step; None or >= n_train: full batch")),
    ),
    model=Section(
        "widths of the ACE paper's post-LN encoder (the rest is fixed)",
        n_layers=integer("encoder blocks"),
        d_model=integer("residual width"),
        n_heads=integer("attention heads"),
        d_mlp=integer("MLP width"),
        dropout=number("dropout rate", ge=0.0, lt=1.0),
        causal=boolean("attention mask on"),
    ),
    train=Section(
        "length of training",
        epochs=integer("training epochs"),
        eval_every_epochs=integer("epochs between accuracy evaluations"),
    ),
    hparams=hparams("lr", "weight_decay"),
    branch=Section(
        "at this epoch every seed branches to another weight decay with a reset optimizer",
        epoch=integer("branch epoch (a checkpoint epoch)"),
        weight_decay=number("the branch's weight decay", ge=0.0),
    ),
    checkpoints=Section(
        "parameter snapshots ACE runs on",
        dense_every=integer("epochs between snapshots up to dense_until"),
        dense_until=integer("end of the dense snapshots"),
        sparse_every=integer("epochs between snapshots after dense_until"),
    ),
    ace=Section(
        "ACE at every snapshot",
        tau=fraction("energy kept by the core"),
        rel_tol=number("principal directions of the class means kept above this", gt=0.0),
        holdout_frac=number("held-out block of round(holdout_frac p) answers", gt=0.0, lt=0.5),
        holdout_start=integer("first held-out answer", min=0),
        float64=boolean("Gramians and fits in float64"),
        checkpoint_batch=optional(integer("snapshots vmapped at once (x all seeds)")),
        clock_epochs=sequence(integer(min=0), "snapshot epochs of the clock figure"),
        grok_threshold=fraction("test accuracy that counts as grokked"),
    ),
)
