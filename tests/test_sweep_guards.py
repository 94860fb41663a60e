"""What ``run_sweep`` refuses before anything is compiled or written: a workdir holding another
run (unless ``overwrite=True``) and hyperparameters out of range."""
import json
import os

import numpy as np
import pytest

from mechjax.models.config import ConfigError, ModelConfig
from mechjax.sweeps import files as sweep_files
from mechjax.sweeps import workdir as run_workdir
from mechjax.sweeps.sweep import run_sweep
from mechjax.sweeps.workdir import WorkdirError
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, make_train


def tiny_trainer(d_model=16, steps=20, op="add"):
    task = modular.make_task(p=7, op=op, batch_size=16, train_fraction=0.6)
    cfg = ModelConfig(n_layers=1, d_model=d_model, n_heads=2, d_mlp=32, d_vocab=7, n_ctx=2,
                      causal=False)
    return make_train(task, cfg, TrainConfig(steps=steps, eval_every=10))


def files_of(folder):
    """``{relative path: (bytes, mtime_ns)}`` of every file under ``folder``."""
    out = {}
    for d, _, names in os.walk(folder):
        for n in names:
            path = os.path.join(d, n)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = (f.read(), os.stat(path).st_mtime_ns)
    return out


def refuse_manager(workdir):
    """Stands in for ``checkpoint_manager`` where none may be opened (orbax's threads outlive a
    refusal and print tracebacks at exit)."""
    raise AssertionError(f"checkpoint manager opened for {workdir}")


