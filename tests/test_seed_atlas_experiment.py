"""``python -m experiments.seed_atlas`` on a tiny quickstart run whose saved snapshots get a
planted mechanism in half the seeds: a one-frequency embedding from step 40 on. The atlas must
find those seeds as a group, rank the Fourier sparsity first and date the split to step 40."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import PYTHON, REPO, assert_refused_before_writing, fast_compile_env

from experiments.quickstart import run as quickstart
from experiments.quickstart.configs import tiny as quickstart_tiny
from experiments.seed_atlas import run as atlas
from experiments.seed_atlas.configs import tiny

TINY = os.path.join(REPO, "experiments", "seed_atlas", "configs", "tiny.py")
PLANTED = np.array([0, 1, 1, 0, 0, 1, 0, 1])  # seeds given the one-frequency embedding
PLANT_FROM = 40                               # saved steps are 0, 20, 40, 60


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory):
    config = quickstart_tiny.get_config()
    config.n_seeds = PLANTED.size
    workdir = str(tmp_path_factory.mktemp("qs") / "run")
    quickstart.run(config, workdir)
    return workdir


def planted_copy(source: str, dest: str, seeds: np.ndarray) -> str:
    """``source`` copied to ``dest`` with ``W_E`` of the ``seeds`` (bool per seed) replaced, at
    every saved step from ``PLANT_FROM``, by a one-frequency embedding of the same norm."""
    shutil.copytree(source, dest)
    folder = os.path.join(dest, "snapshots")
    for name in os.listdir(folder):
        if int(name[len("step_"):-len(".npz")]) < PLANT_FROM:
            continue
        arrays = dict(np.load(os.path.join(folder, name)))
        w = arrays["embed.W_E"]  # [n_seeds, n_grid, p, d]
        p, d = w.shape[-2:]
        angle = 2 * np.pi * 2 * np.arange(p) / p  # frequency 2
        wave = np.outer(np.cos(angle), np.eye(d)[0]) + np.outer(np.sin(angle), np.eye(d)[1])
        for i in np.flatnonzero(seeds):
            w[i, 0] = wave * np.linalg.norm(w[i, 0]) / np.linalg.norm(wave)
        np.savez(os.path.join(folder, name), **arrays)
    return dest


def atlas_config(source):
    config = tiny.get_config()
    config.run = source
    return config


def test_the_planted_seeds_are_found_ranked_and_dated(quickstart_run, tmp_path):
    source = planted_copy(quickstart_run, str(tmp_path / "planted"), PLANTED == 1)
    summary = atlas.run(atlas_config(source), str(tmp_path / "atlas"))
    assert summary["n_groups"] == 2 and summary["silhouette"] >= 0.5
    assert summary["labels"] == PLANTED.tolist()  # seed 0 unplanted: group 0
    assert summary["ranked"][0]["measure"] == "fourier/top1"
    assert summary["separation"]["measure"] == "fourier/top1"
    assert summary["separation"]["step"] == PLANT_FROM
    assert summary["separation"]["accuracy"] == 1.0
    assert summary["steps"] == [20, 40, 60]  # saved steps with an evaluation
    assert summary["final"]["fourier/top1"]["per_seed"][1] == pytest.approx(1.0, abs=1e-5)
    table = np.load(tmp_path / "atlas" / "table.npz")
    np.testing.assert_array_equal(table["labels"], PLANTED)
    assert table["measure/acc/test"].shape == (8, 3)
    assert os.listdir(tmp_path / "atlas" / "figures") == ["seed_atlas.png"]


def test_the_same_change_in_every_seed_is_one_group(quickstart_run, tmp_path):
    source = planted_copy(quickstart_run, str(tmp_path / "all"), np.ones(8, bool))
    summary = atlas.run(atlas_config(source), str(tmp_path / "atlas"))
    assert summary["n_groups"] == 1 and summary["separation"] is None
    assert summary["labels"] == [0] * 8 and summary["ranked"] == []


def test_bad_config_is_refused_before_the_workdir_is_made(quickstart_run, tmp_path):
    for key, value, message in [("run", "", "--run=RUN"),
                                ("group_by", ("nope",), "no measure ['nope']"),
                                ("metrics", ("acc/none",), "no ['acc/none']"),
                                ("grid", 3, "grid=3")]:
        config = atlas_config(quickstart_run)
        config[key] = value
        assert_refused_before_writing(atlas.run, config, str(tmp_path / key), message)


@pytest.mark.timeout(300)
def test_the_command_line_reads_the_run_named_by_its_alias(quickstart_run, tmp_path):
    proc = subprocess.run(
        [PYTHON, "-m", "experiments.seed_atlas", f"--config={TINY}", f"--run={quickstart_run}",
         f"--workdir={tmp_path / 'cli'}"],
        cwd=REPO, env=fast_compile_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.load(open(tmp_path / "cli" / "summary.json"))
    assert summary["run"] == os.path.normpath(quickstart_run) and len(summary["labels"]) == 8
    assert "n_groups" in proc.stdout
