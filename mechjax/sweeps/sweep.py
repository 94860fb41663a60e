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
import time
from typing import Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
from jax.sharding import NamedSharding, PartitionSpec

from mechjax.sweeps import curves as sweep_curves
from mechjax.sweeps import distributed
from mechjax.sweeps import files as sweep_files
from mechjax.sweeps import watchdog
from mechjax.training.compile_options import jit_train
from mechjax.sweeps.snapshots import InitState, SnapshotPolicy, snapshot_path
from mechjax.sweeps.files import (METRICS_FILE, MODEL_FILE, SWEEP_FILE,  # noqa: F401 (API)
                                 TRAIN_FILE, write_metrics)
from mechjax.sweeps.log import log, log_local_seeds, log_progress
from mechjax.sweeps.plan import SweepPlan, padded_seed_rows, plan_sweep
from mechjax.training.train import Trainer, TrainState
from mechjax.sweeps.vectorize import resolve_vectorize
from mechjax.sweeps.workdir import CONFIG_FILE, SaveError, clear

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
    """``(state [S, G, ...], hparams [G], total) -> (state, metrics [S, G, chunk])``, jitted.

    ``total`` (int32 scalar, ``trainer.total_steps()``) is the step count the runs stop at; it
    is an argument, not a constant, so sweeps whose trainers differ only in ``steps`` (the
    branches of an experiment) are one program, compiled once (a persistent-cache hit).
    ``shard_map`` gives each device its own block of seeds (seeds never communicate). Within a
    device the seeds are batched by ``vmap`` or run one after another by ``lax.map``
    (``vectorize``): batching shares each matmul across seeds, the loop keeps every matmul the
    size of one model; which is faster depends on the model and the device (docs/design.md).
    The grid axis is always vmapped. ``on_trace()`` is called each time the program is traced
    (once per compilation).
    """
    vectorize = resolve_vectorize(vectorize)

    def one_run(state, hp, total):
        if on_trace is not None:
            on_trace()  # Python side effect: runs at trace time only
        return trainer.run(state, hp, chunk, total)

    over_grid = jax.vmap(one_run, (0, 0, None))

    def per_device(state, hparams, total):
        if vectorize == "vmap":
            return jax.vmap(over_grid, (0, None, None))(state, hparams, total)
        return jax.lax.map(lambda s: over_grid(s, hparams, total), state)

    spec = PartitionSpec(SEED_AXIS)
    return jit_train(jax.shard_map(per_device, mesh=mesh,
                                   in_specs=(spec, PartitionSpec(), PartitionSpec()),
                                   out_specs=spec), trainer, donate_argnums=0)


