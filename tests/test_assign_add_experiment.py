"""The Assign-and-Add job and its data sweeps: planted checks of the new measures, the tiny config
end to end through ``run.run``, a tiny f-sweep compiled once over its grid, and bad input refused
before the workdir is written."""
from __future__ import annotations

import copy
import json
import os
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from cli_fixtures import main_exit
from conftest import (assert_members_are_their_own_runs, assert_refused_before_writing,
                      run_watched)
from experiments.assign_add import analysis as an
from experiments.assign_add import progress, run, sweep_data
from experiments.assign_add.configs import sweep_f, tiny
from mechjax.studies import assign_add_mech as mech
from mechjax.models.transformer import apply, init_params
from mechjax.tasks import assign_add as aa
from mechjax.metrics import cross_entropy
from mechjax.sweeps import runs
from mechjax.training.train import Trainer

SMALL = dict(d_model=16, d_mlp=32)


def small_cfg():
    return run.model_config(SMALL)


# ---- planted and cross-checked measures ----------------------------------------------------------
def test_ov_mlp_accuracy_equals_the_full_sequence_version():
    cfg = small_cfg()
    params = init_params(jax.random.PRNGKey(0), cfg, 3.0)
    fast, full = jax.jit(lambda p: (an.ov_mlp_accuracy(p, cfg), mech.ov_mlp_accuracy(p, cfg)))(
        params)
    assert float(fast) == float(full)


def test_qk2_gradient_is_the_chain_rule_factor_of_the_weight_gradients():
    """dL/dW_Q2 = G W_K2 and dL/dW_K2 = G^T W_Q2 for G = dL/d(W_Q2 W_K2^T), one head."""
    cfg = small_cfg()
    params = init_params(jax.random.PRNGKey(1), cfg, 2.0)
    seqs = aa.sample_sequences(jax.random.PRNGKey(2), 64, (1, 1, 1, 1), aa.authors_split())
    tokens, labels = seqs["tokens"], seqs["label"]

    def loss(p):
        return cross_entropy(apply(p, tokens, cfg)[:, -1], labels)

    g, grads = jax.jit(lambda p: (an.qk2_gradient(p, tokens, labels, cfg), jax.grad(loss)(p)))(
        params)
    w_q, w_k = params["blocks.1.attn.W_Q"][0], params["blocks.1.attn.W_K"][0]
    scale = float(jnp.abs(grads["blocks.1.attn.W_Q"]).max())
    np.testing.assert_allclose(g @ w_k, grads["blocks.1.attn.W_Q"][0], atol=1e-5 * scale + 1e-9)
    np.testing.assert_allclose(g.T @ w_q, grads["blocks.1.attn.W_K"][0], atol=1e-5 * scale + 1e-9)


def test_identity_measures_on_planted_blocks():
    eye = an.identity_measures(3.0 * jnp.eye(12) + 0.5)
    assert float(eye["identity"]) == pytest.approx(3.0)
    assert float(eye["identity_cos"]) == pytest.approx(1.0, abs=1e-6)
    flat = an.identity_measures(jnp.ones((12, 12)))
    assert float(flat["identity"]) == pytest.approx(0.0) and abs(float(flat["identity_cos"])) < 1e-6
    anti = an.identity_measures(-jnp.eye(12))
    assert float(anti["identity_cos"]) == pytest.approx(-1.0, abs=1e-6)


def test_phase_steps_read_each_phase_metric_at_its_own_threshold():
    steps = np.array([100, 200, 300, 400])
    metrics = {"a": np.array([[0.1, 0.95, 0.5, 0.99], [0.1, 0.2, 0.3, 0.4]]),
               "b": np.array([[0.0, 0.0, 0.6, 0.7], [0.5, 0.5, 0.5, 0.5]])}
    out = an.phase_steps(steps, metrics, {"p1": ("a", 0.9), "p2": ("b", 0.5)})
    np.testing.assert_array_equal(out["p1"], [200, np.nan])
    np.testing.assert_array_equal(out["p2"], [300, 100])


def _first_step_by_hand(steps, curve, threshold):
    for s, v in zip(steps, curve):
        if v >= threshold:
            return float(s)
    return None


# ---- the job end to end -------------------------------------------------------------------------
FIGURES = ["accuracy_per_pool.png", "attention_patterns.png", "cosine_histograms.png",
           "fourier_best_neuron.png", "phase2_closeup.png", "phase3_closeup.png",
           "progress_measures.png", "qk2_gradient.png", "qk_heatmaps.png"]


