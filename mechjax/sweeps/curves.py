"""Live training curves: a sweep's metrics as TensorBoard event files, one run per (seed, grid).

``CurveWriter(folder, seeds, n_grid)`` writes ``folder/seed<S>_grid<G>/events.out.tfevents.*``
(``S`` the seed value, ``G`` the grid index); each evaluation is one event at the training step,
holding every metric but ``step`` as a scalar under mechjax's own name (``train/loss``,
``acc/test``, ...). Point ``tensorboard --logdir WORKDIR/tb`` at it while the sweep runs.

Each step is written once, across resumes: on opening, the writer reads the run's event files
back and, per run, writes only evaluations after the last step they hold. One event holds all
metrics of a step, so a record is either whole or (cut by a kill) unreadable and ignored. A
killed sweep may have written a chunk whose checkpoint was later deleted; the resumed sweep
recomputes that chunk (training is deterministic given the seed), finds its steps already
written and skips them.

Records are appended with the TFRecord framing (length, masked CRC-32C of the length, data,
masked CRC-32C of the data), files opened per write and closed again: a sweep can have
thousands of runs, and one open file or thread each (``tensorboardX.SummaryWriter``) would
exhaust the process's limits. Needs ``tensorboardX`` (its protobufs and CRC), pure Python.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import socket
import struct
import sys
import time
from typing import Any, Iterator, Mapping, Sequence

import jax
import numpy as np

TB_DIR = "tb"
INSTALL = "pip install tensorboardX"


class CurvesError(RuntimeError):
    """Curves were required but ``tensorboardX`` is not installed."""


def available() -> bool:
    """Whether ``tensorboardX`` is installed (found, not imported: see ``_tbx``)."""
    return importlib.util.find_spec("tensorboardX") is not None


def _tbx() -> tuple[Any, Any, Any]:
    """``(event_pb2, summary_pb2, masked_crc32c)`` of tensorboardX.

    tensorboardX's package imports torch when it is installed (1.1 s and ~300 MB per process,
    for its writers of torch tensors, which mechjax never passes). Unless the process already
    has torch, torch is hidden for the import's duration (``import torch`` fails inside it, as
    tensorboardX allows) and visible again afterwards."""
    hide = "torch" not in sys.modules
    if hide:
        sys.modules["torch"] = None  # type: ignore[assignment]  # ``import torch`` raises
    try:
        from tensorboardX.proto import event_pb2, summary_pb2
        from tensorboardX.record_writer import masked_crc32c
    except ImportError as err:
        raise CurvesError(f"curves=True needs tensorboardX, which is not installed: {INSTALL}"
                          ) from err
    finally:
        if hide and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return event_pb2, summary_pb2, masked_crc32c


def run_name(seed: int, grid: int) -> str:
    """The TensorBoard run (sub-folder) of one seed at one grid point."""
    return f"seed{seed}_grid{grid}"


def read_records(path: str) -> Iterator[bytes]:
    """The records of one TFRecord file, up to the first incomplete one (a killed writer leaves
    at most its last record cut short). The length's CRC is checked, the data's is not: a
    pure-Python CRC of every record would make reopening a large sweep slow, and a cut record
    is already caught by its length."""
    crc = _tbx()[2]
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 12 <= len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        end = pos + 12 + length + 4
        if end > len(data) or struct.unpack("<I", data[pos + 8:pos + 12])[0] != crc(header):
            return
        yield data[pos + 12:end - 4]
        pos = end


def last_step(folder: str) -> int:
    """The last step with scalars in the event files of one run folder; -1 if none."""
    event_pb2 = _tbx()[0]
    last = -1
    for path in sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*"))):
        for record in read_records(path):
            try:
                event = event_pb2.Event.FromString(record)
            except Exception:  # protobuf's DecodeError: a record cut inside its data
                break
            if event.HasField("summary"):
                last = max(last, int(event.step))
    return last


class CurveWriter:
    """Appends a sweep's evaluations to per-run TensorBoard event files (see the module)."""

    def __init__(self, folder: str, seeds: Sequence[int], n_grid: int):
        self._pb = _tbx()
        self.folder = folder
        self.runs = [[os.path.join(folder, run_name(s, g)) for g in range(n_grid)]
                     for s in seeds]
        # per run: what earlier sessions wrote, so a resume never writes a step twice
        self.last = np.array([[last_step(p) for p in row] for row in self.runs], np.int64)
        # one new file per run per session: a killed session's cut last record stays at the
        # end of its own file, where readers stop
        stamp = f"{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}"
        self._file = f"events.out.tfevents.{stamp}.mechjax"
        self._started: set[str] = set()
        self.events = 0  # events written by this session

    def write(self, metrics: Mapping[str, np.ndarray], steps: np.ndarray) -> int:
        """Write the evaluations ``metrics`` (``{name: [n_seeds, n_grid, n]}``; ``step`` is
        not a curve) at ``steps`` (``[n]`` or ``[n_seeds, n_grid, n]``) whose step comes after
        the run's last written one; returns the number of events written."""
        names = sorted(k for k in metrics if k != "step")
        values = np.stack([np.asarray(metrics[k], np.float64) for k in names], -1)
        steps = np.broadcast_to(np.asarray(steps), values.shape[:-1]).astype(np.int64)
        if values.shape[:2] != self.last.shape:
            raise ValueError(f"metrics of shape {values.shape[:2]} (seeds, grid); this writer "
                             f"has {self.last.shape}")
        written = 0
        for s, row in enumerate(self.runs):
            for g, path in enumerate(row):
                seq = steps[s, g]  # steps past the end repeat: each is written once
                before = np.maximum.accumulate(np.concatenate([[self.last[s, g]], seq]))[:-1]
                new = np.flatnonzero(seq > before)
                if new.size:
                    self._append(path, names, steps[s, g, new], values[s, g, new])
                    self.last[s, g] = steps[s, g, new].max()
                    written += new.size
        self.events += written
        return written

    def _append(self, run: str, names: list[str], steps: np.ndarray,
                values: np.ndarray) -> None:
        """One event per step (all metrics in it), appended to this session's file of ``run``."""
        event_pb2, summary_pb2, _ = self._pb
        now = time.time()
        events = []
        if run not in self._started:  # a TensorBoard event file opens with its version
            os.makedirs(run, exist_ok=True)
            events.append(event_pb2.Event(wall_time=now, file_version="brain.Event:2"))
            self._started.add(run)
        for step, row in zip(steps.tolist(), values.tolist()):
            summary = summary_pb2.Summary(value=[
                summary_pb2.Summary.Value(tag=n, simple_value=v) for n, v in zip(names, row)])
            events.append(event_pb2.Event(wall_time=now, step=step, summary=summary))
        with open(os.path.join(run, self._file), "ab") as f:
            f.write(b"".join(self._frame(e.SerializeToString()) for e in events))

    def _frame(self, data: bytes) -> bytes:
        crc = self._pb[2]
        header = struct.pack("<Q", len(data))
        return header + struct.pack("<I", crc(header)) + data + struct.pack("<I", crc(data))

    def close(self) -> None:
        """Nothing stays open between writes; kept so callers can treat it as a resource."""


def open_curves(curves: bool | None, workdir: str | None, seeds: Sequence[int],
                n_grid: int) -> CurveWriter | None:
    """The writer ``run_sweep(..., curves=)`` asks for: ``None`` writes curves when a workdir is
    given and tensorboardX is installed, ``True`` requires both, ``False`` writes none."""
    if curves not in (None, True, False):
        raise ValueError(f"curves={curves!r}: allowed None (when tensorboardX is installed), "
                         "True or False")
    if curves is False or (curves is None and (workdir is None or not available())):
        return None
    if workdir is None:
        raise ValueError("curves=True needs a workdir: the event files go to WORKDIR/tb")
    _tbx()  # every process refuses a missing tensorboardX alike
    if jax.process_index() != 0:  # process 0 holds every seed's metrics (gathered)
        return None
    return CurveWriter(os.path.join(workdir, TB_DIR), seeds, n_grid)
