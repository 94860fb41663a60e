"""The memory benchmark's measurement (a child's own peak resident memory) and its extrapolation
to a memory budget; the experiments' cut-down flags exist in their schemas."""
import importlib
import sys

import numpy as np
import pytest

from experiments.benchmark import memory

MIB = 2 ** 20


def test_peak_rss_sees_what_a_child_allocated(tmp_path):
    # This process holds far more than the children touch: a peak inherited from the parent
    # (fork and exec keep the high-water mark) would hide the difference.
    ballast = np.ones(400 * MIB, np.uint8)
    assert ballast.sum() == 400 * MIB
    small, large = 16, 160  # MiB touched by each child
    touch = "import numpy as np; a = np.ones({} * 2**20, np.uint8); print(a.sum())"
    runs = [memory.peak_rss([sys.executable, "-c", touch.format(m)], str(tmp_path),
                            str(tmp_path / f"{m}.log")) for m in (small, large)]
    assert [r["rc"] for r in runs] == [0, 0]
    grown = runs[1]["peak_rss_bytes"] - runs[0]["peak_rss_bytes"]
    assert 0.9 * (large - small) * MIB < grown < 1.1 * (large - small) * MIB


def test_linear_extrapolation_to_a_budget():
    base, per_seed = 500 * MIB, 40 * MIB
    seeds = [8, 16, 32]
    intercept, slope = memory.linear_fit(seeds, [base + per_seed * s for s in seeds])
    assert intercept == pytest.approx(base) and slope == pytest.approx(per_seed)
    budget = 24 * 2 ** 30
    n = memory.largest_fitting(intercept, slope, budget)
    assert base + per_seed * n <= budget < base + per_seed * (n + 1)
    assert memory.largest_fitting(intercept, 0.0, budget) is None


@pytest.mark.parametrize("name", sorted(memory.CASES))
def test_cut_down_flags_name_config_keys(name):
    """Every flag of ``CASES`` overrides a key the experiment's CPU config has."""
    config = importlib.import_module(f"experiments.{name}.configs.cpu").get_config()
    for flag in memory.CASES[name]:
        key = flag[len("--config."):].split("=", 1)[0]
        node = config
        for part in key.split("."):
            assert part in node, (name, flag)
            node = node[part]


def test_a_run_past_its_limit_is_killed_without_a_peak(tmp_path):
    run = memory.peak_rss([sys.executable, "-c", "import time; time.sleep(30)"], str(tmp_path),
                          str(tmp_path / "slow.log"), timeout_s=1.0)
    assert run["rc"] != 0 and run["peak_rss_bytes"] is None and run["seconds"] < 20
