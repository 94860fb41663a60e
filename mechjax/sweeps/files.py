"""The files a sweep writes into its workdir, and its resume from them.

``sweep.json``, ``model_config.json`` and ``train_config.json`` at the start (what
``mechjax.sweeps.runs`` needs to rebuild the models without the experiment's code); after each chunk an
orbax checkpoint of the whole stacked state with the metrics (``checkpoints/<chunk>``), the
metrics file and the parameter snapshots. ``mechjax.sweeps.run_files`` reads them back.
"""
from __future__ import annotations

import dataclasses
import json
import os
import zlib
from typing import Any, Mapping, Sequence

import jax
import numpy as np
import orbax.checkpoint as ocp
from jax.experimental import multihost_utils

from mechjax.io import to_jsonable, write_json, write_npz
from mechjax.sweeps.snapshots import snapshot_path
from mechjax.training.train import Trainer, TrainState
from mechjax import filecheck
from mechjax.filecheck import RunError
from mechjax.sweeps.workdir import WorkdirError

SWEEP_FILE, MODEL_FILE, TRAIN_FILE, METRICS_FILE = ("sweep.json", "model_config.json",
                                                    "train_config.json", "metrics.npz")
CHECKPOINT_DIR = "checkpoints"


def to_host(tree):
    """A (possibly multi-process) pytree of global arrays as host numpy arrays."""
    if jax.process_count() > 1:
        tree = multihost_utils.process_allgather(tree, tiled=True)
    return jax.tree.map(np.asarray, jax.device_get(tree))


def run_files(trainer: Trainer, seeds: list[int], hparams: Mapping[str, np.ndarray],
              chunk: int, snapshot_steps: list[int]) -> dict[str, Any]:
    """``{file name: JSON value}`` of the run files, in the order they are written
    (``sweep.json`` last: it marks a complete set)."""
    values = {MODEL_FILE: trainer.model_cfg.to_dict(),
              TRAIN_FILE: dataclasses.asdict(trainer.train_cfg),
              SWEEP_FILE: {"seeds": seeds, "hparams": {k: v.tolist() for k, v in hparams.items()},
                           "chunk_evals": chunk, "snapshot_steps": snapshot_steps,
                           "task": trainer.task.name}}
    # as a reader of the written file sees them (tuples as lists, float32 as float)
    return {name: json.loads(json.dumps(to_jsonable(v))) for name, v in values.items()}


def write_run_files(workdir: str, trainer: Trainer, seeds: list[int],
                    hparams: Mapping[str, np.ndarray], chunk: int,
                    snapshot_steps: list[int]) -> None:
    """What ``mechjax.sweeps.runs`` needs to rebuild the models without the experiment's code."""
    if jax.process_index() != 0:
        return
    for name, value in run_files(trainer, seeds, hparams, chunk, snapshot_steps).items():
        write_json(os.path.join(workdir, name), value)


def holds_run(workdir: str) -> bool:
    """Whether ``workdir`` holds a sweep: its ``sweep.json`` or a checkpoint (reading only)."""
    if os.path.exists(workdir) and not os.path.isdir(workdir):
        raise WorkdirError(f"workdir {workdir!r} is a file, not a folder; give a folder path "
                           "(it is created if missing)")
    checkpoints = os.path.join(workdir, CHECKPOINT_DIR)
    return (os.path.exists(os.path.join(workdir, SWEEP_FILE))
            or os.path.isdir(checkpoints) and bool(os.listdir(checkpoints)))


def check_same_run(workdir: str, files: Mapping[str, Any]) -> None:
    """Raise ``WorkdirError`` unless ``workdir`` holds no sweep or the run of ``files``
    (``run_files``), whose checkpoint it may then resume; reads only. A key that only one side
    has was written by another version of mechjax and is not compared."""
    if not holds_run(workdir):
        return
    redo = "pass overwrite=True to replace it (everything in the workdir is deleted) or use "
    if not os.path.exists(os.path.join(workdir, SWEEP_FILE)):
        raise WorkdirError(f"workdir {workdir!r} holds checkpoints but no {SWEEP_FILE}, so which "
                           f"run they belong to is unknown; {redo}another workdir")
    found = []
    for name, new in files.items():
        try:
            with open(os.path.join(workdir, name)) as f:
                old = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            found.append(f"{name} is missing or not valid JSON")
            continue
        found += [f"{name[:-len('.json')]}{key}: {_short(a)} -> {_short(b)}"
                  for key, a, b in _differences(old, new)]
    if found:
        more = f" (and {len(found) - 4} more)" if len(found) > 4 else ""
        raise WorkdirError(f"workdir {workdir!r} holds another run ({'; '.join(found[:4])}"
                           f"{more}); {redo}another workdir")


def _differences(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted key, old, new)`` where two JSON values differ; keys one side lacks are skipped."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for k in sorted(set(old) & set(new))
                for d in _differences(old[k], new[k], f"{path}.{k}")]
    return [] if old == new else [(path, old, new)]


def _short(value: Any, limit: int = 40) -> str:
    """A JSON value for a one-line message: floats to 6 digits, cut at ``limit`` characters."""
    if isinstance(value, list):
        text = "[" + ", ".join(_short(v, limit) for v in value) + "]"
    elif isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def save_snapshot(workdir: str, step: int, state: TrainState, n_seeds: int) -> None:
    """Parameters ``{name: [n_seeds, n_grid, ...]}`` at ``step`` (atomic write)."""
    params = jax.tree.map(lambda x: x[:n_seeds], to_host(state.params))
    if jax.process_index() == 0:
        write_npz(snapshot_path(workdir, step), params)


