"""tau_grok extraction on constructed accuracy curves, and the two fits on planted synthetic data."""
from __future__ import annotations

import numpy as np
import pytest

from mechjax.studies import grokking_law as gl


def _curve(n: int, rise_at: int, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """Accuracy after steps 1..n: ``low`` before step ``rise_at``, then ramps to ``high``."""
    steps = np.arange(1, n + 1)
    return np.where(steps < rise_at, low, np.minimum(high, 0.9 + 0.02 * (steps - rise_at)))


def test_grok_times_on_constructed_curves():
    n = 400
    steps = np.arange(1, n + 1)
    # Ramp 0.9 + 0.02 k first reaches 0.99 at k = 5 (0.9 + 0.1 > 0.99; k = 4 gives 0.98).
    train = np.stack([_curve(n, 20), _curve(n, 50), _curve(n, 30), _curve(n, 10)])
    test = np.stack([_curve(n, 120), _curve(n, 300), np.full(n, 0.5), _curve(n, 10)])
    test[2, 200] = 0.989  # just below the threshold: not a crossing
    out = gl.grok_times(steps, train, test, 0.99)
    np.testing.assert_array_equal(out.t_mem, [25, 55, 35, 15])
    np.testing.assert_array_equal(out.t_grok[[0, 1, 3]], [125, 305, 15])
    assert np.isnan(out.t_grok[2]) and np.isnan(out.tau[2])
    np.testing.assert_array_equal(out.tau[[0, 1, 3]], [100, 250, 0])
    np.testing.assert_array_equal(out.grokked, [True, True, False, True])


def test_power_law_recovers_planted_exponent_with_noise():
    rng = np.random.default_rng(0)
    omegas = np.repeat([0.3, 0.5, 1.0, 1.5, 2.0, 3.0], 12)
    c, beta = 2500.0, -1.02
    tau = c * omegas ** beta * np.exp(rng.normal(0, 0.15, omegas.size))  # 15% log-normal noise
    tau[[3, 40]] = np.nan  # never-grokked runs are skipped
    fit = gl.fit_power_law(omegas, tau)
    assert fit.beta == pytest.approx(beta, abs=0.08)
    assert fit.C == pytest.approx(c, rel=0.1)
    assert fit.n_points == omegas.size - 2
    assert 0.85 < fit.r2 < 1.0
    exact = gl.fit_power_law(omegas, c * omegas ** beta)
    assert exact.beta == pytest.approx(beta, abs=1e-9) and exact.r2 == pytest.approx(1.0)
    flat = gl.fit_power_law(omegas, rng.lognormal(7, 0.1, omegas.size))  # no law: beta ~ 0, R^2 ~ 0
    assert abs(flat.beta) < 0.1 and flat.r2 < 0.1


@pytest.mark.parametrize("omega_scale, p_crit", [(900.0, 25.0), (3000.0, 12.0)])
def test_log_law_recovers_planted_parameters_with_noise(omega_scale, p_crit):
    rng = np.random.default_rng(1)
    ps = np.repeat([31, 43, 53, 61, 79, 89, 101], 12).astype(float)
    clean = gl.log_law(ps, omega_scale, p_crit)
    tau = clean * (1 + rng.normal(0, 0.05, ps.size))  # 5% noise
    fit = gl.fit_log_law(ps, tau)
    assert fit.p_crit == pytest.approx(p_crit, rel=0.15)
    assert fit.Omega == pytest.approx(omega_scale, rel=0.15)
    assert 0 < fit.p_crit < ps.min()
    assert fit.r2 > 0.8
    exact = gl.fit_log_law(ps, clean)
    assert exact.p_crit == pytest.approx(p_crit, rel=1e-4)
    assert exact.Omega == pytest.approx(omega_scale, rel=1e-4)
    assert exact.r2 == pytest.approx(1.0, abs=1e-9)


def test_log_law_needs_two_distinct_p_and_tau_decreases_in_p():
    fit = gl.fit_log_law([31, 31], [100.0, 120.0])
    assert np.isnan(fit.p_crit)
    tau = gl.log_law(np.array([31, 53, 101]), 1000.0, 20.0)
    assert np.all(np.diff(tau) < 0)
    # p >> p_crit: tau ~ Omega p_crit / p (the 1 / p law).
    assert gl.log_law(np.array([1e6]), 1000.0, 20.0)[0] == pytest.approx(1000 * 20 / 1e6, rel=1e-4)


def test_fit_laws_average_each_setting_over_the_seeds_that_grokked():
    omegas, ps = np.array([0.5, 1.0, 2.0]), np.array([31.0, 53.0, 101.0])
    tau_om = np.stack([2500.0 * omegas ** -1.0] * 3, 1)            # [n_omega, 3 seeds]
    tau_om[1, 0] = np.nan                                           # a seed that never grokked
    tau_p = np.stack([gl.log_law(ps, 900.0, 25.0)] * 3, 1)
    tau_p[2, :2] = np.nan
    fits = gl.fit_laws(omegas, tau_om, ps, tau_p)
    np.testing.assert_allclose(fits.mean_tau_omega, 2500.0 / omegas)
    assert fits.omega.beta == pytest.approx(-1.0, abs=1e-9)
    assert fits.p.p_crit == pytest.approx(25.0, rel=1e-4)
    rows = gl.setting_summary("p", [31, 53, 101], tau_p, tau_p - 10)
    assert rows["tau/p=101"]["n_never"] == 2 and rows["tau/p=101"]["per_seed"][2] == \
        pytest.approx(float(gl.log_law(ps, 900.0, 25.0)[2]))
    assert rows["t_mem/p=31"]["mean"] == pytest.approx(float(tau_p[0, 0]) - 10)
