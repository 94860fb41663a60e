"""The knob map: planted Zipf tails and the directions Reddy reports (ICL up with K, B, eps)."""
import numpy as np

from mechjax.studies import icl_minimal_map as mp


def test_rare_fraction_planted():
    # Uniform over K: every class is seen queries/K times; rare iff that is below the count.
    assert np.isclose(mp.rare_fraction(100, 0.0, 50, min_count=1.0), 1.0)
    assert mp.rare_fraction(100, 0.0, 500, min_count=1.0) == 0.0
    # Zipf 1 over 4 classes, p = (12, 6, 4, 3)/25: with 25 queries classes 3 and 4 are seen 4 and
    # 3 times; below 5 they are rare: f_r = 7/25.
    assert np.isclose(mp.rare_fraction(4, 1.0, 25, min_count=5), 7 / 25)


def test_directions():
    base = dict(k=512, alpha=0.0, eps=0.1, b=2, queries_seen=200000, min_count=100)
    sb = lambda **kw: mp.contour_variable(**dict(base, **kw))
    assert sb(k=2048) > sb(k=512) == sb(k=32)  # 2048 classes: 98 < 100 queries each
    assert sb(b=4) > sb(b=2) > sb(b=0) == 0.0
    assert sb(eps=0.8) > sb(eps=0.1)
    assert 0 < mp.rare_fraction(2048, 1.0, 20000, 100) < 1  # Zipf 1: both kinds of class
