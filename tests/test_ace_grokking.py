"""The grokking-core experiment end to end at test size, its resume, and its refusal of bad
configs."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from conftest import assert_refused_before_writing, run_and_read, run_watched
from experiments.ace_grokking import run, so_far
from experiments.ace_grokking.configs import tiny
from experiments.clock_pizza import run as clock_pizza_job
from experiments.clock_pizza.configs import tiny as clock_pizza_tiny
from mechjax.analysis.seeds import STAT_KEYS
from mechjax.models.config import ConfigError
from mechjax.sweeps.snapshots import snapshot_path

FIGURES = ("accuracy_core_dim.png", "core_interventions.png", "eigenvalue_clocks.png",
           "core_dim_wd1_vs_wd0.png", "r_suf_vs_r_nec.png", "rotational_modes.png")
REQUIRED = ("grok_epoch", "core_dim/at_grok", "core_dim/final_wd1", "core_dim/final_wd0",
            "modes/final_wd1", "modes/final_wd0", "r2_heldout/before_grok",
            "r2_heldout/after_grok", "redundancy_gap/final_wd1")


@pytest.mark.timeout(600)  # a whole tiny experiment: 30-75 s cold on 2 cores
def test_tiny_groks_and_its_core_is_sufficient_and_necessary_then_resumes(tmp_path, capsys):
    config = tiny.get_config()
    workdir = str(tmp_path / "run")
    summary, saved = run_and_read(run.run, config, workdir, figures=FIGURES)
    n, p, d_model = config.n_seeds, config.task.p, config.model.d_model
    for key in REQUIRED:
        assert set(saved[key]) == set(STAT_KEYS), key  # the common per-seed schema
        assert len(saved[key]["per_seed"]) == n, key
    assert saved["epoch_definition"].startswith("one epoch = ceil(n_train / batch) = 1")
    assert saved["checkpoint_epochs"] == {"wd1": [0, 50, 100, 150, 200, 250, 300, 350],
                                          "wd0": [300, 350]}

    # The phenomenon: every seed memorizes its training split first and generalizes later.
    grok, mem = saved["grok_epoch"]["per_seed"], saved["memorization_epoch"]["per_seed"]
    assert saved["grok/never_seeds"] == [] and None not in grok, grok
    assert all(m is not None and m < g for m, g in zip(mem, grok)), (mem, grok)
    # The grokked model's core (final weight-decay-1 checkpoint, core dimension max(r_energy,
    # r_nec)) is a proper subspace of the residual stream that carries the answer by itself
    # (sufficient: core-only accuracy at full accuracy) and that the model needs (necessary:
    # with it removed, accuracy at or below 2/p, the paper's threshold). A wrong basis or a wrong
    # intervention fails one of the three: the whole residual (core_dim = d_model) passes both
    # interventions trivially, and a subspace that is not the computing one fails them.
    full = saved["acc/test_final_wd1"]["per_seed"]
    assert min(full) >= config.ace.grok_threshold, full
    core_dim = saved["core_dim/final_wd1"]["per_seed"]
    assert max(core_dim) <= d_model // 2, core_dim
    for f, only in zip(full, saved["acc/core_only_final_wd1"]["per_seed"]):
        assert only >= f - 0.01, (f, only)
    removed = saved["acc/core_removed_final_wd1"]["per_seed"]
    assert max(removed) <= 2 / p, removed

    with np.load(os.path.join(workdir, "metrics.npz")) as m:
        # Checkpoint accuracy from ACE's forward pass equals the trainer's own test evaluation
        # at the same epoch (same params, same test set).
        acc_ace = m["ace_wd1/acc_full"][-1]
        acc_eval = m["wd1/acc/test"][:, -1]
        np.testing.assert_allclose(acc_ace, acc_eval, atol=1e-6)
        # The branch starts from the weight-decay-1 parameters at its epoch: identical cores.
        branch_ckpt = saved["checkpoint_epochs"]["wd1"].index(config.branch.epoch)
        np.testing.assert_array_equal(m["ace_wd0/core_dim"][0],
                                      m["ace_wd1/core_dim"][branch_ckpt])
        assert m["wd0/epoch"][0] == config.branch.epoch + config.train.eval_every_epochs
        assert m["wd0/epoch"][-1] == config.train.epochs
        # The summary reads the last checkpoint of each branch, seed by seed ...
        for name in ("wd1", "wd0"):
            for key, array in (("core_dim", "core_dim"), ("modes", "n_rotational")):
                assert saved[f"{key}/final_{name}"]["per_seed"] == \
                    m[f"ace_{name}/{array}"][-1].tolist(), (key, name)
        # ... and the grokking epoch is the first checkpoint whose test accuracy reaches the
        # threshold (None when none does).
        epochs, acc = m["ace_wd1/epoch"].tolist(), m["ace_wd1/acc_full"]
        expected = [next((e for e, a in zip(epochs, acc[:, i]) if a >= config.ace.grok_threshold),
                         None) for i in range(n)]
        assert grok == expected
    assert "grok_epoch" in run.format_summary(summary)

    # Zhong et al.'s diagnostics on this saved run, nothing retrained (experiments.clock_pizza
    # --run): the grokked post-LN models are clocks in both branches (measured: symmetricity
    # -0.45 to -0.08, distance irrelevance 0.96-0.99).
    cp_config = clock_pizza_tiny.get_config()
    cp_config.run = workdir
    cp_config.grok_threshold = config.ace.grok_threshold  # the grokking run's "learned"
    cp = clock_pizza_job.run(cp_config, str(tmp_path / "clock_pizza"))
    assert sorted(cp["sweeps"]) == ["checkpoints/wd0", "checkpoints/wd1"]
    for sweep in cp["sweeps"].values():
        (final,) = sweep["per_grid"]
        assert final["attn_rate"] == 1.0 and final["algorithm"] == ["clock"] * n, final

    # A second call resumes both branches from their final checkpoints (no chunk is trained
    # again: a deterministic retrain would also give the same summary, so read the log).
    capsys.readouterr()
    again = run_watched(run.run, config, workdir)
    log = capsys.readouterr().err
    assert log.count("resumed from the checkpoint after chunk") == 2, log
    assert " | step " not in log, log  # the per-chunk training progress line
    assert again["core_dim/final_wd1"] == summary["core_dim/final_wd1"]
    assert again["acc/test_final_wd0"] == summary["acc/test_final_wd0"]

    # A run stopped before wd1's last checkpoint (its snapshot removed from a copy): so_far
    # analyses what is there, and gets the finished run's numbers at those epochs.
    stopped = str(tmp_path / "stopped")
    shutil.copytree(workdir, stopped)
    os.remove(snapshot_path(os.path.join(stopped, "checkpoints", "wd1"), config.train.epochs))
    part = so_far.analyse_so_far(stopped)["table"]
    assert part["wd1"]["epoch"] == saved["checkpoint_epochs"]["wd1"][:-1]
    assert part["wd0"]["epoch"] == [300, 350]
    with np.load(os.path.join(workdir, "metrics.npz")) as m:
        np.testing.assert_array_equal(part["wd1"]["core_dim"]["max"],
                                      m["ace_wd1/core_dim"][:-1].max(1))
        np.testing.assert_allclose(part["wd0"]["heldout_r2"]["mean"],
                                   m["ace_wd0/heldout_r2"].mean(1), rtol=1e-6)
    assert "last epoch 300 of 350" in so_far.format_table(so_far.analyse_so_far(stopped))
    with pytest.raises(ConfigError, match="no checkpoint saved yet"):
        os.makedirs(str(tmp_path / "empty" / "checkpoints"))
        shutil.copy(os.path.join(workdir, "config.json"), str(tmp_path / "empty"))
        so_far.analyse_so_far(str(tmp_path / "empty"))


@pytest.mark.parametrize("edit, message", [
    (lambda c: setattr(c, "n_seeds", 0), "n_seeds=0"),
    (lambda c: c.task.__setattr__("p", 2), "task.p=2"),
    (lambda c: c.task.__setattr__("train_fraction", 1.0), "task.train_fraction=1.0"),
    (lambda c: c.branch.__setattr__("epoch", 3), "branch.epoch=3"),
    (lambda c: c.ace.__setattr__("tau", 1.5), "ace.tau=1.5"),
    (lambda c: c.ace.__setattr__("clock_epochs", (0, 5)), "ace.clock_epochs"),
    (lambda c: c.checkpoints.__setattr__("dense_every", 3), "checkpoints.dense_every=3"),
    (lambda c: c.model.__setattr__("n_head", 4), "config.model: unknown keys ['n_head']"),
    (lambda c: c.__setattr__("epochs", 40), "config: unknown keys ['epochs']"),
    (lambda c: c.hparams.__setattr__("lr", -1.0), "hparams.lr=-1.0"),
])
def test_bad_config_raises_before_writing(tmp_path, edit, message):
    config = tiny.get_config()
    edit(config)
    assert_refused_before_writing(run.run, config, tmp_path / "run", message)
