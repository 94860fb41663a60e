"""The walkthrough (examples/walkthrough.py, the script of docs/notebook.md) on a tiny run."""
import json
import os
import re

import pytest

from conftest import REPO, load_example

SCRIPT = os.path.join(REPO, "examples", "walkthrough.py")
NOTEBOOK = os.path.join(REPO, "docs", "notebook.md")


def load_script():
    return load_example("walkthrough")


def summary_config(workdir):
    with open(os.path.join(workdir, "config.json")) as f:
        task = json.load(f)["task"]
    return task["p"], task["train_fraction"]


def test_walkthrough_on_a_tiny_quickstart_run(quickstart_run, tmp_path):
    try:
        import torch  # noqa: F401
        import transformer_lens  # noqa: F401
        export_dir = str(tmp_path / "tl")
    except ImportError:
        export_dir = None  # the rest of the walkthrough runs without the torch extra
    out = load_script().walkthrough(quickstart_run, export_dir)
    with open(os.path.join(quickstart_run, "summary.json")) as f:
        summary = json.load(f)
    # the run opened at its last saved step is the model the experiment summarized
    assert out["step"] == 60
    assert out["top5_energy_fraction"] == pytest.approx(
        summary["fourier/top5_energy_fraction"][3], rel=1e-5)
    assert out["key_frequencies"] == summary["fourier/key_frequencies"][3]
    # ACE's full-model accuracy over all p * p pairs is the summary's train and test accuracy
    # of seed 3, weighted by the split's sizes: the walkthrough analysed that seed's model
    p, fraction = summary_config(quickstart_run)
    n_train = round(fraction * p * p)
    seed3 = {k: summary[f"acc/{k}"]["per_seed"][3] for k in ("train", "test")}
    assert out["accuracy"]["full"] == pytest.approx(
        (seed3["train"] * n_train + seed3["test"] * (p * p - n_train)) / (p * p), abs=1e-6)
    assert len(out["figure"].axes) >= 3 and out["figure"].axes[0].patches  # spectrum bars drawn
    if export_dir is None:  # everything above passed; say what was left unchecked
        pytest.skip("the walkthrough's TransformerLens step needs the torch extra "
                    "(pip install -e \".[torch]\"); the rest passed")
    assert out["tl_max_logit_difference"] < 1e-4


def test_notebook_code_is_the_script():
    """Every line of code in docs/notebook.md (except `# notebook only` lines) is a line of the
    script, in the same order, so the two cannot drift apart."""
    with open(NOTEBOOK) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    with open(SCRIPT) as f:
        script = [line.strip() for line in f]
    position = 0
    for line in (ln.strip() for block in blocks for ln in block.splitlines()):
        if not line or line.startswith("#") or line.endswith("# notebook only"):
            continue
        assert line in script[position:], f"notebook line not in the script (in order): {line}"
        position = script.index(line, position) + 1
