import json
import os

import pytest

from mechjax.workdir import WorkdirError, prepare


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


def test_outputs_without_config_are_refused(tmp_path):
    os.makedirs(tmp_path / "checkpoints")
    with pytest.raises(WorkdirError, match="no config.json"):
        prepare(str(tmp_path), {"a": 1})
