"""The grokking-time law figure: tau_grok vs weight decay and vs p, log-log, with the fits."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from matplotlib import ticker
from matplotlib.figure import Figure, SubFigure

from mechjax.plots.canvas import figure_or_new, root_figure


def _panel(ax, x: Sequence[float], tau: np.ndarray, fit_curve: Callable | None, fit_label: str,
           xlabel: str, title: str) -> None:
    """Per-seed points (grokked runs), the per-setting means and a fitted curve.

    ``x [n_settings]``, ``tau [n_settings, n_seeds]`` with NaN for runs that never grokked.
    """
    x = np.asarray(x, float)
    tau = np.asarray(tau, float)
    rng = np.random.default_rng(0)
    for xi, row in zip(x, tau):
        ok = np.isfinite(row) & (row > 0)
        jitter = xi * np.exp(rng.uniform(-0.03, 0.03, ok.sum()))  # spread overlapping seeds
        ax.scatter(jitter, row[ok], s=12, color="tab:blue", alpha=0.45, lw=0)
    means = np.array([np.nanmean(r) if np.isfinite(r).any() else np.nan for r in tau])
    ok = np.isfinite(means) & (means > 0)
    ax.plot(x[ok], means[ok], "o", color="tab:red", ms=7, label="mean over grokked seeds")
    if fit_curve is not None and ok.sum() >= 2:
        xs = np.geomspace(x.min(), x.max(), 200)
        ys = fit_curve(xs)
        good = np.isfinite(ys) & (ys > 0)
        ax.plot(xs[good], ys[good], "-", color="black", lw=1.5, label=fit_label)
    never = int(np.sum(~np.isfinite(tau)))
    ax.set_xscale("log")
    if np.any(np.isfinite(tau) & (tau > 0)):
        ax.set_yscale("log")
    else:  # nothing to put on a log axis (e.g. a test-size run that never grokked)
        ax.text(0.5, 0.5, "no run grokked", transform=ax.transAxes, ha="center")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{v:g}" for v in x])
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    if ax.get_yscale() == "log":  # label 1-2-5 ticks: the data often span less than a decade
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"$\tau_{grok}$ (optimizer steps)")
    ax.set_title(title + (f"\n{never} run(s) never grokked" if never else ""))
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def grokking_law_figure(omegas: Sequence[float], tau_omega: np.ndarray,
                        omega_fit: tuple[float, float, float] | None,
                        ps: Sequence[float], tau_p: np.ndarray,
                        p_fit: tuple[float, float, float] | None,
                        omega_title: str = "", p_title: str = "", *,
                        fig: Figure | SubFigure | None = None) -> Figure:
    """Two log-log panels (in ``fig`` when given, else a new figure); returns the Figure.

    ``tau_omega [n_omegas, n_seeds]``, ``tau_p [n_ps, n_seeds]`` (NaN = never grokked);
    ``omega_fit = (C, beta, R^2)`` of ``tau = C omega^beta``; ``p_fit = (Omega, p_crit, R^2)`` of
    ``tau = -Omega log(1 - p_crit / p)``. A fit with NaN parameters is not drawn.
    """
    fig = figure_or_new(fig, (11, 4.3))
    axes = fig.subplots(1, 2)
    curve, label = None, ""
    if omega_fit is not None and np.all(np.isfinite(omega_fit[:2])):
        c, beta, r2 = omega_fit
        curve = lambda w: c * w ** beta  # noqa: E731
        label = rf"$\tau = {c:.3g}\,\omega^{{{beta:.2f}}}$, $R^2 = {r2:.3f}$"
    _panel(axes[0], omegas, tau_omega, curve, label, r"weight decay $\omega$", omega_title)
    curve, label = None, ""
    if p_fit is not None and np.all(np.isfinite(p_fit[:2])):
        big_omega, p_crit, r2 = p_fit
        curve = lambda p: -big_omega * np.log1p(-p_crit / p)  # noqa: E731
        label = (rf"$\tau = -{big_omega:.3g}\,\log(1 - {p_crit:.3g}/p)$"
                 rf" $\approx {big_omega * p_crit:.3g}/p$" if p_crit < 0.05 * min(ps) else
                 rf"$\tau = -{big_omega:.3g}\,\log(1 - {p_crit:.3g}/p)$")
        label += rf", $R^2 = {r2:.3f}$"
    _panel(axes[1], ps, tau_p, curve, label, "modulus p", p_title)
    return root_figure(fig)
