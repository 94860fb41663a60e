"""A sweep's workdir, read back: ``run = runs.open(workdir)``.

    run = runs.open("runs/quickstart")
    run.seeds, run.hparams, run.model_cfg        # what was trained
    run.metrics["acc/test"]                       # [n_seeds, n_grid, n_evals], see run.steps
    run.steps_saved                               # steps whose parameters were kept
    params = run.params(seed=3, step=run.steps_saved[-1])   # one model, TransformerLens names

A sweep of a Flax model (``mechjax.models.flax_adapter``) opens the same way: ``run.model_cfg`` is
its ``FlaxConfig`` and ``run.params`` the flat ``{module path: array}`` dict
(``flax_adapter.to_module`` turns it back into the module).

Everything comes from the files ``mechjax.sweeps.sweep.run_sweep`` writes into its workdir
(``sweep.json``, ``model_config.json``, ``train_config.json``, ``metrics.npz``,
``snapshots/step_<step>.npz``) plus the experiment's ``config.json`` and ``summary.json``, so no
experiment module is imported. Reading is read-only and takes no lock: every file is replaced
atomically by the writer, so a running or crashed run opens as far as it got.

One layout for every experiment: ``metrics[name]`` is ``[n_seeds, n_grid, n_evals]`` (a run
without a grid has ``n_grid = 1``; ``metrics_at(grid=0)`` drops the axis), ``steps`` is
``[n_evals]``, ``hparams[name]`` is ``[n_grid]``. An experiment with several sweeps (for
example ``grokking_law``'s ``omega_sweep`` and ``p_sweep/p<p>``) opens one of them by name:
``runs.open(workdir, "omega_sweep")``; ``runs.sweeps(workdir)`` lists them.
"""
from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from mechjax import filecheck
from mechjax.models.config import ModelConfig
from mechjax.sweeps.snapshots import SNAPSHOT_DIR
from mechjax.sweeps.sweep import METRICS_FILE, MODEL_FILE, SWEEP_FILE, TRAIN_FILE
from mechjax.training.train import TrainConfig
from mechjax.filecheck import RunError
from mechjax.sweeps import run_files
from mechjax.sweeps.run_files import train_config_from_dict  # noqa: F401 (was defined here)
from mechjax.sweeps.workdir import CONFIG_FILE

if TYPE_CHECKING:
    from mechjax.models.flax_adapter import FlaxConfig

SUMMARY_FILE = "summary.json"




def sweeps(workdir: str) -> list[str]:
    """Sweep folders under ``workdir`` (relative paths; ``"."`` for the workdir itself)."""
    found = []
    for folder, dirs, files in os.walk(workdir):
        # never into parameter snapshots or orbax's numbered checkpoint folders
        dirs[:] = sorted(d for d in dirs if d != SNAPSHOT_DIR and not d.split(".")[0].isdigit())
        if SWEEP_FILE in files:
            found.append(os.path.relpath(folder, workdir))
    return sorted(found)


def open(workdir: str, sweep: str | None = None) -> "Run":  # noqa: A001 (runs.open reads well)
    """The sweep in ``workdir`` (or its sub-folder ``sweep``), read-only."""
    if not os.path.isdir(workdir):
        raise RunError(f"workdir {workdir!r} is not a folder")
    if sweep is not None:
        path = os.path.join(workdir, sweep)
        if not os.path.exists(os.path.join(path, SWEEP_FILE)):
            raise RunError(f"{path!r} holds no sweep ({SWEEP_FILE} missing); sweeps in "
                           f"{workdir!r}: {sweeps(workdir)}")
    elif os.path.exists(os.path.join(workdir, SWEEP_FILE)):
        path = workdir
    else:
        found = sweeps(workdir)
        if len(found) != 1:
            raise RunError(f"workdir {workdir!r} holds {len(found)} sweeps {found}; name one: "
                           "runs.open(workdir, sweep=...)" if found else
                           f"workdir {workdir!r} holds no sweep ({SWEEP_FILE} is written when "
                           "a sweep starts)")
        path = os.path.join(workdir, found[0])
    return _check_files(Run(os.path.normpath(path), os.path.normpath(workdir)))


