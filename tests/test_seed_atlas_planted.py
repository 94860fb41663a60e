"""The seed atlas recovers planted splits: two seed groups whose ``binding`` measure parts at a
known step (other measures noise), two groups of seeds sharing a core subspace, and controls
without a split that must not come out as two groups."""
import numpy as np
import pytest

from seed_atlas_cases import (GROUP, SPLIT_INDEX, STEPS, planted_bases, planted_coordinates,
                              planted_table)

from mechjax.analysis import ace
from mechjax.analysis import seed_atlas as sa

DATA_SEEDS = range(3)  # a few draws of the noise, so no single lucky draw passes


def same_split(labels, truth):
    """Equal up to swapping the two group numbers."""
    return np.array_equal(labels, truth) or np.array_equal(labels, 1 - truth)


@pytest.mark.parametrize("seed", DATA_SEEDS)
def test_trajectories_of_the_split_measure_recover_the_groups_exactly(seed):
    table = planted_table(seed=seed)
    grouping = sa.cluster_seeds(sa.trajectory_similarity(table, ["binding"], kind="distance"))
    assert grouping.n_groups == 2 and same_split(grouping.labels, GROUP)
    assert grouping.silhouette >= 0.5
    # numbered by first seed: seed 0 is in group 0
    assert grouping.labels[0] == 0 and set(grouping.members(1)) == set(np.flatnonzero(GROUP))


@pytest.mark.parametrize("seed", DATA_SEEDS)
def test_without_a_split_the_seeds_stay_one_group(seed):
    table = planted_table(split=0.0, seed=seed)
    for kind in ("distance", "correlation"):
        sim = sa.trajectory_similarity(table, ["binding"], kind=kind)
        grouping = sa.cluster_seeds(sim)
        assert grouping.n_groups == 1 and (grouping.labels == 0).all()
        # with single-seed groups allowed, every cut is tried, and every one is weak
        anysize = sa.cluster_seeds(sim, min_group_size=1)
        assert anysize.n_groups == 1 and len(anysize.silhouettes) >= 3
        assert max(anysize.silhouettes.values()) < 0.5


@pytest.mark.parametrize("seed", DATA_SEEDS)
def test_the_split_measure_ranks_first_by_a_clear_margin(seed):
    ranks = sa.rank_measures(planted_table(seed=seed), GROUP)
    assert ranks[0].name == "binding" and ranks[0].score > 0.9
    assert ranks[1].score < ranks[0].score - 0.2
    assert ranks[0].step_index >= SPLIT_INDEX  # its best step is after the split


@pytest.mark.parametrize("seed", DATA_SEEDS)
def test_the_earliest_separating_step_is_the_planted_one_within_one_save(seed):
    sep = sa.earliest_separating_step(STEPS, planted_table(seed=seed), GROUP == 1)
    assert sep.measure == "binding" and sep.accuracy >= 0.9
    assert abs(sep.step - STEPS[SPLIT_INDEX]) <= STEPS[1] - STEPS[0]
    # no other measure separates at all, and before the split binding is at chance
    assert all(sep.first[n] is None for n in ("drift", "jitter", "shared"))
    assert sep.accuracies["binding"][:SPLIT_INDEX - 1].mean() < 0.8


def test_no_measure_separates_groups_that_differ_in_nothing():
    sep = sa.earliest_separating_step(STEPS, planted_table(split=0.0), GROUP == 1)
    assert sep.step is None and sep.measure is None and np.isnan(sep.accuracy)


@pytest.mark.parametrize("seed", DATA_SEEDS)
def test_planted_core_subspaces_cluster_by_their_overlap(seed):
    grouping = sa.cluster_seeds(np.asarray(ace.overlap_matrix(planted_bases(seed=seed))))
    assert grouping.n_groups == 2 and same_split(grouping.labels, GROUP)


@pytest.mark.parametrize("seed", DATA_SEEDS)
def test_planted_core_coordinates_cluster_by_their_cca(seed):
    sim = np.asarray(ace.cca_matrix(planted_coordinates(seed=seed)))
    grouping = sa.cluster_seeds(sim)
    assert grouping.n_groups == 2 and same_split(grouping.labels, GROUP)


def test_core_coordinates_of_one_shared_latent_stay_one_group():
    z = planted_coordinates(seed=0)
    z_one = np.stack([z[0] @ np.random.default_rng(i).standard_normal((3, 3))
                      + 0.3 * np.random.default_rng(100 + i).standard_normal(z[0].shape)
                      for i in range(len(GROUP))]).astype(np.float32)
    assert sa.cluster_seeds(np.asarray(ace.cca_matrix(z_one))).n_groups == 1


def test_unrelated_random_subspaces_stay_one_group():
    rng = np.random.default_rng(7)
    bases = np.stack([np.linalg.qr(rng.standard_normal((32, 3)))[0] for _ in GROUP])
    grouping = sa.cluster_seeds(np.asarray(ace.overlap_matrix(bases.astype(np.float32))))
    assert grouping.n_groups == 1


def test_groups_from_subspaces_then_measures_ranked_and_timed():
    """The atlas chain: groups from one view (cores), explained by another (measures)."""
    grouping = sa.cluster_seeds(np.asarray(ace.overlap_matrix(planted_bases(seed=1))))
    table = planted_table(seed=1)
    assert sa.rank_measures(table, grouping.labels)[0].name == "binding"
    sep = sa.earliest_separating_step(STEPS, table, grouping.labels == 1)
    assert sep.measure == "binding" and abs(sep.step - STEPS[SPLIT_INDEX]) <= 10


def test_a_one_step_blip_before_the_split_does_not_count_as_separating():
    table = planted_table(seed=0)
    y = GROUP == 1
    table["jitter"][:, 2] = np.where(y, 5.0, -5.0)  # perfectly separated at step 20 only
    sep = sa.earliest_separating_step(STEPS, table, y)
    assert sep.measure == "binding" and sep.step == STEPS[SPLIT_INDEX]
    assert sep.accuracies["jitter"][2] == 1.0 and sep.first["jitter"] is None
    blip = sa.earliest_separating_step(STEPS, table, y, sustained=False)
    assert (blip.measure, blip.step) == ("jitter", STEPS[2])
    only = sa.earliest_separating_step(STEPS, table, y, names=["drift"])
    assert only.step is None and list(only.accuracies) == ["drift"]


def test_a_measure_constant_up_to_rounding_separates_nothing():
    flat = (1.0 + 1e-7 * (-1.0) ** GROUP[:, None] * np.ones((1, STEPS.size))).astype(np.float32)
    assert not sa.varies(flat)
    ranks = sa.rank_measures({"flat": flat, "binding": planted_table()["binding"]}, GROUP)
    assert [r.name for r in ranks] == ["binding", "flat"] and ranks[1].score == 0.0
