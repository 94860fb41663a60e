"""Live curves: a sweep's TensorBoard event files, read back, hold every evaluation of every
(seed, grid point) once, equal to metrics.npz, across a crash and a resume."""
import glob
import os
import shutil
import struct
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboardX", reason="curves need tensorboardX (pip install tensorboardX)")
from tensorboardX.proto import event_pb2  # noqa: E402
from tensorboardX.record_writer import masked_crc32c  # noqa: E402

from mechjax.models.config import ModelConfig  # noqa: E402
from mechjax.sweeps import curves  # noqa: E402
from mechjax.sweeps.sweep import grid_product, run_sweep  # noqa: E402
from mechjax.tasks import modular  # noqa: E402
from mechjax.training.train import TrainConfig, make_train  # noqa: E402

SEEDS = [0, 5, 7]


def build():
    task = modular.make_task(p=7, batch_size=16, train_fraction=0.6)
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_mlp=32, d_vocab=7, n_ctx=2,
                      causal=False)
    return make_train(task, cfg, TrainConfig(steps=60, eval_every=10)), grid_product(
        lr=[3e-3, 1e-2])


def records(path):
    """TFRecord framing read independently of mechjax: 8-byte length, its masked CRC-32C, data,
    the data's masked CRC-32C; a cut last record ends the file."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack("<Q", data[pos:pos + 8])
        if pos + 16 + n > len(data):
            return
        assert struct.unpack("<I", data[pos + 8:pos + 12])[0] == masked_crc32c(data[pos:pos + 8])
        body = data[pos + 12:pos + 12 + n]
        assert struct.unpack("<I", data[pos + 12 + n:pos + 16 + n])[0] == masked_crc32c(body)
        yield body
        pos += 16 + n


def read_runs(tb):
    """``{run: {tag: [(step, value), ...]}}`` over every event file of every run folder."""
    out = {}
    for run in sorted(os.listdir(tb)):
        tags = out.setdefault(run, {})
        for path in sorted(glob.glob(os.path.join(tb, run, "events.out.tfevents.*"))):
            for body in records(path):
                event = event_pb2.Event.FromString(body)
                for v in event.summary.value:
                    tags.setdefault(v.tag, []).append((event.step, v.simple_value))
    return out


def assert_curves_equal_metrics(workdir, seeds=SEEDS):
    with np.load(os.path.join(workdir, "metrics.npz")) as z:
        metrics = {k[len("metrics/"):]: z[k] for k in z.files if k.startswith("metrics/")}
    runs = read_runs(os.path.join(workdir, "tb"))
    n_grid = metrics["step"].shape[1]
    assert sorted(runs) == sorted(f"seed{s}_grid{g}" for s in seeds for g in range(n_grid))
    names = sorted(set(metrics) - {"step"})
    events = 0
    for s, seed in enumerate(seeds):
        for g in range(n_grid):
            tags = runs[f"seed{seed}_grid{g}"]
            assert sorted(tags) == names
            for name in names:
                steps, values = np.array(tags[name]).T
                # every evaluation once, in order, at its training step, with its value
                np.testing.assert_array_equal(steps, metrics["step"][s, g], err_msg=name)
                np.testing.assert_array_equal(values.astype(np.float32), metrics[name][s, g],
                                              err_msg=name)
                events += len(steps)
    return events


def test_every_evaluation_of_every_run_is_one_scalar_per_metric(tmp_path):
    trainer, grid = build()
    res = run_sweep(trainer, SEEDS, grid, str(tmp_path / "w"), chunk_evals=2,
                    log_every_chunk=False)
    n = assert_curves_equal_metrics(str(tmp_path / "w"))
    n_tags = len(res.metrics) - 1
    assert n == len(SEEDS) * 2 * 6 * n_tags and "train/loss" in res.metrics
    # a rerun of the finished sweep writes nothing more
    run_sweep(trainer, SEEDS, grid, str(tmp_path / "w"), chunk_evals=2, log_every_chunk=False)
    assert assert_curves_equal_metrics(str(tmp_path / "w")) == n


class Crash(Exception):
    pass


def test_crashes_and_resumes_write_each_step_once(tmp_path, monkeypatch):
    """Three crashes: after chunk 2 (then its checkpoint is deleted, so the resume recomputes a
    chunk whose events exist, and one run's last record is cut), and after chunk 4's checkpoint
    but before its events; the resumed sweep's curves hold each step once."""
    trainer, grid = build()
    workdir = str(tmp_path / "w")

    def crash_after(n):
        def stop(metrics):
            if metrics["step"].shape[-1] == n:
                raise Crash(n)
            return False
        return stop

    with pytest.raises(Crash):
        run_sweep(trainer, SEEDS, grid, workdir, chunk_evals=1, stop=crash_after(2),
                  log_every_chunk=False)
    shutil.rmtree(os.path.join(workdir, "checkpoints", "2"))
    cut = glob.glob(os.path.join(workdir, "tb", "seed5_grid1", "events.out.tfevents.*"))
    assert len(cut) == 1
    with open(cut[0], "r+b") as f:  # the last record (step 20) loses its tail
        f.truncate(os.path.getsize(cut[0]) - 7)

    real_write = curves.CurveWriter.write

    def fail_at_chunk_4(self, metrics, steps):
        if np.asarray(steps).max() == 40:
            raise Crash("events")
        return real_write(self, metrics, steps)

    monkeypatch.setattr(curves.CurveWriter, "write", fail_at_chunk_4)
    with pytest.raises(Crash):
        run_sweep(trainer, SEEDS, grid, workdir, chunk_evals=1, log_every_chunk=False)
    assert os.path.isdir(os.path.join(workdir, "checkpoints", "4"))
    monkeypatch.setattr(curves.CurveWriter, "write", real_write)
    run_sweep(trainer, SEEDS, grid, workdir, chunk_evals=1, log_every_chunk=False)
    assert assert_curves_equal_metrics(workdir) == len(SEEDS) * 2 * 6 * 7  # 7 metrics
    # one file per session that wrote to it: the first, the one that crashed, the last
    assert len(glob.glob(os.path.join(workdir, "tb", "seed0_grid0", "*"))) == 3


def test_curves_off_auto_and_required(tmp_path, monkeypatch):
    trainer, _ = build()
    run_sweep(trainer, [0], None, str(tmp_path / "off"), chunk_evals=6, curves=False,
              log_every_chunk=False)
    assert not os.path.exists(tmp_path / "off" / "tb")
    assert curves.open_curves(None, None, [0], 1) is None  # no workdir: nothing to write to
    with pytest.raises(ValueError, match="curves=True needs a workdir"):
        curves.open_curves(True, None, [0], 1)
    with pytest.raises(ValueError, match="curves='yes'"):
        curves.open_curves("yes", str(tmp_path), [0], 1)
    for name in [m for m in sys.modules if m.split(".")[0] == "tensorboardX"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    assert curves.open_curves(None, str(tmp_path / "auto"), [0], 1) is None
    with pytest.raises(curves.CurvesError) as err:
        run_sweep(trainer, [0], None, str(tmp_path / "req"), chunk_evals=6, curves=True)
    assert "pip install tensorboardX" in str(err.value) and "\n" not in str(err.value)


def test_writer_alone_skips_written_and_repeated_steps(tmp_path):
    folder = str(tmp_path / "tb")
    w = curves.CurveWriter(folder, [3], 2)
    loss = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    assert w.write({"loss": loss, "step": np.zeros(1)}, np.array([10, 20, 20, 30])) == 6
    assert w.write({"loss": loss}, np.array([10, 20, 30, 40])) == 2  # only step 40 is new
    with pytest.raises(ValueError, match=r"this writer has \(1, 2\)"):
        w.write({"loss": loss[:, :1]}, np.arange(4))
    # a new session (a resumed sweep) finds the steps already written
    assert curves.CurveWriter(folder, [3], 2).write({"loss": loss}, np.array([10, 20, 30, 40])) == 0
    runs = read_runs(folder)
    assert sorted(runs) == ["seed3_grid0", "seed3_grid1"]
    assert runs["seed3_grid1"]["loss"] == [(10, 4.0), (20, 5.0), (30, 7.0), (40, 7.0)]
