"""Part (a) of the accelerator run: model-steps/s of the Assign-and-Add model against the number
of seeds S sharing the device, batched by ``vmap`` and looped by ``lax.map`` (``run_sweep``'s two
``vectorize`` modes), in float32 and (where the device runs it) bfloat16, plus the final-accuracy
parity of a short Assign-and-Add run in both dtypes.

``python -m experiments.benchmark.throughput --out=FILE.json [--tiny] [--time_limit_s=T]``
writes ``FILE.json`` after every measurement, so a run stopped at its time limit keeps what it
measured. Measurements come in priority order and none starts after ``time_limit_s``.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from experiments.benchmark import bench, device

VECTORIZE = ("vmap", "map")


@dataclasses.dataclass(frozen=True)
class Settings:
    sizes: tuple[int, ...]   # seeds S per device
    steps: int               # training steps per timed call
    batch: int
    repeats: int             # timed calls (the best is kept)
    tiny: bool               # the tiny model widths (bench.TINY_MODEL)
    parity_steps: int        # the short Assign-and-Add run of the parity check
    parity_seeds: int


FULL = Settings(sizes=(1, 16, 64, 256), steps=50, batch=512, repeats=3, tiny=False,
                parity_steps=1000, parity_seeds=4)
# One size at test scale: S = 1 is the same vmap program at batch 1, and each size more costs the
# suite four compiles.
TINY = Settings(sizes=(2,), steps=2, batch=16, repeats=1, tiny=True, parity_steps=4,
                parity_seeds=2)


def plan(sizes: tuple[int, ...], dtypes: tuple[str, ...]) -> list[tuple[str, str, int]]:
    """``(vectorize, dtype, S)`` in the order they run: the batched sweep in every dtype first
    (the curve over S is the main result), then the loop. One seed is the same program either
    way, so ``map`` skips S = 1."""
    out = [("vmap", d, s) for d in dtypes for s in sizes]
    return out + [("map", d, s) for d in dtypes for s in sizes if s > 1]


def accuracy_parity(settings: Settings, dtypes: tuple[str, ...]) -> dict[str, Any]:
    """Final accuracy on the phase pools of a short Assign-and-Add run (its CPU config's model
    and data; tiny config with ``--tiny``) in each dtype, same seeds and batches;
    ``max_abs_diff``: the largest gap of the seed-mean accuracy to float32 over the pools."""
    from experiments.assign_add import run as aa_run
    from experiments.assign_add.configs import cpu, tiny
    from mechjax.sweeps.sweep import run_sweep
    from mechjax.training.train import make_train

    config = (tiny if settings.tiny else cpu).get_config()
    config.n_seeds = settings.parity_seeds
    config.train.steps = settings.parity_steps
    config.train.eval_every = settings.parity_steps
    setup = aa_run.build(aa_run.SCHEMA.validate(config))
    out: dict[str, Any] = {"steps": settings.parity_steps, "seeds": setup.seeds}
    # the pools that define the three phases, and no mechanism measures: parity compares
    # accuracy, and every pool more is compiled into the program
    pools = tuple(sorted({metric[4:] for metric, _ in setup.phases.values()
                          if metric.startswith("acc/")}))
    for dtype in dtypes:
        trainer = make_train(setup.trainer.task, setup.model_cfg, dataclasses.replace(
            setup.trainer.train_cfg, compute_dtype=dtype, eval_pools=pools))
        t0 = time.perf_counter()
        result = run_sweep(trainer, setup.seeds, setup.hparams, log_every_chunk=False)
        m = result.metrics_at(grid=0)
        out[dtype] = {"seconds": time.perf_counter() - t0,
                      "acc": {k[4:]: float(np.mean(v[:, -1])) for k, v in sorted(m.items())
                              if k.startswith("acc/")}}
    for dtype in dtypes[1:]:
        out[f"max_abs_diff/{dtype}"] = max(abs(out[dtype]["acc"][k] - out["float32"]["acc"][k])
                                           for k in out["float32"]["acc"])
    return out


def run(settings: Settings, out_path: str, time_limit_s: float) -> dict[str, Any]:
    """Every measurement of ``plan`` (then the parity check) that starts within
    ``time_limit_s``; the result is rewritten to ``out_path`` after each one."""
    from mechjax.io import write_json

    info = device.describe()
    dtypes = ("float32", "bfloat16") if info["bf16"] else ("float32",)
    result: dict[str, Any] = {"device": info, "settings": dataclasses.asdict(settings),
                              "rows": [], "skipped": [], "parity": None,
                              "time_limit_s": time_limit_s}
    t0 = time.perf_counter()
    late = lambda: time.perf_counter() - t0 > time_limit_s  # noqa: E731
    for vectorize, dtype, seeds in plan(settings.sizes, dtypes):
        if late():
            result["skipped"].append(f"{vectorize} {dtype} S={seeds}")
            continue
        result["rows"].append(bench.measure_jax(
            f"sweep_{vectorize}", settings.steps, seeds, settings.batch, settings.repeats,
            dtype=dtype, tiny=settings.tiny))
        write_json(out_path, result)
    if late():
        result["skipped"].append("parity")
    else:
        result["parity"] = accuracy_parity(settings, dtypes)
    result["seconds"] = time.perf_counter() - t0
    write_json(out_path, result)
    return result


if __name__ == "__main__":
    from absl import app, flags

    _OUT = flags.DEFINE_string("out", None, "the JSON file to write", required=True)
    _TINY = flags.DEFINE_bool("tiny", False, "tiny sizes (a CPU check of every code path)")
    _LIMIT = flags.DEFINE_float("time_limit_s", 150.0, "start no measurement after this",
                                lower_bound=0.0)
    app.run(lambda argv: run(TINY if _TINY.value else FULL, _OUT.value, _LIMIT.value) and None)
