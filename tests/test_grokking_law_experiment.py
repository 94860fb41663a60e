"""The grokking-law experiment end to end at test size, its per-step evaluation, compile-once grid,
and its refusal of bad configs."""
from __future__ import annotations

import json
import os
import shutil
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import (assert_members_are_their_own_runs, assert_refused_before_writing,
                      run_and_read, run_watched)
from experiments.grokking_law import run
from experiments.grokking_law.configs import tiny
from mechjax.sweeps import runs
from mechjax.sweeps.workdir import enable_compilation_cache


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny config run once for the tests that read a finished run (each rerun would trace,
    load and run its three training programs again)."""
    config = tiny.get_config()
    workdir = str(tmp_path_factory.mktemp("grokking_law") / "run")
    summary, saved = run_and_read(
        run.run, config, workdir, figures=("grokking_law.png",),
        outputs=("omega_sweep/checkpoints", "p_sweep/p5/checkpoints", "p_sweep/p7/checkpoints"))
    return config, workdir, summary, saved


@pytest.mark.timeout(600)  # a whole tiny experiment: 30-75 s cold on 2 cores
def test_tiny_end_to_end(tiny_run):
    config, workdir, summary, saved = tiny_run
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


class PlantedLawSweep:
    """A stand-in for ``run_sweep`` whose runs grok on a planted law: the ``i``-th of 3 seeds
    memorizes at step ``20 + 7 i`` and groks ``tau`` steps later, ``tau = f_i C omega^beta`` in
    the omega sweep and ``f_i (-Omega log(1 - p_crit / p))`` in the p sweep, with seed factors
    ``f = (0.9, 1.0, 1.1)`` whose mean is 1, so the means over seeds follow the laws exactly.
    Accuracy curves are ``[n_seeds, n_grid, n_steps]`` steps from 0 to 1, as the trainer's
    per-step evaluation gives them."""

    def __init__(self, beta, C=2000.0, Omega=900.0, p_crit=3.0, n_steps=12000):
        self.beta, self.C, self.Omega, self.p_crit, self.n_steps = beta, C, Omega, p_crit, n_steps

    def tau(self, p, omega, seed_index):
        law = (self.C * omega ** self.beta if p == OMEGA_P
               else -self.Omega * np.log(1 - self.p_crit / p))
        return (0.9, 1.0, 1.1)[seed_index] * law

    def __call__(self, trainer, seeds, grid, workdir, **_):
        p, steps = trainer.model_cfg.d_vocab, np.arange(1, self.n_steps + 1)
        t_mem = np.array([20 + 7 * i for i in range(len(seeds))], float)[:, None]
        tau = np.array([[self.tau(p, w, i) for w in grid["weight_decay"]]
                        for i in range(len(seeds))])
        train = (steps >= t_mem[..., None]).astype(np.float32)
        test = (steps >= np.round(t_mem + tau)[..., None]).astype(np.float32)
        metrics = {"acc/train": np.broadcast_to(train, test.shape), "acc/test": test,
                   "finite": np.ones_like(test), "step": np.broadcast_to(steps, test.shape)}
        return SimpleNamespace(metrics=metrics, steps=steps, traces=1)


OMEGA_P = 13  # the omega sweep's modulus in the planted run; the p sweep's moduli differ


@pytest.mark.parametrize("beta", [-1.0, -0.5])
def test_the_experiment_recovers_a_planted_law(tmp_path, monkeypatch, beta):
    """The experiment's whole path from per-step accuracies to summary.json (grok times per
    run, the [grid, seed] layout, means over seeds, both fits) on runs planted to follow
    tau = C omega^beta and tau = -Omega log(1 - p_crit / p): beta has the planted sign and size,
    Omega and p_crit are the planted ones, and each setting's taus are the planted ones."""
    planted = PlantedLawSweep(beta)
    monkeypatch.setattr(run, "run_sweep", planted)
    config = tiny.get_config()
    config.n_seeds = 3
    config.omega_sweep.p = OMEGA_P
    config.omega_sweep.omegas = (0.3, 0.5, 1.0, 2.0, 3.0)
    config.p_sweep.ps = (5, 7, 11, 17)
    config.stop_when_all_grokked = False
    summary = run_watched(run.run, config, str(tmp_path / "run"))
    # the means over seeds are exact laws, up to rounding the crossings to whole steps
    assert summary["beta"] == pytest.approx(beta, abs=0.01)
    assert summary["beta_r2"] > 0.999
    assert summary["p_crit"] == pytest.approx(planted.p_crit, rel=0.02)
    assert summary["Omega"] == pytest.approx(planted.Omega, rel=0.02)
    assert summary["p_crit_identified"] and summary["tau_decreasing_in_p"]
    assert summary["never_grokked"] == 0
    for name, values, p_of in (("omega", config.omega_sweep.omegas, lambda v: OMEGA_P),
                               ("p", config.p_sweep.ps, lambda v: v)):
        for v in values:
            omega = v if name == "omega" else config.p_sweep.omega
            expected = [planted.tau(p_of(v), omega, i) for i in range(config.n_seeds)]
            assert summary[f"tau/{name}={v:g}"]["per_seed"] == pytest.approx(expected, abs=0.5)
            assert summary[f"t_mem/{name}={v:g}"]["per_seed"] == [20, 27, 34]


