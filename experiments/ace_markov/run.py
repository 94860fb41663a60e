"""The Markov-chain cores job (ACE paper): train many seeds in one program, run ACE on every seed as
one batched call, compare the cores across seeds, write figures and summary.json.

Stages: build (config -> task, trainer) -> train (run_sweep; stacked params [n_seeds, ...]) ->
ace_inputs (test set, Jacobian samples) -> ``markov_cores.analyse_tails`` (ACE on every seed as
one batched call per tail, timed; ``markov_cores.summarize_cores``) -> summary -> figures
(``plots.markov_cores``).
"""
from __future__ import annotations

import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.cli import experiment
from mechjax.analysis import ace
from mechjax.studies import markov_cores
from mechjax.analysis.seeds import seed_stats
from mechjax.models.config import ConfigError
from mechjax.plots import markov_cores as markov_figures
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log, run_sweep
from mechjax.tasks import markov
from mechjax.training.train import make_train
from mechjax.io import write_json

from experiments.ace_markov.schema import SCHEMA, TAIL_NAMES

HOOK = "blocks.0.hook_resid_post"  # the block output, every position
CHANCE = 1.0 / markov.N_STATES
# The tails of ``ace.Pipeline`` whose Jacobians run through the model. ``logits``: the linear
# head, so every J_s = W_U^T and Obs = W_U W_U^T (the ACE paper's toy-model case). ``log_probs``:
# J_s = (I - 1 p_s^T) W_U^T, which drops the direction the output distribution ignores.
TAILS = ("logits", "log_probs")
assert sorted(TAILS) == sorted(TAIL_NAMES)  # the schema allows the same names


# ------------------------------------------------------------------------------------------------
# Config -> objects (all checks before anything is compiled or written)
# ------------------------------------------------------------------------------------------------


def build(config):
    """Everything derived from the checked ``config`` (the relations between keys checked
    here), before any compilation or file write."""
    task_cfg, ace_cfg = experiment.as_dict(config.task), experiment.as_dict(config.ace)
    seeds = experiment.seeds(config)
    if task_cfg["batch_size"] > task_cfg["n_train"]:
        raise ConfigError(f"task.batch_size={task_cfg['batch_size']} exceeds "
                          f"task.n_train={task_cfg['n_train']}")
    n_acts = task_cfg["n_test"] * (markov.SEQ_LEN - 1)
    if ace_cfg["jac_samples"] > n_acts:
        raise ConfigError(f"ace.jac_samples={ace_cfg['jac_samples']} exceeds the {n_acts} test "
                          "activations")

    model_values = experiment.as_dict(config.model)
    model_values.update(d_vocab=markov.N_STATES, d_vocab_out=markov.N_STATES,
                        n_ctx=markov.SEQ_LEN - 1)
    model_cfg = experiment.model_config(model_values)
    if ace_cfg["compare_dims"] > model_cfg.d_model:
        raise ConfigError(f"ace.compare_dims={ace_cfg['compare_dims']} exceeds "
                          f"model.d_model={model_cfg.d_model}")
    task = markov.make_task(data_seed=task_cfg["data_seed"], n_train=task_cfg["n_train"],
                            n_test=task_cfg["n_test"], batch_size=task_cfg["batch_size"])
    trainer = make_train(task, model_cfg, experiment.train_config(config.train))
    hparams = trainer.default_hparams(**experiment.as_dict(config.hparams))
    return trainer, hparams, seeds, ace_cfg


# ------------------------------------------------------------------------------------------------
# Stages
# ------------------------------------------------------------------------------------------------
def train(trainer, hparams, seeds: list[int], workdir: str, chunk_evals: int):
    """All seeds as one sweep: ``(metrics {name: [n_seeds, n_evals]}, params [n_seeds, ...],
    seconds)``."""
    t0 = time.perf_counter()
    result = run_sweep(trainer, seeds, hparams, workdir, chunk_evals=chunk_evals)
    seconds = time.perf_counter() - t0
    m = result.metrics_at(grid=0)  # [n_seeds, n_evals]
    params = {k: jnp.asarray(v) for k, v in result.params_at(grid=0).items()}  # [n_seeds, ...]
    return m, params, seconds


