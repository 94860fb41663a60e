"""The sweep runner: resume after SIGKILL, incomplete checkpoints, save errors, sharding."""
import os
import subprocess
import textwrap

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from conftest import PYTHON, fast_compile_env
from mechjax.sweeps.snapshots import start_from
from mechjax.sweeps.sweep import grid_product, run_sweep
from mechjax.tasks import modular
from mechjax.models.config import ModelConfig
from mechjax.training.train import TrainConfig, make_train
from mechjax.sweeps.workdir import SaveError



def build_sweep():
    """The sweep every scenario runs, built identically in each process."""
    task = modular.make_task(p=7, batch_size=16, train_fraction=0.6)
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_mlp=32, d_vocab=7, n_ctx=2,
                      causal=False)
    return make_train(task, cfg, TrainConfig(steps=60, eval_every=10)), [0, 1, 2], \
        grid_product(lr=[3e-3, 1e-2])


SCRIPT = textwrap.dedent("""
    import os, signal, sys
    import jax
    import numpy as np
    from mechjax.sweeps.sweep import run_sweep
    from test_sweep import build_sweep

    # workdir/out pairs; the last run is killed after chunk kill_after (-1: never). Several runs
    # in one process share its compiled program: the uninterrupted reference costs no process.
    *runs, kill_after = sys.argv[1:]
    kill_after = int(kill_after)
    trainer, seeds, grid = build_sweep()
    for i in range(0, len(runs), 2):
        workdir, out = runs[i:i + 2]
        last = i + 2 == len(runs)

        def maybe_die(metrics):  # asked after every chunk's checkpoint
            if last and metrics["step"].shape[-1] == kill_after:
                os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no flush: a real crash
            return False

        res = run_sweep(trainer, seeds, grid, workdir, chunk_evals=1, stop=maybe_die)
        np.savez(out, n_devices=jax.device_count(),
                 **{"p/" + k: v for k, v in res.state.params.items()},
                 **{"m/" + k: v for k, v in res.metrics.items()})
""")


def run_script(tmp_path, *runs, kill_after=-1, devices=None):
    """One process running the sweep into each ``(workdir, out)`` of ``runs`` in turn."""
    script = tmp_path / "sweep_script.py"
    script.write_text(SCRIPT)
    env = fast_compile_env(f"--xla_force_host_platform_device_count={devices}" if devices
                           else "")
    # for test_sweep itself
    env["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__)) + os.pathsep + env["PYTHONPATH"]
    return subprocess.run([PYTHON, str(script), *(str(p) for run in runs for p in run),
                           str(kill_after)],
                          env=env, capture_output=True, text=True, timeout=600)


def load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def test_sigkill_then_resume_matches_uninterrupted_run_on_several_devices(tmp_path):
    a, b = (tmp_path / "a", tmp_path / "a.npz"), (tmp_path / "b", tmp_path / "b.npz")
    # one process: the uninterrupted run b, then run a, killed after its third chunk
    killed = run_script(tmp_path, b, a, kill_after=3, devices=2)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert b[1].exists() and not a[1].exists()
    # a checkpoint whose save never completed: orbax's temporary folder must be ignored
    (tmp_path / "a" / "checkpoints" / "5.orbax-checkpoint-tmp-1").mkdir()
    resumed = run_script(tmp_path, a, devices=2)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from the checkpoint after chunk 3/6" in resumed.stderr
    a, b = load(tmp_path / "a.npz"), load(tmp_path / "b.npz")
    assert int(a["n_devices"]) == 2  # 3 seeds padded to 4 and sharded over 2 devices
    for k in a:
        if k.startswith(("p/", "m/")):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert a["p/embed.W_E"].shape == (3, 2, 7, 16)
    assert a["m/acc/test"].shape == (3, 2, 6)

    # the same sweep here, on this process's one device, without checkpoints, and with the seeds
    # batched by vmap instead of looped (the CPU default), gives the same numbers: sharding,
    # resumption and vectorization change placement and timing, not results
    trainer, seeds, grid = build_sweep()
    here = run_sweep(trainer, seeds, grid, None, chunk_evals=1, log_every_chunk=False,
                     vectorize="vmap")
    for k, v in here.state.params.items():
        np.testing.assert_allclose(a["p/" + k], v, rtol=1e-5, atol=1e-6, err_msg=k)


def test_a_failed_save_is_one_line_saying_where_the_run_resumes(tmp_path, monkeypatch, capsys):
    task = modular.make_task(p=5, batch_size=8)
    tr = make_train(task, ModelConfig(n_layers=1, d_model=8, n_heads=1, d_mlp=8, d_vocab=5,
                                      n_ctx=2), TrainConfig(steps=4, eval_every=2))
    real_save, calls = ocp.CheckpointManager.save, []

    def save_once_then_fail(self, *args, **kwargs):  # the second save hits a full disk
        calls.append(1)
        if len(calls) > 1:
            raise OSError("disk full")
        return real_save(self, *args, **kwargs)

    monkeypatch.setattr(ocp.CheckpointManager, "save", save_once_then_fail)
    with pytest.raises(SaveError) as err:
        run_sweep(tr, [0], None, str(tmp_path / "w"), chunk_evals=1)
    message = str(err.value)
    assert "\n" not in message and "saving chunk 2/2" in message and "disk full" in message
    assert "resumes from the last checkpoint (chunk 1/2)" in message
    monkeypatch.setattr(ocp.CheckpointManager, "save", real_save)
    capsys.readouterr()
    run_sweep(tr, [0], None, str(tmp_path / "w"), chunk_evals=1)
    assert "resumed from the checkpoint after chunk 1/2" in capsys.readouterr().err


def test_bad_sweep_inputs():
    task = modular.make_task(p=5, batch_size=8)
    tr = make_train(task, ModelConfig(n_layers=1, d_model=8, n_heads=1, d_mlp=8, d_vocab=5,
                                      n_ctx=2), TrainConfig(steps=4, eval_every=2))
    with pytest.raises(ValueError, match="seeds is empty"):
        run_sweep(tr, [], None)
    with pytest.raises(ValueError, match=r"unknown hyperparameters \['lr_max'\]"):
        run_sweep(tr, [0], {"lr_max": [1.0]})
    with pytest.raises(ValueError, match="must all have length 3"):
        run_sweep(tr, [0], {"lr": [1.0, 2.0, 3.0], "weight_decay": [0.0, 1.0]})
    assert grid_product(a=[1, 2], b=[3, 4, 5])["b"].tolist() == [3, 4, 5, 3, 4, 5]


def tiny_trainer(steps=40, eval_every=10):
    task = modular.make_task(p=7, batch_size=16, train_fraction=0.6)
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_mlp=32, d_vocab=7, n_ctx=2,
                      causal=False)
    return make_train(task, cfg, TrainConfig(steps=steps, eval_every=eval_every))


