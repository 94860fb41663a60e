"""The seed_atlas config: every key, what it means and what it allows (``configs/*.py`` give
values; see ``mechjax.config_schema``)."""
from mechjax.config_schema import Schema, fraction, integer, sequence, text

# short flag of __main__ (mechjax.experiment.run_cli aliases): --run=RUN is --config.run=RUN
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
