"""The icl_minimal config: every key, what it means and what it allows (``configs/*.py`` give
values). Cross-key limits (L >= N, B <= N, K <= k_max) are checked by
``mechjax.tasks.icl_minimal.check_values`` before anything compiles."""
from mechjax.cli.schema import (SEEDS, Schema, Section, choice, fraction, integer, number,
                                sequence)

KNOBS = ("K", "B", "eps", "alpha", "p_B", "p_C", "weight_decay")
SWEEPS = ("K", "B", "eps", "alpha", "l_eq_n", "l_eq_n_p_b", "l_eq_n_p_c", "p_b", "long")


def _sweep(doc: str) -> Section:
    return Section(
        doc,
        knob=choice(KNOBS, "what the grid varies (task knob or weight decay)"),
        values=sequence(number(ge=0.0), "grid values of the knob", distinct=True),
        n_labels=integer("labels L for this sweep; 0 = task.n_labels", min=0),
        k=number("classes K for this sweep's other points; 0 = task.k", ge=0.0),
        steps=integer("optimizer steps per run"),
        chunk_evals=integer("evaluations per compiled call / checkpoint"),
    )


SCHEMA = Schema(
    "icl_minimal",
    **SEEDS,
    run_sweeps=sequence(choice(SWEEPS), "which sweeps to train, in order", distinct=True),
    icl_formed=number("final ICL probe accuracy that counts as ICL formed (2-way: 0.5 is "
                      "reading a context label at random)", gt=0.0, le=1.0),
    theory_min_count=number("a class seen fewer times than this in training is rare (f_r)",
                            gt=0.0),
    theory_min_counts=sequence(number(gt=0.0), "the min_count values the held-out separation "
                               "chooses among (on the sweeps it is not scored on)",
                               increasing=True,
                               default=(10.0, 20.0, 50.0, 100.0, 200.0, 500.0)),
    task=Section(
        "Reddy's minimal in-context classification task (mechjax.tasks.icl_minimal)",
        d=integer("item dimension D"),
        n_ctx=integer("context pairs N (even)"),
        n_labels=integer("labels L"),
        k_max=integer("largest number of classes any sweep uses"),
        k=number("classes K (default of every sweep)"),
        burstiness=number("B: copies of the query's class in context"),
        noise=number("within-class noise eps", ge=0.0),
        zipf=number("Zipf exponent alpha over classes", ge=0.0),
        data_seed=integer("class means and label vectors", min=0),
        p_bursty=fraction("p_B: share of training sequences that are bursty (the rest iid)",
                          zero_ok=True, default=1.0),
        p_novel=fraction("p_C: share of training sequences of novel classes (labels only in "
                         "context)", zero_ok=True, default=0.0),
    ),
    train=Section(
        "optimizer and sizes",
        optimizer=choice(("adam", "adamw", "sgd"), "optax optimizer"),
        lr=number("learning rate", gt=0.0),
        weight_decay=number("weight decay (default of every sweep)", ge=0.0),
        batch_size=integer("training sequences per step"),
        eval_size=integer("sequences in each probe (icl, iwl)"),
        eval_every=integer("steps between probe evaluations"),
        mlp_width=integer("hidden width of the 3-layer classifier"),
    ),
    sweeps=Section(
        "one compiled program per sweep (seeds x values)",
        K=_sweep("ICL rises with the number of classes K"),
        B=_sweep("ICL rises with burstiness B"),
        eps=_sweep("ICL rises with within-class noise eps"),
        alpha=_sweep("Zipf exponent near 1 gives both ICL and IWL"),
        l_eq_n=_sweep("L = N: ICL fails (Reddy: 0 of 6 seeds)"),
        l_eq_n_p_b=_sweep("L = N over Reddy's bursty fraction p_B"),
        l_eq_n_p_c=_sweep("L = N over Reddy's novel-class fraction p_C"),
        p_b=_sweep("the control of l_eq_n_p_b: the same p_B values at the task's L"),
        long=_sweep("trained long: ICL transient without weight decay, kept by L2"),
    ),
)
