"""Sweeps and saved runs: a seeds x hyperparameter grid as one compiled program, resumable, and
its workdir read back.

* ``sweep``       -- ``run_sweep``: the grid sharded over devices, chunked, checkpointed, resumed
* ``plan``        -- what a sweep will do, checked before anything compiles
* ``files``, ``log``, ``snapshots`` -- what a sweep writes: run files, progress lines, kept parameters
* ``curves``      -- live curves: every evaluation as TensorBoard events (tensorboardX extra)
* ``runs``        -- ``runs.open(workdir)``: a finished or running sweep read back
* ``run_files``   -- the checks of a workdir's files as ``runs`` reads them
* ``workdir``     -- the run folder: config identity, refusal to mix runs, the compilation cache
* ``distributed`` -- joining a multi-process run through ``jax.distributed``
* ``watchdog``    -- a stall watchdog for long compiled calls
* ``vectorize``, ``timing`` -- how seeds share a device, and timing programs over seeds
"""
from mechjax.sweeps import curves, distributed, runs, timing, watchdog, workdir
from mechjax.sweeps.snapshots import SnapshotPolicy, start_from
from mechjax.sweeps.sweep import SweepResult, grid_product, run_sweep, seed_mesh
from mechjax.sweeps.timing import over_seeds
from mechjax.sweeps.workdir import WorkdirError, enable_compilation_cache

__all__ = ["SnapshotPolicy", "SweepResult", "WorkdirError", "curves", "distributed",
           "enable_compilation_cache", "grid_product", "over_seeds", "run_sweep", "runs",
           "seed_mesh", "start_from", "timing", "watchdog", "workdir"]