@pytest.mark.timeout(600)  # may set up tiny_run: a whole tiny experiment
def test_overwrite_with_another_lr_resumes_nothing_of_the_old_run(tiny_run, tmp_path, capsys):
    """The new-user report: an overwrite with a changed lr resumed the old omega_sweep/ and
    p_sweep/ checkpoints and wrote the old run's metrics under the new config. Here the tiny
    run (a copy) is overwritten with another lr and one p only."""
    _, finished, _, _ = tiny_run
    workdir = str(tmp_path / "run")
    shutil.copytree(finished, workdir)
    curves = os.path.join(workdir, "omega_sweep", "metrics.npz")  # accuracy after every step
    old = np.load(curves)["metrics/acc/train"]
    config = tiny.get_config()
    config.p_sweep.ps = (5,)
    config.hparams.lr = 3e-2
    capsys.readouterr()
    run_watched(run.run, config, workdir, overwrite=True)
    assert "resumed" not in capsys.readouterr().err
    assert not np.array_equal(old, np.load(curves)["metrics/acc/train"])
    assert not os.path.exists(os.path.join(workdir, "p_sweep", "p7"))  # nothing old is kept
    with open(os.path.join(workdir, "config.json")) as f:
        assert json.load(f)["hparams"]["lr"] == 3e-2


@pytest.mark.timeout(600)  # may set up tiny_run: a whole tiny experiment
def test_each_omega_trains_at_its_own_weight_decay(tiny_run, tmp_path):
    """The omega grid in reverse order, one seed: the experiment labels each member with its
    omega and each member is the tiny run's member at that omega (the one trained at another
    omega differs by far more than rounding)."""
    config, finished, summary, _ = tiny_run
    reverse = tiny.get_config()
    reverse.n_seeds = 1
    reverse.omega_sweep.omegas = tuple(reversed(config.omega_sweep.omegas))
    reverse.p_sweep.ps = config.p_sweep.ps[:1]
    workdir = str(tmp_path / "reverse")
    again = run_watched(run.run, reverse, workdir)
    first, second = (runs.open(os.path.join(w, "omega_sweep")) for w in (finished, workdir))
    for s, r in ((summary, first), (again, second)):
        assert s["omega_sweep/omegas"] == r.hparams["weight_decay"].tolist()
    assert second.hparams["weight_decay"].tolist() == list(reverse.omega_sweep.omegas)
    assert_members_are_their_own_runs(first, second, "weight_decay", seed=0,
                                      batch_tokens=config.omega_sweep.batch_size
                                      * first.model_cfg.n_ctx)


@pytest.mark.timeout(600)  # may set up tiny_run: a whole tiny experiment
def test_accuracy_is_evaluated_every_step_on_the_full_split(tiny_run):
    """The in-scan evaluation equals a host-side evaluation of the same parameters, and there is
    one evaluation per optimizer step: the tiny run's p = 7 sweep (full batch), its final
    parameters of every seed against its last recorded accuracies."""
    config, workdir, _, _ = tiny_run
    opened = runs.open(workdir, "p_sweep/p7")
    steps = config.p_sweep.steps
    metrics = opened.metrics_at(grid=0)  # [seeds, evals]
    np.testing.assert_array_equal(np.asarray(metrics["step"][0]), np.arange(1, steps + 1))
    assert opened.steps_saved[-1] == steps
    trainer = run.make_trainer(7, None, steps, config)
    from mechjax.models.transformer import forward
    batch = trainer.task.eval_pools["train"](None, {"train_fraction": jnp.float32(0.5)})
    mask = np.asarray(batch["weights"]) > 0
    assert mask.sum() == round(0.5 * 49)
    stacked = opened.stacked_params(steps)  # [seeds, ...]
    predict = jax.jit(jax.vmap(lambda p: forward(p, batch["tokens"], trainer.model_cfg)[:, -1]
                               .argmax(-1)))  # one small program for every seed
    correct = np.asarray(predict(stacked)) == np.asarray(batch["labels"])  # [seeds, pairs]
    np.testing.assert_allclose(metrics["acc/train"][:, -1], correct[:, mask].mean(1), atol=1e-6)
    np.testing.assert_allclose(metrics["acc/test"][:, -1], correct[:, ~mask].mean(1), atol=1e-6)


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
    a second call in the same workdir resumes from that checkpoint, stops there and agrees.
    The trainer, grid and chunk are the tiny config's omega sweep, so this is the program
    ``test_tiny_end_to_end`` compiles (one compilation for both tests, cached)."""
    enable_compilation_cache()  # the resumed call compiles the same program again
    config = tiny.get_config()
    om = config.omega_sweep

    def omega_sweep_trainer():
        return run.make_trainer(om.p, om.batch_size, om.steps, config)

    grid = {"lr": [config.hparams.lr], "init_scale": [config.hparams.init_scale],
            "weight_decay": list(om.omegas)}
    seeds = list(range(config.n_seeds))
    shape = (len(om.omegas), len(seeds))
    out = run.sweep(omega_sweep_trainer(), seeds, grid, str(tmp_path / "s"),
                    chunk_evals=om.chunk_evals, threshold=0.0, stop_when_all_grokked=True)
    assert om.steps > om.chunk_evals  # the stop saves a chunk
    assert out["steps_run"] == om.chunk_evals and out["traces"] == 1
    np.testing.assert_array_equal(out["t_mem"], np.ones(shape))
    np.testing.assert_array_equal(out["tau"], np.zeros(shape))
    again = run.sweep(omega_sweep_trainer(), seeds, grid, str(tmp_path / "s"),
                      chunk_evals=om.chunk_evals, threshold=0.0, stop_when_all_grokked=True)
    np.testing.assert_array_equal(again["tau"], out["tau"])
    # resumed after chunk 1, where the stop condition already holds: nothing more is trained
    assert again["steps_run"] == om.chunk_evals