@pytest.mark.timeout(600)  # a whole tiny experiment: 30-75 s cold on 2 cores
def test_tiny_run_end_to_end(tmp_path):
    config = tiny.get_config()
    config.phases.threshold = 0.02  # tiny accuracies are ~0.03: some seeds reach a phase, some not
    wd = str(tmp_path / "aa")
    summary = run_watched(run.run, config, wd)
    assert sorted(os.listdir(os.path.join(wd, "figures"))) == FIGURES
    assert os.path.exists(os.path.join(wd, "metrics.npz"))
    on_disk = json.load(open(os.path.join(wd, "summary.json")))
    for key in ("phase1_step", "phase2_step", "phase3_step", "acc/0var_heldout",
                "acc/2var_two_misplaced", "acc/exact_0var_heldout", "acc/exact_2var_union",
                "cosine/mlp_in_matched", "cosine/mlp_in_mismatched", "fourier/best_evr",
                "qk2/diag_fraction", "probe/final", "progress/ov_mlp_accuracy",
                "qk2grad/identity_cos", "completed_phase3", "finite", "timing"):
        assert key in on_disk, key
    metrics = np.load(os.path.join(wd, "metrics.npz"))
    steps = metrics["metrics/step"][0, 0]
    for phase in ("phase1", "phase2", "phase3"):
        # the summary's phase step is the first evaluation at which the phase's metric reaches
        # its threshold, seed by seed (None when never)
        name, threshold = config.phases[phase], config.phases.threshold
        curves = metrics[f"metrics/{name}"][:, 0]
        assert on_disk[f"{phase}_step"]["per_seed"] == [
            _first_step_by_hand(steps, c, threshold) for c in curves]
    final = metrics["metrics/acc/0var_heldout"][:, 0, -1]
    assert on_disk["acc/0var_heldout"]["per_seed"] == pytest.approx(final.tolist())
    assert len(on_disk["acc/exact_2var_union"]["per_seed"]) == 2
    n_evals = config.train.steps // config.train.eval_every
    for name in an.PROGRESS:
        assert metrics[f"metrics/progress/{name}"].shape == (2, 1, n_evals)
    assert metrics["metrics/qk2grad/identity_cos"].shape == (2, 1, n_evals)
    assert "phase1" in run.format_summary(summary)
    # the progress report of the finished run agrees with its summary, seed by seed
    report = progress.read(wd)
    assert report["step"] == config.train.steps and report["seeds"] == [0, 1]
    for phase in ("phase1", "phase2", "phase3"):
        np.testing.assert_array_equal(
            report["phases"][phase],
            [np.nan if v is None else v for v in on_disk[f"{phase}_step"]["per_seed"]])
    assert "evaluated up to step" in progress.format_progress(report)


REFERENCE_STEPS = (1, 1001, 3001, 5301, 5401, 10001, 14501, 16001)  # + "final", after these


def reference_sweep(reference):
    """A stand-in for ``run_sweep`` that "trains" one seed into the authors' checkpoints: its
    metrics are the trainer's own evaluation of each checkpoint (in order, the final one last) and
    its final parameters are the authors' final model, whose mechanism docs/assign_add.md
    reports."""
    from mechjax.sweeps.sweep import SweepResult
    from mechjax.training.train import split_hparams
    from mechjax.interop.weights import load_npz

    def sweep(trainer, seeds, hparams, workdir, **_):
        names = [f"step_{s}" for s in REFERENCE_STEPS] + ["final"]
        ckpts = [load_npz(os.path.join(reference, f"{n}.npz"), trainer.model_cfg) for n in names]
        stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *ckpts)
        _, task_params = split_hparams(hparams)
        keys = jax.random.split(jax.random.PRNGKey(0), len(names))
        m = jax.jit(jax.vmap(lambda p, k: trainer.evaluate(p, task_params, k)))(stacked, keys)
        metrics = {k: np.asarray(v)[None, None] for k, v in m.items()}  # [1 seed, 1 grid, evals]
        last = REFERENCE_STEPS[-1] + 4000
        metrics["step"] = np.asarray(REFERENCE_STEPS + (last,))[None, None]
        metrics["finite"] = np.ones_like(metrics["step"])
        final = {k: np.asarray(v)[None, None] for k, v in ckpts[-1].items()}
        return SweepResult(SimpleNamespace(params=final), metrics, list(seeds),
                           {k: np.atleast_1d(v) for k, v in hparams.items()}, traces=1)

    return sweep


