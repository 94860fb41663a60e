"""Run a seeds x hyperparameter grid as one compiled program, in resumable chunks.

The host loop calls one jitted ``vmap(vmap(trainer.run))`` per chunk of evaluations; between
chunks it reports progress with an ETA, and saves an orbax checkpoint of the whole stacked state
(all seeds' parameters, optimizer states, RNG keys, steps) together with the metrics so far. On
start it resumes from the latest complete checkpoint (orbax finalizes a checkpoint by renaming it
into place, so a save interrupted by a crash is never listed).

The seed axis is sharded over every device with ``jax.sharding`` (a 1-D mesh with axis ``seed``),
padded to a multiple of the device count. On CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
gives N devices. Across hosts, call ``jax.distributed.initialize()`` first: the mesh then spans all
processes' devices, each process holds (and computes) only its own slice of seeds, and orbax
writes one checkpoint cooperatively.
"""
from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import time
from typing import Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec

from mechjax import distributed, watchdog
from mechjax.train import Trainer, TrainState
from mechjax.io import write_json, write_npz
from mechjax.snapshots import InitState, SnapshotPolicy, snapshot_path
from mechjax.vectorize import resolve_vectorize
from mechjax.workdir import SaveError

SEED_AXIS = "seed"


@dataclasses.dataclass
class SweepResult:
    """Stacked outcome of a sweep: leading axes ``[n_seeds, n_grid]`` everywhere."""

    state: TrainState
    metrics: dict[str, np.ndarray]   # each [n_seeds, n_grid, n_evals]
    seeds: list[int]
    hparams: dict[str, np.ndarray]   # each [n_grid]
    traces: int = 0                  # times the chunk program was traced (1 = compiled once)
    stopped_early: bool = False      # the stop predicate ended the sweep before the last step

    @property
    def steps(self) -> np.ndarray:
        """``[n_evals]``: the step after each evaluation interval."""
        return self.metrics["step"][0, 0]

    def metrics_at(self, grid: int = 0) -> dict[str, np.ndarray]:
        """Metrics of one grid point, ``[n_seeds, n_evals]`` each."""
        return {k: v[:, grid] for k, v in self.metrics.items()}

    def params_at(self, grid: int = 0) -> dict[str, np.ndarray]:
        """Final parameters of one grid point, ``[n_seeds, ...]`` each."""
        return {k: v[:, grid] for k, v in self.state.params.items()}


def grid_product(**axes: Sequence[float]) -> dict[str, np.ndarray]:
    """Cartesian product of hyperparameter values -> ``{name: [n_grid]}``."""
    names = list(axes)
    points = list(itertools.product(*(list(axes[n]) for n in names)))
    return {n: np.asarray([p[i] for p in points], np.float32) for i, n in enumerate(names)}


def seed_mesh() -> jax.sharding.Mesh:
    """A 1-D mesh over every device. Auto axes: XLA propagates the seed sharding through the
    vmapped program (seeds never interact, so no collectives are needed)."""
    return jax.make_mesh((jax.device_count(),), (SEED_AXIS,),
                         axis_types=(jax.sharding.AxisType.Auto,))


def sweep_program(trainer: Trainer, chunk: int, mesh: jax.sharding.Mesh,
                  vectorize: str = "auto", on_trace: Callable[[], None] | None = None
                  ) -> Callable:
    """``(state [S, G, ...], hparams [G]) -> (state, metrics [S, G, chunk])``, jitted.

    ``shard_map`` gives each device its own block of seeds (seeds never communicate). Within a
    device the seeds are batched by ``vmap`` or run one after another by ``lax.map``
    (``vectorize``): batching shares each matmul across seeds, the loop keeps every matmul the
    size of one model; which is faster depends on the model and the device (see BUILD_NOTES).
    The grid axis is always vmapped. ``on_trace()`` is called each time the program is traced
    (once per compilation).
    """
    vectorize = resolve_vectorize(vectorize)

    def one_run(state, hp):
        if on_trace is not None:
            on_trace()  # Python side effect: runs at trace time only
        return trainer.run(state, hp, chunk)

    over_grid = jax.vmap(one_run, (0, 0))

    def per_device(state, hparams):
        if vectorize == "vmap":
            return jax.vmap(over_grid, (0, None))(state, hparams)
        return jax.lax.map(lambda s: over_grid(s, hparams), state)

    spec = PartitionSpec(SEED_AXIS)
    return jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(spec, PartitionSpec()),
                                 out_specs=spec), donate_argnums=0)


