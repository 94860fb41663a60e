"""The grokking-law experiment end to end at test size, its per-step evaluation, compile-once grid,
and its refusal of bad configs."""
from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import assert_refused_before_writing, run_and_read, run_watched
from experiments.grokking_law import run
from experiments.grokking_law.configs import tiny
from mechjax.workdir import enable_compilation_cache


@pytest.mark.timeout(600)  # a whole tiny experiment: 30-75 s cold on 2 cores
def test_tiny_end_to_end(tmp_path):
    config = tiny.get_config()
    workdir = str(tmp_path / "run")
    summary, saved = run_and_read(
        run.run, config, workdir, figures=("grokking_law.png",),
        outputs=("omega_sweep/checkpoints", "p_sweep/p5/checkpoints", "p_sweep/p7/checkpoints"))
    n = config.n_seeds
    for key in ("beta", "beta_r2", "Omega", "p_crit", "p_fit_r2", "never_grokked"):
        assert key in saved, key
    arrays = np.load(os.path.join(workdir, "metrics.npz"))
    # Each setting's per-seed tau in the summary is the saved tau row (None where never grokked),
    # and the never-grokked counts add up over the settings.
    never = 0
    for sweep_name, name, values in (("omega_sweep", "omega", config.omega_sweep.omegas),
                                     ("p_sweep", "p", config.p_sweep.ps)):
        for i, v in enumerate(values):
            st = saved[f"tau/{name}={v:g}"]
            row = arrays[f"{sweep_name}/tau"][i]
            assert st["per_seed"] == [None if np.isnan(t) else pytest.approx(t) for t in row]
            assert st["n_never"] == int(np.isnan(row).sum())
            never += st["n_never"]
    assert saved["never_grokked"] == never
    # The omega x seeds grid is one program: trainer.run traced once for both chunks.
    assert saved["compile/omega_sweep_traces"] == 1
    assert saved["compile/p_sweep_traces"] == [1] * len(config.p_sweep.ps)
    assert not any(k.startswith("benchmark/") for k in saved)  # off in the tiny config
    assert arrays["omega_sweep/tau"].shape == (len(config.omega_sweep.omegas), n)
    assert arrays["p_sweep/tau"].shape == (len(config.p_sweep.ps), n)
    assert "beta" in run.format_summary(summary)


def test_overwrite_with_another_lr_resumes_nothing_of_the_old_run(tmp_path, capsys):
    """The new-user report: an overwrite with a changed lr resumed the old omega_sweep/ and
    p_sweep/ checkpoints and wrote the old run's metrics under the new config."""
    config, workdir = tiny.get_config(), str(tmp_path / "run")
    config.p_sweep.ps = (5,)
    run_watched(run.run, config, workdir)
    curves = os.path.join(workdir, "omega_sweep", "metrics.npz")  # accuracy after every step
    old = np.load(curves)["metrics/acc/train"]
    capsys.readouterr()
    config.hparams.lr = 3e-2
    run_watched(run.run, config, workdir, overwrite=True)
    assert "resumed" not in capsys.readouterr().err
    assert not np.array_equal(old, np.load(curves)["metrics/acc/train"])
    with open(os.path.join(workdir, "config.json")) as f:
        assert json.load(f)["hparams"]["lr"] == 3e-2


def test_accuracy_is_evaluated_every_step_on_the_full_split():
    """The in-scan evaluation equals a host-side evaluation of the same parameters, and there is
    one evaluation per optimizer step."""
    config = tiny.get_config()
    trainer = run.make_trainer(7, None, 6, config)
    hp = trainer.default_hparams(lr=1e-2, weight_decay=1.0)
    state = trainer.init(jax.random.PRNGKey(0), hp)
    state, metrics = jax.jit(lambda s: trainer.run(s, hp, 6))(state)
    np.testing.assert_array_equal(np.asarray(metrics["step"]), np.arange(1, 7))
    from mechjax.model import forward
    batch = trainer.task.eval_pools["train"](None, {"train_fraction": jnp.float32(0.5)})
    pred = np.asarray(forward(state.params, batch["tokens"], trainer.model_cfg)[:, -1].argmax(-1))
    correct = pred == np.asarray(batch["labels"])
    mask = np.asarray(batch["weights"]) > 0
    assert mask.sum() == round(0.5 * 49)
    assert float(metrics["acc/train"][-1]) == pytest.approx(correct[mask].mean(), abs=1e-6)
    assert float(metrics["acc/test"][-1]) == pytest.approx(correct[~mask].mean(), abs=1e-6)


@pytest.mark.parametrize("edit, message", [
    (lambda c: setattr(c, "n_seeds", 0), "n_seeds=0"),
    (lambda c: setattr(c, "threshold", 1.5), "threshold=1.5"),
    (lambda c: c.omega_sweep.__setattr__("omegas", (0.5, -1.0)), "omega_sweep.omegas"),
    (lambda c: c.omega_sweep.__setattr__("batch_size", 10 ** 6), "omega_sweep.batch_size"),
    (lambda c: c.p_sweep.__setattr__("ps", (5, 2)), "p_sweep.ps=(5, 2)"),
    (lambda c: c.p_sweep.__setattr__("omega", 0.0), "p_sweep.omega=0.0"),
    (lambda c: c.omega_sweep.__setattr__("steps", 0), "omega_sweep.steps=0"),
    (lambda c: c.model.__setattr__("n_head", 4), "config.model: unknown keys ['n_head']"),
    (lambda c: c.__setattr__("epochs", 40), "config: unknown keys ['epochs']"),
    (lambda c: c.task.__setattr__("train_fraction", 1.5), "task.train_fraction=1.5"),
    (lambda c: c.benchmark.__setattr__("vectorize", "pmap"), "benchmark.vectorize"),
])
def test_bad_config_raises_before_writing(tmp_path, edit, message):
    config = tiny.get_config()
    edit(config)
    assert_refused_before_writing(run.run, config, tmp_path / "run", message)


def test_sweep_stops_once_every_run_has_grokked_and_resumes(tmp_path):
    """With threshold 0 every run 'groks' at step 1, so the sweep must stop after its first chunk;
    a second call in the same workdir resumes from that checkpoint, stops there and agrees."""
    enable_compilation_cache()  # the resumed call compiles the same program again
    config = tiny.get_config()
    trainer = run.make_trainer(7, None, 30, config)
    grid = {"lr": [1e-2], "weight_decay": [0.5, 2.0]}
    out = run.sweep(trainer, [0, 1], grid, str(tmp_path / "s"), chunk_evals=10, threshold=0.0,
                    stop_when_all_grokked=True)
    assert out["steps_run"] == 10 and out["traces"] == 1
    np.testing.assert_array_equal(out["t_mem"], np.ones((2, 2)))
    np.testing.assert_array_equal(out["tau"], np.zeros((2, 2)))
    again = run.sweep(run.make_trainer(7, None, 30, config), [0, 1], grid, str(tmp_path / "s"),
                      chunk_evals=10, threshold=0.0, stop_when_all_grokked=True)
    np.testing.assert_array_equal(again["tau"], out["tau"])
    # resumed after chunk 1, where the stop condition already holds: nothing more is trained
    assert again["steps_run"] == 10