@pytest.mark.timeout(600)  # the whole analysis of a tiny run at the checkpoints' d_model 128
def test_the_run_reports_the_authors_models_mechanism(tmp_path, monkeypatch, reference_dir):
    """The job's whole analysis path (phase detection, the final analysis of every seed, the
    summary's keys) on the authors' checkpoints, whose mechanism the released run shows: the
    layer-2 MLP input matches its literal twin (cosine 0.973 vs 0.14 mismatched), the most active
    MLP neuron is explained by one frequency (k = 11, EVR 0.96), QK2 is diagonal on all 12
    variables, the variable probe and the OV2 -> MLP2 path are exact, and the phases come in
    order."""
    monkeypatch.setattr(run, "run_sweep", reference_sweep(reference_dir))
    config = tiny.get_config()
    config.n_seeds = 1
    config.model.d_model, config.model.d_mlp = 128, 512  # the paper's, the checkpoints' shapes
    config.analysis.final_size = 256
    summary = run_watched(run.run, config, str(tmp_path / "aa"))
    one = {k: v["per_seed"][0] for k, v in summary.items()
           if isinstance(v, dict) and "per_seed" in v}
    assert abs(one["cosine/mlp_in_matched"] - 0.973) < 0.02
    assert abs(one["cosine/mlp_in_mismatched"] - 0.14) < 0.08
    assert abs(one["cosine/attn_out_literal"] - 0.986) < 0.02
    assert one["fourier/top_k"] == 11 and abs(one["fourier/top_evr"] - 0.96) < 0.015
    assert one["fourier/best_evr"] >= one["fourier/top_evr"]
    assert one["qk2/diag_count"] == 12 and one["qk1/prev_token"] == 1.0
    assert one["probe/final"] > 0.99 and one["ov_mlp/accuracy"] > 0.99
    assert one["acc/exact_0var_heldout"] > 0.99 and one["acc/exact_2var_union"] > 0.95
    # the paper's phases, in order: addition generalizes before variable binding, binding before
    # the positional refinement
    p1, p2, p3 = (one[f"phase{i}_step"] for i in (1, 2, 3))
    assert None not in (p1, p2, p3) and p1 < p2 < p3, (p1, p2, p3)


def test_progress_refuses_a_workdir_without_a_training_run(tmp_path):
    with pytest.raises(progress.ProgressError, match="config.json does not exist"):
        progress.read(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"grid": {}}))
    np.savez(tmp_path / "metrics.npz", seeds=np.arange(2))
    with pytest.raises(progress.ProgressError, match="no 'phases' block"):
        progress.read(str(tmp_path))


def test_tiny_f_sweep_compiles_once_over_the_grid(tmp_path, monkeypatch):
    config = sweep_f.get_config()
    config.grid = (0.3, 0.6, 0.9)
    config.n_seeds = 2
    config.chunk_evals = 1
    config.task.batch_size = 16
    config.task.pool_size = 16
    config.model.d_model = 16
    config.model.d_mlp = 32
    config.train.steps = 20
    config.train.eval_every = 10
    traces = []
    original = Trainer.run

    def counted(self, state, hparams, n_evals, total=None):
        traces.append(n_evals)
        return original(self, state, hparams, n_evals, total)

    monkeypatch.setattr(Trainer, "run", counted)
    wd = str(tmp_path / "sf")
    summary = run_watched(sweep_data.run, config, wd)
    assert len(traces) == 1  # one compiled program for 2 seeds x 3 values, both chunks
    acc = np.asarray(summary["accuracy"]["per_seed"])
    assert acc.shape == (2, 3)
    assert summary["n_sequences"] == [len(aa.authors_split().heldout_pairs(f))
                                      for f in (0.3, 0.6, 0.9)]
    assert os.path.exists(os.path.join(wd, "figures", "sweep_f.png"))
    on_disk = json.load(open(os.path.join(wd, "summary.json")))
    # Per-seed crossings: linear interpolation in f between the grid values around the threshold.
    expected = []
    for row in acc:
        j = next((j for j, a in enumerate(row) if a >= config.threshold), None)
        expected.append(None if j is None else config.grid[0] if j == 0 else
                        config.grid[j - 1] + (config.threshold - row[j - 1]) / (row[j] - row[j - 1])
                        * (config.grid[j] - config.grid[j - 1]))
    assert on_disk["crossing"]["per_seed"] == pytest.approx(expected)
    assert "crossing_mean_curve" in on_disk
    # The plateau read-off is the held-out pool's last value minus its value at the window start
    # (steps 10 and 20 here), from the metrics the run wrote.
    metrics = np.load(os.path.join(wd, "metrics.npz"))
    curve = metrics["metrics/acc/0var_heldout"]  # [seeds, grid, evals]
    plateau = on_disk["plateau"]
    assert plateau["window_steps"] == [10, 20]
    np.testing.assert_allclose(plateau["change_per_seed"], curve[:, :, -1] - curve[:, :, 0],
                               atol=1e-6)
    for g, stats in enumerate(plateau["steps_to_threshold"]):  # first evaluation >= threshold
        expected = [next((s for s, a in zip((10, 20), row) if a >= config.threshold), None)
                    for row in curve[:, g]]
        assert stats["per_seed"] == expected
    # Each member trained at its own f: the grid without its first value (the schema wants it
    # increasing), one seed, has every member at another index and gives the same member at
    # each f (to rounding); each run records the f it trained each member at.
    part = copy.deepcopy(config)
    part.grid, part.n_seeds = tuple(config.grid[1:]), 1
    run_watched(sweep_data.run, part, str(tmp_path / "part"))
    first, second = runs.open(wd), runs.open(str(tmp_path / "part"))
    assert first.hparams["task.f"].tolist() == pytest.approx(list(config.grid))
    assert second.hparams["task.f"].tolist() == pytest.approx(list(part.grid))
    assert_members_are_their_own_runs(first, second, "task.f", seed=0,
                                      batch_tokens=config.task.batch_size
                                      * first.model_cfg.n_ctx)


