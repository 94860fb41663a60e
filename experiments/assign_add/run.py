"""The Assign-and-Add training job (Assign-and-Add paper): many seeds in one compiled program, the
three phases per seed, generalization on the exhaustive sets, the mechanism of every final model,
figures and summary.

Data flow: config -> (task, trainer with ``eval_fn``) -> ``run_sweep`` (per evaluation: accuracy
on every pool, the seven progress measures and the QK2-gradient measures, per seed) -> metrics
``[n_seeds, n_evals]`` -> phase steps per seed -> final params ``[n_seeds, ...]`` -> exhaustive
accuracies and ``mechanism_summary`` batched over seeds -> figures and ``summary.json``.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from experiments.assign_add import analysis as an
from mechjax.cli import experiment
from mechjax.studies import assign_add_final as final_mod
from mechjax.studies import assign_add_mech as mech
from mechjax.analysis.seeds import seed_stats
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.plots import assign_add as plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.snapshots import SnapshotPolicy
from mechjax.sweeps.sweep import SweepResult, log, run_sweep
from mechjax.tasks import assign_add as aa
from mechjax.training.train import Trainer, make_train
from mechjax.io import write_json

from experiments.assign_add.schema import SCHEMA

PHASES = ("phase1", "phase2", "phase3")


# ------------------------------------------------------------------------------------------------
# Config -> objects (every check before anything is compiled or written)
# ------------------------------------------------------------------------------------------------


def make_split(task_cfg: Mapping[str, Any]) -> aa.PairSplit:
    seed = task_cfg["split_seed"]
    return aa.authors_split(seed) if task_cfg["split"] == "authors" else aa.seeded_split(seed)


def model_config(values: Mapping[str, Any]) -> ModelConfig:
    """The paper's architecture with the widths of ``values`` (the schema's ``MODEL`` keys)."""
    base = aa.model_config().to_dict()
    base.update(experiment.as_dict(values))
    return experiment.model_config(base)


@dataclasses.dataclass
class Setup:
    trainer: Trainer
    hparams: dict[str, jax.Array]
    seeds: list[int]
    model_cfg: ModelConfig
    split: aa.PairSplit
    f: float
    analysis: dict[str, Any]
    phases: dict[str, tuple[str, float]]


def build(config) -> Setup:
    """Everything derived from the checked ``config`` (the relations between keys checked
    here), before any compilation or file write."""
    task_cfg, ana = config.task, experiment.as_dict(config.analysis)
    phase_cfg = config.phases
    seeds = experiment.seeds(config)
    batch_size, pool_size, f, r = task_cfg.batch_size, task_cfg.pool_size, task_cfg.f, task_cfg.r
    split = make_split(task_cfg)
    if len(split.heldout_pairs(f)) == 0:
        raise ConfigError(f"task.f={f!r} leaves no held-out addition pairs; this run measures "
                          "held-out generalization (use f < 1)")
    threshold = phase_cfg.threshold

    model_cfg = model_config(config.model)
    task = aa.make_task(batch_size, split=split, pool_size=pool_size)
    known = {f"acc/{p}" for p in task.eval_pools} | {f"progress/{m}" for m in an.PROGRESS} | \
        {f"qk2grad/{m}" for m in an.QK2GRAD}
    for phase in PHASES:
        if phase_cfg[phase] not in known:
            raise ConfigError(f"phases.{phase}={phase_cfg[phase]!r}: not a recorded metric; "
                              f"choose from {sorted(known)}")

    probe = mech.probe_data(jax.random.PRNGKey(ana["data_seed"]), ana["probe_size"], split, f)
    grad_sampler = aa.make_train_sampler(ana["grad_batch"], split)
    eval_fn = an.make_eval_fn(model_cfg, probe, grad_sampler)
    trainer = make_train(task, model_cfg, experiment.train_config(config.train), eval_fn)
    hparams = trainer.default_hparams(**experiment.as_dict(config.hparams),
                                      **{"task.f": f, "task.r": r})
    phases = {p: (phase_cfg[p], float(threshold)) for p in PHASES}
    return Setup(trainer, hparams, seeds, model_cfg, split, f, ana, phases)


# ------------------------------------------------------------------------------------------------
# The job
# ------------------------------------------------------------------------------------------------
def start_and_train(setup, config, workdir: str, overwrite: bool, what: str
                    ) -> tuple[SweepResult, float]:
    """Claim ``workdir`` for ``config`` (after every check in ``build``), log ``what`` runs, then
    ``run_sweep`` of ``setup``'s trainer, seeds and grid (resumed from ``workdir``'s checkpoint);
    returns the result and the training wall time in seconds. Shared with ``sweep_data``."""
    experiment.start(workdir, config, overwrite)
    log(what)
    t0 = time.time()
    result = run_sweep(setup.trainer, setup.seeds, setup.hparams, workdir,
                       chunk_evals=config.chunk_evals, snapshots=snapshot_policy(config))
    return result, time.time() - t0


def snapshot_policy(config) -> SnapshotPolicy:
    """Step 0 and every ``snapshot_every_chunks``-th chunk (0: the final step only, the default
    policy); the sweep schema has no such key and keeps the default."""
    every = config.get("snapshot_every_chunks", 0)
    return SnapshotPolicy(every_chunks=every, steps=(0,)) if every else SnapshotPolicy()


def steps_per_second(n_models: int, steps: int, seconds: float) -> float:
    """Training throughput for ``summary.json``: model steps per wall-clock second, 0.1 rounded."""
    return round(n_models * steps / max(seconds, 1e-9), 1)


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    setup = build(config)
    trainer, seeds = setup.trainer, setup.seeds
    result, train_seconds = start_and_train(
        setup, config, workdir, overwrite,
        f"assign_add: {len(seeds)} seeds x {trainer.train_cfg.steps} steps (batch "
        f"{config.task.batch_size}, lr {config.hparams.lr}) on {jax.device_count()} device(s)")

    m = result.metrics_at(grid=0)  # [n_seeds, n_evals]
    steps = result.steps
    phase_at = an.phase_steps(steps, m, setup.phases)
    params = result.params_at(grid=0)
    t1 = time.time()
    ana = setup.analysis
    final = final_mod.final_analysis(params, setup.model_cfg, setup.split, setup.f,
                                     ana["final_size"], ana["union_sample"], ana["data_seed"])
    analysis_seconds = time.time() - t1
    log(f"final analyses of {len(seeds)} seeds in {analysis_seconds:.0f} s")

    done3 = np.isfinite(phase_at["phase3"])
    ex = final_mod.example_seed(done3, m[setup.phases["phase3"][0]][:, -1])
    tokens = final["example_tokens"]
    example = {"index": ex, "seed": seeds[ex], "tokens": aa.to_string(jnp.asarray(tokens)).split(),
               "views": final_mod.example_views({k: jnp.asarray(v[ex]) for k, v in params.items()},
                                                tokens, setup.model_cfg)}
    window = 10 * trainer.train_cfg.eval_every
    for name, fig in plots.all_figures(steps, m, phase_at, window, final, done3, example).items():
        save_figure(fig, os.path.join(workdir, "figures", f"{name}.png"))

    summary = make_summary(setup, steps, m, phase_at, final, done3)
    summary["example_seed"] = seeds[ex]
    summary["timing"] = {"train_seconds": round(train_seconds, 1),
                         "analysis_seconds": round(analysis_seconds, 1),
                         "model_steps_per_second": steps_per_second(
                             len(seeds), trainer.train_cfg.steps, train_seconds)}
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and figures/")
    return summary


def make_summary(setup: Setup, steps: np.ndarray, m: Mapping[str, np.ndarray],
                 phase_at: Mapping[str, np.ndarray], final: Mapping[str, Any],
                 done3: np.ndarray) -> dict[str, Any]:
    """``seed_stats`` of every per-seed number; ``completed_phase3``: means over the seeds that
    reached phase 3."""
    per_seed = final_mod.per_seed_numbers(steps, m, phase_at["phase2"], final,
                                          5 * setup.trainer.train_cfg.eval_every)
    summary: dict[str, Any] = {
        "n_seeds": len(setup.seeds), "seeds": setup.seeds,
        "steps": int(setup.trainer.train_cfg.steps),
        "phase_definitions": {p: {"metric": name, "threshold": thr}
                              for p, (name, thr) in setup.phases.items()},
    }
    for p in PHASES:
        summary[f"{p}_step"] = seed_stats(phase_at[p])
    for k, v in per_seed.items():
        summary[k] = seed_stats(v)
    summary["completed_phase3"] = {"seeds": [s_ for s_, d in zip(setup.seeds, done3) if d]}
    for k, v in per_seed.items():
        if k != "finite":
            summary["completed_phase3"][k] = seed_stats(np.asarray(v)[done3])["mean"]
    summary["diverged_seeds"] = [s_ for s_, ok in zip(setup.seeds, m["finite"][:, -1]) if not ok]
    return summary


def format_summary(summary: Mapping[str, Any]) -> str:
    """Per-seed table of phases and final numbers, then the means."""
    cols = [("phase1", "phase1_step"), ("phase2", "phase2_step"), ("phase3", "phase3_step"),
            ("0var_ho", "acc/exact_0var_heldout"), ("2var_un", "acc/exact_2var_union"),
            ("cos_m", "cosine/mlp_in_matched"), ("cos_mm", "cosine/mlp_in_mismatched"),
            ("qk2", "qk2/diag_count"), ("evr", "fourier/best_evr"), ("probe", "probe/final")]
    lines = ["seed " + " ".join(f"{c:>8s}" for c, _ in cols)]
    for i, seed in enumerate(summary["seeds"]):
        cells = []
        for _, key in cols:
            v = summary[key]["per_seed"][i]
            cells.append(f"{'never':>8s}" if v is None else
                         f"{v:8.0f}" if key.endswith("_step") or key == "qk2/diag_count"
                         else f"{v:8.3f}")
        lines.append(f"{seed:4d} " + " ".join(cells))
    for p in PHASES:
        st = summary[f"{p}_step"]
        lines.append(f"{p}: reached by {st['n']}/{summary['n_seeds']} seeds, step mean "
                     f"{st['mean']} std {st['std']}")
    lines.append(f"completed phase 3: {summary['completed_phase3']}")
    return "\n".join(lines)
