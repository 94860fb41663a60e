"""``seed_atlas.agreement``: the adjusted Rand index against hand-counted cases, and ``contrast``
on a planted two-block similarity (recovered) and on one without blocks (not)."""
import numpy as np

from mechjax.analysis import seed_atlas as sa

LABELS = np.array([0, 0, 0, 1, 1, 1])


def test_adjusted_rand_known_values():
    assert sa.adjusted_rand(LABELS, 1 - LABELS) == 1.0            # renumbered, same partition
    assert sa.adjusted_rand(LABELS, np.zeros(6)) == 0.0           # one group against two
    assert sa.adjusted_rand(np.zeros(6), np.zeros(6)) == 1.0
    # [0,0,1,1,1,1] vs LABELS: contingency [[2,0],[1,3]]; pairs 1+3=4, rows 1+6=7,
    # cols 3+3=6, total 15: (4 - 42/15) / (6.5 - 42/15) = 1.2 / 3.7
    assert np.isclose(sa.adjusted_rand(np.array([0, 0, 1, 1, 1, 1]), LABELS), 1.2 / 3.7)
    rng = np.random.default_rng(0)
    draws = [sa.adjusted_rand(rng.integers(0, 2, 40), rng.integers(0, 2, 40)) for _ in range(200)]
    assert abs(np.mean(draws)) < 0.02                              # unrelated: ~0 on average


def test_contrast_recovers_planted_blocks_and_not_noise():
    rng = np.random.default_rng(1)
    block = np.where(LABELS[:, None] == LABELS[None], 0.9, 0.2) + 0.01 * rng.standard_normal((6, 6))
    block = (block + block.T) / 2
    np.fill_diagonal(block, 1.0)
    out = sa.contrast(block, LABELS, sa.cluster_seeds(block))
    assert min(out["within"].values()) > 0.85 and out["between"]["0-1"] < 0.25
    assert out["label_silhouette"] > 0.8 and out["clusters"]["adjusted_rand"] == 1.0
    flat = 0.5 + 0.01 * rng.standard_normal((6, 6))
    flat = (flat + flat.T) / 2
    np.fill_diagonal(flat, 1.0)
    out = sa.contrast(flat, LABELS, sa.cluster_seeds(flat))
    assert out["clusters"]["n_groups"] == 1 and abs(out["label_silhouette"]) < 0.3
    assert sa.contrast(flat, np.zeros(6), sa.cluster_seeds(flat))["label_silhouette"] is None
