"""The grokking-law config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.models.config import ModelConfig
from mechjax.cli.schema import (SEEDS, DataclassSection, Schema, Section, boolean, choice,
                                   fraction, hparams, integer, number, sequence)
from mechjax.training.train import OPTIMIZERS

MODULUS = integer("modulus p of a + b mod p", min=3)
BATCH = integer("training pairs per step; 0 = full batch", min=0)

SCHEMA = Schema(
    "grokking_law",
    **SEEDS,
    threshold=fraction("accuracy on train (t_mem) and test (t_grok) that counts as reached"),
    stop_when_all_grokked=boolean("end a sweep once every run reached the threshold on both"),
    task=Section(
        "a + b mod p",
        train_fraction=fraction("share of all p^2 pairs used for training"),
        split_seed=integer("which pairs are training pairs", min=0),
    ),
    model=DataclassSection(ModelConfig, fixed=("d_vocab", "d_vocab_out", "n_ctx")),
    train=Section(
        "optimizer settings (steps and evaluation come from the sweeps)",
        optimizer=choice(OPTIMIZERS, "optax optimizer"),
        b1=number("Adam beta1", ge=0.0, lt=1.0),
        b2=number("Adam beta2", ge=0.0, lt=1.0),
        eps=number("Adam epsilon", gt=0.0),
    ),
    hparams=hparams("lr", "init_scale"),
    omega_sweep=Section(
        "seeds x weight decays at one modulus, one compiled program",
        p=MODULUS,
        batch_size=BATCH,
        omegas=sequence(number(gt=0.0), "weight decays", distinct=True),
        steps=integer("optimizer steps per run"),
        chunk_evals=integer("steps per compiled call and checkpoint"),
    ),
    p_sweep=Section(
        "seeds at one weight decay, one program per modulus",
        ps=sequence(MODULUS, "moduli", distinct=True),
        batch_size=BATCH,
        omega=number("weight decay", gt=0.0),
        steps=integer("optimizer steps per run"),
        chunk_evals=integer("steps per compiled call and checkpoint"),
    ),
    benchmark=Section(
        "time the omega x seeds runs as one program vs one after another",
        steps=integer("steps per run timed; 0 = skip", min=0),
        vectorize=choice(("auto", "vmap", "map"), "how seeds are batched on a device"),
    ),
)
