"""``mechjax.sweeps.runs``: a sweep's workdir read back, during the run and after it."""
import json
import os

import jax
import numpy as np
import pytest

from mechjax.sweeps import runs
from mechjax.models.config import ModelConfig
from mechjax.sweeps.snapshots import SnapshotPolicy
from mechjax.sweeps.sweep import run_sweep
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, make_train

SEEDS = [0, 1, 2]
GRID = {"lr": [3e-3, 1e-2]}


def make_trainer():
    task = modular.make_task(p=7, batch_size=16, train_fraction=0.6)
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_mlp=32, d_vocab=7, n_ctx=2,
                      causal=False)
    return make_train(task, cfg, TrainConfig(steps=40, eval_every=10))


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    """A 3-seed x 2-point sweep with snapshots at 0 and after every chunk; ``during`` is what
    ``runs.open`` saw while the sweep was still running (after its second chunk)."""
    workdir = str(tmp_path_factory.mktemp("sweep") / "w")
    trainer = make_trainer()
    during = {}

    def look(metrics):  # the stop predicate runs between chunks: the run is in progress
        if metrics["step"].shape[-1] == 2:
            run = runs.open(workdir)
            during.update(steps_saved=run.steps_saved, steps=run.steps.tolist(),
                          shape=run.metrics["acc/test"].shape, summary=run.summary)
        return False

    result = run_sweep(trainer, SEEDS, GRID, workdir, chunk_evals=1, stop=look,
                       snapshots=SnapshotPolicy(every_chunks=1, steps=(0,)),
                       log_every_chunk=False)
    return trainer, workdir, result, during


def test_a_running_sweep_opens_as_far_as_it_got(sweep_run):
    _, _, _, during = sweep_run
    assert during == {"steps_saved": [0, 10, 20], "steps": [10, 20], "shape": (3, 2, 2),
                      "summary": None}


def test_what_was_trained_comes_back_without_the_experiment(sweep_run):
    trainer, workdir, result, _ = sweep_run
    run = runs.open(workdir)
    assert run.model_cfg == trainer.model_cfg and run.train_cfg == trainer.train_cfg
    assert run.seeds == SEEDS and run.n_grid == 2
    np.testing.assert_allclose(run.hparams["lr"], GRID["lr"])
    np.testing.assert_array_equal(run.hparams["weight_decay"], [0.0, 0.0])  # defaults filled in
    assert run.steps.tolist() == [10, 20, 30, 40] and run.steps_saved == [0, 10, 20, 30, 40]
    assert set(run.metrics) == set(result.metrics)
    for k, v in result.metrics.items():
        np.testing.assert_array_equal(run.metrics[k], v, err_msg=k)  # [seed, grid, eval]
    np.testing.assert_array_equal(run.metrics_at(grid=1)["acc/test"], result.metrics["acc/test"][:, 1])
    assert run.config is None  # a bare sweep has no experiment config.json


def test_params_at_a_step_are_the_state_the_sweep_had_then(sweep_run):
    trainer, workdir, result, _ = sweep_run
    run = runs.open(workdir)
    # the same sweep, in memory, stopped after two chunks: its state is the state at step 20
    short = run_sweep(trainer, SEEDS, GRID, None, chunk_evals=1, log_every_chunk=False,
                      stop=lambda m: m["step"].shape[-1] >= 2)
    assert short.state.step.tolist() == [[20, 20]] * 3
    stacked = run.stacked_params(step=20, grid=None)
    for k, v in short.state.params.items():
        np.testing.assert_array_equal(stacked[k], v, err_msg=k)
    one = run.params(seed=2, step=20, grid=1)
    assert one["blocks.0.attn.W_Q"].shape == (2, 16, 8)  # TransformerLens names and shapes
    for k, v in short.state.params.items():
        np.testing.assert_array_equal(one[k], v[2, 1], err_msg=k)
    # the latest step is the sweep's final state; step 0 is each seed's initialization
    for k, v in run.stacked_params(grid=None).items():
        np.testing.assert_array_equal(v, result.state.params[k], err_msg=k)
    init = trainer.init(jax.random.PRNGKey(1), trainer.default_hparams(lr=1e-2)).params
    for k, v in init.items():  # (vmapped vs. single sampling: equal up to float32 rounding)
        np.testing.assert_allclose(run.params(seed=1, step=0, grid=1)[k], v, rtol=1e-6,
                                   atol=1e-7, err_msg=k)
    assert not np.allclose(run.params(1, 20, 1)["embed.W_E"], run.params(1, 10, 1)["embed.W_E"])


def test_bad_requests_name_what_is_allowed(sweep_run, tmp_path):
    _, workdir, _, _ = sweep_run
    run = runs.open(workdir)
    with pytest.raises(runs.RunError, match=r"seed=9 is not in this run; seeds: \[0, 1, 2\]"):
        run.params(seed=9)
    with pytest.raises(runs.RunError, match=r"step=15 has no saved parameters; saved steps: "
                                            r"\[0, 10, 20, 30, 40\]"):
        run.params(seed=0, step=15)
    with pytest.raises(runs.RunError, match=r"grid=2: this run has 2 grid point\(s\), allowed 0..1"):
        run.params(seed=0, grid=2)
    with pytest.raises(runs.RunError, match="is not a folder"):
        runs.open(str(tmp_path / "nothing"))
    with pytest.raises(runs.RunError, match="holds no sweep"):
        runs.open(str(tmp_path))


def test_an_experiment_with_several_sweeps_names_them(tmp_path):
    root = tmp_path / "exp"
    for name in ("omega_sweep", "p_sweep/p5"):
        os.makedirs(root / name / "snapshots")
        (root / name / "sweep.json").write_text(json.dumps({"seeds": [4], "hparams": {"lr": [1]}}))
    (root / "config.json").write_text(json.dumps({"n_seeds": 1}))
    (root / "summary.json").write_text(json.dumps({"beta": 2.0}))
    assert runs.sweeps(str(root)) == ["omega_sweep", "p_sweep/p5"]
    with pytest.raises(runs.RunError, match=r"holds 2 sweeps \['omega_sweep', 'p_sweep/p5'\]"):
        runs.open(str(root))
    run = runs.open(str(root), "p_sweep/p5")
    assert run.seeds == [4] and run.config == {"n_seeds": 1} and run.summary == {"beta": 2.0}
    assert run.metrics == {} and run.steps_saved == []
    with pytest.raises(runs.RunError, match="no parameter snapshots yet"):
        run.params(seed=4)
