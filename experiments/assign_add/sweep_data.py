"""Data-requirement sweeps of Assign and Add (the paper's knobs f and r), each grid ONE program.

    python -m experiments.assign_add.sweep_data --workdir=DIR \
        [--config=experiments/assign_add/configs/sweep_f.py | sweep_r.py] [--config.key=value]

``mode='f'``: train ``n_seeds`` x ``grid`` values of ``task.f`` (fraction of ordered pairs used for
training) and measure accuracy on every held-out pair of that f (0-var, exhaustive).
``mode='r'``: the same over ``task.r`` (keep-probability of 2-var training rows) and measure the
exhaustive 2-var union. ``task.f`` / ``task.r`` are traced hyperparameters, so the whole
seeds x values grid is one compiled, checkpointed, resumable ``run_sweep``. The threshold is where
accuracy first reaches ``threshold`` (0.9), linearly interpolated (in log r for r): for the
mean-over-seeds curve and for every seed (the spread).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax
import numpy as np

from experiments.assign_add import run as main_run
from mechjax.cli import experiment
from mechjax.analysis import exhaustive
from mechjax.analysis.curves import first_crossing, late_change
from mechjax.analysis.seeds import seed_stats
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.plots import assign_add as plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log
from mechjax.tasks import assign_add as aa
from mechjax.training.train import Trainer, make_train
from mechjax.io import write_json

from experiments.assign_add.schema import SWEEP_SCHEMA

# mode: (final exhaustive metric, evaluation pools, the pool whose curve tells the plateau)
MODES = {"f": ("acc/exact_0var_heldout", ("0var_train", "0var_heldout"), "acc/0var_heldout"),
         "r": ("acc/exact_2var_union", ("1var_train", "2var_train", "2var_heldout",
                                        "2var_one_misplaced", "2var_two_misplaced"),
               "acc/2var_heldout")}


@dataclasses.dataclass
class SweepSetup:
    trainer: Trainer
    hparams: dict[str, np.ndarray]  # {name: [n_values]}: the knob varies, the rest is constant
    seeds: list[int]
    model_cfg: ModelConfig
    split: aa.PairSplit
    mode: str
    values: np.ndarray
    f: float
    final: dict[str, Any]


def build(config) -> SweepSetup:
    """Everything derived from the checked ``config`` (the relations between keys checked
    here), before any compilation or file write."""
    task_cfg, final = config.task, experiment.as_dict(config.final)
    mode = config.mode
    values = np.asarray(config.grid, float).reshape(-1)
    seeds = experiment.seeds(config)
    batch_size, pool_size, f, r = task_cfg.batch_size, task_cfg.pool_size, task_cfg.f, task_cfg.r
    split = main_run.make_split(task_cfg)
    fs = values if mode == "f" else [f]
    empty = [float(v) for v in fs if len(split.heldout_pairs(float(v))) == 0]
    if empty:
        raise ConfigError(f"f={empty} leaves no held-out addition pairs (use f < 1)")

    model_cfg = main_run.model_config(config.model)
    task = aa.make_task(batch_size, split=split, pool_size=pool_size)
    train_values = experiment.as_dict(config.train)
    train_values["eval_pools"] = MODES[mode][1]
    trainer = make_train(task, model_cfg, experiment.train_config(train_values))
    defaults = trainer.default_hparams(**experiment.as_dict(config.hparams),
                                       **{"task.f": f, "task.r": r})
    hparams = {k: np.full(values.size, float(v), np.float32) for k, v in defaults.items()}
    hparams[f"task.{mode}"] = values.astype(np.float32)
    return SweepSetup(trainer, hparams, seeds, model_cfg, split, mode, values, f, final)


def final_accuracy(setup: SweepSetup, params) -> tuple[np.ndarray, dict[str, Any]]:
    """``[n_seeds, n_values]`` accuracy of the final params on the mode's exhaustive set."""
    cfg, final = setup.model_cfg, setup.final
    key = jax.random.PRNGKey(final["data_seed"])
    predict = exhaustive.predict_stacked(cfg)
    acc = np.zeros((len(setup.seeds), setup.values.size))
    info: dict[str, Any] = {}
    if setup.mode == "r":
        held = setup.split.heldout_pairs(setup.f)
        union = exhaustive.subsample(aa.exhaustive_2var_union(key, held), final["union_sample"],
                             final["data_seed"])
        info["n_sequences"] = int(np.asarray(union["labels"]).shape[0])
    else:
        info["n_sequences"] = []
        # every ordered pair once as a 0-var sequence (row x * 59 + y), built once; each f keeps
        # the rows of its held-out pairs
        every = aa.exhaustive_0var_heldout(key, np.argwhere(np.ones((aa.P, aa.P), bool)))
    for g, v in enumerate(setup.values):
        one = {k: x[:, g] for k, x in params.items()}
        if setup.mode == "f":
            held = ~np.asarray(setup.split.train_mask(float(v))).reshape(-1)
            batch = {k: np.asarray(x)[held] for k, x in every.items()}
            info["n_sequences"].append(int(held.sum()))
        else:
            batch = union
        acc[:, g] = exhaustive.exhaustive_accuracy(one, batch, cfg, 2048, predict)
    return acc, info


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SWEEP_SCHEMA.validate(config)
    setup = build(config)
    trainer, mode = setup.trainer, setup.mode
    result, train_seconds = main_run.start_and_train(
        setup, config, workdir, overwrite,
        f"assign_add sweep over {mode}: {len(setup.seeds)} seeds x {setup.values.size} values x "
        f"{trainer.train_cfg.steps} steps, one program")
    acc, info = final_accuracy(setup, result.state.params)

    log_x = mode == "r"
    threshold = float(config.threshold)
    mean = acc.mean(0)
    # Between grid values the threshold is placed on the chord (in log r for the r sweep).
    interpolate = "log" if log_x else "linear"
    mean_cross = float(first_crossing(setup.values, mean, threshold, interpolate=interpolate))
    per_seed = first_crossing(setup.values, acc, threshold, interpolate=interpolate)
    metric = MODES[mode][0]
    label = {"f": "held-out pairs (0-var, exhaustive)",
             "r": "2-var union (exhaustive)"}[mode]
    save_figure(plots.sweep_curve(setup.values, acc, threshold, per_seed,
                                  mean_cross if np.isfinite(mean_cross) else None,
                                  xlabel={"f": "f (fraction of pairs used for training)",
                                          "r": "r (keep-probability of 2-var rows)"}[mode],
                                  ylabel=f"accuracy, {label}", log_x=log_x,
                                  title=f"{len(setup.seeds)} seeds, {trainer.train_cfg.steps} "
                                        f"steps, lr {config.hparams.lr}"),
                os.path.join(workdir, "figures", f"sweep_{mode}.png"))
    pools = {k: v[:, :, -1].mean(0) for k, v in result.metrics.items() if k.startswith("acc/")}
    plateau = _plateau(result, MODES[mode][2], setup.values, threshold, interpolate)
    summary = {
        "mode": mode, "metric": metric, "values": setup.values, "seeds": setup.seeds,
        "steps": int(trainer.train_cfg.steps), "lr": float(config.hparams.lr),
        "threshold": threshold,
        "accuracy": {"mean": mean, "std": acc.std(0), "min": acc.min(0), "max": acc.max(0),
                     "per_seed": acc},
        "crossing_mean_curve": mean_cross,
        "crossing": seed_stats(per_seed),
        "final_pool_accuracy_mean": pools,
        "plateau": plateau,
        "n_sequences": info["n_sequences"],
        "diverged_runs": int(np.sum(result.metrics["finite"][:, :, -1] == 0)),
        "timing": {"train_seconds": round(train_seconds, 1),
                   "model_steps_per_second": main_run.steps_per_second(
                       acc.size, trainer.train_cfg.steps, train_seconds)},
    }
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and figures/sweep_{mode}.png")
    return summary