@pytest.fixture
def no_manager(monkeypatch):
    monkeypatch.setattr(sweep_files, "checkpoint_manager", refuse_manager)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A finished sweep (lr 3e-3, seeds [0, 1]) and its result."""
    workdir = str(tmp_path_factory.mktemp("guards") / "w")
    res = run_sweep(tiny_trainer(), [0, 1], {"lr": 3e-3}, workdir, chunk_evals=1,
                    log_every_chunk=False)
    return workdir, res


def test_another_grid_is_refused_untouched_the_same_resumes_overwrite_trains_afresh(
        tmp_path, monkeypatch, capfd):
    workdir = str(tmp_path / "w")
    first = run_sweep(tiny_trainer(), [0, 1], {"lr": 3e-3}, workdir, chunk_evals=1,
                      log_every_chunk=False)
    before = files_of(workdir)
    assert "sweep.json" in before and any(p.startswith("checkpoints") for p in before)
    real_manager = sweep_files.checkpoint_manager
    monkeypatch.setattr(sweep_files, "checkpoint_manager", refuse_manager)
    with pytest.raises(WorkdirError) as err:
        run_sweep(tiny_trainer(), [0, 1], {"lr": 1e-3}, workdir, chunk_evals=1)
    message = str(err.value)
    assert "\n" not in message and "sweep.hparams.lr: [0.003] -> [0.001]" in message
    assert "overwrite=True" in message
    assert files_of(workdir) == before  # every byte and every mtime
    assert "Traceback" not in capfd.readouterr().err
    monkeypatch.setattr(sweep_files, "checkpoint_manager", real_manager)

    # the same run resumes from its last checkpoint: nothing left to train
    again = run_sweep(tiny_trainer(), [0, 1], {"lr": 3e-3}, workdir, chunk_evals=1,
                      log_every_chunk=False)
    assert "resumed from the checkpoint after chunk 2/2" in capfd.readouterr().err
    for k, v in first.state.params.items():
        np.testing.assert_array_equal(again.state.params[k], v, err_msg=k)

    # overwrite=True: the old run is deleted and the new one trains from its own start
    fresh = run_sweep(tiny_trainer(), [0, 1], {"lr": 1e-3}, workdir, chunk_evals=1,
                      log_every_chunk=False, overwrite=True)
    assert "resumed" not in capfd.readouterr().err
    alone = run_sweep(tiny_trainer(), [0, 1], {"lr": 1e-3}, None, chunk_evals=1,
                      log_every_chunk=False)
    for k, v in alone.state.params.items():
        np.testing.assert_array_equal(fresh.state.params[k], v, err_msg=k)
    with open(os.path.join(workdir, "sweep.json")) as f:
        assert json.load(f)["hparams"]["lr"] == [np.float32(1e-3).item()]


@pytest.mark.parametrize("trainer_args, seeds, hparams, chunk_evals, named", [
    ({"d_model": 8}, [0, 1], {"lr": 3e-3}, 1, "model_config.d_model: 16 -> 8"),
    ({"steps": 30}, [0, 1], {"lr": 3e-3}, 1, "train_config.steps: 20 -> 30"),
    ({"op": "sub"}, [0, 1], {"lr": 3e-3}, 1, "sweep.task: 'modular_add_7' -> 'modular_sub_7'"),
    ({}, [0, 2], {"lr": 3e-3}, 1, "sweep.seeds: [0, 1] -> [0, 2]"),
    ({}, [0, 1], {"lr": 3e-3, "weight_decay": [0.0, 1.0]}, 1, "sweep.hparams.weight_decay"),
    ({}, [0, 1], {"lr": 3e-3}, 2, "sweep.chunk_evals: 1 -> 2"),
])
def test_any_other_run_is_refused_before_a_checkpoint_is_opened(
        trained, no_manager, trainer_args, seeds, hparams, chunk_evals, named):
    workdir, _ = trained
    before = files_of(workdir)
    with pytest.raises(WorkdirError, match="holds another run") as err:
        run_sweep(tiny_trainer(**trainer_args), seeds, hparams, workdir, chunk_evals=chunk_evals)
    assert named in str(err.value) and "\n" not in str(err.value)
    assert files_of(workdir) == before


def test_checkpoints_without_sweep_file_are_refused(tmp_path, no_manager):
    workdir = tmp_path / "w"
    (workdir / "checkpoints" / "1").mkdir(parents=True)
    with pytest.raises(WorkdirError, match="holds checkpoints but no sweep.json.*overwrite=True"):
        run_sweep(tiny_trainer(), [0], None, str(workdir))
    assert os.listdir(workdir / "checkpoints") == ["1"]


def test_a_prepared_experiment_folder_is_no_other_run(tmp_path, capfd):
    """The command line's ``config.json`` comes first; the sweep then starts and resumes in that
    folder, and ``overwrite=True`` deletes nothing where no sweep is yet."""
    workdir = str(tmp_path / "w")
    run_workdir.prepare(workdir, {"experiment": "tiny"})
    with open(os.path.join(workdir, "notes.txt"), "w") as f:
        f.write("kept")
    trainer = tiny_trainer(steps=10)
    run_sweep(trainer, [0], None, workdir, log_every_chunk=False, overwrite=True)
    assert {"config.json", "notes.txt", "sweep.json"} <= set(os.listdir(workdir))
    capfd.readouterr()
    run_sweep(trainer, [0], None, workdir, log_every_chunk=False)
    assert "resumed from the checkpoint after chunk 1/1" in capfd.readouterr().err
    assert run_workdir.check(workdir, {"experiment": "tiny"}) == "resume"


@pytest.mark.parametrize("hparams, message", [
    ({"lr": -1e-3}, "hparams['lr']=-0.001: must be > 0"),
    ({"lr": 0.0}, "hparams['lr']=0: must be > 0"),
    ({"lr": [1e-3, float("nan")]}, "hparams['lr'][1]=nan: must be finite and > 0"),
    ({"weight_decay": [0.0, -0.5]}, "hparams['weight_decay'][1]=-0.5: must be >= 0"),
    ({"weight_decay": float("inf")}, "hparams['weight_decay']=inf: must be finite and >= 0"),
    ({"init_scale": 0.0}, "hparams['init_scale']=0: must be > 0"),
])
def test_hyperparameters_out_of_range_are_refused_before_the_workdir(tmp_path, no_manager,
                                                                    hparams, message):
    with pytest.raises(ConfigError) as err:
        run_sweep(tiny_trainer(), [0], hparams, str(tmp_path / "w"))
    assert str(err.value) == message
    assert not (tmp_path / "w").exists()


def test_hyperparameters_in_range_pass_the_check():
    from mechjax.sweeps.plan import full_grid
    grid = full_grid(tiny_trainer(), {"lr": [1e-3, 1.0], "weight_decay": 0.0, "init_scale": 2})
    assert grid["lr"].tolist() == [np.float32(1e-3).item(), 1.0]
