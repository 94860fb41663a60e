"""The README's main job, end to end through its command line (tiny config)."""
import json
import os
import re
import subprocess

import pytest

from conftest import PYTHON, REPO, fast_compile_env

TINY = os.path.join(REPO, "experiments", "quickstart", "configs", "tiny.py")


def quickstart(workdir, *flags):
    return subprocess.run([PYTHON, "-m", "experiments.quickstart", f"--workdir={workdir}",
                           f"--config={TINY}", *flags], cwd=REPO, env=fast_compile_env(),
                          capture_output=True, text=True, timeout=600)


def test_quickstart_end_to_end_then_refuses_other_config(tmp_path):
    wd = tmp_path / "qs"
    proc = quickstart(wd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "chunk 3/3" in proc.stderr and "ETA" in proc.stderr  # progress lines
    summary = json.load(open(wd / "summary.json"))
    assert summary["n_seeds"] == 3 and len(summary["acc/test"]["per_seed"]) == 3
    for key in ("grok_step", "mem_step", "fourier/top5_energy_fraction", "acc/train"):
        assert key in summary
    # A seed can only grok after it memorized (the train split is learned first).
    for mem, grok in zip(summary["mem_step"]["per_seed"], summary["grok_step"]["per_seed"]):
        assert grok is None or (mem is not None and mem <= grok)
    assert sorted(os.listdir(wd / "figures")) == ["accuracy.png", "embedding_spectrum.png",
                                                 "loss.png"]
    assert os.listdir(wd / "checkpoints")

    again = quickstart(wd)  # same config: resumes from the final checkpoint, nothing retrained
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resumed from the checkpoint after chunk 3/3" in again.stderr

    other = quickstart(wd, "--config.hparams.lr=0.01")
    assert other.returncode != 0
    assert "holds a run of a different config" in other.stderr
    assert json.load(open(wd / "config.json"))["hparams"]["lr"] != 0.01


def test_bad_flags_fail_before_anything_is_written(tmp_path):
    # The command line's one-line error, once for a bad value and once for an unknown key ...
    proc = quickstart(tmp_path / "n", "--config.n_seeds=0")
    assert proc.returncode != 0 and "n_seeds=0" in proc.stderr, proc.stderr[-1500:]
    assert not (tmp_path / "n").exists()
    proc = quickstart(tmp_path / "x", "--config.no_such_key=1")
    assert proc.returncode != 0 and "no_such_key" in proc.stderr
    # ... and the rest in this process (each CLI case costs a JAX start): the same schema raises
    # before the workdir is made.
    from experiments.quickstart import run
    from experiments.quickstart.configs import tiny
    from mechjax.config import ConfigError
    for key, value, message in [("model.d_model", -4, "model.d_model=-4"),
                                ("task.train_fraction", 1.5, "task.train_fraction=1.5"),
                                ("model.act_fn", "swish", "model.act_fn='swish'"),
                                ("model.d_mlp", -1, "model.d_mlp=-1")]:
        config = tiny.get_config()
        section, name = key.split(".")
        config[section][name] = value
        wd = tmp_path / name
        with pytest.raises(ConfigError, match=re.escape(message)):
            run.run(config, str(wd))
        assert not wd.exists(), key
