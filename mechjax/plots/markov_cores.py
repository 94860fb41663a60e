"""Figures of the Markov-chain cores experiment (ACE paper), from its training curves, the seeds x
seeds matrices of ``analysis.markov_cores.summarize_cores`` and its summary numbers.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from mechjax.plots import ace as ace_plots
from mechjax.plots import curves


def all_figures(steps: np.ndarray, acc: Mapping[str, np.ndarray], mats: Mapping[str, Any],
                summary: Mapping[str, Any], seeds: Sequence[int], optimal: float, chance: float,
                true_eigenvalues: np.ndarray) -> dict[str, Figure]:
    """Every figure by file stem. ``acc``: ``{'train', 'test'}`` accuracy ``[n_seeds, n_evals]``
    at ``steps``; ``mats``: the matrices, per-seed accuracies and eigenvalues of one tail;
    ``summary``: its numbers (the off-diagonal means shown in the titles)."""
    n, a = len(seeds), mats["acc"]
    return {
        "accuracy": curves.metric_curves(steps, dict(acc), ylabel="accuracy", marks=(),
                                         title=f"Markov chain: accuracy over {n} seeds"),
        "weight_cosine": ace_plots.seed_matrix(
            mats["cosine"], f"weight cosine\noff-diag {summary['weight_cosine/mean_offdiag']:.3f}",
            seeds, -1.0, 1.0),
        "necessity_sufficiency": ace_plots.bars_with_dots(
            {"optimal": optimal, "full": a["full"], "core only": a["core_only"],
             "core removed": a["core_removed"], "chance": chance},
            title=f"core interventions at the block output ({n} seeds)"),
        "projector_overlap": ace_plots.seed_matrix(
            mats["overlap"], f"projector overlap\noff-diag {summary['overlap/mean_offdiag']:.3f}, "
            f"chance {summary['overlap/chance']:.3f}", seeds, 0.0, 1.0),
        "cca": ace_plots.seed_matrix(
            mats["cca"], f"mean top-r CCA\noff-diag {summary['cca/mean_offdiag']:.3f}",
            seeds, 0.0, 1.0),
        "eigenvalues": ace_plots.unit_circle(mats["eigenvalues"], true_eigenvalues,
                                             title="operator across positions: eigenvalues"),
    }
