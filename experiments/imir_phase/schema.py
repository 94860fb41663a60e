"""The imir_phase config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.cli.schema import (Schema, Section, boolean, choice, fraction, integer, number, sequence)
from mechjax.training.train import OPTIMIZERS


def _sizes(**more) -> dict:
    """The recall spec's sizes: common and rare tokens, blocks per sequence."""
    return {"n_common": integer("common tokens", min=2), "n_rare": integer("rare tokens", min=2),
            "n_blocks": integer("blocks per sequence", min=2), **more}


UNIT = dict(zero_ok=True)
TIME = number("ODE horizon (gradient-flow time)", gt=0.0)

SCHEMA = Schema(
    "imir_phase",
    task=Section("the reference spec of the (f_r, f_v) diagram", **_sizes(
        b=integer("burstiness (copies of the answer), in [1, n_blocks - 1]"),
        f_r_ref=fraction("rare-token fraction of the reference cell", **UNIT),
        f_v_ref=fraction("varied-answer fraction of the reference cell", **UNIT))),
    task_b=Section("the (b, f_r) diagram", **_sizes(
        f_v=fraction("varied-answer fraction", **UNIT))),
    grid=Section(
        "the (f_r, f_v) grid",
        n=integer("cells per axis", min=2),
        f_r_min=fraction("", **UNIT), f_r_max=fraction("", **UNIT),
        f_v_min=fraction("", **UNIT), f_v_max=fraction("", **UNIT),
    ),
    ode=Section(
        "the reduced 4-coordinate ODE",
        t1=TIME,
        n_steps=integer("sets the adaptive solver's first step, t1 / n_steps"),
        n_save=integer("saved times"),
        init=sequence(number(), "(alpha, beta, gamma, delta) at t = 0", length=4),
        threshold=number("probability that counts as learned", gt=0.0, lt=1.0),
        check_cells=integer("cells re-solved at a finer step"),
    ),
    theorem2=Section("Theorem 2's protocol", **_sizes(
        b=integer("burstiness"),
        p_iwl=number("in-weights probability reached", ge=0.5, lt=1.0),
        settings=sequence(sequence(fraction(**UNIT), length=2), "(f_r, f_v) pairs",
                          min_len=6))),
    theorem3=Section("Theorem 3's protocol", **_sizes(
        b_max=integer("largest burstiness, in [2, n_blocks - 1]", min=2),
        f_r=fraction("rare-token fraction", **UNIT),
        f_v=fraction("varied-answer fraction", **UNIT),
        small_n_blocks=integer("n_blocks of the small spec (> b_max)", min=2))),
    cells=Section(
        "cells trained by SGD and overlaid on the diagram",
        n_cells=integer("trained cells besides the reference one", min=0),
        lr=number("learning rate", gt=0.0),
        steps=integer("SGD steps (a multiple of n_save)"),
        n_save=integer("saved steps"),
        batch_size=integer("sequences per step"),
        eval_size=integer("sequences per evaluation"),
        seed=integer("", min=0),
    ),
    ode_check=Section("full-manifold ODE vs gradient descent on a small spec", **_sizes(
        f_r=fraction("", **UNIT), f_v=fraction("", **UNIT),
        t1=TIME, lr=number("gradient-descent step", gt=0.0),
        n_save=integer("saved times"))),
    four_coord=Section(
        "the closed-form 4-coordinate model as a labelled comparison (its diagrams, Theorems 2 "
        "and 3, trained cells, the enumerated ODE vs gradient descent, confinement)",
        enabled=boolean("", default=True)),
    confinement=Section(
        "gradient confinement to the invariant manifold",
        enabled=boolean(""), seed=integer("", min=0),
    ),
    exact=Section("the default (f_r, f_v) diagram: exact dynamics on every manifold coordinate",
                  **_sizes(
        b=integer("burstiness, in [1, n_blocks - 1]", min=1),
        n=integer("cells per axis", min=2),
        t1=TIME, n_steps=integer("sets the adaptive solver's first step, t1 / n_steps", min=1),
        n_save=integer("saved times", min=1),
        rtol=number("the solver's relative tolerance (atol = rtol / 100)", gt=0.0, lt=0.1),
        solver=choice(("heun", "bosh3", "tsit5"), "explicit Runge-Kutta method of the grids",
                      default="heun"),
        step_cap=integer("first-pass step cap per cell (cells it stops are solved again "
                         "uncapped); 0 = one uncapped pass", min=0, default=0),
        chunk=integer("cells per compiled solve (rounded up to a power of two, >= 4)", min=1,
                      default=256))),
    exact_b=Section("the default (b, f_r) diagram (exact dynamics), b = 1 .. n_blocks - 1",
                    **_sizes(n=integer("f_r cells", min=2),
                             f_v=fraction("varied-answer fraction", **UNIT))),
    exact_check=Section("exact dynamics vs the enumerated full-manifold ODE", **_sizes(
        n_cells=integer("cells on the diagonal f_v = 0.8 (1 - f_r)", min=1),
        t1=TIME, n_save=integer("saved times", min=1))),
    exact_sgd=Section(
        "exact dynamics vs SGD on every weight (the exact grid's spec)",
        f_r=fraction("", **UNIT), f_v=fraction("", **UNIT),
        lr=number("learning rate (ODE time per step)", gt=0.0),
        steps=integer("SGD steps (a multiple of n_save)", min=1),
        n_save=integer("saved steps", min=1),
        batch_size=integer("sequences per step", min=1), seed=integer("", min=0)),
    validate=Section(
        "full transformers (the theory's architecture) on cells straddling the exact boundary",
        n_cells=integer("trained cells; 0 = off", min=0),
        lr=number("learning rate; steps = exact.t1 / lr", gt=0.0),
        batch_size=integer("sequences per step", min=1),
        eval_size=integer("sequences per evaluation pool", min=1), seed=integer("", min=0)),
    sizes_scan=Section(
        "the exact (f_r, f_v) diagram at more sizes: the regime boundary against V and T",
        specs=sequence(sequence(integer(min=2), length=4),
                       "[n_common, n_rare, n_blocks, cells per axis] per size; n_blocks >= 3 "
                       "(the in-weights read-off needs a distractor block); the cost grows "
                       "with n_blocks (46 classes at 3, 951 at 4), not with the vocabulary",
                       min_len=0, default=())),
    validate_standard=Section(
        "the standard architecture (2-layer 1-head attention-only, separate Q/K/V/O, trained "
        "embeddings, random init) on the cells of validate (same pick when n_cells agree)",
        n_cells=integer("trained cells; 0 = off", min=0, default=0),
        n_seeds=integer("seeds per cell", min=1, default=2),
        d_model=integer("residual width (= d_head)", min=1, default=32),
        steps=integer("optimizer steps (a multiple of n_evals)", min=1, default=2000),
        n_evals=integer("evaluations (read-offs) during training", min=1, default=10),
        lr=number("learning rate", gt=0.0, default=3e-3),
        optimizer=choice(OPTIMIZERS, "", default="adam"),
        sgd_lr=number("the plain-SGD arm's learning rate, steps = exact.t1 / sgd_lr (t = step x "
                      "lr, as validate); 0 = off", ge=0.0, default=0.0),
        batch_size=integer("sequences per step", min=1, default=64),
        eval_size=integer("sequences per read-off pool", min=1, default=512),
        seed=integer("first model seed (seeds seed .. seed + n_seeds - 1)", min=0, default=0)),
    start_control=Section(
        "the exact (f_r, f_v) diagram re-solved from other start points, each compared with the "
        "standard architecture's runs clock-free (needs validate_standard)",
        delta0=boolean("from ode.init with delta = 0 (no in-weights head start)", default=True),
        projected=boolean("from a random init of the theory's architecture projected on the "
                          "manifold", default=True),
        std=number("that init's standard deviation per trained entry", gt=0.0, default=0.1),
        seed=integer("that init's key", min=0, default=0)),
    exact_theorems=Section(
        "Theorems 2 and 3 and the emergence order on the exact dynamics (the exact grid's spec)",
        settings=sequence(sequence(fraction(**UNIT), length=2),
                          "(f_r, f_v) pairs of Theorem 2 along trajectories and at the protocol "
                          "point; in-weights learning forms only at f_v = 0 and small f_r",
                          default=((0.1, 0.0), (0.2, 0.0), (0.3, 0.0), (0.5, 0.0), (0.05, 0.05),
                                   (0.1, 0.3), (0.3, 0.3), (0.7, 0.2), (0.9, 0.5), (1.0, 0.0))),
        p_levels=sequence(number(gt=0.0, lt=1.0), "in-weights probabilities at which the "
                          "trajectory is read", default=(0.9, 0.99)),
        t1=number("Theorem 2 trajectories' horizon", gt=0.0, default=2000.0),
        n_save=integer("Theorem 2 trajectories' saved times", default=200),
        rtol=number("the solver's relative tolerance (atol = rtol / 100)", gt=0.0, lt=0.1,
                    default=1e-3),
        t3_n_blocks=integer("Theorem 3: n_blocks of the exact classes, b = 1 .. n_blocks - 1 "
                            "(24,612 classes at 5 and b = 1)", min=3, max=5, default=5),
        lr=number("emergence: SGD learning rate (ODE time per step)", gt=0.0, default=1.0),
        steps=integer("emergence: SGD steps; horizon steps * lr", default=1000),
        n_save_train=integer("emergence: saved steps (steps must be a multiple)", default=50),
        batch_size=integer("emergence: sequences per step", default=256),
        eval_size=integer("emergence: sequences per evaluation pool", default=256),
        seed=integer("", min=0, default=0),
        four_coord_reference=boolean("emergence: also the 4-coordinate closed form on the same "
                                     "spec", default=True)),
)
