"""experiments/benchmark/flax_ensemble.py at a tiny size: both forms train the same models on the
same data (equal initial losses from equal initial parameters), and both learn."""
import numpy as np

from experiments.benchmark import flax_ensemble


def test_mechjax_and_the_flax_idiom_start_equal_and_both_learn():
    out = flax_ensemble.measure(flax_ensemble.SIZES["tiny"], steps=3, seeds=2, repeats=1,
                                forms=("mechjax auto", "flax idiom"))
    losses = {f: np.stack(v) for f, v in out["losses"].items()}  # [1 + calls, S]
    mech, idiom = losses["mechjax auto"], losses["flax idiom"]
    assert mech.shape == idiom.shape == (3, 2)
    assert np.all(np.isfinite(mech)) and np.all(np.isfinite(idiom))
    # the same parameters and data give the same loss: the comparison compares the same thing
    np.testing.assert_allclose(mech[0], idiom[0], rtol=1e-5)
    assert not np.allclose(mech[0, 0], mech[0, 1])  # two seeds, two different models
    assert np.all(np.diff(mech, axis=0) < 0) and np.all(np.diff(idiom, axis=0) < 0)
    np.testing.assert_allclose(mech[-1], idiom[-1], rtol=1e-3)  # and train alike
    rows = out["rows"]
    assert rows["flax idiom"]["speed_vs_idiom"] == 1.0
    assert all(r["ms_per_model_step"] > 0 for r in rows.values())
    assert "ms/model-step" in flax_ensemble.table(out, 1)
