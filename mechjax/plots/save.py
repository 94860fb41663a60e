"""Writing a figure to disk: the one place a PNG is saved (experiments decide when)."""
from __future__ import annotations

import os

import matplotlib.pyplot as plt
from matplotlib.figure import Figure


def save_figure(fig: Figure, path: str, dpi: int = 120) -> str:
    """Save ``fig`` as ``path`` (folders created), close it so pyplot frees it; returns ``path``."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
