"""Core-dynamics read-offs on hand-built per-checkpoint records: values at, before and after the
grokking checkpoint, and a seed that never groks kept as None."""
from __future__ import annotations

import numpy as np
import pytest

from mechjax.studies import grokking_dynamics as gd


def _stats(acc_full, core_dim, c, n, d=4):
    return {"acc_full": np.asarray(acc_full, float), "core_dim": np.asarray(core_dim),
            "n_rotational": np.asarray(core_dim) // 2, "heldout_r2": np.asarray(acc_full, float),
            "on_circle": np.ones((c, n, d), bool), "n_directions": np.full((c, n), 2),
            "r_nec": np.asarray(core_dim), "r_suf": np.asarray(core_dim) - 1,
            "acc_core_only": np.asarray(acc_full, float),
            "acc_core_removed": np.zeros((c, n))}


def test_values_are_read_at_each_seeds_grokking_checkpoint():
    epochs = {"wd1": [0, 10, 20, 30], "wd0": [20, 30]}
    # seed 0 groks at epoch 20 (checkpoint 2); seed 1 never does.
    acc = [[0.1, 0.1], [0.5, 0.2], [1.0, 0.3], [1.0, 0.4]]
    dims = [[8, 8], [6, 8], [4, 8], [4, 7]]
    stats = {"wd1": _stats(acc, dims, 4, 2), "wd0": _stats(acc[2:], dims[2:], 2, 2)}
    ev = np.asarray([0, 5, 10, 15, 20, 25, 30.0])
    metrics = {b: {"acc/train": np.tile(np.linspace(0, 1, 7), (2, 1)),
                   "acc/test": np.tile(np.linspace(0, 1, 7), (2, 1)), "epoch": ev,
                   "finite": np.ones((2, 7), bool)} for b in gd.BRANCHES}
    out = gd.summarize(metrics, stats, epochs, [3, 4], p=7, d_model=8, grok_threshold=0.99)
    assert out["grok_epoch"]["per_seed"] == [20, None] and out["grok/never_seeds"] == [4]
    assert out["core_dim/at_grok"]["per_seed"] == [4, None]
    assert out["core_dim/before_grok"]["per_seed"] == [6, None]
    assert out["core_dim/final_wd1"]["per_seed"] == [4, 7]
    assert out["core_dim/final_wd1"]["mean"] == pytest.approx(5.5)
    assert out["redundancy_gap/at_grok"]["per_seed"] == [1, None]
    assert out["r2_heldout/before_grok"]["per_seed"] == [0.5, None]
    assert out["eig/on_circle_fraction_after_grok"]["per_seed"] == [1.0, None]
    assert out["memorization_epoch"]["per_seed"] == [30.0, 30.0]
    assert out["modes/max_possible"] == 4 and out["acc/chance"] == pytest.approx(1 / 7)

