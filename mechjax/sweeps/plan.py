"""What a sweep will do, worked out (and checked) before anything is compiled: the full
hyperparameter grid, the chunks, the snapshot steps, the padded seed rows."""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import jax
import numpy as np

from mechjax.sweeps.snapshots import SnapshotPolicy
from mechjax.training.train import Trainer, check_hparams


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    seeds: list[int]
    hparams: dict[str, np.ndarray]   # every traced hyperparameter, each [n_grid]
    chunk: int                       # evaluation intervals per compiled call
    n_chunks: int
    n_evals: int
    snapshot_steps: list[int]        # steps whose parameters are saved
    chunk_end: list[int]             # the step reached at the end of each chunk

    @property
    def n_grid(self) -> int:
        return len(next(iter(self.hparams.values())))


def full_grid(trainer: Trainer, hparams: Mapping[str, float | Sequence[float]] | None
              ) -> dict[str, np.ndarray]:
    """``{name: [n_grid]}`` for every hyperparameter of the trainer (defaults filled in)."""
    defaults = trainer.default_hparams()
    unknown = sorted(set(hparams or {}) - set(defaults))
    if unknown:
        raise ValueError(f"unknown hyperparameters {unknown}; allowed: {sorted(defaults)}")
    check_hparams(hparams or {})  # the values as given, before the float32 cast rounds them
    hparams = {k: np.atleast_1d(np.asarray(v, np.float32)) for k, v in (hparams or {}).items()}
    n_grid = max([len(v) for v in hparams.values()] or [1])
    bad = {k: len(v) for k, v in hparams.items() if len(v) not in (1, n_grid)}
    if bad:
        raise ValueError(f"hyperparameter arrays must all have length {n_grid} (or 1): {bad}")
    return {k: np.broadcast_to(hparams.get(k, np.asarray(defaults[k])), (n_grid,)).copy()
            for k in defaults}


def plan_sweep(trainer: Trainer, seeds: Sequence[int],
               hparams: Mapping[str, float | Sequence[float]] | None,
               chunk_evals: int | None, snapshots: SnapshotPolicy | None) -> SweepPlan:
    """The plan of ``run_sweep`` (see there); bad arguments raise ``ValueError`` here."""
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty: give at least one seed")
    full = full_grid(trainer, hparams)
    train_cfg = trainer.train_cfg
    n_evals = train_cfg.n_evals
    chunk = int(chunk_evals or max(1, -(-n_evals // 10)))
    if chunk <= 0:
        raise ValueError(f"chunk_evals={chunk_evals!r}: must be a positive integer")
    policy = snapshots or SnapshotPolicy()
    return SweepPlan(seeds=seeds, hparams=full, chunk=chunk, n_chunks=-(-n_evals // chunk),
                     n_evals=n_evals, snapshot_steps=policy.steps_to_save(train_cfg, chunk),
                     chunk_end=policy.chunk_steps(train_cfg, chunk))


def padded_seed_rows(seeds: list[int], n_devices: int) -> tuple[np.ndarray, np.ndarray]:
    """``(keys [n_pad, 2], index [n_pad])``: the seed axis padded to a multiple of the devices
    with copies of the last seed (their rows are dropped at the end); ``index`` is each row's
    position in ``seeds``."""
    n_pad = -(-len(seeds) // n_devices) * n_devices
    padded = seeds + [seeds[-1]] * (n_pad - len(seeds))
    keys = np.stack([np.asarray(jax.random.PRNGKey(s)) for s in padded])
    return keys, np.minimum(np.arange(n_pad), len(seeds) - 1).astype(np.int32)
