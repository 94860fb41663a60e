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

from mechjax import watchdog
from mechjax.io import write_npz
from mechjax.train import Trainer, TrainState
from mechjax.workdir import SaveError

SEED_AXIS = "seed"


@dataclasses.dataclass
class SweepResult:
    """Stacked outcome of a sweep: leading axes ``[n_seeds, n_grid]`` everywhere."""

    state: TrainState
    metrics: dict[str, np.ndarray]   # each [n_seeds, n_grid, n_evals]
    seeds: list[int]
    hparams: dict[str, np.ndarray]   # each [n_grid]


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


VECTORIZE = ("auto", "vmap", "map")


def resolve_vectorize(vectorize: str) -> str:
    """``auto``: a per-device loop on CPUs, batching elsewhere.

    Measured on 2 CPU cores at the Assign-and-Add size (BUILD_NOTES.md): 16 seeds by ``vmap``
    ran at 0.85-0.90x the per-model speed of a sequential loop, by ``lax.map`` at 1.08x; on an
    accelerator, batching the seeds is what fills the device.
    """
    if vectorize not in VECTORIZE:
        raise ValueError(f"vectorize={vectorize!r}: allowed {VECTORIZE}")
    if vectorize == "auto":
        return "map" if jax.default_backend() == "cpu" else "vmap"
    return vectorize


def sweep_program(trainer: Trainer, chunk: int, mesh: jax.sharding.Mesh,
                  vectorize: str = "auto") -> Callable:
    """``(state [S, G, ...], hparams [G]) -> (state, metrics [S, G, chunk])``, jitted.

    ``shard_map`` gives each device its own block of seeds (seeds never communicate). Within a
    device the seeds are batched by ``vmap`` or run one after another by ``lax.map``
    (``vectorize``): batching shares each matmul across seeds, the loop keeps every matmul the
    size of one model; which is faster depends on the model and the device (see BUILD_NOTES).
    The grid axis is always vmapped.
    """
    vectorize = resolve_vectorize(vectorize)
    over_grid = jax.vmap(lambda state, hp: trainer.run(state, hp, chunk), (0, 0))

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


