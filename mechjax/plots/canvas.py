"""Where a plot function draws: on the caller's ``Axes`` / ``Figure``, or on a new pyplot figure.

A new figure goes through pyplot so that a notebook shows it inline and a script's ``plt.show()``
finds it; no backend is chosen here (matplotlib picks a non-interactive one when there is no
display). Saving is the caller's decision (``mechjax.plots.save.save_figure``).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure


def axes_or_new(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    """``ax``, or the single Axes of a new ``figsize`` figure (tight layout)."""
    if ax is not None:
        return ax
    return plt.subplots(figsize=figsize, layout="tight")[1]


def figure_or_new(fig: Figure | SubFigure | None,
                  figsize: tuple[float, float]) -> Figure | SubFigure:
    """``fig`` (a figure or subfigure to fill with panels), or a new ``figsize`` figure."""
    if fig is not None:
        return fig
    return plt.figure(figsize=figsize, layout="tight")


def root_figure(artist: Axes | Figure | SubFigure) -> Figure:
    """The top-level Figure an Axes or (sub)figure belongs to: what a plot function returns."""
    return artist.get_figure(root=True)