def write_metrics(path: str, metrics: Mapping[str, np.ndarray],
                  hparams: Mapping[str, np.ndarray], seeds: Sequence[int]) -> None:
    """The metrics file of a sweep (atomic write): ``metrics/<name>`` ``[n_seeds, n_grid,
    n_evals]`` (``metrics/step`` holds the step after each evaluation), ``hparams/<name>``
    ``[n_grid]``, ``seeds`` ``[n_seeds]``. Read it with ``mechjax.sweeps.runs.open``."""
    arrays = {f"metrics/{k}": np.asarray(v) for k, v in metrics.items()}
    arrays.update({f"hparams/{k}": np.asarray(v) for k, v in hparams.items()})
    arrays["seeds"] = np.asarray(seeds)
    write_npz(path, arrays)


def checkpoint_manager(workdir: str) -> ocp.CheckpointManager:
    """The orbax manager of ``workdir/checkpoints`` (the last two chunks kept)."""
    return ocp.CheckpointManager(
        os.path.abspath(os.path.join(workdir, CHECKPOINT_DIR)),
        options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True,
                                             enable_async_checkpointing=False))


MANIFEST_FILE = "mechjax_files.json"  # in checkpoints/<chunk>/: every file's size and CRC-32


def _file_crc(path: str) -> int:
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            crc = zlib.crc32(block, crc)
    return crc


def _checkpoint_files(folder: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), folder) for d, _, names in os.walk(folder)
                  for n in names if n != MANIFEST_FILE)


def write_manifest(manager: ocp.CheckpointManager, chunk: int) -> None:
    """Record every file of the finished checkpoint ``chunk`` with its size and CRC-32, so a
    resume can check the folder completely before orbax reads it (orbax reports a damaged
    array from many threads at once, as pages of tracebacks)."""
    folder = os.path.join(str(manager.directory), str(chunk))
    write_json(os.path.join(folder, MANIFEST_FILE),
               {name: [os.path.getsize(os.path.join(folder, name)),
                       _file_crc(os.path.join(folder, name))]
                for name in _checkpoint_files(folder)})


def check_manifest(folder: str) -> None:
    """Every file the checkpoint's manifest lists is there with its size and CRC-32 (a
    checkpoint written before manifests existed is left to orbax)."""
    path = os.path.join(folder, MANIFEST_FILE)
    if not os.path.exists(path):
        return
    listed = filecheck.read_json(path, "checkpoint manifest", RunError)
    for name, (size, crc) in sorted(listed.items()):
        file = os.path.join(folder, name)
        if not os.path.isfile(file):
            raise RunError(f"checkpoint {folder!r}: file {name!r} is missing")
        if os.path.getsize(file) != size or _file_crc(file) != crc:
            what = (f"{os.path.getsize(file)} bytes instead of {size}"
                    if os.path.getsize(file) != size else "its CRC-32 differs")
            raise RunError(f"checkpoint {folder!r}: file {name!r} is damaged ({what}); delete "
                           "that folder to resume from the checkpoint before it, or rerun with "
                           "--overwrite")


def restore(manager: ocp.CheckpointManager, state: TrainState,
            metrics: dict[str, np.ndarray]) -> tuple[TrainState, dict[str, np.ndarray], int]:
    """``(state, metrics, chunks done)`` from the latest complete checkpoint, or the inputs and
    0 without one. A checkpoint that does not restore completely, or whose arrays do not have the
    shapes and dtypes of this sweep, raises ``RunError`` naming its folder: resuming from it
    would continue from wrong numbers."""
    latest = manager.latest_step()
    if latest is None:
        return state, metrics, 0
    target = {"state": jax.tree.map(ocp.utils.to_shape_dtype_struct, state), "metrics": metrics}
    folder = os.path.join(str(manager.directory), str(latest))
    check_manifest(folder)
    try:
        restored = manager.restore(latest, args=ocp.args.StandardRestore(target))
    except Exception as err:  # orbax and tensorstore raise many types for a damaged folder
        manager.close()
        reason = " ".join(str(err).split())
        reason = reason if len(reason) <= 160 else reason[:157] + "..."  # tensorstore's spec
        raise RunError(f"checkpoint {folder!r} cannot be restored (truncated, corrupt or of a "
                       f"different sweep: {type(err).__name__}: {reason}); delete that folder "
                       "to resume from the checkpoint before it, or rerun with --overwrite"
                       ) from err
    restored_metrics = {k: np.asarray(v) for k, v in restored["metrics"].items()}
    wrong = [k for k, v in restored_metrics.items()
             if v.shape != metrics[k].shape or v.dtype != metrics[k].dtype]
    if sorted(restored_metrics) != sorted(metrics) or wrong:
        manager.close()
        raise RunError(f"checkpoint {folder!r}: metrics {sorted(restored_metrics)} do not match "
                       f"this sweep's {sorted(metrics)} (shape or dtype of {wrong[:4]}); rerun "
                       "with --overwrite")
    return restored["state"], restored_metrics, int(latest)