def _shard_seeds(tree, mesh):
    """Place host arrays with a leading seed axis as global arrays sharded over ``seed``."""
    sharding = NamedSharding(mesh, PartitionSpec(SEED_AXIS))

    def put(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

    return jax.tree.map(put, tree)


def _to_host(tree):
    if jax.process_count() > 1:
        tree = multihost_utils.process_allgather(tree, tiled=True)
    return jax.tree.map(np.asarray, jax.device_get(tree))


def log(message: str, every_process: bool = False) -> None:
    """Progress line on stderr (orbax and absl keep their own logs at WARNING); from process 0
    only, unless ``every_process`` (then each line names its process)."""
    if every_process and jax.process_count() > 1:
        message = f"process {jax.process_index()}/{jax.process_count()}: {message}"
    elif jax.process_index() != 0:
        return
    print(f"[mechjax {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def local_seed_rows(sharding: NamedSharding, n_rows: int) -> list[int]:
    """The rows of a seed axis of ``n_rows`` that this process's devices hold (and compute)."""
    rows: set[int] = set()
    for index in sharding.addressable_devices_indices_map((n_rows,)).values():
        rows.update(range(*index[0].indices(n_rows)))
    return sorted(rows)


def _format_seconds(s: float) -> str:
    s = int(max(s, 0))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


SWEEP_FILE, MODEL_FILE, TRAIN_FILE, METRICS_FILE = ("sweep.json", "model_config.json",
                                                    "train_config.json", "metrics.npz")
StopPredicate = Callable[[Mapping[str, np.ndarray]], bool]


def run_sweep(trainer: Trainer, seeds: Sequence[int],
              hparams: Mapping[str, float | Sequence[float]] | None = None,
              workdir: str | None = None, *, chunk_evals: int | None = None,
              init_state: InitState | None = None, stop: StopPredicate | None = None,
              snapshots: SnapshotPolicy | None = None, vectorize: str = "auto",
              log_every_chunk: bool = True) -> SweepResult:
    """Train every ``seed`` at every grid point of ``hparams`` (``{name: value or [n_grid]}``).

    Hyperparameters not given take the trainer's defaults. ``chunk_evals`` evaluation intervals
    run per compiled call (default: about 10 chunks). With ``workdir`` the sweep writes
    ``sweep.json``, ``model_config.json`` and ``train_config.json`` at the start, then after every
    chunk an orbax checkpoint (``checkpoints/``, resumed from on restart), ``metrics.npz`` (the
    metrics so far, see ``write_metrics``) and the parameter snapshots ``snapshots`` asks for
    (default: the final step); ``mechjax.runs.open(workdir)`` reads them back.

    ``init_state(key, hparams, seed_index)`` replaces ``trainer.init``; ``seed_index`` is the
    position of the seed in ``seeds`` (e.g. to start from row ``seed_index`` of saved
    parameters, see ``start_from``). ``stop(metrics_so_far)`` (each ``[n_seeds, n_grid,
    n_evals_done]``) is asked after every chunk, and after a resume: True ends the sweep there
    (``result.stopped_early``). ``vectorize``: how seeds share a device, see ``sweep_program``.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty: give at least one seed")
    defaults = trainer.default_hparams()
    hparams = {k: np.atleast_1d(np.asarray(v, np.float32)) for k, v in (hparams or {}).items()}
    unknown = sorted(set(hparams) - set(defaults))
    if unknown:
        raise ValueError(f"unknown hyperparameters {unknown}; allowed: {sorted(defaults)}")
    n_grid = max([len(v) for v in hparams.values()] or [1])
    bad = {k: len(v) for k, v in hparams.items() if len(v) not in (1, n_grid)}
    if bad:
        raise ValueError(f"hyperparameter arrays must all have length {n_grid} (or 1): {bad}")
    full = {k: np.broadcast_to(hparams.get(k, np.asarray(defaults[k])), (n_grid,)).copy()
            for k in defaults}

    train_cfg = trainer.train_cfg
    n_evals = train_cfg.n_evals
    chunk = int(chunk_evals or max(1, -(-n_evals // 10)))
    if chunk <= 0:
        raise ValueError(f"chunk_evals={chunk_evals!r}: must be a positive integer")
    n_chunks = -(-n_evals // chunk)
    policy = snapshots or SnapshotPolicy()
    snapshot_steps = policy.steps_to_save(train_cfg, chunk)
    chunk_end = policy.chunk_steps(train_cfg, chunk)

    mesh = seed_mesh()
    n_dev = mesh.devices.size
    n_pad = -(-len(seeds) // n_dev) * n_dev
    padded = seeds + [seeds[-1]] * (n_pad - len(seeds))  # padding rows are dropped at the end
    keys = np.stack([np.asarray(jax.random.PRNGKey(s)) for s in padded])
    index = np.minimum(np.arange(n_pad), len(seeds) - 1).astype(np.int32)
    replicated = NamedSharding(mesh, PartitionSpec())
    grid = {k: jax.device_put(jnp.asarray(v), replicated) for k, v in full.items()}
    seed_sharding = NamedSharding(mesh, PartitionSpec(SEED_AXIS))

    init_one = init_state or (lambda key, hp, seed_index: trainer.init(key, hp))
    init_fn = jax.jit(jax.vmap(jax.vmap(init_one, (None, 0, None)), (0, None, 0)),
                      out_shardings=seed_sharding)
    traces = [0]
    run_fn = sweep_program(trainer, chunk, mesh, vectorize,
                           on_trace=lambda: traces.__setitem__(0, traces[0] + 1))

    state = init_fn(_shard_seeds(keys, mesh), grid, _shard_seeds(index, mesh))
    if jax.process_count() > 1:  # which slice of the seeds this process trains
        rows = local_seed_rows(seed_sharding, n_pad)
        mine = [seeds[r] for r in rows if r < len(seeds)]
        pad = sum(r >= len(seeds) for r in rows)
        log(f"trains seeds {mine}" + (f" (+{pad} padding row{'s' * (pad > 1)})" if pad else "")
            + f" on {jax.local_device_count()} of {n_dev} devices", every_process=True)
    metric_shapes = jax.eval_shape(run_fn, state, grid)[1]
    metrics = {k: np.full((n_pad, n_grid, n_chunks * chunk), np.nan, np.float32)
               for k in metric_shapes}
    real = slice(0, len(seeds))
    done_metrics = lambda c: {k: v[real, :, :min(c * chunk, n_evals)] for k, v in metrics.items()}

    manager, start = None, 0
    if workdir is not None:
        _write_run_files(workdir, trainer, seeds, full, chunk, snapshot_steps)
        # Process 0's view decides: another process may look after process 0 wrote the file,
        # and a snapshot gathers from every process, so all must enter it or none.
        if 0 in snapshot_steps and distributed.agree(
                not os.path.exists(snapshot_path(workdir, 0))):
            _save_snapshot(workdir, 0, state, len(seeds))
        manager = ocp.CheckpointManager(
            os.path.abspath(os.path.join(workdir, "checkpoints")),
            options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True,
                                                 enable_async_checkpointing=False))
        latest = manager.latest_step()
        if latest is not None:
            target = {"state": jax.tree.map(ocp.utils.to_shape_dtype_struct, state),
                      "metrics": metrics}
            restored = manager.restore(latest, args=ocp.args.StandardRestore(target))
            state, metrics = restored["state"], {k: np.asarray(v) for k, v in
                                                 restored["metrics"].items()}
            start = latest
            log(f"resumed from the checkpoint after chunk {start}/{n_chunks} "
                f"(step {int(np.asarray(_to_host(state.step)).max())})")

    done = start
    stopped = start > 0 and stop is not None and start < n_chunks and bool(stop(done_metrics(start)))
    t0 = time.time()
    while done < n_chunks and not stopped:
        with watchdog.watch(f"training chunk {done + 1}/{n_chunks} of {len(seeds)} seeds"):
            state, chunk_metrics = run_fn(state, grid)
            chunk_metrics = _to_host(chunk_metrics)
        for k, v in chunk_metrics.items():
            metrics[k][:, :, done * chunk:(done + 1) * chunk] = v
        done += 1
        if workdir is not None:
            try:
                if chunk_end[done - 1] in snapshot_steps:  # before the checkpoint: a crash redoes it
                    _save_snapshot(workdir, chunk_end[done - 1], state, len(seeds))
                manager.save(done, args=ocp.args.StandardSave({"state": state,
                                                                "metrics": metrics}))
                manager.wait_until_finished()  # raises if the save failed
                if jax.process_index() == 0:  # the one metrics file, readable while it runs
                    write_metrics(os.path.join(workdir, METRICS_FILE), done_metrics(done), full,
                                  seeds)
            except Exception as err:  # orbax wraps OS errors in several types
                raise SaveError(workdir, done, n_chunks, manager.latest_step(), err) from err
        if log_every_chunk:
            _log_progress(done, n_chunks, start, t0, chunk_metrics, trainer,
                          len(seeds) * n_grid)
        stopped = stop is not None and done < n_chunks and bool(stop(done_metrics(done)))
    if stopped:
        log(f"stopped after chunk {done}/{n_chunks}: the stop condition holds")

    state = jax.tree.map(lambda x: x[real], _to_host(state))
    if manager is not None:
        if jax.process_index() == 0 and not os.path.exists(os.path.join(workdir, METRICS_FILE)):
            write_metrics(os.path.join(workdir, METRICS_FILE), done_metrics(done), full, seeds)
        manager.close()
        # process 0 writes the files: a process that reads the workdir next (a branch from a
        # snapshot, runs.open) must not look before they are there
        distributed.barrier("mechjax: sweep files written")
    return SweepResult(state=state, metrics=done_metrics(done), seeds=seeds, hparams=full,
                       traces=traces[0], stopped_early=stopped)


def _write_run_files(workdir: str, trainer: Trainer, seeds: list[int],
                     hparams: Mapping[str, np.ndarray], chunk: int,
                     snapshot_steps: list[int]) -> None:
    """What ``mechjax.runs`` needs to rebuild the models without the experiment's code."""
    if jax.process_index() != 0:
        return
    write_json(os.path.join(workdir, MODEL_FILE), trainer.model_cfg.to_dict())
    write_json(os.path.join(workdir, TRAIN_FILE), dataclasses.asdict(trainer.train_cfg))
    write_json(os.path.join(workdir, SWEEP_FILE), {
        "seeds": seeds, "hparams": {k: v.tolist() for k, v in hparams.items()},
        "chunk_evals": chunk, "snapshot_steps": snapshot_steps, "task": trainer.task.name})


def _save_snapshot(workdir: str, step: int, state: TrainState, n_seeds: int) -> None:
    """Parameters ``{name: [n_seeds, n_grid, ...]}`` at ``step`` (atomic write)."""
    params = jax.tree.map(lambda x: x[:n_seeds], _to_host(state.params))
    if jax.process_index() == 0:
        write_npz(snapshot_path(workdir, step), params)


def _log_progress(done: int, total: int, done_at_start: int, t0: float,
                  chunk_metrics: Mapping[str, np.ndarray], trainer: Trainer, n_runs: int) -> None:
    elapsed = time.time() - t0
    per_chunk = elapsed / max(done - done_at_start, 1)
    step = int(np.nanmax(chunk_metrics["step"]))
    steps_per_chunk = trainer.train_cfg.steps * (done - done_at_start) / total
    rate = n_runs * steps_per_chunk / max(elapsed, 1e-9)
    last = np.nanargmax(chunk_metrics["step"][0, 0])  # the last interval that ran steps
    loss = float(np.nanmean(chunk_metrics["train/loss"][..., last]))
    diverged = int(np.sum(chunk_metrics["finite"][..., last] == 0))
    log(f"chunk {done}/{total} | step {min(step, trainer.train_cfg.steps)}/"
        f"{trainer.train_cfg.steps} | {rate:.0f} model-steps/s | elapsed "
        f"{_format_seconds(elapsed)} | ETA {_format_seconds(per_chunk * (total - done))} | "
        f"train/loss {loss:.4f}" + (f" | {diverged} runs diverged" if diverged else ""))


def write_metrics(path: str, metrics: Mapping[str, np.ndarray],
                  hparams: Mapping[str, np.ndarray], seeds: Sequence[int]) -> None:
    """The metrics file of a sweep (atomic write): ``metrics/<name>`` ``[n_seeds, n_grid,
    n_evals]`` (``metrics/step`` holds the step after each evaluation), ``hparams/<name>``
    ``[n_grid]``, ``seeds`` ``[n_seeds]``. Read it with ``mechjax.runs.open``."""
    arrays = {f"metrics/{k}": np.asarray(v) for k, v in metrics.items()}
    arrays.update({f"hparams/{k}": np.asarray(v) for k, v in hparams.items()})
    arrays["seeds"] = np.asarray(seeds)
    write_npz(path, arrays)
