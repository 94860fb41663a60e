"""Figures of which induction route wins from which initialization (docs/imir.md): winner maps with
trained initializations overlaid, and the route units' trajectories and interactions in one
cell. Each function draws on ``fig`` when given (else on a new figure) and returns the Figure."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure, SubFigure

from mechjax.plots.canvas import figure_or_new, root_figure

ROUTE_COLORS = ("#bbbbbb", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")  # none first


def winner_maps(factors: np.ndarray, scales: Sequence[float], winner: np.ndarray,
                largest: np.ndarray, route_names: Sequence[str], xlabel: str, ylabel: str,
                overlay: Mapping[int, Mapping[str, np.ndarray]] | None = None, *,
                fig: Figure | SubFigure | None = None) -> Figure:
    """One panel per scale: the winner ``[n_scales, n, n]`` (``-1`` none, else a route index)
    over the two axis factors; dots where the largest-initial route ``largest`` loses;
    ``overlay[s]`` (``x``, ``y``, ``winner``) draws trained initializations on panel s as
    outlined squares coloured by their trained winner."""
    n_r = len(route_names)
    fig = figure_or_new(fig, (4.6 * len(scales) + 1.2, 4.4))
    axes = np.atleast_1d(fig.subplots(1, len(scales)))
    cmap = ListedColormap(ROUTE_COLORS[: n_r + 1])
    norm = BoundaryNorm(np.arange(-1.5, n_r + 0.5), n_r + 1)
    step = factors[1] - factors[0]
    ext = [factors[0] - step / 2, factors[-1] + step / 2] * 2
    im = None
    for s, (ax, scale) in enumerate(zip(axes, scales)):
        im = ax.imshow(np.asarray(winner[s]).T, origin="lower", extent=ext, cmap=cmap,
                       norm=norm, aspect="auto")
        lose = (np.asarray(winner[s]) >= 0) & (np.asarray(largest[s]) != np.asarray(winner[s]))
        fx, fy = np.meshgrid(factors, factors, indexing="ij")
        ax.plot(fx[lose], fy[lose], "k.", ms=3, label="largest initial route loses")
        if overlay and s in overlay:
            o = overlay[s]
            ax.scatter(o["x"], o["y"], c=np.asarray(o["winner"]), cmap=cmap, norm=norm,
                       marker="s", s=22, edgecolors="k", linewidths=0.6,
                       label="trained from random init")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(f"init scale {scale:g}", fontsize=10)
        ax.set_xlim(ext[0], ext[1])
        ax.set_ylim(ext[2], ext[3])
    axes[0].legend(fontsize=7, loc="upper right")
    # on the last panel only: a colour bar stolen from several axes fights the tight layout
    bar = root_figure(fig).colorbar(im, ax=axes[-1], ticks=np.arange(-1, n_r))
    bar.ax.set_yticklabels(["none", *route_names])
    fig.suptitle("winning route (exact reduced ODE)", fontsize=10)
    return root_figure(fig)


def route_dynamics(t: np.ndarray, values: np.ndarray, unit_names: Sequence[str],
                   route_weights: np.ndarray, route_names: Sequence[str], drive: np.ndarray,
                   loss: np.ndarray, title: str, *,
                   fig: Figure | SubFigure | None = None) -> Figure:
    """Four panels over time: the route units' values ``[n_t, n_units]``, the routes' weights
    (products) ``[n_t, n_routes]`` and the loss, and the drive ``[n_t, n_routes, n_routes]``
    (``drive[:, q, r]``: route r's push on route q's match growth)."""
    fig = figure_or_new(fig, (18, 3.8))
    axes = fig.subplots(1, 4)
    for u, name in enumerate(unit_names):
        axes[0].plot(t, values[:, u], label=name)
    axes[0].set_title("route units", fontsize=10)
    axes[0].legend(fontsize=6)
    for r, name in enumerate(route_names):
        axes[1].plot(t, route_weights[:, r], color=ROUTE_COLORS[r + 1], label=name)
    axes[1].set_yscale("symlog", linthresh=1e-3)
    axes[1].set_title("route weight (product of its units)", fontsize=10)
    axes[1].legend(fontsize=7)
    axes[2].plot(t, loss, "k")
    axes[2].set_title("population loss", fontsize=10)
    styles = ("-", "--", ":", "-.")
    for q, qn in enumerate(route_names):
        for r, rn in enumerate(route_names):
            axes[3].plot(t, drive[:, q, r], color=ROUTE_COLORS[q + 1], ls=styles[r % 4],
                         label=f"{qn} <- {rn}")
    axes[3].axhline(0.0, color="k", lw=0.5)
    axes[3].set_yscale("symlog", linthresh=1e-5)
    axes[3].set_title("drive on match growth (colour: driven, style: driver)", fontsize=9)
    axes[3].legend(fontsize=6, ncol=2)
    for ax in axes:
        ax.set_xlabel("t")
    fig.suptitle(title, fontsize=10)
    return root_figure(fig)
