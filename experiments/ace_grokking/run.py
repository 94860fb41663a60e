"""Core dynamics at grokking (ACE paper): train the paper's 2-layer post-LN model on a + b mod p for
many seeds in one program, branch every seed at ``branch.epoch`` to weight decay 0 (optimizer
reset, a second program), run ACE on every saved checkpoint of both branches as one batched
analysis per branch, and write figures and summary.json.

Data flow: config -> (task, trainers, schedule) -> run_sweep (weight decay 1, parameter
snapshots at the checkpoint epochs by its SnapshotPolicy) -> run_sweep from the ``branch.epoch``
snapshot (weight decay 0) -> snapshots stacked [checkpoints, seeds, ...] -> ace.analyse_stack of
grokking_core.core_pipeline (seeds vmapped, checkpoints lax.map'ed in vmapped batches) ->
summary, figures.

Clock: one epoch is ``ceil(n_train / batch_size)`` optimizer steps (full batch: one step); each
step draws a fresh random minibatch of the training pairs without replacement (not a per-epoch
shuffle). Everything under ``workdir/checkpoints`` (the two sweeps' orbax checkpoints and the
parameter snapshots) makes a crashed run resume where it stopped.
"""
from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from mechjax.cli import experiment
from mechjax.sweeps import runs
from mechjax.studies import grokking_core as gc
from mechjax.studies import grokking_dynamics as gd
from mechjax.analysis.seeds import format_stats
from mechjax.models.config import ConfigError
from mechjax.plots import grokking as plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.snapshots import SnapshotPolicy, start_from
from mechjax.sweeps.sweep import log, run_sweep
from mechjax.tasks import modular
from mechjax.training.train import make_train
from mechjax.io import write_json, write_npz

from experiments.ace_grokking.schema import SCHEMA

BRANCHES = gd.BRANCHES


# ------------------------------------------------------------------------------------------------
# Config -> objects (every check before anything is compiled or written)
# ------------------------------------------------------------------------------------------------


def build(config) -> dict[str, Any]:
    """Everything derived from the checked ``config`` (the relations between keys checked
    here), before any compilation or file write."""
    task_cfg, train_cfg, ck = config.task, config.train, config.checkpoints
    hp, branch = experiment.as_dict(config.hparams), experiment.as_dict(config.branch)
    ace_cfg = experiment.as_dict(config.ace)
    seeds = experiment.seeds(config)

    p, frac, batch = task_cfg.p, task_cfg.train_fraction, task_cfg.batch_size
    n_train = int(np.round(frac * p * p))
    if not 0 < n_train < p * p:
        raise ConfigError(f"task.train_fraction={frac}: leaves {n_train} of {p * p} pairs for "
                          "training; both the train and the test set must be non-empty")
    spe = gc.steps_per_epoch(n_train, batch)

    epochs, eval_every, dense = train_cfg.epochs, train_cfg.eval_every_epochs, ck.dense_every
    schedule = gc.checked_schedule(epochs, eval_every, dense, ck.dense_until, ck.sparse_every,
                                   branch["epoch"], ace_cfg["clock_epochs"])
    if round(ace_cfg["holdout_frac"] * p) < 1:
        raise ConfigError(f"ace.holdout_frac={ace_cfg['holdout_frac']!r}: must hold out at "
                          f"least one of the {p} answers")

    model_cfg = gc.spec_model_config(p, **experiment.as_dict(config.model))
    task = modular.make_task(p=p, op="add", batch_size=None if spe == 1 else batch,
                             train_fraction=frac, split_seed=task_cfg.split_seed)
    train = lambda ep: make_train(task, model_cfg, experiment.train_config(
        {"steps": ep * spe, "eval_every": eval_every * spe, "optimizer": "adamw",
         "b1": 0.9, "b2": 0.999}))
    return {"seeds": seeds, "p": p, "n_train": n_train, "steps_per_epoch": spe,
            "schedule": schedule, "model_cfg": model_cfg, "task": task,
            "trainer": train(epochs), "branch_trainer": train(epochs - branch["epoch"]),
            "hparams": {"lr": float(hp["lr"]), "weight_decay": float(hp["weight_decay"])},
            "branch": branch, "chunk_evals": dense // eval_every, "dense_every": dense,
            "epochs": epochs, "ace": ace_cfg}


