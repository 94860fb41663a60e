"""Atomic JSON / npz writes: the content round-trips and a failed write leaves the old file."""
import json
import os

import numpy as np
import pytest

from mechjax.io import to_jsonable, write_json, write_npz


def test_json_of_numpy_values(tmp_path):
    value = {"x": np.float32(0.5), "y": np.arange(3), "z": float("nan"), "t": (1, np.int64(2)),
             "b": np.bool_(True)}
    assert to_jsonable(value) == {"x": 0.5, "y": [0, 1, 2], "z": None, "t": [1, 2], "b": True}
    write_json(str(tmp_path / "sub" / "s.json"), value)
    assert json.load(open(tmp_path / "sub" / "s.json")) == to_jsonable(value)


def test_npz_is_written_under_exactly_the_given_name(tmp_path):
    path = str(tmp_path / "metrics.npz")
    write_npz(path, {"a": np.arange(4.0), "b": [[1, 2]]})
    with np.load(path) as f:
        np.testing.assert_array_equal(f["a"], np.arange(4.0))
        np.testing.assert_array_equal(f["b"], [[1, 2]])
    assert sorted(os.listdir(tmp_path)) == ["metrics.npz"]  # no temporary left behind


def test_a_failing_write_keeps_the_old_file_and_no_temporary(tmp_path):
    path = str(tmp_path / "s.json")
    write_json(path, {"old": 1})
    with pytest.raises(TypeError):
        write_json(path, {"new": object()})  # not JSON: fails mid-write
    assert json.load(open(path)) == {"old": 1}
    assert os.listdir(tmp_path) == ["s.json"]


def test_only_process_zero_writes_in_a_multi_process_run(tmp_path, monkeypatch):
    import jax
    path = str(tmp_path / "summary.json")
    monkeypatch.setattr(jax.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    write_json(path, {"a": 1})
    assert not os.path.exists(path) and os.listdir(tmp_path) == []
    monkeypatch.setattr(jax, "process_index", lambda: 0)
    write_json(path, {"a": 1})
    assert json.load(open(path)) == {"a": 1}
