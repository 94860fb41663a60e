"""Saving is separate from drawing, and importing mechjax never chooses a matplotlib backend."""
import os
import subprocess

import matplotlib.image
import numpy as np

from conftest import PYTHON, REPO, run_module_env
from mechjax.plots import curves
from mechjax.plots.save import save_figure


def test_save_figure_writes_a_png_in_new_folders_and_closes_the_figure(pyplot, tmp_path):
    fig = curves.metric_curves(np.arange(3), {"a": np.ones((2, 3))})
    fig.set_size_inches(2.0, 1.5)
    path = str(tmp_path / "a" / "b" / "fig.png")
    assert save_figure(fig, path, dpi=50) == path
    assert matplotlib.image.imread(path).shape[:2] == (75, 100)  # inches x dpi
    assert fig.number not in pyplot.get_fignums()


def test_no_module_forces_a_backend_at_import():
    """With ``MPLBACKEND=svg`` the backend stays svg after importing every plots and experiments
    module and drawing a figure (a ``matplotlib.use("Agg")`` anywhere would win)."""
    code = (
        "import importlib, pkgutil, matplotlib, mechjax.plots, experiments\n"
        "for package in (mechjax.plots, experiments):\n"
        "    for m in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "from mechjax.plots import curves\n"
        "curves.metric_curves([0, 1], {'a': [[0.0, 1.0]]})\n"
        "print(matplotlib.get_backend())\n")
    env = {k: v for k, v in run_module_env({"MPLBACKEND": "svg"}).items() if k != "DISPLAY"}
    proc = subprocess.run([PYTHON, "-c", code], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().lower() == "svg"