def _snapshot(workdir: str, name: str, epoch: int, b_epoch: int, spe: int
              ) -> dict[str, np.ndarray]:
    """Every seed's parameters ``[n_seeds, ...]`` of branch ``name`` at ``epoch`` (the wd0
    branch starts from the wd1 snapshot at ``b_epoch``)."""
    if name == "wd1" or epoch == b_epoch:
        return runs.open(_sweep_dir(workdir, "wd1")).stacked_params(step=epoch * spe)
    return runs.open(_sweep_dir(workdir, name)).stacked_params(step=(epoch - b_epoch) * spe)


def _sweep_metrics(result, epoch0: int, spe: int) -> dict[str, np.ndarray]:
    m = result.metrics_at(grid=0)  # [n_seeds, n_evals]
    m["epoch"] = epoch0 + m["step"][0] / spe
    return m


# ------------------------------------------------------------------------------------------------
# Summary
# ------------------------------------------------------------------------------------------------
def summarize(b: dict[str, Any], m: dict[str, dict], s: dict[str, dict], epochs: dict[str, list],
              seeds: list[int]) -> dict[str, Any]:
    """This run's setup, then ``grokking_dynamics.summarize``'s numbers."""
    return {
        "n_seeds": len(seeds), "seeds": seeds, "p": b["p"], "n_train": b["n_train"],
        "n_test": b["p"] ** 2 - b["n_train"], "steps_per_epoch": b["steps_per_epoch"],
        "epoch_definition": (f"one epoch = ceil(n_train / batch) = {b['steps_per_epoch']} "
                             "optimizer step(s)"),
        "checkpoint_epochs": {"wd1": epochs["wd1"], "wd0": epochs["wd0"]},
        "branch_epoch": b["branch"]["epoch"],
        **gd.summarize(m, s, epochs, seeds, b["p"], b["model_cfg"].d_model,
                       b["ace"]["grok_threshold"]),
    }


# ------------------------------------------------------------------------------------------------
# The job
# ------------------------------------------------------------------------------------------------
def _sweep_dir(workdir: str, name: str) -> str:
    return os.path.join(workdir, "checkpoints", name)


def _snapshot_policy(b: dict, start_epoch: int) -> SnapshotPolicy:
    """Parameters at every checkpoint epoch from ``start_epoch`` on (steps of that sweep)."""
    spe = b["steps_per_epoch"]
    return SnapshotPolicy(steps=tuple((e - start_epoch) * spe for e in b["schedule"]
                                      if e >= start_epoch))


def _train(b: dict, workdir: str) -> tuple[dict, dict]:
    """Both sweeps (resumable); returns per-branch metrics and timings."""
    seeds, spe = b["seeds"], b["steps_per_epoch"]
    b_epoch = b["branch"]["epoch"]
    timing = {}
    log(f"ace_grokking: {len(seeds)} seeds, a + b mod {b['p']}, {b['n_train']} training pairs, "
        f"{b['epochs']} epochs x {spe} step(s), weight decay {b['hparams']['weight_decay']}")
    t0 = time.perf_counter()
    res1 = run_sweep(b["trainer"], seeds, b["hparams"], _sweep_dir(workdir, "wd1"),
                     chunk_evals=b["chunk_evals"], snapshots=_snapshot_policy(b, 0))
    timing["train/seconds_wd1"] = time.perf_counter() - t0

    log(f"branch at epoch {b_epoch}: weight decay {b['branch']['weight_decay']}, optimizer reset")
    hp0 = dict(b["hparams"], weight_decay=float(b["branch"]["weight_decay"]))
    start = runs.open(_sweep_dir(workdir, "wd1")).stacked_params(step=b_epoch * spe)
    t0 = time.perf_counter()
    res0 = run_sweep(b["branch_trainer"], seeds, hp0, _sweep_dir(workdir, "wd0"),
                     chunk_evals=b["chunk_evals"],
                     init_state=start_from(b["branch_trainer"], start, key_fold=b_epoch),
                     snapshots=_snapshot_policy(b, b_epoch))
    timing["train/seconds_wd0"] = time.perf_counter() - t0
    return ({"wd1": _sweep_metrics(res1, 0, spe), "wd0": _sweep_metrics(res0, b_epoch, spe)},
            timing)


