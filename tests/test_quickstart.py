"""The README's main job, end to end through its command line (tiny config)."""
import json
import os
import re

import numpy as np
import pytest

from cli_fixtures import run_module_here
from conftest import REPO, run_watched
from mechjax.sweeps import runs
from mechjax.sweeps.workdir import WorkdirError

# The config that groks in seconds (every seed memorizes, then generalizes); tiny.py does not.
TINY_GROK = os.path.join(REPO, "experiments", "quickstart", "configs", "tiny_grok.py")


def quickstart(workdir, *flags):
    """``python -m experiments.quickstart`` in this process (its entry point as a fresh process
    is started by test_multiprocess.py and test_config_schema.py)."""
    return run_module_here("experiments.quickstart", [f"--workdir={workdir}",
                                                      f"--config={TINY_GROK}", *flags])


def top5_fraction(w_e: np.ndarray) -> float:
    """Share of the embedding's non-constant Fourier energy in its 5 strongest frequencies."""
    from mechjax.analysis import fourier
    return float(fourier.top_k_energy_fraction(fourier.frequency_norms(w_e), 5))


@pytest.mark.timeout(600)  # trains 3 seeds x 1200 steps
def test_quickstart_groks_end_to_end_then_refuses_other_config(tmp_path, capsys):
    wd = tmp_path / "qs"
    code = quickstart(wd)
    out = capsys.readouterr()
    assert code in (None, 0), out.err[-3000:]
    assert "chunk 3/3" in out.err and "ETA" in out.err  # progress lines
    assert "grokked_fraction" in out.out  # the printed summary
    summary = json.load(open(wd / "summary.json"))
    assert summary["n_seeds"] == 3 and len(summary["acc/test"]["per_seed"]) == 3
    # The phenomenon: every seed memorizes its training split first and generalizes later.
    assert summary["grokked_fraction"] == 1.0, summary["grok_step"]
    for mem, grok in zip(summary["mem_step"]["per_seed"], summary["grok_step"]["per_seed"]):
        assert mem is not None and grok is not None and mem < grok, (mem, grok)
    assert min(summary["acc/test"]["per_seed"]) >= 0.99
    # ... by a sparse Fourier embedding: at step 0 the 11 non-constant frequencies of p = 23
    # share the energy about evenly (5 of 11 hold ~0.5 of it); the grokked embeddings put most
    # of it in 5 of them, and the summary's measure is the one computed from the final weights.
    run = runs.open(str(wd))
    first, last = (run.stacked_params(step=s)["embed.W_E"] for s in (0, None))
    for i, reported in enumerate(summary["fourier/top5_energy_fraction"]):
        assert top5_fraction(first[i]) < 0.65 < 0.8 < top5_fraction(last[i])
        assert reported == pytest.approx(top5_fraction(last[i]), rel=1e-5)
    assert sorted(os.listdir(wd / "figures")) == ["accuracy.png", "core_cca.png",
                                                 "core_overlap.png", "embedding_spectrum.png",
                                                 "loss.png"]
    # Each grokked seed's ACE core at the last block's output carries the answer: projected on
    # the core the model keeps its held-out accuracy, with the core removed it falls to chance
    # (1/23); the core is a few Fourier dimensions of 32. An unvalidated or wrongly read core
    # (another hook, another seed's basis) fails one of these by a wide margin.
    full = summary["acc/test"]["per_seed"]
    for only, removed, full_acc, rank in zip(summary["ace/acc_core_only"]["per_seed"],
                                             summary["ace/acc_core_removed"]["per_seed"], full,
                                             summary["ace/core_rank"]["per_seed"]):
        assert only >= full_acc - 0.02 and removed <= 0.15 and 2 <= rank <= 10
    assert 0.0 <= summary["ace/overlap_offdiag_mean"] <= 1.0
    assert 0.0 <= summary["ace/cca_offdiag_mean"] <= 1.0
    assert summary["ace/overlap_chance"] == pytest.approx(
        np.mean(summary["ace/core_rank"]["per_seed"]) / 32)  # d_model 32
    assert f"CCA {summary['ace/cca_offdiag_mean']:.2f}" in summary["ace/reading"]
    assert os.listdir(wd / "checkpoints")

    # The same config again resumes from the final checkpoint, retrains nothing and gives the
    # same summary; another config is refused (the command line's one-line refusal is tested in
    # test_config_schema).
    from experiments.quickstart import run
    from experiments.quickstart.configs import tiny_grok
    first = (wd / "summary.json").read_text()
    capsys.readouterr()
    run_watched(run.run, tiny_grok.get_config(), str(wd))
    assert "resumed from the checkpoint after chunk 3/3" in capsys.readouterr().err
    assert (wd / "summary.json").read_text() == first
    other = tiny_grok.get_config()
    other.hparams.lr = 0.01
    with pytest.raises(WorkdirError, match="holds a run of a different config"):
        run.run(other, str(wd))
    assert json.load(open(wd / "config.json"))["hparams"]["lr"] != 0.01


def test_bad_values_fail_before_anything_is_written(tmp_path):
    """In this process, through the schema every CLI run goes through: the command line's
    one-line form of these errors is tested once per kind in test_config_schema (a bad value, an
    unknown key), so no JAX process is started per case here."""
    from experiments.quickstart import run
    from experiments.quickstart.configs import tiny
    from mechjax.models.config import ConfigError
    for key, value, message in [("n_seeds", 0, "n_seeds=0"),
                                ("no_such_key", 1, "config: unknown keys ['no_such_key']"),
                                ("model.d_model", -4, "model.d_model=-4"),
                                ("task.train_fraction", 1.5, "task.train_fraction=1.5"),
                                ("model.act_fn", "swish", "model.act_fn='swish'"),
                                ("model.d_mlp", -1, "model.d_mlp=-1")]:
        config = tiny.get_config()
        *section, name = key.split(".")
        (config[section[0]] if section else config)[name] = value
        wd = tmp_path / name
        with pytest.raises(ConfigError, match=re.escape(message)):
            run.run(config, str(wd))
        assert not wd.exists(), key
