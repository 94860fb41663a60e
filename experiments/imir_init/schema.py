"""The imir_init config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.cli.schema import Schema, Section, fraction, integer, number, sequence, text

TIME = number("ODE horizon (gradient-flow time)", gt=0.0)

SCHEMA = Schema(
    "imir_init",
    task=Section(
        "the associative-recall task (cyclic offsets; the theory's symmetric setting)",
        n_common=integer("common tokens", min=2), n_rare=integer("rare tokens", min=2),
        n_blocks=integer("blocks per sequence (4: 3 context blocks and the query)", min=3),
        f_r=fraction("rare-token fraction", zero_ok=True),
        f_v=fraction("varied-answer fraction", zero_ok=True),
    ),
    model=Section("the IMIR model", n_layers=integer("attention layers", min=3, max=3),
                  n_heads=integer("heads per layer", min=1, max=1)),
    ode=Section(
        "the exact reduced ODE (every manifold coordinate)",
        t1=TIME, n_save=integer("saved times"),
        rtol=number("solver relative tolerance", gt=0.0, lt=1.0),
        min_rise=number("loss rise below which an ablated layer counts as unused", gt=0.0),
    ),
    grid=Section(
        "the winner map over the route units' initial values",
        axis_routes=sequence(text(), "the two routes whose match units span the map's axes",
                             length=2, distinct=True),
        scales=sequence(number(gt=0.0), "overall init scales (every route unit's value)"),
        factor_min=number("smallest axis factor (match value / scale)"),
        factor_max=number("largest axis factor"),
        n=integer("cells per axis", min=2),
    ),
    trained=Section(
        "full transformers trained from random initializations (one vmapped program)",
        n_inits=integer("random initializations", min=1),
        init_std=number("std of every trained weight entry at step 0", gt=0.0),
        lr=number("SGD learning rate (training time t = step * lr)", gt=0.0),
        batch_size=integer("fresh sequences per step"),
        seed=integer("", min=0),
        confident_margin=fraction("winner margin above which a point counts as confident",
                                  zero_ok=True),
    ),
)
