"""The imir_detect config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.cli.schema import (SEEDS, Schema, Section, boolean, choice, fraction, integer,
                                   number, optional, sequence, text)

SETTINGS = ("recall_icl", "recall_iwl", "khop")
UNIT = dict(zero_ok=True)
# short flags of __main__ (mechjax.cli.experiment.run_cli aliases): --weights, --from_workdir, --seed
ALIASES = {"weights": "weights", "from_workdir": "from_workdir", "seed": "from_seed",
           "step": "from_step", "causal": "weights_causal"}


def _setting(doc: str) -> Section:
    return Section(
        doc,
        enabled=boolean("train and detect this setting"),
        hops=integer("look-ups chained (1: associative recall, 2: 2-hop induction)", max=3),
        n_layers=integer("attention layers"),
        n_heads=integer("heads per layer"),
        n_common=integer("common tokens", min=2), n_rare=integer("rare tokens", min=2),
        n_blocks=integer("blocks per sequence", min=2),
        f_r=fraction("rare-token fraction of the training data", **UNIT),
        f_v=fraction("varied-answer fraction of the training data", **UNIT),
        steps=integer("training steps"), eval_every=integer("steps between evaluations"),
        lr=number("learning rate", gt=0.0),
        optimizer=choice(("adam", "sgd"), "the optimizer (sgd: plain gradient descent)",
                         default="adam"),
        train_in=choice(("weights", "manifold"), "what is trained: every entry of every W_KQ and "
                        "W_U (weights), or the manifold coordinates theta of W(theta) (manifold: "
                        "the weights never leave the span)", default="weights"),
        batch_size=integer("sequences per training step"),
        init_std=number("std of every trained weight entry at step 0 (train_in=manifold: the "
                        "coordinates start at this draw's projection on the manifold)", ge=0.0),
        causal=boolean("causal attention (the paper's model; False: the non-causal variant)",
                       default=True),
        offsets=choice(("fixed", "cyclic"), "block-list layout: fixed (the query ends the "
                       "sequence, no wrap: the paper's) or cyclic (uniformly rotated, for the "
                       "non-causal theory)", default="fixed"),
        positions=choice(("paper", "all"), "position selections of the basis: paper (the "
                         "IMIR paper's P = {I_p, M, .., M^(k-1)}, k the block length) or all (the "
                         "extended M^1 .. M^(T-1), forward shifts included)", default="paper"),
    )


SCHEMA = Schema(
    "imir_detect",
    **SEEDS,
    tau=optional(number("loss budget: elimination stops before the loss exceeds "
                        "loss(projected model) + tau (None: detect at every tau_curve value "
                        "and report the one the rule picks)", gt=0.0, default=None)),
    tau_curve=sequence(number(gt=0.0), "the budget curve: loss budgets tight to loose (used "
                       "when tau is None)", increasing=True),
    tau_margin=fraction("the rule: report the loosest tau_curve value at which the circuit's "
                        "accuracy stays within this of the full model's (selection batch)",
                        zero_ok=True),
    weights_causal=optional(boolean("the attention mask of a bare --weights file (None: not "
                                    "given; a bare file is then refused); alias --causal",
                                    default=None)),
    weights=text("a .npz state dict to detect instead of training ('' = train); alias "
                 "--weights", default=""),
    from_workdir=text("a mechjax run's workdir to detect one seed of instead of training ('' = "
                      "train); alias --from_workdir", default=""),
    from_seed=integer("the seed of --from_workdir to detect; alias --seed", min=0, default=0),
    from_step=integer("the saved step of --from_workdir (-1: the latest); alias --step", min=-1,
                      default=-1),
    weights_setting=choice(SETTINGS, "the setting (task and frame) a given model is read in (and "
                           "the sweep of a workdir with several)", default="recall_icl"),
    recall_icl=_setting("2-layer associative recall, in-context data (alpha, beta, gamma)"),
    recall_iwl=_setting("2-layer associative recall, in-weights data (delta)"),
    khop=_setting("2-hop induction in 5 layers"),
    detect=Section(
        "the detector (mechjax.analysis.imir.detection.detector)",
        batch_size=integer("sequences whose loss drives the elimination"),
        eval_size=integer("held-out sequences the accuracies are read on"),
        mode=choice(("fast", "exact"), "elimination: 'fast' (bulk passes and lazy screening above "
                    "exact_max) or 'exact' (the plain greedy at every size: one loss per active "
                    "coordinate per removal, staged by layer)", default="fast"),
        exact_max=integer("exact greedy at or below this many active coordinates"),
        screen=integer("candidates re-measured per step above exact_max"),
        refresh=integer("steps between full re-measurements above exact_max"),
        bulk_fraction=fraction("share of tau the bulk pre-pass may spend"),
        cost_bulk=fraction("above exact_max: share of the budget left that each removal of the "
                           "cheapest coordinates (by the cost table) at once may spend (0: off)",
                           zero_ok=True, default=0.0),
        overshoot=integer("removals recorded past the budget (accuracy curve)", min=0),
        curve_points=integer("points of the accuracy-vs-kept curve", min=2),
        head_ablation=boolean("also mean-ablate every head (head-level analysis) and report the "
                              "kept units it cannot see", default=True),
        batch_doubling=boolean("also detect on twice batch_size sequences and report, per tau, "
                               "whether the kept set is the same (is the batch large enough?)",
                               default=False),
    ),
)
