"""experiments.imir_init: the tiny config end to end, and bad configs refused in one line."""
import json
import os

import numpy as np
import pytest

from experiments.imir_init import run as ri
from experiments.imir_init.configs import tiny
from mechjax.models.config import ConfigError


def test_tiny_config_end_to_end(tmp_path):
    wd = str(tmp_path / "run")
    c = tiny.get_config()
    summary = ri.run(c, wd)
    n_points = c.grid.n ** 2 * len(c.grid.scales) + c.trained.n_inits
    assert summary["ode/points"] == n_points
    assert set(summary["routes"]) == {"L1>L2", "L1>L3", "L2>L3"}
    for key in ("winner_agreement_ode_vs_training", "largest_init_predictor_accuracy",
                "n_boundary_cells", "trained/win_fractions", "grid/win_fractions",
                "trained/n_settled", "trained/winner_agreement_per_save"):
        assert key in summary
    assert sum(summary["trained/win_fractions"].values()) == pytest.approx(1.0)
    # the headline: every trained initialization settles, on the route the exact ODE predicts
    # from its start, and the largest initial route is a worse predictor (measured 1.0 vs 0.0)
    assert summary["trained/n_settled"] == c.trained.n_inits
    assert summary["winner_agreement_ode_vs_training"] == 1.0
    assert summary["winner_agreement_ode_vs_training"] - \
        summary["largest_init_predictor_accuracy"] >= 0.5
    with open(os.path.join(wd, "summary.json")) as f:
        assert json.load(f)["n_boundary_cells"] == summary["n_boundary_cells"]
    m = np.load(os.path.join(wd, "metrics.npz"))
    assert m["grid/winner"].shape == (len(c.grid.scales), c.grid.n, c.grid.n)
    assert m["trained/rises"].shape == (c.trained.n_inits, c.ode.n_save + 1, 3)
    assert "winner_maps.png" in os.listdir(os.path.join(wd, "figures"))


@pytest.mark.parametrize("change, message", [
    (lambda c: c.grid.update(factor_min=2.0, factor_max=1.0), "grid.factor_min=2.0"),
    (lambda c: c.trained.update(lr=3.0), "ode.t1 / trained.lr"),
    (lambda c: c.grid.update(axis_routes=["L1>L2", "L3>L1"]), "'L3>L1' is not a route"),
    (lambda c: c.task.update(n_blocks=6, n_common=12, n_rare=12), "task.n_blocks=6: allowed 3..5"),
])
def test_bad_configs_are_refused_in_one_line(change, message):
    c = tiny.get_config()
    change(c)
    with pytest.raises(ConfigError, match=message) as err:
        ri.build(ri.SCHEMA.validate(c))
    assert "\n" not in str(err.value)
