"""seed_stats: the per-seed summary schema, with never-reached seeds counted and left out."""
import json

import numpy as np
import pytest

from mechjax.analysis.seeds import STAT_KEYS, format_stats, seed_stats
from mechjax.io import to_jsonable


def test_statistics_leave_out_and_count_the_seeds_without_a_value():
    s = seed_stats([100.0, np.nan, 300.0, np.inf, None])
    assert set(s) == set(STAT_KEYS)
    assert s["mean"] == 200.0 and s["std"] == 100.0 and s["min"] == 100.0 and s["max"] == 300.0
    assert s["n"] == 2 and s["n_never"] == 3
    assert s["per_seed"] == [100.0, None, 300.0, None, None]


def test_integers_stay_integers_and_all_never_gives_none():
    s = seed_stats(np.array([3, 5, 4]))
    assert s["per_seed"] == [3, 5, 4] and all(type(v) is int for v in s["per_seed"])
    assert s["mean"] == 4.0 and s["std"] == pytest.approx(np.sqrt(2 / 3))
    empty = seed_stats([np.nan, np.nan])
    assert empty["mean"] is None and empty["max"] is None and empty["n_never"] == 2
    # The whole thing is plain JSON.
    assert json.loads(json.dumps(to_jsonable(s)))["per_seed"] == [3, 5, 4]


def test_more_than_one_axis_is_refused():
    with pytest.raises(ValueError, match="one value per seed"):
        seed_stats(np.zeros((2, 3)))


def test_format_stats_shows_mean_std_count_and_every_seed():
    assert format_stats(seed_stats([4, None, 6])) == "5.000 +- 1.000 (n=2) [4, -, 6]"
    assert format_stats(seed_stats([0.25, 0.5])) == "0.375 +- 0.125 (n=2) [0.25, 0.50]"
    assert format_stats(seed_stats([None, None])) == "n/a (n=0) [-, -]"
    assert format_stats([3, 4]) == "[3, 4]"  # not a seed_stats entry
