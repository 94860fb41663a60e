"""The seed atlas: how the seeds of one run differ, read from its saved snapshots.

One module per job, the public API re-exported here:

* ``table``       -- ``measure_table(run, {name: fn(params, model_cfg)})``: ``{name: [n_seeds,
  n_steps]}`` at the run's saved steps (through ``mechjax.sweeps.runs``; nothing retrained)
* ``similarity``  -- seeds x seeds similarity from measure trajectories or weights (core
  subspaces / coordinates: ``ace.overlap_matrix``, ``ace.cca_matrix``)
* ``cluster``     -- ``cluster_seeds(similarity)``: groups by average linkage, silhouette-chosen
  against a group-free reference (``cuts``: the tree's cuts and silhouettes; ``reference``: the
  reference data sets)
* ``rank``        -- ``rank_measures(table, labels)``: measures that separate the groups, best first
* ``earliest``    -- ``earliest_separating_step``: from which step a one-measure threshold, fit on
  half the seeds, tells two groups apart on the other half
* ``threshold``   -- that threshold classifier and the half split
* ``agreement``   -- a similarity and its groups against known labels (adjusted Rand index,
  within / between means, the labels' silhouette)

The figure: ``mechjax.plots.seed_atlas.seed_curves``. Guide: docs/seed_atlas.md.
"""
# flake8: noqa: F401
from mechjax.analysis.seed_atlas.agreement import adjusted_rand, contrast
from mechjax.analysis.seed_atlas.cluster import Grouping, cluster_seeds, distances
from mechjax.analysis.seed_atlas.cuts import best_silhouette, silhouette, tree_cuts
from mechjax.analysis.seed_atlas.earliest import Separation, earliest_separating_step
from mechjax.analysis.seed_atlas.rank import MeasureRank, eta_squared, rank_measures
from mechjax.analysis.seed_atlas.reference import embed, reference_silhouette
from mechjax.analysis.seed_atlas.similarity import (standardize, trajectory_similarity,
                                                    weight_similarity)
from mechjax.analysis.seed_atlas.table import check_table, measure_table, varies
from mechjax.analysis.seed_atlas.threshold import (Threshold, accuracy, fit_threshold, halves,
                                                   held_out_accuracy)
