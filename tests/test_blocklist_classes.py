"""recall's orbit classes with closed-form probabilities against the enumerated orbit quotient
(``symmetric_support``): the same population, sequence by sequence, at any (f_r, f_v)."""
from __future__ import annotations

from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis.imir.dynamics.reference import given_rare
from mechjax.tasks import blocklist as bl
from mechjax.tasks.blocklist import classes as cl
from mechjax.tasks.blocklist import population as pop


def _by_sequence(tokens, target, p) -> dict:
    out: dict = defaultdict(float)
    for row, y, q in zip(np.asarray(tokens), np.asarray(target), np.asarray(p, np.float64)):
        out[tuple(int(x) for x in row) + (int(y),)] += float(q)
    return out


def _max_diff(a: dict, b: dict) -> float:
    return max(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def test_classes_equal_the_enumerated_orbit_quotient():
    """Every canonical sequence has the enumerated probability (float32 enumeration: 1e-7), the
    conditional law given a rare relevant item too, and the in-weights read-off population.

    One spec exercises every branch of the walk: 3 items on 3 cycles (a varied partner hits
    another item's cycle, or a fresh cycle once an item is rare), b = 2 (several slot sets),
    and 2 distractors (placed in every order without the relevant blocks)."""
    with jax.enable_x64(True):
        _check_population(bl.BlockListSpec(n_common=6, n_rare=6, n_blocks=5, burstiness=2))


def _check_population(spec: bl.BlockListSpec) -> None:
    classes = cl.recall_classes(spec)
    support = pop.symmetric_support(spec)
    for f_r, f_v in ((0.3, 0.4), (0.0, 0.7), (1.0, 0.2), (0.6, 0.0)):
        tp = {"f_r": f_r, "f_v": f_v}
        p = classes.probs(tp, jnp.float64)
        assert abs(float(jnp.sum(p)) - 1.0) < 1e-12
        assert _max_diff(_by_sequence(classes.tokens, classes.target, p),
                         _by_sequence(support.batch["tokens"], support.batch["target"],
                                      support.probs(tp))) < 1e-7
        if f_r < 1.0:
            continue
        ga = _by_sequence(classes.tokens, classes.target, classes.given_rare(tp, jnp.float64))
        gb = _by_sequence(support.batch["tokens"], support.batch["target"],
                          given_rare(support, tp))
        sa, sb = sum(ga.values()), sum(gb.values())
        assert _max_diff({k: v / sa for k, v in ga.items()},
                         {k: v / sb for k, v in gb.items()}) < 1e-7
    if spec.n_dist:
        iwl, iwl_s = (cl.recall_classes(spec, with_relevant=False),
                      pop.symmetric_support(spec, with_relevant=False))
        tp = {"f_r": 0.2, "f_v": 0.3}
        assert _max_diff(_by_sequence(iwl.tokens, iwl.target, iwl.probs(tp, jnp.float64)),
                         _by_sequence(iwl_s.batch["tokens"], iwl_s.batch["target"],
                                      iwl_s.probs(tp))) < 1e-7


def test_class_count_does_not_grow_with_the_vocabulary():
    """Once every collision pattern fits (8 common tokens for 3 blocks), more tokens only change
    the probabilities."""
    sizes = [cl.recall_classes(bl.BlockListSpec(n_common=n, n_rare=n, n_blocks=3)).size
             for n in (8, 16, 64)]
    assert sizes == [46, 46, 46]


def test_other_kinds_refused():
    with pytest.raises(ValueError, match="kind='khop'"):
        cl.recall_classes(bl.BlockListSpec(kind="khop", hops=2, n_common=6, n_rare=6,
                                           n_blocks=3))
