"""docs/examples/flax_seeds.py (the example of docs/flax.md) at its tiny size."""
import numpy as np

from conftest import load_example


def test_flax_seeds_example_runs_tiny(capsys):
    out = load_example("flax_seeds").main(["--tiny", "--no-builtin"])
    printed = capsys.readouterr().out
    assert "flax nnx: trained in" in printed and "projector overlap" in printed
    result = out["flax nnx"]
    assert result["metrics"]["acc/train"].shape[0] == 3
    assert np.all(result["metrics"]["acc/train"][:, -1] > 0.9)  # it learns the training pairs
    c = result["cores"]
    # The core carries what the model answers: alone it keeps the full accuracy (measured gap
    # <= 1 pair of 49), removed it costs at least 0.3 (measured >= 0.53); a core read at the
    # wrong activation, or another seed's basis, fails one of the two.
    assert np.all(c["acc/core_only"] >= c["acc/full"] - 0.05), c
    assert np.all(c["acc/core_removed"] <= c["acc/full"] - 0.3), c
    assert 0.0 <= c["overlap"] <= 1.0 and 0.0 <= c["cca"] <= 1.0
