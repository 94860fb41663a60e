"""``experiments.seed_atlas.assign_add`` on a tiny Assign-and-Add run with a planted split: half
the seeds are given a final 1-var restricted accuracy of 1 (bound) and, in their snapshots from
step ``PLANT_FROM`` on, a layer-1 previous-token head (one-hot positions, QK1 = the shift). The
atlas must label exactly those seeds bound and date the split to ``PLANT_FROM`` (held-out
accuracy 1), ``progress/qk1_prev_token`` among the measures that separate from there."""
import os
import shutil

import numpy as np
import pytest

from conftest import assert_refused_before_writing

from experiments.assign_add import run as aa_run
from experiments.assign_add.configs import tiny as aa_tiny
from experiments.assign_add.schema import SCHEMA as AA_SCHEMA
from experiments.seed_atlas import assign_add as atlas
from experiments.seed_atlas.configs import assign_add as atlas_cfg

PLANTED = np.array([1, 0, 0, 1, 1, 0, 1, 0], bool)  # the seeds planted as bound
PLANT_FROM = 20                                       # saved steps 0, 20, 40


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """8 tiny seeds, 40 steps, snapshots at 0, 20, 40 (training only: no final analyses)."""
    config = aa_tiny.get_config()
    config.n_seeds = PLANTED.size
    config.snapshot_every_chunks = 1
    config = AA_SCHEMA.validate(config)
    workdir = str(tmp_path_factory.mktemp("aa") / "run")
    aa_run.start_and_train(aa_run.build(config), config, workdir, False, "tiny atlas run")
    return workdir


def plant(source: str, dest: str, seeds: np.ndarray) -> str:
    """``source`` copied to ``dest``; ``seeds`` (bool) bound at the end and given a
    previous-token head in layer 1 from ``PLANT_FROM``; the others at chance on the outcome."""
    shutil.copytree(source, dest)
    path = os.path.join(dest, "metrics.npz")
    metrics = dict(np.load(path))
    metrics["metrics/acc/1var_restricted"][:, 0, -1] = np.where(seeds, 1.0, 0.02)
    np.savez(path, **metrics)
    folder = os.path.join(dest, "snapshots")
    for name in os.listdir(folder):
        if int(name[len("step_"):-len(".npz")]) < PLANT_FROM:
            continue
        arrays = dict(np.load(os.path.join(folder, name)))
        n_ctx, d = arrays["pos_embed.W_pos"].shape[-2:]
        for i in np.flatnonzero(seeds):
            arrays["pos_embed.W_pos"][i, 0] = 3.0 * np.eye(n_ctx, d)
            arrays["blocks.0.attn.W_Q"][i, 0, 0] = np.eye(d, k=-1)  # query q reads key q - 1
            arrays["blocks.0.attn.W_K"][i, 0, 0] = np.eye(d)
        np.savez(os.path.join(folder, name), **arrays)
    return dest


def config_for(run_dir):
    config = atlas_cfg.get_config()
    config.run = run_dir
    config.probe_size = 64
    return config


def test_the_planted_binding_seeds_are_found_and_dated(tiny_run, tmp_path):
    source = plant(tiny_run, str(tmp_path / "planted"), PLANTED)
    summary = atlas.run(config_for(source), str(tmp_path / "atlas"))
    assert summary["bound"] == PLANTED.astype(int).tolist() and summary["n_bound"] == 4
    sep = summary["separation"]
    assert (sep["step"], sep["accuracy"]) == (PLANT_FROM, 1.0)
    # the one-hot positions move layer-1 attention from `=` too: both date the plant
    assert sep["first"]["progress/qk1_prev_token"] == PLANT_FROM
    assert sep["measure"] in ("progress/qk1_prev_token", "progress/attn1_eq_operands")
    assert summary["steps"] == [0, 20, 40]
    assert sep["chosen_on_fit_half"]["accuracy"] == 1.0  # measure picked on the fit half only
    assert summary["final"]["progress/qk1_prev_token"]["bound"]["mean"] == 1.0
    assert summary["outcome_clusters"]["agrees_with_bound"]
    table = np.load(tmp_path / "atlas" / "table.npz")
    assert table["measure/progress/qk1_prev_token"].shape == (8, 3)
    assert len([k for k in table if k.startswith("measure/progress/")]) == 7
    assert sorted(os.listdir(tmp_path / "atlas" / "figures")) == ["accuracy_by_group.png",
                                                                  "seed_atlas.png"]


def test_the_head_in_every_seed_does_not_date_the_split(tiny_run, tmp_path):
    """The same previous-token head in all 8 seeds, the outcome split as before: the head's
    measure no longer separates bound from never-bound (the step above comes from the planted
    group difference, not from the plant)."""
    source = plant(tiny_run, str(tmp_path / "all"), np.ones(8, bool))
    path = os.path.join(source, "metrics.npz")
    metrics = dict(np.load(path))
    metrics["metrics/acc/1var_restricted"][:, 0, -1] = np.where(PLANTED, 1.0, 0.02)
    np.savez(path, **metrics)
    summary = atlas.run(config_for(source), str(tmp_path / "atlas"))
    assert summary["n_bound"] == 4
    assert summary["separation"]["first"]["progress/qk1_prev_token"] is None
    assert summary["final"]["progress/qk1_prev_token"]["never bound"]["mean"] == 1.0


def test_bad_config_is_refused_before_the_workdir_is_made(tiny_run, tmp_path):
    for key, value, message in [("run", "", "--run=RUN"),
                                ("outcome", "acc/none", "outcome='acc/none'"),
                                ("outcome_step", 30, "outcome_step=30")]:
        config = config_for(tiny_run)
        config[key] = value
        assert_refused_before_writing(atlas.run, config, str(tmp_path / key), message)