def test_stop_predicate_ends_the_sweep_and_holds_after_a_resume(tmp_path):
    trainer = tiny_trainer()
    asked = []

    def after_two_chunks(m):
        asked.append(m["step"].shape)
        return m["step"].shape[-1] >= 2

    res = run_sweep(trainer, [0, 1], {"lr": 1e-2}, str(tmp_path / "w"), chunk_evals=1,
                    stop=after_two_chunks, log_every_chunk=False)
    assert res.stopped_early and asked == [(2, 1, 1), (2, 1, 2)]
    assert res.metrics["acc/test"].shape == (2, 1, 2)
    np.testing.assert_array_equal(res.steps, [10, 20])
    assert res.state.step.tolist() == [[20], [20]]
    # a relaunch asks the predicate on the restored metrics before training anything more
    again = run_sweep(trainer, [0, 1], {"lr": 1e-2}, str(tmp_path / "w"), chunk_evals=1,
                      stop=after_two_chunks, log_every_chunk=False)
    assert again.stopped_early and asked[-1] == (2, 1, 2) and len(asked) == 3
    for k, v in res.state.params.items():
        np.testing.assert_array_equal(again.state.params[k], v, err_msg=k)
    # without the predicate the same workdir trains on to the end
    full = run_sweep(trainer, [0, 1], {"lr": 1e-2}, str(tmp_path / "w"), chunk_evals=1,
                     log_every_chunk=False)
    assert not full.stopped_early and full.steps.tolist() == [10, 20, 30, 40]


def test_trace_count_is_reported_once_per_compilation():
    trainer = tiny_trainer()
    res = run_sweep(trainer, [0, 1, 2], {"weight_decay": [0.0, 1.0]}, None, chunk_evals=1,
                    log_every_chunk=False)
    assert res.traces == 1  # four chunks, one compiled program
    assert res.metrics_at(grid=1)["acc/test"].shape == (3, 4)
    assert res.params_at(grid=1)["embed.W_E"].shape == (3, 7, 16)


def test_init_state_gets_the_seed_index():
    """Seed i starts from row i of given parameters (the branch case), not from its key."""
    trainer = tiny_trainer(steps=10)
    hp = trainer.default_hparams()
    base = [trainer.init(jax.random.PRNGKey(100 + i), hp).params for i in range(3)]
    stacked = {k: np.stack([np.asarray(b[k]) for b in base]) for k in base[0]}
    seen = []

    def init_state(key, hparams, seed_index):
        seen.append(seed_index.shape)
        return start_from(trainer, stacked)(key, hparams, seed_index)

    # lr 1e-30 (lr must be > 0): the parameters stay where they started, so each seed must hold its own row
    res = run_sweep(trainer, [5, 6, 7], {"lr": 1e-30}, None, init_state=init_state,
                    log_every_chunk=False)
    assert seen == [()]  # traced once, per seed and grid point
    for k, v in stacked.items():
        np.testing.assert_allclose(res.params_at(grid=0)[k], v, atol=1e-7, err_msg=k)
