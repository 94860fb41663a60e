"""The quickstart job: a seed sweep of modular-addition grokking, its analysis, figures, summary."""
from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np

from mechjax.cli import experiment
from mechjax.analysis import fourier
from mechjax.analysis.curves import first_crossing
from mechjax.analysis.seeds import seed_stats
from mechjax.io import write_json
from mechjax.plots import curves, heatmaps
from mechjax.plots.save import save_figure
from mechjax.sweeps.snapshots import SnapshotPolicy
from mechjax.sweeps.sweep import log, run_sweep
from mechjax.tasks import modular
from mechjax.training.train import make_train

from experiments.quickstart.schema import SCHEMA




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

    m = result.metrics_at(grid=0)  # [n_seeds, n_evals]
    steps = result.steps
    t_mem = first_crossing(steps, m["acc/train"], config.grok_threshold)
    t_grok = first_crossing(steps, m["acc/test"], config.grok_threshold)
    w_e = result.params_at(grid=0)["embed.W_E"]  # [n_seeds, p, d]
    norms = np.asarray(jax.vmap(fourier.frequency_norms)(w_e))
    top5 = np.asarray(jax.vmap(lambda n: fourier.top_k_energy_fraction(n, 5))(norms))
    key_freqs = [sorted(np.argsort(row[1:])[::-1][:5] + 1) for row in norms]

    finite = m["finite"][:, -1].astype(bool)
    summary = {
        "n_seeds": len(seeds),
        "acc/train": seed_stats(m["acc/train"][:, -1]),
        "acc/test": seed_stats(m["acc/test"][:, -1]),
        "mem_step": seed_stats(t_mem), "grok_step": seed_stats(t_grok),
        "grokked_fraction": float(np.mean(np.isfinite(t_grok))),
        "fourier/top5_energy_fraction": top5,
        "fourier/key_frequencies": key_freqs,
        "diverged_seeds": [s for s, ok in zip(seeds, finite) if not ok],
    }
    # In a multi-process run every process holds the same result; process 0 writes it.
    if jax.process_index() == 0:
        save_figures(workdir, trainer.task.name, steps, m, t_grok, norms)
        write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and figures/")
    return summary


def save_figures(workdir: str, task_name: str, steps: np.ndarray, m: dict[str, np.ndarray],
                 t_grok: np.ndarray, norms: np.ndarray) -> None:
    """``figures/``: accuracy and loss curves over seeds, each seed's embedding spectrum."""
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


def format_summary(summary: dict[str, Any]) -> str:
    rows = {"n_seeds": summary["n_seeds"], "acc/train": summary["acc/train"]["mean"],
            "acc/test": summary["acc/test"]["mean"],
            "grokked_fraction": summary["grokked_fraction"],
            "grok_step/mean": summary["grok_step"]["mean"],
            "grok_step/std": summary["grok_step"]["std"],
            "diverged_seeds": summary["diverged_seeds"]}
    return "\n".join(f"{k:>20s}: {v}" for k, v in rows.items())
