"""The grokking-time law (ACE paper): tau_grok from accuracy curves, and the two fitted laws.

``tau_grok = t_grok - t_mem`` in optimizer steps, where ``t_mem`` (``t_grok``) is the first step
at which the train (test) accuracy reaches the threshold (0.99). Runs that never reach it are
marked NaN and left out of the fits by the caller (and counted, ``seeds.seed_stats``).

Fits:
  * ``fit_power_law``: ``tau = C omega^beta`` by least squares on ``(log omega, log tau)``;
    R^2 is that regression's (in log space).
  * ``fit_log_law``: ``tau(p) = -Omega log(1 - p_crit / p)`` by least squares on tau itself.
    For a fixed ``p_crit`` the model is linear in ``Omega`` (closed form), so the fit is a 1-D
    search over ``p_crit`` in ``(0, min p)``: a dense grid, then golden-section refinement.
    R^2 = 1 - SS_res / SS_tot in linear space.
Everything here is plain numpy (host side, after training); no scipy dependency.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mechjax.analysis.curves import first_crossing
from mechjax.analysis.seeds import seed_stats


# ------------------------------------------------------------------------------------------------
# tau_grok from per-step accuracies
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class GrokTimes:
    """Per-run memorization and grokking steps; NaN where the threshold was never reached."""

    t_mem: np.ndarray
    t_grok: np.ndarray
    tau: np.ndarray        # t_grok - t_mem; NaN unless both happened
    grokked: np.ndarray    # bool: tau is finite


def grok_times(steps: np.ndarray, train_acc: np.ndarray, test_acc: np.ndarray,
               threshold: float = 0.99) -> GrokTimes:
    """``tau_grok`` for every run. ``train_acc, test_acc [..., n_evals]``, ``steps [n_evals]``."""
    t_mem = first_crossing(steps, train_acc, threshold)
    t_grok = first_crossing(steps, test_acc, threshold)
    tau = t_grok - t_mem  # NaN propagates from either
    return GrokTimes(t_mem, t_grok, tau, np.isfinite(tau))


# ------------------------------------------------------------------------------------------------
# Fits
# ------------------------------------------------------------------------------------------------
def r_squared(y: np.ndarray, y_hat: np.ndarray) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot`` (NaN when ``y`` is constant)."""
    y, y_hat = np.asarray(y, float), np.asarray(y_hat, float)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    ss_res = float(np.sum((y - y_hat) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


def _finite_pairs(x, y, positive: bool):
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same number of points, got {x.size} and {y.size}")
    ok = np.isfinite(x) & np.isfinite(y)
    if positive:
        ok &= (x > 0) & (y > 0)
    return x[ok], y[ok]


@dataclasses.dataclass
class PowerLawFit:
    C: float
    beta: float
    r2: float
    n_points: int


def fit_power_law(x: np.ndarray, y: np.ndarray) -> PowerLawFit:
    """``y = C x^beta`` by least squares on ``(log x, log y)``; non-finite / non-positive points
    are dropped. Needs two distinct ``x`` values."""
    x, y = _finite_pairs(x, y, positive=True)
    if np.unique(x).size < 2:
        return PowerLawFit(float("nan"), float("nan"), float("nan"), int(x.size))
    lx, ly = np.log(x), np.log(y)
    beta, log_c = np.polyfit(lx, ly, 1)
    return PowerLawFit(float(np.exp(log_c)), float(beta),
                       r_squared(ly, log_c + beta * lx), int(x.size))


def log_law(p: np.ndarray, omega_scale: float, p_crit: float) -> np.ndarray:
    """``tau(p) = -Omega log(1 - p_crit / p)`` (~ Omega p_crit / p for p >> p_crit)."""
    return -omega_scale * np.log1p(-p_crit / np.asarray(p, float))


@dataclasses.dataclass
class LogLawFit:
    Omega: float
    p_crit: float
    r2: float
    n_points: int


def _best_omega(p, y, p_crit):
    """Closed-form least-squares ``Omega`` for a fixed ``p_crit``, and the residual sum."""
    g = -np.log1p(-p_crit / p)
    omega = float(np.dot(g, y) / np.dot(g, g))
    return omega, float(np.sum((y - omega * g) ** 2))


def fit_log_law(p: np.ndarray, tau: np.ndarray, grid: int = 2000, iters: int = 100) -> LogLawFit:
    """Least-squares ``(Omega, p_crit)`` of ``tau = -Omega log(1 - p_crit/p)``, ``0 < p_crit <
    min p``. Profiles out ``Omega`` (linear), then minimizes over ``p_crit`` (grid + golden
    section). Needs two distinct ``p``."""
    p, y = _finite_pairs(p, tau, positive=True)
    if np.unique(p).size < 2:
        return LogLawFit(float("nan"), float("nan"), float("nan"), int(p.size))
    hi = float(p.min())
    # p_crit / min p on a grid dense near 1, where the law changes fastest.
    u = 1.0 - np.geomspace(1.0, 1e-9, grid)[1:]          # (0, 1 - 1e-9]
    u = np.concatenate([np.linspace(1e-6, u[0], 50, endpoint=False), u])
    sse = np.array([_best_omega(p, y, hi * ui)[1] for ui in u])
    i = int(np.argmin(sse))
    a, b = u[max(i - 1, 0)], u[min(i + 1, len(u) - 1)]
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(iters):  # golden section on the bracketing cell
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        if _best_omega(p, y, hi * c)[1] <= _best_omega(p, y, hi * d)[1]:
            b = d
        else:
            a = c
    p_crit = hi * 0.5 * (a + b)
    omega, _ = _best_omega(p, y, p_crit)
    return LogLawFit(omega, float(p_crit), r_squared(y, log_law(p, omega, p_crit)), int(p.size))


# ------------------------------------------------------------------------------------------------
# The two laws on a finished pair of sweeps
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class LawFits:
    """Both laws fitted on per-setting means (over grokked seeds) and on every run."""

    omega: PowerLawFit        # tau = C omega^beta, on the means per omega
    omega_runs: PowerLawFit   # the same on every (omega, seed) run
    p: LogLawFit              # tau = -Omega log(1 - p_crit / p), on the means per p
    p_runs: LogLawFit         # the same on every (p, seed) run
    p_power: PowerLawFit      # tau ~ p^slope: the log-log slope in p
    mean_tau_omega: np.ndarray  # [n_omega]
    mean_tau_p: np.ndarray      # [n_p]


def fit_laws(omegas: np.ndarray, tau_omega: np.ndarray, ps: np.ndarray,
             tau_p: np.ndarray) -> LawFits:
    """Fit both laws. ``tau_omega [n_omega, n_seeds]``, ``tau_p [n_p, n_seeds]`` (NaN: never)."""
    n_seeds = tau_omega.shape[1]
    mean_om = np.array([seed_stats(r)["mean"] for r in tau_omega], float)  # None -> NaN
    mean_p = np.array([seed_stats(r)["mean"] for r in tau_p], float)
    return LawFits(fit_power_law(omegas, mean_om),
                   fit_power_law(np.repeat(omegas, n_seeds), tau_omega.ravel()),
                   fit_log_law(ps, mean_p),
                   fit_log_law(np.repeat(ps, tau_p.shape[1]), tau_p.ravel()),
                   fit_power_law(ps, mean_p), mean_om, mean_p)


def fit_summary(fits: LawFits, ps) -> dict[str, float | bool]:
    """The summary.json numbers of ``fits`` (``ps``: the moduli of the p sweep)."""
    w, p = fits.omega, fits.p
    mean_p = fits.mean_tau_p
    return {
        "beta": w.beta, "beta_r2": w.r2, "C": w.C,
        "beta_runs": fits.omega_runs.beta, "beta_runs_r2": fits.omega_runs.r2,
        "Omega": p.Omega, "p_crit": p.p_crit, "p_fit_r2": p.r2,
        # Only Omega * p_crit is identified when every p >> p_crit (tau ~ Omega p_crit / p);
        # the fit then runs to the p_crit -> 0 end of its range.
        "Omega_times_p_crit": p.Omega * p.p_crit,
        "p_crit_identified": bool(1e-3 * min(ps) < p.p_crit < (1 - 1e-6) * min(ps)),
        "Omega_runs": fits.p_runs.Omega, "p_crit_runs": fits.p_runs.p_crit,
        "p_fit_runs_r2": fits.p_runs.r2,
        "tau_vs_p_loglog_slope": fits.p_power.beta,
        "tau_decreasing_in_p": bool(np.all(np.diff(mean_p[np.isfinite(mean_p)]) < 0)),
    }


def setting_summary(name: str, values, tau: np.ndarray, t_mem: np.ndarray) -> dict[str, Any]:
    """Per setting ``{name}={value}``: ``seed_stats`` of tau (never grokked: ``n_never``) and of
    the memorization step. ``tau, t_mem [n_settings, n_seeds]``."""
    out: dict[str, Any] = {}
    for i, v in enumerate(values):
        out[f"tau/{name}={v:g}"] = seed_stats(tau[i])
        out[f"t_mem/{name}={v:g}"] = seed_stats(t_mem[i])
    return out
