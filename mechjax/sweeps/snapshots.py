"""Parameter snapshots of a sweep: which steps' parameters it keeps (``SnapshotPolicy``;
parameters only, no optimizer state), where (``snapshot_path``), and starting a new sweep from
saved parameters (``start_from``, e.g. a branch of an earlier run). ``run_sweep`` writes them;
``mechjax.sweeps.runs`` reads them.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.training.train import Trainer, TrainState


@dataclasses.dataclass(frozen=True)
class SnapshotPolicy:
    """Which steps' parameters a sweep keeps (parameters only, no optimizer state), as
    ``snapshots/step_<step>.npz`` in its workdir; these are the steps ``mechjax.sweeps.runs`` opens.

    ``every_chunks``: at the end of every k-th chunk. ``steps``: chosen steps; each must be 0
    (the initial parameters) or end a chunk. ``final``: the last step.
    """

    every_chunks: int | None = None
    steps: tuple[int, ...] = ()
    final: bool = True

    def chunk_steps(self, train_cfg, chunk_evals: int) -> list[int]:
        """The step reached at the end of each chunk."""
        n_chunks = -(-train_cfg.n_evals // chunk_evals)
        per_chunk = chunk_evals * train_cfg.eval_every
        return [min((c + 1) * per_chunk, train_cfg.steps) for c in range(n_chunks)]

    def steps_to_save(self, train_cfg, chunk_evals: int) -> list[int]:
        """Sorted steps this policy saves; a chosen step off the chunk grid raises."""
        ends = self.chunk_steps(train_cfg, chunk_evals)
        if self.every_chunks is not None and (not isinstance(self.every_chunks, int)
                                              or self.every_chunks <= 0):
            raise ValueError(f"SnapshotPolicy.every_chunks={self.every_chunks!r}: must be a "
                             "positive integer or None")
        bad = sorted(s for s in self.steps if s != 0 and s not in ends)
        if bad:
            raise ValueError(f"SnapshotPolicy.steps {bad} do not end a chunk; allowed: 0 and "
                             f"{ends[:8]}{' ...' if len(ends) > 8 else ''}")
        out = set(self.steps)
        if self.every_chunks:
            out |= {s for c, s in enumerate(ends, 1) if c % self.every_chunks == 0}
        if self.final:
            out.add(ends[-1])
        return sorted(out)


SNAPSHOT_DIR = "snapshots"


def snapshot_path(workdir: str, step: int) -> str:
    return os.path.join(workdir, SNAPSHOT_DIR, f"step_{int(step):09d}.npz")


InitState = Callable[[jax.Array, Mapping[str, jax.Array], jax.Array], TrainState]


def start_from(trainer: Trainer, params: Mapping[str, np.ndarray],
               key_fold: int | None = None) -> InitState:
    """``init_state`` that starts seed ``i`` from row ``i`` of stacked ``params``
    (``{name: [n_seeds, ...]}``) with a fresh optimizer and step 0: a branch of an earlier run.
    ``key_fold`` folds an integer into each seed's key so the branch draws new batches."""
    stacked = {k: jnp.asarray(v) for k, v in params.items()}

    def init_state(key, hparams, seed_index):
        if key_fold is not None:
            key = jax.random.fold_in(key, key_fold)
        return trainer.init_from_params(key, hparams, {k: v[seed_index]
                                                       for k, v in stacked.items()})

    return init_state
