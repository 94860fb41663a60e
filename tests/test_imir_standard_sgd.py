"""The plain-SGD arm of the standard architecture (``experiments.imir_phase.cell_stages.sgd_arm``):
steps = exact.t1 / lr so that t = step x lr, its one-horizon winner agreement and clock-free
comparisons against the exact diagram's cells; its config refused before anything compiles."""
import numpy as np
import pytest

from conftest import assert_refused_before_writing
from experiments.imir_phase import run
from experiments.imir_phase.configs import tiny
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.tasks import blocklist as bl

SPEC = bl.BlockListSpec(kind="recall", n_common=4, n_rare=4, n_blocks=3, burstiness=1)
IWL, NEITHER = ph.WINNERS.index("IWL"), ph.WINNERS.index("neither")


@pytest.mark.parametrize("edit, message", [
    ({"sgd_lr": -0.5}, "validate_standard.sgd_lr"),
    # tiny's exact.t1 = 200: 2,000,000 steps
    ({"sgd_lr": 1e-4}, "validate_standard.sgd_lr=0.0001: exact.t1 / sgd_lr = 2000000 SGD steps"),
    ({"sgd_lr": 150.0, "n_evals": 2}, "exact.t1 / sgd_lr = 1 SGD steps; allowed 2 (n_evals)"),
])
def test_bad_sgd_arm_refused_before_writing(tmp_path, edit, message):
    config = tiny.get_config()
    config.validate_standard.update(edit)
    assert_refused_before_writing(run.run, config, tmp_path / "run", message)


def _exact_side(winners: list[int], t1: float) -> dict:
    """An exact diagram of one row of cells ``(f_r, f_v) = (0, 0), (1, 0)`` whose winners are
    planted, with curves that make IWL form at t1 / 4 where the winner is IWL (else nothing)."""
    t = np.linspace(0.0, t1, 11)
    iwl = np.array([1 / (1 + np.exp(-(t - t1 / 4) / (t1 / 50))) if w == IWL else 0 * t
                    for w in winners])
    return {"FR": np.array([[0.0, 1.0]]), "FV": np.zeros((1, 2)), "spec": SPEC, "t": t,
            "ro": {"winner": np.array(winners), "p_rare": np.zeros(2), "acc_rare": np.zeros(2),
                   "p_iwl": iwl[:, -1]},
            "out": {"p_rare": np.zeros_like(iwl), "p_iwl": iwl}}


def test_sgd_arm_matches_t_and_recovers_the_in_weights_cell():
    """f_r = 0, f_v = 0 (common faithful pairs only) learns the association in weights under
    plain SGD; f_r = 1 (no common token ever seen) forms nothing. Planted exact winners IWL /
    neither (IWL forming at t1 / 4) agree in every seed, by the one-horizon winner, the order
    of formation and the stable winner. The step count is t1 / lr rounded down to a multiple
    of the read-offs, and the arm's clock is step x lr."""
    from experiments.imir_phase.cell_stages import standard_cells
    t1, lr = 152.0, 1.0   # 152 steps -> 150 (a multiple of 3 read-offs)
    # through the stage: Adam's arm (its keys unchanged) then SGD's on the same cells
    c = {"exact": {"t1": t1}, "ode": {"threshold": 0.5}, "validate": {"seed": 0},
         "validate_standard": dict(sgd_lr=lr, d_model=8, batch_size=32, eval_size=64,
                                   n_evals=3, n_cells=2, n_seeds=2, seed=0, steps=150,
                                   lr=3e-2, optimizer="adam")}
    metrics, out = {}, {}
    standard_cells(c, _exact_side([IWL, NEITHER], t1), out, metrics)
    assert metrics["cells_standard/index"].tolist() == [0, 1]
    assert "winner_agreement/standard_arch" in out and "standard_arch/order_agreement" in out
    arm = "standard_arch_sgd"
    assert out[f"{arm}/steps"] == 150 and out[f"{arm}/t_last"] == 150.0
    assert metrics["cells_standard_sgd/step"].tolist() == [50, 100, 150]
    w = metrics["cells_standard_sgd/winner"]
    assert w.tolist() == [[IWL, IWL], [NEITHER, NEITHER]], w
    assert out[f"{arm}/diverged_runs"] == 0
    for key in ("winner_agreement", "order_agreement", "stable_winner_agreement"):
        assert out[f"{arm}/{key}"] == 1.0 and out[f"{arm}/{key}_cells"] == 2, key
    assert out[f"{arm}/winner_agreement_seed_min"] == out[f"{arm}/winner_agreement_seed_max"]
