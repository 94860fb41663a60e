"""docs/notebook.md, the walkthrough notebook: its code cells, read by jupytext as Jupyter reads
them, run top to bottom in one IPython shell on a tiny quickstart run."""
import importlib.util
import json
import os

import pytest

from conftest import REPO

NOTEBOOK = os.path.join(REPO, "docs", "notebook.md")


def code_cells():
    """The notebook's code cells as Jupyter (through jupytext) sees them: (source, tags)."""
    import jupytext
    cells = jupytext.read(NOTEBOOK).cells
    return [(c.source, c.metadata.get("tags", [])) for c in cells if c.cell_type == "code"]


def run_notebook(parameters, stop_before=None):
    """Every code cell in order in one IPython shell, ``parameters`` replacing the values of the
    cell tagged ``parameters`` (as papermill does); cells from the first that mentions
    ``stop_before`` on are not run. Returns the shell's namespace."""
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        for source, tags in code_cells():
            if stop_before and stop_before in source:
                break
            shell.run_cell(source, store_history=False).raise_error()
            if "parameters" in tags:
                shell.user_ns.update(parameters)
        return dict(shell.user_ns)
    finally:
        InteractiveShell.clear_instance()


def summary_config(workdir):
    with open(os.path.join(workdir, "config.json")) as f:
        task = json.load(f)["task"]
    return task["p"], task["train_fraction"]


def test_the_parameters_cell_comes_first_and_no_cell_shells_out():
    cells = code_cells()
    assert "parameters" in cells[0][1] and "workdir" in cells[0][0]
    # a bash block would become a %%bash cell that trains a model when the notebook runs
    assert not any(src.lstrip().startswith(("%%", "!")) for src, _ in cells)


def test_the_notebook_runs_top_to_bottom_on_a_tiny_run(quickstart_run, tmp_path):
    with_torch = all(importlib.util.find_spec(m) for m in ("torch", "transformer_lens"))
    ns = run_notebook({"workdir": quickstart_run, "export_dir": str(tmp_path / "tl")},
                      stop_before=None if with_torch else "import torch")
    with open(os.path.join(quickstart_run, "summary.json")) as f:
        summary = json.load(f)
    # the run opened at its last saved step is the model the experiment summarized
    assert ns["step"] == 60
    assert ns["top5"] == pytest.approx(summary["fourier/top5_energy_fraction"][3], rel=1e-5)
    assert ns["key_frequencies"] == summary["fourier/key_frequencies"][3]
    # the cache shown with treescope holds every hook point of the model, at the pairs' shape
    from mechjax.models.hooks import hook_names
    assert set(ns["cache"]) == set(hook_names(ns["cfg"], ns["pairs"].shape))
    assert ns["cache"]["hook_embed"].shape == (8, 2, ns["cfg"].d_model)
    # ACE's full-model accuracy over all p * p pairs is the summary's train and test accuracy
    # of seed 3, weighted by the split's sizes: the notebook analysed that seed's model
    p, fraction = summary_config(quickstart_run)
    n_train = round(fraction * p * p)
    seed3 = {k: summary[f"acc/{k}"]["per_seed"][3] for k in ("train", "test")}
    assert ns["accuracy"]["full"] == pytest.approx(
        (seed3["train"] * n_train + seed3["test"] * (p * p - n_train)) / (p * p), abs=1e-6)
    fig = ns["fig"]
    assert len(fig.axes) >= 3 and fig.axes[0].patches  # spectrum bars drawn
    if not with_torch:  # everything above passed; say what was left unchecked
        pytest.skip("the notebook's TransformerLens cell needs the torch extra "
                    "(pip install -e \".[torch]\"); the cells before it ran")
    # float32 logits of O(10) through two implementations' reductions: ~1e-6
    assert ns["tl_max_logit_difference"] < 1e-4
