"""The quickstart job: a seed sweep of modular-addition grokking, its analysis, figures, summary.

Data flow: config -> ``build`` (task, trainer, grid, seeds) -> ``run_sweep`` -> ``grokking``
(memorization and grokking step, Fourier sparsity per seed) and ``seed_cores`` (each seed's ACE
core at the last block's output, validated, compared across seeds) -> figures, ``summary.json``.
"""
from __future__ import annotations

import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis import ace, fourier
from mechjax.cli import experiment
from mechjax.analysis.curves import first_crossing
from mechjax.analysis.seeds import seed_stats
from mechjax.io import write_json
from mechjax.plots import curves, heatmaps
from mechjax.plots.save import save_figure
from mechjax.sweeps.snapshots import SnapshotPolicy
from mechjax.studies import grokking_core
from mechjax.sweeps.sweep import SweepResult, log, run_sweep
from mechjax.tasks import modular
from mechjax.training.train import make_train

from experiments.quickstart.schema import SCHEMA


class SeedCores(NamedTuple):
    """Each seed's ACE core (arXiv 2602.22600) at the last block's output, read at the answer
    position with the linear tail to the logits (core dimension: the larger of the energy rank
    and the necessity rank), and how the seeds' cores compare."""

    rank: np.ndarray              # [n] core dimension per seed
    acc_full: np.ndarray          # [n] accuracy on the held-out pairs
    acc_core_only: np.ndarray     # [n] with the activation projected on the core
    acc_core_removed: np.ndarray  # [n] with the core projected out
    overlap: np.ndarray           # [n, n] projector overlap (1 same subspace, 0 orthogonal)
    cca: np.ndarray               # [n, n] mean canonical correlation of the core coordinates
    overlap_chance: float         # the overlap of random subspaces of these ranks: mean r / D


def build(config):
    """Everything derived from the (checked) config, before any compilation or file write."""
    task = modular.make_task(p=config.task.p, op=config.task.op, batch_size=None,
                             train_fraction=config.task.train_fraction,
                             split_seed=config.task.split_seed)
    model_values = experiment.as_dict(config.model)
    model_values.update(d_vocab=config.task.p, d_vocab_out=config.task.p, n_ctx=2)
    model_cfg = experiment.model_config(model_values)
    trainer = make_train(task, model_cfg, experiment.train_config(config.train))
    hparams = trainer.default_hparams(**experiment.as_dict(config.hparams))
    return trainer, hparams, experiment.seeds(config)


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    trainer, hparams, seeds = build(config)
    experiment.start(workdir, config, overwrite)
    log(f"quickstart: {len(seeds)} seeds of {trainer.task.name} on {jax.device_count()} device(s)")
    # every chunk's parameters are kept (8 small models): `mechjax.sweeps.runs` opens any of them
    result = run_sweep(trainer, seeds, hparams, workdir, chunk_evals=config.chunk_evals,
                       snapshots=SnapshotPolicy(every_chunks=1, steps=(0,)))

    grok = grokking(result, seeds, config.grok_threshold)
    cores = seed_cores(trainer, result)
    summary = {**grok.summary, **core_summary(cores)}
    log(f"cores: {summary['ace/reading']}")
    # In a multi-process run every process holds the same result; process 0 writes it.
    if jax.process_index() == 0:
        save_figures(workdir, trainer.task.name, result.steps, result.metrics_at(grid=0),
                     grok.t_grok, grok.norms, cores)
        write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and figures/")
    return summary


class Grokking(NamedTuple):
    """The grokking read-offs: the summary's keys, and the arrays the figures need."""

    summary: dict[str, Any]
    t_grok: np.ndarray  # [n] first step at the threshold (inf: never)
    norms: np.ndarray   # [n, p // 2 + 1] the embedding's Fourier spectrum per seed


def grokking(result: SweepResult, seeds: list[int], threshold: float) -> Grokking:
    """Memorization and grokking step per seed, final accuracies, the embedding's Fourier
    sparsity."""
    m = result.metrics_at(grid=0)  # [n_seeds, n_evals]
    t_mem = first_crossing(result.steps, m["acc/train"], threshold)
    t_grok = first_crossing(result.steps, m["acc/test"], threshold)
    w_e = result.params_at(grid=0)["embed.W_E"]  # [n_seeds, p, d]
    norms = np.asarray(jax.vmap(fourier.frequency_norms)(w_e))
    top5 = np.asarray(jax.vmap(lambda n: fourier.top_k_energy_fraction(n, 5))(norms))
    key_freqs = [sorted(np.argsort(row[1:])[::-1][:5] + 1) for row in norms]
    finite = m["finite"][:, -1].astype(bool)
    return Grokking({
        "n_seeds": len(seeds),
        "acc/train": seed_stats(m["acc/train"][:, -1]),
        "acc/test": seed_stats(m["acc/test"][:, -1]),
        "mem_step": seed_stats(t_mem), "grok_step": seed_stats(t_grok),
        "grokked_fraction": float(np.mean(np.isfinite(t_grok))),
        "fourier/top5_energy_fraction": top5,
        "fourier/key_frequencies": key_freqs,
        "diverged_seeds": [s for s, ok in zip(seeds, finite) if not ok],
    }, t_grok, norms)


