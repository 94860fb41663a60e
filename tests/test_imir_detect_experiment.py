"""python -m experiments.imir_detect: the tiny config end to end (training, detection, summary,
figures), detection of a given weights file, and one-line refusals of bad input before any
compute or any write."""
import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from experiments.imir_detect import run as rd
from experiments.imir_detect.configs import tiny
from mechjax.analysis.imir import basis as ib
from mechjax.analysis.imir import project as proj
from mechjax.config import ConfigError
from mechjax.weights import save_npz


def test_tiny_config_end_to_end(tmp_path):
    wd = str(tmp_path / "run")
    summary = rd.run(tiny.get_config(), wd)
    s = summary["recall_icl"]
    assert len(s["per_seed"]) == 2
    for r in s["per_seed"]:
        assert r["n_coordinates_total"] == 56
        assert 0 < r["manifold_explained_fraction"] <= 1
        assert r["n_kept"] == len(r["kept"]) > 0
        assert {"acc/full", "acc/circuit", "acc/circuit_without_helpers"} <= set(r)
    assert s["n_kept"]["n"] == 2 and "canonical_recovered" in s
    with open(os.path.join(wd, "summary.json")) as f:
        assert json.load(f)["recall_icl"]["n_kept"] == s["n_kept"]
    figs = sorted(os.listdir(os.path.join(wd, "figures")))
    assert figs == ["recall_icl_accuracy_vs_kept.png", "recall_icl_circuit_seed0.png",
                    "recall_icl_circuit_seed1.png"]


def _setting_basis():
    c = tiny.get_config()
    st = rd.setting("recall_icl", c.recall_icl.to_dict())
    return c, st["frame"], st["basis"]


def test_detects_a_given_weights_file(tmp_path):
    """A planted induction head written as a .npz (no training): alpha, beta, gamma found."""
    c, frame, basis = _setting_basis()
    t = frame.n_pos
    theta = np.zeros(basis.size)
    for name, v in {"L0H0 I|M|I": 30.0, "L1H0 I|I_rare|O1": 30.0, "L1H0 I|I_common|O1": 30.0,
                    f"L1H0 I|M^{t - 1}|I": -30.0, "U O2|I_rare": 10.0,
                    "U O2|I_common": 10.0}.items():
        theta[basis.index(name)] = v
    params = {**ib.fixed_params(frame), **proj.weights(basis, jnp.asarray(theta, jnp.float32))}
    path = str(tmp_path / "planted.npz")
    save_npz({k: np.asarray(v) for k, v in params.items()}, path)
    c.weights = path
    c.recall_icl.enabled = False
    summary = rd.run(c, str(tmp_path / "run"))
    w = summary["weights"]
    assert w["abgd_found"] == ["alpha", "beta", "gamma"]
    assert w["manifold_explained_fraction"] == pytest.approx(1.0, abs=1e-5)
    assert w["acc/circuit"] >= w["acc/full"] - 0.02


@pytest.mark.parametrize("change, match", [
    ("width", r"--config.weights=.*: weights have d_model=30; the IMIR frame of this task needs "
              r"d_model=52"),
    ("mlp", r"--config.weights=.*: model has MLP weights"),
    ("tau", r"tau"),
])
def test_bad_input_is_refused_before_anything_runs(tmp_path, change, match):
    c, frame, _ = _setting_basis()
    params = {k: np.asarray(v) for k, v in ib.fixed_params(frame).items()}
    params.update({k: np.asarray(v) for k, v in ib.zero_trainables(frame).items()})
    if change == "width":
        params = {k: np.zeros([30 if s == frame.d_model else s for s in v.shape])
                  for k, v in params.items()}
    if change == "mlp":
        params["blocks.0.mlp.W_in"] = np.ones((frame.d_model, 4))
    path = str(tmp_path / "w.npz")
    save_npz(params, path)
    c.weights = path
    if change == "tau":
        c.tau = -1.0
    wd = str(tmp_path / "run")
    with pytest.raises(ConfigError, match=match) as err:
        rd.run(c, wd)
    assert "\n" not in str(err.value)
    assert not os.path.exists(wd)