def _shard_seeds(tree, mesh):
    """Place host arrays with a leading seed axis as global arrays sharded over ``seed``."""
    sharding = NamedSharding(mesh, PartitionSpec(SEED_AXIS))

    def put(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

    return jax.tree.map(put, tree)


def local_seed_rows(sharding: NamedSharding, n_rows: int) -> list[int]:
    """The rows of a seed axis of ``n_rows`` that this process's devices hold (and compute)."""
    rows: set[int] = set()
    for index in sharding.addressable_devices_indices_map((n_rows,)).values():
        rows.update(range(*index[0].indices(n_rows)))
    return sorted(rows)


StopPredicate = Callable[[Mapping[str, np.ndarray]], bool]


@dataclasses.dataclass
class _Progress:
    """The host side of a running sweep: state, metrics buffer [n_pad, n_grid, n_chunks *
    chunk], chunks done."""

    plan: SweepPlan
    state: TrainState
    metrics: dict[str, np.ndarray]
    done: int = 0

    def metrics_so_far(self) -> dict[str, np.ndarray]:
        """Each ``[n_seeds, n_grid, n_evals_done]`` (padding rows dropped)."""
        p = self.plan
        n = min(self.done * p.chunk, p.n_evals)
        return {k: v[:len(p.seeds), :, :n] for k, v in self.metrics.items()}


def run_sweep(trainer: Trainer, seeds: Sequence[int],
              hparams: Mapping[str, float | Sequence[float]] | None = None,
              workdir: str | None = None, *, chunk_evals: int | None = None,
              init_state: InitState | None = None, stop: StopPredicate | None = None,
              snapshots: SnapshotPolicy | None = None, vectorize: str = "auto",
              log_every_chunk: bool = True, overwrite: bool = False,
              curves: bool | None = None) -> SweepResult:
    """Train every ``seed`` at every grid point of ``hparams`` (``{name: value or [n_grid]}``).

    Hyperparameters not given take the trainer's defaults. ``chunk_evals`` evaluation intervals
    run per compiled call (default: about 10 chunks). With ``workdir`` the sweep writes
    ``sweep.json``, ``model_config.json`` and ``train_config.json`` at the start, then after every
    chunk an orbax checkpoint (``checkpoints/``, resumed from on restart), ``metrics.npz`` (the
    metrics so far, see ``write_metrics``) and the parameter snapshots ``snapshots`` asks for
    (default: the final step); ``mechjax.sweeps.runs.open(workdir)`` reads them back. A workdir
    that holds another run (other model or train config, task, seeds, hyperparameter grid, chunks
    or snapshot steps) is refused before anything is compiled or written; ``overwrite=True``
    deletes everything in a workdir that holds a sweep and starts afresh.

    ``init_state(key, hparams, seed_index)`` replaces ``trainer.init``; ``seed_index`` is the
    position of the seed in ``seeds`` (e.g. to start from row ``seed_index`` of saved
    parameters, see ``start_from``). ``stop(metrics_so_far)`` (each ``[n_seeds, n_grid,
    n_evals_done]``) is asked after every chunk, and after a resume: True ends the sweep there
    (``result.stopped_early``). ``vectorize``: how seeds share a device, see ``sweep_program``.

    ``curves``: TensorBoard event files of every evaluation, one run per seed and grid point, in
    ``WORKDIR/tb`` (``mechjax.sweeps.curves``), written by process 0 after each chunk. ``None``
    (the default) writes them when a workdir is given and ``tensorboardX`` is installed:
    watching a long sweep live is what curves are for, they cost little next to training
    (scalars only, a few ms per chunk), and without the optional package the sweep runs as
    before. ``True`` requires them (an error naming the pip command if tensorboardX is
    missing), ``False`` writes none.
    """
    plan = plan_sweep(trainer, seeds, hparams, chunk_evals, snapshots)
    if workdir is not None:
        _claim_workdir(workdir, trainer, plan, overwrite)
    writer = sweep_curves.open_curves(curves, workdir, plan.seeds, plan.n_grid)
    mesh = seed_mesh()
    traces = [0]
    run_fn = sweep_program(trainer, plan.chunk, mesh, vectorize,
                           on_trace=lambda: traces.__setitem__(0, traces[0] + 1))
    grid = {k: jax.device_put(jnp.asarray(v), NamedSharding(mesh, PartitionSpec()))
            for k, v in plan.hparams.items()}
    run = _start(trainer, plan, mesh, grid, run_fn, init_state)
    manager = None
    if workdir is not None:
        manager = _open_workdir(workdir, trainer, plan, run)
        _write_curves(writer, run, 0)  # a resume: what a killed run saved but did not write
    start = run.done
    stopped = (start > 0 and stop is not None and start < plan.n_chunks
               and bool(stop(run.metrics_so_far())))
    t0 = time.time()
    while run.done < plan.n_chunks and not stopped:
        with watchdog.watch(f"training chunk {run.done + 1}/{plan.n_chunks} of "
                            f"{len(plan.seeds)} seeds"):
            run.state, chunk_metrics = run_fn(run.state, grid, trainer.total_steps())
            chunk_metrics = sweep_files.to_host(chunk_metrics)
        for k, v in chunk_metrics.items():
            run.metrics[k][:, :, run.done * plan.chunk:(run.done + 1) * plan.chunk] = v
        run.done += 1
        if manager is not None:
            _save_chunk(workdir, manager, run)
            _write_curves(writer, run, run.done - 1)
        if log_every_chunk:
            log_progress(run.done, plan.n_chunks, start, t0, chunk_metrics,
                         trainer.train_cfg.steps, len(plan.seeds) * plan.n_grid)
        stopped = (stop is not None and run.done < plan.n_chunks
                   and bool(stop(run.metrics_so_far())))
    if stopped:
        log(f"stopped after chunk {run.done}/{plan.n_chunks}: the stop condition holds")
    return _finish(workdir, manager, run, traces[0], stopped)


def _start(trainer: Trainer, plan: SweepPlan, mesh: jax.sharding.Mesh, grid, run_fn,
           init_state: InitState | None) -> _Progress:
    """Every seed's initial state, sharded over the seed axis, and an empty metrics buffer."""
    keys, index = padded_seed_rows(plan.seeds, mesh.devices.size)
    seed_sharding = NamedSharding(mesh, PartitionSpec(SEED_AXIS))
    init_one = init_state or (lambda key, hp, seed_index: trainer.init(key, hp))
    init_fn = jax.jit(jax.vmap(jax.vmap(init_one, (None, 0, None)), (0, None, 0)),
                      out_shardings=seed_sharding)
    state = init_fn(_shard_seeds(keys, mesh), grid, _shard_seeds(index, mesh))
    if jax.process_count() > 1:  # which slice of the seeds this process trains
        log_local_seeds(plan.seeds, local_seed_rows(seed_sharding, len(keys)), mesh.devices.size)
    metric_shapes = jax.eval_shape(run_fn, state, grid, trainer.total_steps())[1]
    metrics = {k: np.full((len(keys), plan.n_grid, plan.n_chunks * plan.chunk), np.nan,
                          np.float32) for k in metric_shapes}
    return _Progress(plan, state, metrics)


def _claim_workdir(workdir: str, trainer: Trainer, plan: SweepPlan, overwrite: bool) -> None:
    """Refuse a workdir holding another run, or clear it with ``overwrite``. This comes before
    the checkpoint manager: one that is opened and then abandoned leaves orbax's threads to
    print tracebacks at exit, and restoring another run's checkpoint would succeed silently
    wherever the shapes agree."""
    if not overwrite:  # every process checks, so each refuses by itself
        sweep_files.check_same_run(workdir, sweep_files.run_files(
            trainer, plan.seeds, plan.hparams, plan.chunk, plan.snapshot_steps))
        return
    if distributed.agree(sweep_files.holds_run(workdir)):
        if jax.process_index() == 0:
            clear(workdir, last=(SWEEP_FILE, CONFIG_FILE))
        distributed.barrier("mechjax: sweep workdir cleared")
        log(f"overwrite: deleted the run in {workdir}")


def _open_workdir(workdir: str, trainer: Trainer, plan: SweepPlan, run: _Progress):
    """Resume from the latest checkpoint (``run`` is updated in place), then write the run files
    and the step-0 snapshot; returns the checkpoint manager. The checkpoint is restored (and
    checked) first, so a broken one stops the sweep before it writes anything."""
    manager = sweep_files.checkpoint_manager(workdir)
    state, metrics, done = sweep_files.restore(manager, run.state, run.metrics)
    sweep_files.write_run_files(workdir, trainer, plan.seeds, plan.hparams, plan.chunk,
                                plan.snapshot_steps)
    # Process 0's view decides: another process may look after process 0 wrote the file,
    # and a snapshot gathers from every process, so all must enter it or none.
    if 0 in plan.snapshot_steps and distributed.agree(
            not os.path.exists(snapshot_path(workdir, 0))):
        sweep_files.save_snapshot(workdir, 0, run.state, len(plan.seeds))  # the initial state
    run.state, run.metrics, run.done = state, metrics, done
    if run.done:
        step = int(np.asarray(sweep_files.to_host(run.state.step)).max())
        log(f"resumed from the checkpoint after chunk {run.done}/{plan.n_chunks} (step {step})")
    return manager


def _save_chunk(workdir: str, manager, run: _Progress) -> None:
    """The snapshot (if the policy names this chunk's step), the checkpoint, the metrics file."""
    plan, done = run.plan, run.done
    try:
        if plan.chunk_end[done - 1] in plan.snapshot_steps:  # before the checkpoint: a crash redoes it
            sweep_files.save_snapshot(workdir, plan.chunk_end[done - 1], run.state,
                                      len(plan.seeds))
        manager.save(done, args=ocp.args.StandardSave({"state": run.state,
                                                        "metrics": run.metrics}))
        manager.wait_until_finished()  # raises if the save failed
        if jax.process_index() == 0:
            sweep_files.write_manifest(manager, done)  # what a resume checks first
            # the one metrics file, readable while it runs
            write_metrics(os.path.join(workdir, METRICS_FILE), run.metrics_so_far(),
                          plan.hparams, plan.seeds)
    except Exception as err:  # orbax wraps OS errors in several types
        raise SaveError(workdir, done, plan.n_chunks, manager.latest_step(), err) from err


def _write_curves(writer: sweep_curves.CurveWriter | None, run: _Progress, chunk: int) -> None:
    """The evaluations from chunk ``chunk`` on as TensorBoard events (after the checkpoint that
    holds them, so a resume rewrites nothing it restores)."""
    if writer is not None:
        new = {k: v[..., chunk * run.plan.chunk:] for k, v in run.metrics_so_far().items()}
        writer.write(new, new["step"])


def _finish(workdir: str | None, manager, run: _Progress, traces: int,
            stopped: bool) -> SweepResult:
    """The result on the host (padding rows dropped); the metrics file of a sweep that had
    nothing left to run; every process waits until process 0 has written its files."""
    plan = run.plan
    state = jax.tree.map(lambda x: x[:len(plan.seeds)], sweep_files.to_host(run.state))
    if manager is not None:
        path = os.path.join(workdir, METRICS_FILE)
        if jax.process_index() == 0 and not os.path.exists(path):
            write_metrics(path, run.metrics_so_far(), plan.hparams, plan.seeds)
        manager.close()
        # process 0 writes the files: a process that reads the workdir next (a branch from a
        # snapshot, runs.open) must not look before they are there
        distributed.barrier("mechjax: sweep files written")
    return SweepResult(state=state, metrics=run.metrics_so_far(), seeds=plan.seeds,
                       hparams=plan.hparams, traces=traces, stopped_early=stopped)
