"""Writing a figure to disk: the one place a PNG is saved (experiments decide when)."""
from __future__ import annotations

import os

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from mechjax.io import atomic_write


def save_figure(fig: Figure, path: str, dpi: int = 120) -> str:
    """Save ``fig`` as ``path`` (folders created), close it so pyplot frees it; returns ``path``."""
    # Atomic (``mechjax.io``): a reader, or a second process writing the same figure in a
    # multi-process run, never sees a half-written PNG.
    fmt = os.path.splitext(path)[1][1:].lower() or "png"  # a file object has no extension
    atomic_write(path, lambda f: fig.savefig(f, dpi=dpi, format=fmt), "wb")
    plt.close(fig)
    return path
