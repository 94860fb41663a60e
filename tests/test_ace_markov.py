"""The Markov-cores experiment end to end at test size, and its refusal of bad configs."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_refused_before_writing, run_and_read
from experiments.ace_markov import run
from experiments.ace_markov.configs import tiny
from mechjax.analysis.seeds import STAT_KEYS
from mechjax.tasks import markov

FIGURES = ("weight_cosine.png", "necessity_sufficiency.png", "projector_overlap.png", "cca.png",
           "eigenvalues.png", "accuracy.png")


def test_tiny_end_to_end(tmp_path):
    config = tiny.get_config()
    workdir = str(tmp_path / "run")
    summary, saved = run_and_read(run.run, config, workdir, figures=FIGURES)
    n = config.n_seeds
    for key in ("acc/full", "acc/core_only", "acc/core_removed", "r2_over_oracle"):
        assert set(saved[key]) == set(STAT_KEYS)
        assert len(saved[key]["per_seed"]) == n
    # The core is sufficient (keeping only it keeps the accuracy) and necessary (removing it
    # drops the accuracy to about chance, 1 / 4), seed by seed (docs/ace.md).
    for full, only, removed in zip(*(saved[f"acc/{k}"]["per_seed"]
                                     for k in ("full", "core_only", "core_removed"))):
        assert only >= full - 0.02 and removed < 0.35, (full, only, removed)
    for key in ("overlap/mean_offdiag", "overlap/chance", "cca/mean_offdiag",
                "weight_cosine/mean_offdiag", "ace/batched_seconds", "ace/per_seed_loop_seconds"):
        assert isinstance(saved[key], float), key
    ranks = saved["core/rank"]
    assert ranks == [markov.N_STATES] * n  # one core direction per state of the planted chain
    assert [len(row) for row in saved["eig/fitted"]] == ranks
    assert all(len(z) == 2 for row in saved["eig/fitted"] for z in row)  # [re, im]
    assert len(saved["eig/max_abs_error"]) == n
    assert saved["overlap/chance"] == pytest.approx(np.mean(ranks) / config.model.d_model)
    # Every configured tail has its own block; the first is the top level.
    assert saved["ace/tail"] == config.ace.tails[0]
    assert set(saved["tails"]) == set(config.ace.tails)
    for block in saved["tails"].values():
        assert len(block["core/rank"]) == n and "cca/top3_mean_offdiag" in block
    assert saved["tails"][saved["ace/tail"]]["core/rank"] == ranks
    # The batched call and the per-seed loop compute the same cores.
    assert saved["ace/loop_matches_batched"] is True
    # The full model beats chance even at this size, and the optimal bar is the Bayes accuracy.
    assert saved["acc/full"]["mean"] > 0.4
    assert saved["acc/optimal"] == pytest.approx(0.75, abs=0.05)
    assert summary["n_seeds"] == n
    assert "acc/full" in run.format_summary(summary)


@pytest.mark.parametrize("edit, message", [
    (lambda c: setattr(c, "n_seeds", 0), "n_seeds=0"),
    (lambda c: c.ace.__setattr__("tau", 1.5), "ace.tau=1.5"),
    (lambda c: c.ace.__setattr__("jac_samples", 10 ** 7), "ace.jac_samples"),
    (lambda c: c.model.__setattr__("n_head", 4), "config.model: unknown keys ['n_head']"),
    (lambda c: c.ace.__setattr__("taus", 0.9), "config.ace: unknown keys ['taus']"),
    (lambda c: c.__setattr__("epochs", 40), "config: unknown keys ['epochs']"),
    (lambda c: c.task.__setattr__("batch_size", 10 ** 6), "task.batch_size"),
    (lambda c: c.ace.__setattr__("tails", ("logits", "probs")), "ace.tails"),
])
def test_bad_config_raises_before_writing(tmp_path, edit, message):
    config = tiny.get_config()
    edit(config)
    assert_refused_before_writing(run.run, config, tmp_path / "run", message)