def log(message: str) -> None:
    """Progress line on stderr (orbax and absl keep their own logs at WARNING)."""
    if jax.process_index() == 0:
        print(f"[mechjax {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _format_seconds(s: float) -> str:
    s = int(max(s, 0))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def run_sweep(trainer: Trainer, seeds: Sequence[int],
              hparams: Mapping[str, Sequence[float]] | None = None,
              workdir: str | None = None, chunk_evals: int | None = None,
              init_state: Callable[[jax.Array, Mapping[str, jax.Array]], TrainState] | None = None,
              log_every_chunk: bool = True, max_to_keep: int = 2,
              on_chunk: Callable[[int, dict[str, np.ndarray]], None] | None = None,
              vectorize: str = "auto",
              on_state: Callable[[int, TrainState], None] | None = None) -> SweepResult:
    """Train every ``seed`` at every grid point of ``hparams`` (``{name: [n_grid]}``).

    Hyperparameters not given take the trainer's defaults. ``chunk_evals`` evaluation intervals
    run per compiled call (default: about 10 chunks). With ``workdir`` the sweep checkpoints after
    every chunk to ``workdir/checkpoints`` and resumes from there. ``init_state(key, hparams)``
    replaces ``trainer.init`` (e.g. to start from loaded weights). ``on_chunk(chunks_done,
    chunk_metrics)`` runs on the host after each chunk is saved (custom logging, early stopping
    by raising). ``vectorize``: how seeds share a device, see ``sweep_program``.
    ``on_state(chunks_done, state)`` gets a host copy of the state after each chunk (leading
    axes ``[n_seeds, n_grid]``, padding dropped), *before* that chunk's checkpoint is saved, so a
    crash in between repeats the chunk and the callback (e.g. parameter snapshots for analysis).
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

    n_evals = trainer.train_cfg.n_evals
    chunk = int(chunk_evals or max(1, -(-n_evals // 10)))
    if chunk <= 0:
        raise ValueError(f"chunk_evals={chunk_evals!r}: must be a positive integer")
    n_chunks = -(-n_evals // chunk)

    mesh = seed_mesh()
    n_dev = mesh.devices.size
    n_pad = -(-len(seeds) // n_dev) * n_dev
    padded = seeds + [seeds[-1]] * (n_pad - len(seeds))  # padding rows are dropped at the end
    keys = np.stack([np.asarray(jax.random.PRNGKey(s)) for s in padded])
    replicated = NamedSharding(mesh, PartitionSpec())
    grid = {k: jax.device_put(jnp.asarray(v), replicated) for k, v in full.items()}
    seed_sharding = NamedSharding(mesh, PartitionSpec(SEED_AXIS))

    init_one = init_state or trainer.init
    init_fn = jax.jit(jax.vmap(jax.vmap(init_one, (None, 0)), (0, None)),
                      out_shardings=seed_sharding)
    run_fn = sweep_program(trainer, chunk, mesh, vectorize)

    state = init_fn(_shard_seeds(keys, mesh), grid)
    metric_shapes = jax.eval_shape(run_fn, state, grid)[1]
    metrics = {k: np.full((n_pad, n_grid, n_chunks * chunk), np.nan, np.float32)
               for k in metric_shapes}

    manager, start = None, 0
    if workdir is not None:
        manager = ocp.CheckpointManager(
            os.path.abspath(os.path.join(workdir, "checkpoints")),
            options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
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

    t0, done_at_start = time.time(), start
    for c in range(start, n_chunks):
        with watchdog.watch(f"training chunk {c + 1}/{n_chunks} of {len(seeds)} seeds"):
            state, chunk_metrics = run_fn(state, grid)
            chunk_metrics = _to_host(chunk_metrics)
        for k, v in chunk_metrics.items():
            metrics[k][:, :, c * chunk:(c + 1) * chunk] = v
        if on_state is not None:
            on_state(c + 1, jax.tree.map(lambda x: x[:len(seeds)], _to_host(state)))
        if manager is not None:
            try:
                manager.save(c + 1, args=ocp.args.StandardSave({"state": state,
                                                                 "metrics": metrics}))
                manager.wait_until_finished()  # raises if the save failed
                if jax.process_index() == 0:  # metrics so far, readable while the sweep runs
                    write_metrics(os.path.join(workdir, "metrics.npz"),
                                  {k: v[:len(seeds), :, :min((c + 1) * chunk, n_evals)]
                                   for k, v in metrics.items()},
                                  full, seeds)
            except Exception as err:  # orbax wraps OS errors in several types
                raise SaveError(workdir, c + 1, n_chunks, manager.latest_step(), err) from err
        if log_every_chunk:
            _log_progress(c + 1, n_chunks, done_at_start, t0, chunk_metrics, trainer,
                          len(seeds) * n_grid)
        if on_chunk is not None:
            on_chunk(c + 1, chunk_metrics)

    real = slice(0, len(seeds))
    n_real_evals = n_evals
    state = jax.tree.map(lambda x: x[real], _to_host(state))
    metrics = {k: v[real, :, :n_real_evals] for k, v in metrics.items()}
    if manager is not None:
        manager.close()
    return SweepResult(state=state, metrics=metrics, seeds=seeds, hparams=full)


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
    """Metrics ``[n_seeds, n_grid, n_evals]``, grid and seeds as one ``.npz`` (atomic write)."""
    arrays = {f"metrics/{k}": np.asarray(v) for k, v in metrics.items()}
    arrays.update({f"hparams/{k}": np.asarray(v) for k, v in hparams.items()})
    arrays["seeds"] = np.asarray(seeds)
    write_npz(path, arrays)


def save_metrics(path: str, result: SweepResult) -> None:
    """The final metrics of a sweep (see ``write_metrics``)."""
    write_metrics(path, result.metrics, result.hparams, result.seeds)
