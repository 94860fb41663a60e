"""The clock_pizza job on its tiny config (2 rates x 3 seeds, one compiled grid): summary, table,
figure, and per-seed diagnostics equal to the measures computed from the saved parameters."""
import json

import jax
import numpy as np
import pytest

from experiments.clock_pizza import run as job
from experiments.clock_pizza.configs import tiny
from mechjax import runs
from mechjax.analysis import clock_pizza as cp
from mechjax.config import ConfigError


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    wd = tmp_path_factory.mktemp("cp") / "run"
    return wd, job.run(tiny.get_config(), str(wd))


def test_summary_and_files(tiny_run):
    wd, summary = tiny_run
    assert json.load(open(wd / "summary.json"))["n_seeds"] == 3
    assert [r["attn_rate"] for r in summary["per_rate"]] == [0.0, 1.0]
    run = runs.open(str(wd))
    assert run.n_grid == 2 and run.hparams["attn_rate"].tolist() == [0.0, 1.0]
    table = np.load(wd / "table.npz")
    assert table["rate1/clock_pizza/grad_sym"].shape == (3, len(run.steps_saved))
    assert (wd / "figures" / "clock_pizza.png").exists()
    for r in summary["per_rate"]:  # 40 steps at p = 11 learn nothing: no seed is classified
        assert r["n_learned"] == 0 and r["algorithm"] == ["not learned"] * 3
        assert r["fraction"] == {"clock": None, "pizza": None, "mixed": None}
        assert len(r["ace/core_dim"]) == 3 and all(d >= 1 for d in r["ace/core_dim"])
    assert all(s["core_dim"]["n"] == 0 for s in summary["cores_by_algorithm"].values())
    assert "rate" in job.format_summary(summary)


def test_diagnostics_are_the_saved_models(tiny_run):
    wd, summary = tiny_run
    run = runs.open(str(wd))
    for grid, r in enumerate(summary["per_rate"]):
        params = run.params(seed=2, step=run.steps_saved[-1], grid=grid)
        rate = r["attn_rate"]
        gs = jax.jit(cp.gradient_symmetricity_measure(rate, 20), static_argnums=1)(
            params, run.model_cfg)
        di = jax.jit(cp.distance_irrelevance_measure(rate), static_argnums=1)(
            params, run.model_cfg)
        assert r["grad_sym"][2] == pytest.approx(float(gs), abs=1e-5)
        assert r["dist_irr"][2] == pytest.approx(float(di), abs=1e-5)
    # the two rates trained different models from the same seeds
    assert summary["per_rate"][0]["grad_sym"] != summary["per_rate"][1]["grad_sym"]


def test_bad_rate_refused_before_training(tmp_path):
    config = tiny.get_config()
    config.attn_rates = (0.5, 1.5)
    with pytest.raises(ConfigError, match="attn_rates"):
        job.run(config, str(tmp_path / "bad"))
    assert not (tmp_path / "bad").exists()
