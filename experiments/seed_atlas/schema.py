"""The seed_atlas config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.cli.schema``)."""
from mechjax.cli.schema import Schema, boolean, fraction, integer, sequence, text

# short flag of __main__ (mechjax.cli.experiment.run_cli aliases): --run=RUN is --config.run=RUN
ALIASES = {"run": "run"}

SCHEMA = Schema(
    "seed_atlas",
    run=text("the workdir of the run whose seeds are compared (read only); alias --run"),
    sweep=text("the sweep inside it, when it holds several ('' = its only one)", default=""),
    grid=integer("the grid point compared", min=0, default=0),
    metrics=sequence(text(), "the run's own metrics joined to the table at the saved steps",
                     distinct=True),
    fourier_k=integer("strongest frequencies of W_E counted by the Fourier sparsity measure"),
    group_by=sequence(text(), "the table's measures whose trajectories group the seeds (by "
                      "distance: level matters)", distinct=True),
    min_silhouette=fraction("a cut into groups is kept from this mean silhouette on"),
    min_accuracy=fraction("held-out threshold accuracy that counts as separating"),
)

# experiments.seed_atlas.assign_add: who binds in an Assign-and-Add run, and from which step
AA_ALIASES = {"run": "run"}

AA_SCHEMA = Schema(
    "seed_atlas.assign_add",
    run=text("the experiments.assign_add workdir whose seeds are compared (read only; needs "
             "snapshots: snapshot_every_chunks >= 1); alias --run"),
    sweep=text("the sweep inside it ('' = its only one)", default=""),
    outcome=text("the run's metric whose final value says a seed bound variables"),
    bound_at=fraction("a seed is bound where its final outcome is >= this"),
    outcome_step=integer("the evaluated step whose outcome labels the seeds (and the last step "
                         "the atlas reads): who has bound by then; 0: the run's last", min=0,
                         default=0),
    probe_size=integer("2-var probe sequences (training pairs of the run's split) for the "
                       "attention measures and the variable probe", min=4),
    probe_seed=integer("which probe sequences", min=0),
    min_accuracy=fraction("held-out threshold accuracy that counts as separating"),
)

# experiments.seed_atlas.binding_cores: ACE cores of the binding circuit, compared across seeds
BC_ALIASES = {"run": "run", "step": "step"}

BC_SCHEMA = Schema(
    "seed_atlas.binding_cores",
    run=text("the experiments.assign_add workdir whose seeds are compared (read only; needs "
             "parameter snapshots); alias --run"),
    sweep=text("the sweep inside it ('' = its only one)", default=""),
    step=integer("the saved step whose parameters are analysed (0: the last saved); alias "
                 "--step", min=0, default=0),
    outcome=text("the run's metric whose value labels the seeds' groups"),
    bound_at=fraction("a seed is in group 1 where its outcome is >= this"),
    outcome_step=integer("the evaluated step whose outcome labels the seeds; 0: the run's last",
                         min=0, default=0),
    probe_size=integer("2-var queries (training pairs of the run's split) ACE reads", min=8),
    jac_samples=integer("of them, the Jacobian samples of the tail at `=`", min=1),
    probe_seed=integer("which queries", min=0),
    tau=fraction("the energy threshold of the core rank"),
    float64=boolean("ACE in float64 (as the ACE authors' code)"),
    compare_dims=integer("leading core coordinates kept for CCA", min=1),
)
