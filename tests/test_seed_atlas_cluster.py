"""``seed_atlas.cluster``: distances, silhouettes and the cut rule on hand-made matrices."""
import numpy as np
import pytest

from mechjax.analysis import seed_atlas as sa


def block_similarity(sizes, within=0.9, across=0.1, near=None):
    """Blocks of alike seeds; ``near`` (if given) is the similarity of blocks 0 and 1."""
    labels = np.repeat(np.arange(len(sizes)), sizes)
    sim = np.where(labels[:, None] == labels[None], within, across)
    if near is not None:
        pair = (labels[:, None] <= 1) & (labels[None] <= 1) & (labels[:, None] != labels[None])
        sim = np.where(pair, near, sim)
    np.fill_diagonal(sim, 1.0)
    return sim, labels


def test_three_blocks_are_three_groups_numbered_by_first_seed():
    sim, labels = block_similarity([3, 4, 2], near=0.3)
    order = np.array([4, 0, 8, 1, 5, 2, 7, 3, 6])  # shuffled seeds: blocks 1 0 2 0 1 0 2 1 1
    grouping = sa.cluster_seeds(sim[np.ix_(order, order)])
    assert grouping.n_groups == 3
    np.testing.assert_array_equal(grouping.labels, [0, 1, 2, 1, 0, 1, 2, 0, 0])
    # the 2-cut joins blocks 0 and 1 and scores lower; past 3 a cut splits a block of equal seeds
    assert grouping.silhouettes[2] < grouping.silhouettes[3] == grouping.silhouette
    assert max(grouping.silhouettes, key=grouping.silhouettes.get) == 3


def test_silhouette_matches_its_definition_on_a_small_case():
    d = np.array([[0, 1, 4, 5], [1, 0, 4, 4], [4, 4, 0, 2], [5, 4, 2, 0]], float)
    labels = np.array([0, 0, 1, 1])
    expect = np.mean([(4.5 - 1) / 4.5, (4 - 1) / 4, (4 - 2) / 4, (4.5 - 2) / 4.5])
    assert sa.silhouette(d, labels) == pytest.approx(expect)
    assert sa.silhouette(d, np.array([0, 0, 0, 1])) < sa.silhouette(d, labels)


def test_a_weak_split_is_reported_as_one_group():
    sim, _ = block_similarity([5, 5], within=0.55, across=0.45)
    grouping = sa.cluster_seeds(sim)
    assert grouping.n_groups == 1 and np.isnan(grouping.silhouette)
    assert grouping.silhouettes[2] == pytest.approx(1 - 0.45 / 0.55)
    assert sa.cluster_seeds(sim, min_silhouette=0.1, n_reference=0).n_groups == 2


def test_distances_symmetrize_and_bad_input_is_named():
    sim = np.array([[1.0, 0.2], [0.4, 1.0]])
    np.testing.assert_allclose(sa.distances(sim), [[0, 0.7], [0.7, 0]])
    with pytest.raises(ValueError, match="square"):
        sa.distances(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        sa.distances(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="max_groups=5"):
        sa.cluster_seeds(np.eye(4), max_groups=5)


def test_one_seed_slightly_apart_is_no_group_unless_allowed():
    sim = np.array([[1.0, 0.999, 0.99], [0.999, 1.0, 0.99], [0.99, 0.99, 1.0]])
    assert sa.cluster_seeds(sim).n_groups == 1
    alone = sa.cluster_seeds(sim, min_group_size=1, n_reference=0)
    assert alone.n_groups == 2 and alone.labels.tolist() == [0, 0, 1]
    assert alone.silhouette == pytest.approx(np.mean([1 - 0.001 / 0.01, 1 - 0.001 / 0.01, 0.0]))


def gaussian_similarity(n, dims, seed):
    x = np.random.default_rng(seed).standard_normal((n, dims))
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    return 1 - d / d.max()


def test_one_gaussian_along_one_direction_passes_the_floor_but_not_the_reference():
    sim = gaussian_similarity(12, 1, seed=3)
    floor_only = sa.cluster_seeds(sim, n_reference=0)
    assert floor_only.n_groups >= 2 and floor_only.silhouette >= 0.5  # the floor alone is fooled
    grouping = sa.cluster_seeds(sim)
    assert grouping.n_groups == 1 and grouping.reference >= max(grouping.silhouettes.values())


def test_the_reference_is_high_along_one_direction_low_along_many_and_deterministic():
    one = sa.distances(gaussian_similarity(12, 1, seed=0))
    many = sa.distances(gaussian_similarity(12, 20, seed=0))
    high = sa.reference_silhouette(one, 8, 2)
    assert high > 0.6 and sa.reference_silhouette(many, 8, 2) < 0.3
    assert sa.reference_silhouette(one, 8, 2) == high
    # the embedding reproduces Euclidean distances
    x = sa.embed(many)
    np.testing.assert_allclose(np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1)), many, atol=1e-9)