def ace_inputs(trainer, ace_cfg: dict) -> tuple[dict, ace.Inputs]:
    """The test set and the (sequence, position) pairs where the tail Jacobians are sampled."""
    test = trainer.task.eval_pools["test"](None, {})
    tokens, labels = np.asarray(test["tokens"]), np.asarray(test["labels"])
    jac_tokens, jac_pos = ace.jacobian_samples(tokens, ace_cfg["jac_samples"],
                                               ace_cfg["jac_seed"])
    return test, ace.Inputs(*(jnp.asarray(x) for x in (tokens, labels, jac_tokens, jac_pos)))


# ------------------------------------------------------------------------------------------------
# The job
# ------------------------------------------------------------------------------------------------
def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    trainer, hparams, seeds, ace_cfg = build(config)
    experiment.start(workdir, config, overwrite)
    cfg = trainer.model_cfg
    log(f"ace_markov: {len(seeds)} seeds of {trainer.task.name} on {jax.device_count()} "
        f"device(s), {trainer.train_cfg.steps} steps")
    m, params, train_seconds = train(trainer, hparams, seeds, workdir, config.chunk_evals)
    test, inputs = ace_inputs(trainer, ace_cfg)
    by_tail = markov_cores.analyse_tails(
        params, inputs, cfg, ace_cfg["tails"], HOOK, float(ace_cfg["tau"]),
        bool(ace_cfg["float64"]), ace_cfg["compare_dims"], ace_cfg["time_per_seed_loop"],
        ace_cfg["vectorize"])

    primary, mats = by_tail[ace_cfg["tails"][0]]
    bayes = float(markov.bayes_accuracy(test["tokens"], test["labels"]))
    summary = {
        "n_seeds": len(seeds),
        "seeds": seeds,
        "ace/tail": ace_cfg["tails"][0],
        "acc/optimal": bayes,
        "acc/chance": CHANCE,
        "acc/train_final": seed_stats(m["acc/train"][:, -1]),
        "eig/true": [[float(z.real), float(z.imag)] for z in markov.true_eigenvalues()[1:]],
        **primary,
        "tails": {name: {k: v for k, v in stats.items() if k not in _PER_SEED_DETAIL}
                  for name, (stats, _) in by_tail.items()},
        "activations_per_seed": int(inputs.tokens.size),
        "jacobian_samples": int(len(inputs.jac_pos)),
        "train/seconds": train_seconds,
        "diverged_seeds": [s for s, ok in zip(seeds, m["finite"][:, -1]) if not ok],
    }

    figures = markov_figures.all_figures(
        m["step"][0], {"train": m["acc/train"], "test": m["acc/test"]}, mats, summary, seeds,
        bayes, CHANCE, markov.true_eigenvalues()[1:])
    for name, fig in figures.items():
        save_figure(fig, os.path.join(workdir, "figures", f"{name}.png"))
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and figures/")
    return summary


_PER_SEED_DETAIL = ("core/energy_top8", "eig/fitted")


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"{'n_seeds':>28s}: {summary['n_seeds']}",
             f"{'acc/optimal':>28s}: {summary['acc/optimal']:.4f}"]
    primary = summary["ace/tail"]
    for tail in [primary] + sorted(set(summary["tails"]) - {primary}):
        block = summary["tails"][tail]
        lines.append(f"--- ACE with the {tail} tail"
                     + (" (primary)" if tail == primary else ""))
        for k in ("acc/full", "acc/core_only", "acc/core_removed", "r2_over_oracle"):
            lines.append(f"{k:>28s}: {block[k]['mean']:.4f} +- {block[k]['std']:.4f}")
        for k in ("core/rank3_fraction", "overlap/mean_offdiag", "overlap/chance",
                  "cca/mean_offdiag", "cca/top3_mean_offdiag", "weight_cosine/mean_offdiag",
                  "eig/within_0.03_fraction", "ace/batched_seconds", "ace/per_seed_loop_seconds",
                  "ace/vmap_seconds", "ace/loop_over_batched", "ace/loop_over_vmap"):
            if k in block:
                lines.append(f"{k:>28s}: {block[k]:.4f}")
        lines.append(f"{'core/rank':>28s}: {list(map(int, block['core/rank']))}")
    lines.append(f"{'train/seconds':>28s}: {summary['train/seconds']:.1f}")
    return "\n".join(lines)