def _check_files(run: "Run") -> "Run":
    """The run's JSON files that exist are read and checked now, so a broken one is named at
    ``open``; the arrays (``metrics.npz``, parameter snapshots) are checked as they are read (a
    run with one bad snapshot still opens, and says which step is unreadable when asked)."""
    run._sweep  # noqa: B018 (read for its checks)
    for name in (MODEL_FILE, TRAIN_FILE):
        if os.path.exists(os.path.join(run.path, name)):
            run.model_cfg if name == MODEL_FILE else run.train_cfg  # noqa: B018
    run.config, run.summary  # noqa: B018
    return run


@dataclasses.dataclass(frozen=True)
class Run:
    """One sweep's folder (``path``) inside an experiment's workdir (``root``). Every accessor
    reads its file through ``mechjax.filecheck`` (a broken file raises ``RunError`` naming it)."""

    path: str
    root: str

    # ---- what was trained ----------------------------------------------------------------------
    @property
    def _sweep(self) -> dict[str, Any]:
        return filecheck.read_cached(os.path.join(self.path, SWEEP_FILE), run_files.read_sweep)

    @property
    def config(self) -> dict[str, Any] | None:
        """The experiment's config (``config.json`` of the workdir), None if it has none."""
        return self._experiment_json(CONFIG_FILE)

    @property
    def model_cfg(self) -> "ModelConfig | FlaxConfig":
        return filecheck.read_cached(os.path.join(self.path, MODEL_FILE),
                                    run_files.read_model_config)

    @property
    def train_cfg(self) -> TrainConfig:
        return filecheck.read_cached(os.path.join(self.path, TRAIN_FILE),
                                    run_files.read_train_config)

    @property
    def seeds(self) -> list[int]:
        return [int(s) for s in self._sweep["seeds"]]

    @property
    def hparams(self) -> dict[str, np.ndarray]:
        """The grid: ``{name: [n_grid]}`` for every traced hyperparameter."""
        return {k: np.asarray(v, np.float32) for k, v in self._sweep["hparams"].items()}

    @property
    def n_grid(self) -> int:
        return len(next(iter(self._sweep["hparams"].values())))

    @property
    def summary(self) -> dict[str, Any] | None:
        """The experiment's ``summary.json``; None while the run has not finished."""
        return self._experiment_json(SUMMARY_FILE)

    def _experiment_json(self, name: str) -> dict[str, Any] | None:
        """A file the experiment writes beside its sweep (in the sweep's folder or the root)."""
        for folder in (self.path, self.root):
            if os.path.exists(os.path.join(folder, name)):
                return filecheck.read_json(os.path.join(folder, name), "run file", RunError)
        return None

    # ---- metrics ---------------------------------------------------------------------------------
    @property
    def metrics(self) -> dict[str, np.ndarray]:
        """``{name: [n_seeds, n_grid, n_evals_done]}``, re-read on every access (a running
        sweep rewrites the file after each chunk); empty before the first chunk ends."""
        path = os.path.join(self.path, METRICS_FILE)
        if not os.path.exists(path):
            return {}
        sweep = self._sweep
        z = run_files.read_metrics(path, sweep["seeds"], len(next(iter(sweep["hparams"].values()))))
        return {k[len("metrics/"):]: v for k, v in z.items() if k.startswith("metrics/")}

    @property
    def steps(self) -> np.ndarray:
        """``[n_evals_done]``: the step after each evaluation interval."""
        m = self.metrics
        return m["step"][0, 0].astype(np.int64) if m else np.zeros((0,), np.int64)

    def metrics_at(self, grid: int = 0) -> dict[str, np.ndarray]:
        """Metrics of one grid point, ``[n_seeds, n_evals_done]`` each."""
        self._check_grid(grid)
        return {k: v[:, grid] for k, v in self.metrics.items()}

    # ---- parameters ------------------------------------------------------------------------------
    @property
    def steps_saved(self) -> list[int]:
        """Steps whose parameters can be opened (the sweep's snapshot policy), ascending."""
        folder = os.path.join(self.path, SNAPSHOT_DIR)
        if not os.path.isdir(folder):
            return []
        return sorted(int(n[len("step_"):-len(".npz")]) for n in os.listdir(folder)
                      if n.startswith("step_") and n.endswith(".npz") and ".tmp" not in n)

    def stacked_params(self, step: int | None = None, grid: int | None = 0
                       ) -> dict[str, np.ndarray]:
        """Every seed's parameters at ``step`` (default: the latest saved): ``{name: [n_seeds,
        ...]}`` for one grid point, or ``[n_seeds, n_grid, ...]`` with ``grid=None``."""
        path = self._snapshot_path(step)
        if grid is not None:
            self._check_grid(grid)
        sweep = self._sweep
        z = run_files.read_snapshot(path, self.model_cfg, len(sweep["seeds"]),
                                    len(next(iter(sweep["hparams"].values()))))
        return {k: v if grid is None else v[:, grid] for k, v in z.items()}

    def params(self, seed: int, step: int | None = None, grid: int = 0) -> dict[str, np.ndarray]:
        """One model's parameters, no seed or grid axis (TransformerLens names and shapes; a Flax
        model's module paths and shapes)."""
        i = self.seed_index(seed)
        return {k: v[i] for k, v in self.stacked_params(step, grid).items()}

    def seed_index(self, seed: int) -> int:
        seeds = self.seeds
        if seed not in seeds:
            raise RunError(f"seed={seed!r} is not in this run; seeds: {seeds}")
        return seeds.index(seed)

    def export_tl(self, seed: int, step: int | None, path: str, grid: int = 0) -> str:
        """Write one model for TransformerLens into folder ``path``: ``state_dict.safetensors`` and
        ``hooked_transformer_config.json`` (see ``mechjax.interop.tl_export``; written without torch).
        ``tl_export.load(path)`` gives a ``HookedTransformer`` (3.x) or ``TransformerBridge`` (4.x). Returns ``path``."""
        from mechjax.interop import tl_export
        if not isinstance(self.model_cfg, ModelConfig):
            raise RunError(f"{self.path!r} holds a {self.model_cfg.module} model; only the "
                           "built-in transformer exports to TransformerLens")
        return tl_export.write(self.params(seed, step, grid), self.model_cfg, path)

    # ---- checks ------------------------------------------------------------------------------
    def _snapshot_path(self, step: int | None) -> str:
        """The snapshot file of ``step``; a step named exactly whose file is there needs no
        listing of the folder (the listing is for ``None`` and for the message)."""
        if isinstance(step, (int, np.integer)) and not isinstance(step, bool):
            path = os.path.join(self.path, SNAPSHOT_DIR, f"step_{int(step):09d}.npz")
            if step >= 0 and os.path.isfile(path):
                return path
        return os.path.join(self.path, SNAPSHOT_DIR, f"step_{self._check_step(step):09d}.npz")

    def _check_step(self, step: int | None) -> int:
        saved = self.steps_saved
        if not saved:
            raise RunError(f"{self.path!r} has no parameter snapshots yet (they are written as "
                           "the sweep reaches the steps its SnapshotPolicy names)")
        if step is None:
            return saved[-1]
        if int(step) not in saved:
            raise RunError(f"step={step!r} has no saved parameters; saved steps: {saved}")
        return int(step)

    def _check_grid(self, grid: int) -> None:
        n = self.n_grid
        if not isinstance(grid, (int, np.integer)) or not 0 <= grid < n:
            raise RunError(f"grid={grid!r}: this run has {n} grid point(s), allowed 0..{n - 1}")