# ---- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("edit, message", [
    (lambda c: setattr(c.task, "f", 1.5), "task.f=1.5"),
    (lambda c: setattr(c.task, "f", 0.0), "task.f=0.0"),
    (lambda c: setattr(c.task, "f", 1.0), "no held-out"),
    (lambda c: setattr(c.task, "r", -0.1), "task.r=-0.1"),
    (lambda c: setattr(c, "n_seeds", 0), "n_seeds=0"),
    (lambda c: setattr(c.task, "split", "mine"), "task.split='mine'"),
    (lambda c: setattr(c.phases, "phase2", "acc/nope"), "phases.phase2='acc/nope'"),
    (lambda c: setattr(c.model, "n_layers", 3), "unknown keys ['n_layers']"),
])
def test_bad_config_fails_before_the_workdir_is_written(tmp_path, edit, message):
    config = tiny.get_config()
    edit(config)
    assert_refused_before_writing(run.run, config, tmp_path / "never", message)


@pytest.mark.parametrize("edit, message", [
    (lambda c: setattr(c, "grid", (0.0, 0.5)), "config.grid=(0.0, 0.5)"),
    (lambda c: setattr(c, "grid", (0.5, 1.2)), "config.grid=(0.5, 1.2)"),
    (lambda c: setattr(c, "grid", (0.5, 1.0)), "no held-out"),
    (lambda c: setattr(c, "grid", (0.5, 0.3)), "strictly increasing"),
    (lambda c: setattr(c, "n_seeds", 0), "n_seeds=0"),
    (lambda c: setattr(c, "mode", "q"), "mode='q'"),
])
def test_bad_sweep_config_fails_before_the_workdir_is_written(tmp_path, edit, message):
    config = sweep_f.get_config()
    edit(config)
    assert_refused_before_writing(sweep_data.run, config, tmp_path / "never", message)


def test_command_line_refuses_bad_flag_before_writing(tmp_path):
    """Each command's real ``__main__`` (flags, config overrides, schema) refuses a bad flag
    with one ``error:`` line and writes nothing; in process, since a fresh interpreter per
    command costs seconds of imports."""
    wd = tmp_path / "cli"
    code = main_exit("experiments.assign_add", [f"--workdir={wd}", "--config.task.f=1.5"])
    assert isinstance(code, str) and code.startswith("error:") and "task.f=1.5" in code, code
    assert not wd.exists()
    wd = tmp_path / "sweep"
    code = main_exit("experiments.assign_add.sweep_data",
                     [f"--workdir={wd}", "--config.grid=(0.5,1.2)"])
    assert isinstance(code, str) and "config.grid=(0.5, 1.2)" in code, code
    assert not wd.exists()
    code = main_exit("experiments.assign_add.progress", [f"--workdir={tmp_path / 'none'}"])
    assert isinstance(code, str) and code.startswith("error:") and \
        "config.json does not exist" in code, code
