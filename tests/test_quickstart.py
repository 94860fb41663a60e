"""The README's main job, end to end through its command line (tiny config)."""
import json
import os
import subprocess

from conftest import PYTHON, REPO, run_module_env

TINY = os.path.join(REPO, "experiments", "quickstart", "configs", "tiny.py")


def quickstart(workdir, *flags):
    return subprocess.run([PYTHON, "-m", "experiments.quickstart", f"--workdir={workdir}",
                           f"--config={TINY}", *flags], cwd=REPO, env=run_module_env(),
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
    for flag, message in [("--config.n_seeds=0", "n_seeds=0"),
                          ("--config.model.d_model=-4", "model.d_model=-4"),
                          ("--config.task.train_fraction=1.5", "task.train_fraction=1.5"),
                          ("--config.model.act_fn=swish", "model.act_fn='swish'"),
                          ("--config.model.d_mlp=-1", "model.d_mlp=-1")]:
        wd = tmp_path / flag.split("=")[0].split(".")[-1]
        proc = quickstart(wd, flag)
        assert proc.returncode != 0 and message in proc.stderr, (flag, proc.stderr[-1500:])
        assert not wd.exists(), flag
    proc = quickstart(tmp_path / "x", "--config.no_such_key=1")
    assert proc.returncode != 0 and "no_such_key" in proc.stderr
