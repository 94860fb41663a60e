"""The budget curve (mechjax.analysis.imir.detection.budget, detector.detect_curve): the rule
picks the tau one can work out by hand, a greedy path stopped at a tighter budget is the run at
that budget, and on a planted circuit the curve keeps the planted coordinates up to the cost of
its cheapest essential removal, with nested kept sets from tight to loose."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.imir_detect import run as rd
from experiments.imir_detect.configs import tiny
from mechjax.analysis.imir.detection import budget
from mechjax.analysis.imir.detection import detector as dt
from mechjax.analysis.imir.detection.elimination import eliminate
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.manifold import project as proj
from mechjax.tasks import blocklist as bl


@pytest.mark.parametrize("acc, want", [
    ([1.0, 0.99, 0.985, 0.97, 0.99], (2, True)),   # 0.97 breaks the margin; later ones don't count
    ([0.99, 0.99, 0.99], (2, True)),               # every tau is within the margin: the loosest
    ([0.9, 0.99, 0.99], (0, False)),               # the tightest already falls short
])
def test_rule_picks_the_loosest_tau_within_the_margin(acc, want):
    assert budget.pick(acc, 1.0, 0.02) == want


def test_doubling_compares_the_kept_sets_budget_by_budget():
    a = np.array([[1, 1, 0, 1], [1, 0, 0, 1], [0, 0, 0, 0]], bool)     # kept per tau, batch B
    b = np.array([[1, 1, 0, 1], [1, 1, 0, 0], [0, 0, 0, 0]], bool)     # the same on 2B
    got = budget.doubling(list(a), list(b), reported=1)
    assert got["same_per_tau"] == [True, False, True] and got["taus_same"] == 2
    assert not got["all_same"] and not got["same_at_reported_tau"]
    assert got["jaccard_per_tau"] == [1.0, pytest.approx(1 / 3), 1.0]  # two empty sets agree
    assert got["kept_doubled"] == [3, 2, 0]
    assert budget.doubling(list(a), list(a), reported=0)["all_same"]


def test_a_greedy_path_stopped_at_a_tighter_budget_is_the_run_at_that_budget():
    """Costs 1e-3 .. 1 with two redundant copies (3, 4: either alone is free, both cost 0.6):
    the path of the loosest run, stopped at each tighter budget, keeps what a run at that
    budget keeps; a looser budget or a path with bulk removals is refused."""
    n = 10
    w = np.asarray([1e-3, 2e-3, 0.05, 0.0, 0.0, 0.2, 3e-3, 1.0, 0.01, 0.5])

    def loss(theta):
        return jnp.sum(jnp.asarray(w) * (1 - theta) ** 2) + 0.6 * (1 - theta[3]) * (1 - theta[4])

    loose = eliminate(loss, jnp.ones(n), tau=2.0)
    for tau in (0.005, 0.02, 0.1, 0.3, 0.7, 2.0):
        one = eliminate(loss, jnp.ones(n), tau=tau)
        cut = loose.at_budget(loose.loss_start + tau)
        assert cut.n_accepted == one.n_accepted and (cut.kept == one.kept).all(), tau
    with pytest.raises(ValueError, match="looser than this path"):
        eliminate(loss, jnp.ones(n), tau=0.1).at_budget(loose.loss_start + 0.5)
    bulk = eliminate(loss, jnp.ones(n), tau=2.0, exact_max=4, screen=2, refresh=2)
    with pytest.raises(ValueError, match="bulk removals"):
        bulk.at_budget(bulk.loss_start + 0.1)


# the tiny config's causal 5-position frame (46 coordinates), in-context rare data only
PLANT = {"L0H0 I|M|I": 30.0, "L1H0 I|I_rare|O1": 30.0, "U O2|I_rare": 10.0}
TAUS = (0.001, 0.01, 0.1, 1.0, 3.0, 10.0)


@pytest.fixture(scope="module")
def planted():
    st = rd.setting("recall_icl", tiny.get_config().recall_icl.to_dict())
    basis = st["basis"]
    theta = np.zeros(basis.size, np.float32)
    for k, v in PLANT.items():
        theta[basis.index(k)] = v
    params = {**ib.fixed_params(st["frame"]), **proj.weights(basis, jnp.asarray(theta))}
    tp = {"f_r": 1.0, "f_v": 0.0}
    batch = bl.sample(st["spec"], jax.random.key(1), tp, 64)
    eval_batch = bl.sample(st["spec"], jax.random.key(2), tp, 64)
    dets = dt.detect_curve(params, basis, batch, TAUS, eval_batch=eval_batch,
                           exact_max=basis.size, causal=True)
    return basis, theta, params, batch, dets


def test_planted_curve_is_nested_and_the_rule_picks_the_hand_computed_tau(planted):
    basis, theta, params, batch, dets = planted
    kept = [d.elimination.kept for d in dets]
    # exact greedy: one path, so each looser budget keeps a subset of the tighter one's
    for a, b in zip(kept, kept[1:]):
        assert not (b & ~a).any()
    # by hand: the cheapest essential removal from the planted circuit (nothing else has a
    # value, so the loss at the start is the circuit's own)
    loss = jax.jit(dt.model_fns(basis, True)[0])
    loss0 = float(loss(jnp.asarray(theta), batch))
    costs = [float(loss(jnp.asarray(theta).at[basis.index(k)].set(0.0), batch)) - loss0
             for k in PLANT]
    for tau, d in zip(TAUS, dets):
        if tau < min(costs):
            assert sorted(d.kept_names) == sorted(PLANT), tau
    want = max(t for t in TAUS if t < min(costs))
    curve = budget.curve(dets, TAUS)
    i, met = budget.pick(curve["acc_selection_circuit"], dets[0].accuracy["selection_full"],
                         0.02)
    assert met and TAUS[i] == want
    assert curve["kept"][i] == 3 and curve["canonical_units"][i] == 3
    assert curve["kept"][-1] == 0 and curve["acc_circuit"][-1] < 0.2


def test_cut_path_equals_a_detection_at_that_tau(planted):
    basis, _, params, batch, dets = planted
    one = dt.detect(params, basis, batch, TAUS[1], exact_max=basis.size, causal=True)
    assert one.kept_names == dets[1].kept_names
    assert one.accuracy["selection_circuit"] == dets[1].accuracy["selection_circuit"]
