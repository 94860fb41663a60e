"""Clock-free comparisons of phase diagrams (``mechjax.analysis.imir.phase.clockfree``) on
planted sigmoid curves whose onsets, order and winners are known."""
import types

import numpy as np
import pytest

from mechjax.analysis.imir.phase import clockfree as cf
from mechjax.models.config import ConfigError

T = np.linspace(0.0, 100.0, 201)  # step 0.5


def sigmoid(onset, height=1.0, width=1.0):
    """Curves ``[..., n_t]`` rising to ``height`` around ``onset`` (``inf``: flat at 0)."""
    onset = np.asarray(onset, np.float64)[..., None]
    return height / (1 + np.exp(-(T - onset) / width))


def test_emergence_recovers_planted_onsets_and_ignores_curves_below_threshold():
    onsets = np.array([10.0, 30.0, 55.5])
    em = cf.emergence_time(T, sigmoid(onsets), 0.5)
    assert np.allclose(em, onsets, atol=0.05)
    # a curve saturating at 0.4 never reaches 0.5: inf, not its midpoint
    assert np.isinf(cf.emergence_time(T, sigmoid(20.0, height=0.4), 0.5))
    # the threshold moves the crossing: 0.88 of a width-1 sigmoid is onset + ln(0.88/0.12)
    assert np.isclose(cf.emergence_time(T, sigmoid(20.0), 0.88), 20 + np.log(0.88 / 0.12),
                      atol=0.05)


def test_first_to_form_recovers_planted_order():
    icl = sigmoid([10.0, 50.0, 30.0, np.inf])
    iwl = sigmoid([40.0, 20.0, 30.0, np.inf])
    assert cf.first_to_form(T, icl, iwl, 0.5).tolist() == [1, 2, 3, 0]
    # only ICL ever forms: ICL first; swapping the two curves swaps the code
    only = sigmoid([10.0]), sigmoid([np.inf])
    assert cf.first_to_form(T, *only, 0.5).tolist() == [1]
    assert cf.first_to_form(T, *only[::-1], 0.5).tolist() == [2]


def test_spearman_is_one_for_same_ranking_minus_one_reversed_and_ranks_ties_by_mean():
    a = np.array([3.0, 10.0, 20.0, 45.0, np.inf])
    assert cf.spearman(a, a * 2 + 1) == pytest.approx(1.0)  # monotone map: same ranks
    assert cf.spearman(a, -a) == pytest.approx(-1.0)
    # ties: ranks [1, 2.5, 2.5, 4] against [1, 2, 3, 4]; Pearson of those ranks
    r = cf.spearman([1, 2, 2, 3], [1, 2, 3, 4])
    assert r == pytest.approx(np.corrcoef([1, 2.5, 2.5, 4], [1, 2, 3, 4])[0, 1])
    assert np.isnan(cf.spearman([1, 1, 1], [1, 2, 3]))


def test_stable_winner_excludes_a_winner_that_flips_between_t_and_2t():
    # cell 0: ICL only from t=5 on (stable); cell 1: IWL joins at t=30, inside [20, 40]
    # (flips ICL -> both); cell 2: IWL joins at t=60, after 2t (stable ICL)
    icl = sigmoid([5.0, 5.0, 5.0])
    iwl = sigmoid([np.inf, 30.0, 60.0])
    w = cf.stable_winner(T, icl, iwl, 0.5, horizon=20.0)
    assert w.tolist() == [1, cf.UNSTABLE, 1]
    # the flipping cell is left out of the count; the others agree with an exact side of ICL
    out = cf.agreement(np.array([1, 1, 1]), w[:, None])
    assert out["cells"] == 2 and out["runs"] == 2 and out["value"] == 1.0
    with pytest.raises(ConfigError, match="horizon=60"):
        cf.stable_winner(T, icl, iwl, 0.5, horizon=60.0)


def test_agreement_counts_runs_cells_and_seed_spread():
    exact = np.array([1, 2, cf.UNSTABLE, 1])
    trained = np.array([[1, 1, 2],              # 2 of 3 seeds agree
                        [2, cf.UNSTABLE, 2],    # 2 of 2 compared agree
                        [1, 1, 1],              # exact unstable: cell not compared
                        [2, 2, 2]])             # none agree
    out = cf.agreement(exact, trained)
    assert out["cells"] == 3 and out["runs"] == 8
    assert out["value"] == pytest.approx(4 / 8)
    assert out["majority"] == pytest.approx(2 / 3)
    per_seed = [2 / 3, 1 / 2, 1 / 3]
    assert out["seed_min"] == pytest.approx(1 / 3) and out["seed_max"] == pytest.approx(2 / 3)
    assert out["seed_std"] == pytest.approx(np.std(per_seed))


def test_emergence_spearman_per_seed_and_median():
    exact = np.array([10.0, 20.0, 30.0, 40.0])
    trained = np.stack([exact * 100, exact[::-1] * 100, exact * 100 + 5], 1)  # seed 1 reversed
    out = cf.emergence_spearman(exact, trained)
    assert out["cells"] == 4
    assert out["seed_min"] == pytest.approx(-1.0) and out["seed_max"] == pytest.approx(1.0)
    assert out["value"] == pytest.approx(1.0)  # the median follows the two agreeing seeds
    with pytest.raises(ValueError, match="cell=4"):
        cf.emergence_spearman(exact, trained[:3])


def test_stage_compares_each_side_on_its_own_clock():
    """``cell_stages.clockfree_agreement``: the exact side on gradient-flow time t in [0, 100],
    the trained side on steps in [1000, 100000] (1000 times slower): the same order, ranking and
    stable winners agree fully; a common clock would call every trained cell "not yet formed"."""
    from experiments.imir_phase.cell_stages import clockfree_agreement
    icl_on, iwl_on = np.array([10.0, 20.0, 30.0]), np.array([40.0, 5.0, np.inf])
    # the two fields of a PhaseDiagram the stage reads
    ex = types.SimpleNamespace(t=T, curves={"p_rare": sigmoid(icl_on), "p_iwl": sigmoid(iwl_on)})
    step = T[1:] * 1000  # 200 saved steps
    slow = lambda on: 1 / (1 + np.exp(-(step - 1000 * on[..., None]) / 1000))
    tr = {"step": step, "p_rare": slow(icl_on[:, None].repeat(2, 1)),
          "p_iwl": slow(iwl_on[:, None].repeat(2, 1))}
    out = clockfree_agreement(ex, np.arange(3), tr, 0.5, "arm")
    assert out["arm/order_agreement"] == 1.0 and out["arm/order_agreement_cells"] == 3
    assert out["arm/emergence_spearman"] == pytest.approx(1.0)
    assert out["arm/stable_winner_agreement"] == 1.0
    assert out["arm/stable_winner_agreement_cells"] == 3
    # IWL's curve given as ICL's on the trained side: the order flips in the first two cells
    tr_swapped = {**tr, "p_rare": tr["p_iwl"], "p_iwl": tr["p_rare"]}
    assert clockfree_agreement(ex, np.arange(3), tr_swapped, 0.5, "arm")[
        "arm/order_agreement"] < 0.5
