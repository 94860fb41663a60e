import json
import os

import pytest

from mechjax.sweeps.workdir import WorkdirError, prepare


def test_same_config_resumes_and_different_config_is_refused(tmp_path):
    wd = str(tmp_path / "run")
    assert prepare(wd, {"a": 1, "b": (1, 2)}) is False
    assert json.load(open(os.path.join(wd, "config.json"))) == {"a": 1, "b": [1, 2]}
    assert prepare(wd, {"a": 1, "b": (1, 2)}) is True
    os.makedirs(os.path.join(wd, "checkpoints"))
    with pytest.raises(WorkdirError, match=r"different config \(differing keys: \['a'\]\)"):
        prepare(wd, {"a": 2, "b": (1, 2)})
    assert json.load(open(os.path.join(wd, "config.json")))["a"] == 1  # untouched
    assert prepare(wd, {"a": 2, "b": (1, 2)}, overwrite=True) is False
    assert not os.path.exists(os.path.join(wd, "checkpoints"))


def test_a_folder_with_files_but_no_config_is_refused_and_kept(tmp_path):
    os.makedirs(tmp_path / "checkpoints")
    for overwrite in (False, True):
        with pytest.raises(WorkdirError, match="no config.json"):
            prepare(str(tmp_path), {"a": 1}, overwrite=overwrite)
    assert os.path.isdir(tmp_path / "checkpoints")


def test_a_workdir_that_is_a_file_is_one_line(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(WorkdirError, match=r"is a file, not a folder") as err:
        prepare(str(path), {"a": 1})
    assert "\n" not in str(err.value) and path.read_text() == "x"


def _old_run(wd):
    """A run folder as experiments leave it: sweeps in subfolders (grokking_law's
    omega_sweep/, p_sweep/p7/), checkpoints, metrics, an unknown extra file."""
    assert prepare(wd, {"lr": 1e-2}) is False
    for sub in ("checkpoints/3", "omega_sweep/checkpoints/2", "p_sweep/p7/checkpoints/1"):
        os.makedirs(os.path.join(wd, sub))
    for name in ("metrics.npz", "omega_sweep/metrics.npz", "notes.txt"):
        open(os.path.join(wd, name), "w").close()


@pytest.mark.parametrize("new_config", [{"lr": 3e-2}, {"lr": 1e-2}])
def test_overwrite_deletes_everything_of_the_old_run_changed_config_or_not(tmp_path, new_config):
    wd = str(tmp_path / "run")
    _old_run(wd)
    assert prepare(wd, new_config, overwrite=True) is False  # never resumes
    assert os.listdir(wd) == ["config.json"]
    assert json.load(open(os.path.join(wd, "config.json"))) == new_config