def _plateau(result, pool: str, values: np.ndarray, threshold: float,
             interpolate: str) -> dict[str, Any]:
    """Whether the budget was long enough: the change of the swept pool's accuracy (sampled
    every evaluation) over the last quarter of training, and the threshold read from the pool
    curves at the window's start and at the end (equal when the budget no longer matters)."""
    curves = result.metrics[pool]  # [seeds, grid, evals]
    change, start = late_change(result.steps, curves)
    at = lambda i: float(first_crossing(values, curves[:, :, i].mean(0), threshold,
                                        interpolate=interpolate))
    # The budget dependence itself: the first evaluation at which each run's pool reached the
    # threshold (None: not within the budget), per grid value.
    reached = first_crossing(result.steps, curves, threshold)  # [seeds, grid]
    return {"pool": pool, "window_steps": [int(result.steps[start]), int(result.steps[-1])],
            "steps_to_threshold": [seed_stats(reached[:, g]) for g in range(len(values))],
            "change_mean": change.mean(0), "change_per_seed": change,
            "max_abs_change": float(np.abs(change.mean(0)).max()),
            "crossing_at_window_start": at(start), "crossing_at_end": at(-1)}


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"{summary['mode']:>6s}  mean acc  std     (over {len(summary['seeds'])} seeds)"]
    acc = summary["accuracy"]
    for v, m, s in zip(summary["values"], acc["mean"], acc["std"]):
        lines.append(f"{float(v):6.3f}  {float(m):.3f}    {float(s):.3f}")
    cross = summary["crossing"]
    lines.append(f"mean curve reaches {summary['threshold']} at {summary['mode']} = "
                 f"{summary['crossing_mean_curve']}; per seed {cross['mean']} +- "
                 f"{cross['std']} ({cross['n']}/{cross['n'] + cross['n_never']} seeds)")
    plateau = summary["plateau"]
    lines.append(f"plateau: {plateau['pool']} moved by at most {plateau['max_abs_change']:.3f} "
                 f"over steps {plateau['window_steps'][0]}-{plateau['window_steps'][1]}; "
                 f"threshold from that pool {plateau['crossing_at_window_start']} -> "
                 f"{plateau['crossing_at_end']}")
    return "\n".join(lines)


if __name__ == "__main__":
    experiment.run_cli(run, format_summary, __file__, SWEEP_SCHEMA, default_config="sweep_f.py")