def checkpoint_epochs(b: dict) -> dict[str, list[int]]:
    """The epochs ACE reads in each branch (the wd0 branch from ``branch.epoch`` on)."""
    b_epoch = b["branch"]["epoch"]
    return {"wd1": list(b["schedule"]), "wd0": [e for e in b["schedule"] if e >= b_epoch]}


def analyse(b: dict, workdir: str, epochs: dict[str, list[int]] | None = None
            ) -> tuple[dict, dict, dict]:
    """ACE on the snapshots of both branches at ``epochs`` (default: every checkpoint epoch):
    one batched call per branch (a branch without epochs is skipped)."""
    ace_cfg, b_epoch = b["ace"], b["branch"]["epoch"]
    epochs = checkpoint_epochs(b) if epochs is None else epochs
    inputs = gc.heldout_pair_inputs(b["task"])
    pipe = gc.core_pipeline(float(ace_cfg["tau"]), float(ace_cfg["rel_tol"]),
                            int(ace_cfg["holdout_start"]), float(ace_cfg["holdout_frac"]),
                            bool(ace_cfg["float64"]))
    stats, timing = {}, {}
    for name in BRANCHES:
        if not epochs[name]:
            continue
        snaps = [_snapshot(workdir, name, e, b_epoch, b["steps_per_epoch"]) for e in epochs[name]]
        log(f"ACE ({name}): {len(snaps)} checkpoints x {len(b['seeds'])} seeds x "
            f"{inputs.tokens.shape[0]} test pairs, one batched call")
        t0 = time.perf_counter()
        stats[name] = gc.stacked_core_stats(snaps, inputs, b["model_cfg"], pipe,
                                            ace_cfg["checkpoint_batch"])
        timing[f"ace/seconds_{name}"] = time.perf_counter() - t0
    return stats, epochs, timing


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    b = build(config)
    experiment.start(workdir, config, overwrite)
    metrics, timing = _train(b, workdir)
    stats, epochs, ace_timing = analyse(b, workdir)
    summary = summarize(b, metrics, stats, epochs, b["seeds"])
    summary.update(timing)
    summary.update(ace_timing)

    arrays = {f"{name}/{k}": v for name in BRANCHES for k, v in metrics[name].items()}
    arrays.update({f"ace_{name}/{k}": v for name in BRANCHES for k, v in stats[name].items()})
    arrays.update({f"ace_{name}/epoch": np.asarray(epochs[name]) for name in BRANCHES})
    write_npz(os.path.join(workdir, "metrics.npz"), arrays)

    for name, fig in plots.all_figures(b["p"], metrics, stats, epochs,
                                       summary["grok_epoch"]["per_seed"], b["branch"]["epoch"],
                                       tuple(b["ace"]["clock_epochs"])).items():
        save_figure(fig, os.path.join(workdir, "figures", f"{name}.png"))
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and figures/")
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    keys = ["grok_epoch", "grok/never_seeds", "memorization_epoch", "core_dim/before_grok",
            "core_dim/at_grok", "core_dim/final_wd1", "core_dim/final_wd0", "modes/at_grok",
            "modes/final_wd1", "modes/final_wd0", "modes/max_possible", "r2_heldout/before_grok",
            "r2_heldout/after_grok", "eig/on_circle_fraction_before_grok",
            "eig/on_circle_fraction_after_grok", "redundancy_gap/at_grok",
            "redundancy_gap/final_wd1", "redundancy_gap/final_wd0", "acc/test_final_wd1",
            "acc/test_final_wd0", "acc/core_only_final_wd1", "acc/core_removed_final_wd1",
            "train/seconds_wd1", "train/seconds_wd0", "ace/seconds_wd1", "ace/seconds_wd0"]
    return "\n".join(f"{k:>36s}: {format_stats(summary[k])}" for k in keys if k in summary)
