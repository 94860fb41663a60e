"""The clock_pizza job: attention rates x seeds of modular addition as one compiled sweep, then
Zhong et al.'s two diagnostics per seed at every snapshot, the algorithm of each seed that learned
the task, the clock / pizza fractions per rate, a figure and summary.json.

Data flow: config -> ``attention_rate.rate_model`` through ``make_train`` -> ``run_sweep`` over the grid
``attn_rate`` (parameters saved every chunk) -> ``runs.open`` -> ``seed_atlas.measure_table`` of
``clock_pizza.measures(rate)`` per grid point -> ``classify`` at the final step ->
``workdir/{summary.json, table.npz, figures/clock_pizza.png}``.

With ``run`` set (``--run=RUN``) nothing is trained: ``experiments.clock_pizza.saved`` measures
every sweep of that saved run (a quickstart, ace_grokking or clock_pizza workdir) instead.
"""
from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np

from mechjax.models import attention_rate
from mechjax.training.train import make_train
from mechjax.cli import experiment
from mechjax.sweeps import runs
from mechjax.studies import grokking_core
from mechjax.studies import rate_core
from mechjax.analysis.seeds import seed_stats
from mechjax.io import write_json, write_npz
from mechjax.plots import clock_pizza as cp_plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.snapshots import SnapshotPolicy
from mechjax.sweeps.sweep import log, run_sweep
from mechjax.tasks import modular

from experiments.clock_pizza import saved as saved_runs
from experiments.clock_pizza.saved import ALGORITHMS
from experiments.clock_pizza.schema import SCHEMA

def build(config):
    """The trainer, the hyperparameter grid (``attn_rate`` the grid axis) and the seeds."""
    rates = attention_rate.check_rates(config.attn_rates)
    task = modular.make_task(p=config.task.p, op="add", batch_size=None,
                             train_fraction=config.task.train_fraction,
                             split_seed=config.task.split_seed)
    model_values = experiment.as_dict(config.model)
    model_values.update(d_vocab=config.task.p, d_vocab_out=config.task.p, n_ctx=2)
    model = attention_rate.rate_model(experiment.model_config(model_values),
                                      mixing=config.attn_mixing)
    trainer = make_train(task, model, experiment.train_config(config.train))
    hparams = dict(experiment.as_dict(config.hparams), attn_rate=rates)
    trainer.default_hparams(**{k: v for k, v in hparams.items() if k != "attn_rate"})  # checks
    return trainer, hparams, experiment.seeds(config)


def measure_rate(config, run: runs.Run, grid: int, rate: float, inputs) -> dict[str, Any]:
    """``diagnose`` of one rate plus each seed's final ACE core on the held-out pairs ``inputs``
    (core dimension, rotational modes)."""
    out = saved_runs.diagnose(config, run, grid, rate, config.attn_mixing)
    core = rate_core.core_stats_at_rate(run.stacked_params(None, grid), inputs, run.model_cfg,
                                        rate, mixing=config.attn_mixing)
    out.update({"ace/core_dim": core["core_dim"].tolist(),
                "ace/n_rotational": core["n_rotational"].tolist()})
    return out


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    if config.run:
        return saved_runs.run(config, workdir, overwrite)
    trainer, hparams, seeds = build(config)
    experiment.start(workdir, config, overwrite)
    log(f"clock_pizza: {len(seeds)} seeds x {len(hparams['attn_rate'])} attention rates of "
        f"{trainer.task.name} on {jax.device_count()} device(s)")
    run_sweep(trainer, seeds, hparams, workdir, chunk_evals=config.chunk_evals,
              snapshots=SnapshotPolicy(every_chunks=1, steps=(0,)))
    saved = runs.open(workdir)
    inputs = grokking_core.heldout_pair_inputs(trainer.task)
    per_rate = [measure_rate(config, saved, g, r, inputs)
                for g, r in enumerate(hparams["attn_rate"])]
    tables = [rate.pop("table") for rate in per_rate]
    summary = {"n_seeds": len(seeds), "seeds": seeds, "steps_saved": saved.steps_saved,
               "attn_mixing": config.attn_mixing,
               "per_rate": per_rate, "cores_by_algorithm": cores_by_algorithm(per_rate)}
    if jax.process_index() == 0:
        write_npz(os.path.join(workdir, "table.npz"),
                  {f"rate{g}/{k}": v for g, t in enumerate(tables) for k, v in t.items()})
        save_figure(cp_plots.diagnostics_scatter(per_rate),
                    os.path.join(workdir, "figures", "clock_pizza.png"))
        write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json, table.npz and figures/")
    return summary


def cores_by_algorithm(per_rate) -> dict[str, dict[str, Any]]:
    """ACE core dimension and rotational modes of the clock, pizza and mixed seeds, pooled over
    the rates: ``{algorithm: {"core_dim": seed_stats, "n_rotational": seed_stats}}``."""
    out = {}
    for a in ALGORITHMS:
        picked = [(r["ace/core_dim"][i], r["ace/n_rotational"][i]) for r in per_rate
                  for i, x in enumerate(r["algorithm"]) if x == a]
        out[a] = {"core_dim": seed_stats([c for c, _ in picked]),
                  "n_rotational": seed_stats([m for _, m in picked])}
    return out


def format_summary(summary: dict[str, Any]) -> str:
    if "sweeps" in summary:
        return saved_runs.format_summary(summary)
    lines = [f"{'rate':>6s} {'learned':>8s} {'clock':>6s} {'pizza':>6s} {'mixed':>6s} "
             f"{'grad_sym':>9s} {'dist_irr':>9s} {'core_dim':>9s}  (medians over seeds)"]
    for r in summary["per_rate"]:
        f = {a: ("-" if v is None else f"{v:.2f}") for a, v in r["fraction"].items()}
        lines.append(f"{r['attn_rate']:6.2f} {r['n_learned']:>4d}/{summary['n_seeds']:<3d} "
                     f"{f['clock']:>6s} {f['pizza']:>6s} {f['mixed']:>6s} "
                     f"{np.median(r['grad_sym']):9.3f} {np.median(r['dist_irr']):9.3f} "
                     f"{np.median(r['ace/core_dim']):9.1f}")
    for a, stats in summary["cores_by_algorithm"].items():
        if stats["core_dim"]["n"]:
            lines.append(f"{a}: {stats['core_dim']['n']} seeds, ACE core dimension "
                         f"{stats['core_dim']['mean']:.1f} +- {stats['core_dim']['std']:.1f}, "
                         f"rotational modes {stats['n_rotational']['mean']:.1f}")
    return "\n".join(lines)
