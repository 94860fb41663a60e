"""The Assign-and-Add configs (``run.py`` and ``sweep_data.py``): every key, what it means and
what it allows (``configs/*.py`` give values; see ``mechjax.cli.schema``)."""
from mechjax.models.config import ModelConfig
from mechjax.cli.schema import (SEEDS, DataclassSection, Schema, Section, choice, fraction,
                                   hparams, integer, sequence, text)
from mechjax.training.train import TrainConfig

SPLITS = ("authors", "seeded")

TASK = Section(
    "Assign and Add (the paper's task)",
    batch_size=integer("training sequences per step"),
    pool_size=integer("sequences per evaluation pool at every evaluation"),
    f=fraction("fraction of ordered addition pairs used for training"),
    r=fraction("keep-probability of each 2-var training row"),
    split=choice(SPLITS, "'authors': random.Random(split_seed) ranking; 'seeded': numpy"),
    split_seed=integer("seed of the pair split", min=0),
)
# Only the widths; the rest of the architecture is the paper's (``tasks.assign_add.model_config``).
MODEL = DataclassSection(ModelConfig, "widths (the rest is fixed by the paper)",
                         only=("d_model", "n_heads", "d_head", "d_mlp", "act_fn", "init"))

SCHEMA = Schema(
    "assign_add",
    **SEEDS,
    chunk_evals=integer("evaluations per compiled call (and per checkpoint)"),
    snapshot_every_chunks=integer("parameter snapshots (what mechjax.sweeps.runs and the seed atlas "
                                  "read) at step 0 and every k-th chunk; 0: the final step only",
                                  min=0, default=0),
    task=TASK,
    model=MODEL,
    train=DataclassSection(TrainConfig),
    hparams=hparams("lr", "weight_decay", "init_scale"),
    analysis=Section(
        "measures during and after training",
        probe_size=integer("2-var sequences for attention measures and the probe", min=4),
        grad_batch=integer("training sequences for the QK2 gradient, every evaluation"),
        final_size=integer("sequences for the final mechanism summary", min=4),
        union_sample=integer("0: the whole 2-var union; else a random subset", min=0),
        data_seed=integer("probe / paired / exhaustive-prefix sequences", min=0),
    ),
    phases=Section(
        "a phase is the first evaluation at which its metric reaches threshold",
        threshold=fraction("accuracy that counts as reached"),
        phase1=text("metric of phase 1 (a recorded metric name)"),
        phase2=text("metric of phase 2"),
        phase3=text("metric of phase 3"),
    ),
)

SWEEP_SCHEMA = Schema(
    "assign_add.sweep_data",
    **SEEDS,
    mode=choice(("f", "r"), "'f': held-out-pair accuracy vs f; 'r': 2-var union accuracy vs r"),
    grid=sequence(fraction(), "values of the swept knob (task.f or task.r)", increasing=True),
    chunk_evals=integer("evaluations per compiled call (and per checkpoint)"),
    task=TASK,
    model=MODEL,
    train=DataclassSection(TrainConfig, fixed=("eval_pools",)),
    hparams=hparams("lr", "weight_decay", "init_scale"),
    threshold=fraction("accuracy the mean curve must reach"),
    final=Section(
        "the exhaustive accuracy after training",
        union_sample=integer("r mode: 0 = the whole 2-var union; else a random subset", min=0),
        data_seed=integer("which sequences", min=0),
    ),
)
