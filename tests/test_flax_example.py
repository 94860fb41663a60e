"""examples/flax_seeds.py (the example of docs/flax.md) at its tiny size."""
import importlib.util
import os

import numpy as np

from conftest import REPO

SCRIPT = os.path.join(REPO, "examples", "flax_seeds.py")


def load_script():
    spec = importlib.util.spec_from_file_location("flax_seeds", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_flax_seeds_example_runs_tiny(capsys):
    out = load_script().main(["--tiny", "--no-builtin"])
    printed = capsys.readouterr().out
    assert "flax nnx: trained in" in printed and "projector overlap" in printed
    result = out["flax nnx"]
    assert result["metrics"]["acc/train"].shape[0] == 3
    assert np.all(result["metrics"]["acc/train"][:, -1] > 0.9)  # it learns the training pairs
    c = result["cores"]
    assert np.all(c["rank"] >= 1) and np.all(c["acc/core_only"] >= c["acc/core_removed"])
    assert 0.0 <= c["overlap"] <= 1.0 and 0.0 <= c["cca"] <= 1.0