def seed_cores(trainer, result: SweepResult) -> SeedCores:
    """ACE on every seed's final parameters as one vmapped program (``ace.analyse_seeds``) on
    the held-out pairs, then the seeds x seeds overlap and CCA of the cores."""
    cfg = trainer.model_cfg
    pipe = grokking_core.core_pipeline(hook_name=f"blocks.{cfg.n_layers - 1}.hook_resid_post",
                                       keep_coords=None)
    params = {k: jnp.asarray(v) for k, v in result.params_at(grid=0).items()}
    out = ace.analyse_seeds(params, grokking_core.heldout_pair_inputs(trainer.task), cfg, pipe)
    rank = np.asarray(out.core_dim)
    overlap = np.asarray(ace.overlap_matrix(out.core.basis, out.core_dim))
    cca = np.asarray(ace.cca_matrix(out.coords, out.core_dim))
    acc = {k: np.asarray(v) for k, v in out.accuracy.items()}
    return SeedCores(rank, acc["full"], acc["core_only"], acc["core_removed"], overlap, cca,
                     float(np.mean(rank) / cfg.d_model))


# The reading's cut-offs: a projector overlap under half (1: the same subspace) is a different
# subspace; a mean CCA of 0.9 or more means each seed's core coordinates are close to a linear
# map of another's (the paper's Markov cores reach 0.98).
SAME_SUBSPACE, SAME_STATISTICS = 0.5, 0.9


def core_summary(c: SeedCores) -> dict[str, Any]:
    """The summary keys ``ace/*`` and the one-line reading of the comparison."""
    overlap, cca = ace.offdiag_mean(c.overlap), ace.offdiag_mean(c.cca)
    geometry = "differ geometrically" if overlap < SAME_SUBSPACE else "share a subspace"
    statistics = "agree statistically" if cca >= SAME_STATISTICS else "do not agree statistically"
    reading = (f"cores {geometry}: overlap {overlap:.2f} vs chance {c.overlap_chance:.2f}; "
               f"{statistics}: CCA {cca:.2f}")
    return {"ace/core_rank": seed_stats(c.rank), "ace/acc_core_only": seed_stats(c.acc_core_only),
            "ace/acc_core_removed": seed_stats(c.acc_core_removed),
            "ace/overlap_offdiag_mean": overlap, "ace/overlap_chance": c.overlap_chance,
            "ace/cca_offdiag_mean": cca, "ace/reading": reading}


def save_figures(workdir: str, task_name: str, steps: np.ndarray, m: dict[str, np.ndarray],
                 t_grok: np.ndarray, norms: np.ndarray, cores: SeedCores) -> None:
    """``figures/``: accuracy and loss curves over seeds, each seed's embedding spectrum, the
    seeds x seeds core overlap and CCA."""
    fig_dir = os.path.join(workdir, "figures")
    save_figure(curves.metric_curves(
        steps, {"train": m["acc/train"], "test": m["acc/test"]},
        title=f"{task_name}: accuracy over {len(norms)} seeds", ylabel="accuracy",
        marks=[float(np.nanmean(t_grok))] if np.isfinite(t_grok).any() else []),
        os.path.join(fig_dir, "accuracy.png"))
    save_figure(curves.metric_curves(
        steps, {"train": np.log10(m["loss/train"]), "test": np.log10(m["loss/test"])},
        title="loss", ylabel="log10 cross-entropy"), os.path.join(fig_dir, "loss.png"))
    save_figure(heatmaps.matrix(norms[:, 1:], xlabel="frequency k", ylabel="seed",
                                title="|FFT(W_E)| per seed", xticks=np.arange(1, norms.shape[1])),
                os.path.join(fig_dir, "embedding_spectrum.png"))
    for name, mat, what in (("core_overlap", cores.overlap, "projector overlap"),
                            ("core_cca", cores.cca, "mean CCA of core coordinates")):
        save_figure(heatmaps.matrix(mat, xlabel="seed", ylabel="seed", vmin=0.0, vmax=1.0,
                                    title=f"ACE cores, seeds x seeds: {what}"),
                    os.path.join(fig_dir, f"{name}.png"))


def format_summary(summary: dict[str, Any]) -> str:
    rows = {"n_seeds": summary["n_seeds"], "acc/train": summary["acc/train"]["mean"],
            "acc/test": summary["acc/test"]["mean"],
            "grokked_fraction": summary["grokked_fraction"],
            "grok_step/mean": summary["grok_step"]["mean"],
            "grok_step/std": summary["grok_step"]["std"],
            "diverged_seeds": summary["diverged_seeds"],
            "ace/core_rank/mean": summary["ace/core_rank"]["mean"],
            "ace/reading": summary["ace/reading"]}
    return "\n".join(f"{k:>20s}: {v}" for k, v in rows.items())
