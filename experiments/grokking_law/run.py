"""The grokking-time law (ACE paper; docs/ace.md): tau_grok vs weight decay omega and vs modulus p.

Data flow: config -> one trainer per modulus (1-layer post-LN model, a + b mod p, accuracy on the
full train and test sets after *every* optimizer step, computed inside the compiled scan) ->
omega sweep (seeds x omegas as ONE compiled program via ``run_sweep``) and p sweep (one program
per p, since p changes shapes) -> per-run ``t_mem``, ``t_grok``, ``tau = t_grok - t_mem`` ->
fits ``tau = C omega^beta`` and ``tau = -Omega log(1 - p_crit/p)`` -> figure and summary.json.

Only per-step accuracies (a few floats per step and run) leave the device; parameters stay
inside the scan. Runs that never reach the threshold on both sets are counted and left out of
the fits. Optionally (``benchmark.steps > 0``) the omega x seeds grid is timed as one program
against the same runs one after another (one compiled single-run program called per run).
"""
from __future__ import annotations

import os
import time
from typing import Any, Mapping

import jax.numpy as jnp
import numpy as np

from mechjax.cli import experiment
from mechjax.studies import grokking_law as gl
from mechjax.models.config import ConfigError
from mechjax.plots.grokking_law import grokking_law_figure
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log, run_sweep
from mechjax.sweeps.timing import grid_vs_sequential
from mechjax.tasks import modular
from mechjax.training.train import Trainer, TrainConfig, make_train
from mechjax.io import write_json, write_npz

from experiments.grokking_law.schema import SCHEMA


# ------------------------------------------------------------------------------------------------
# Config -> objects (all checks before anything is compiled or written)
# ------------------------------------------------------------------------------------------------


def _batch(name: str, value: int, p: int, fraction: float) -> int | None:
    """0 means full batch (every training pair each step); else at most the training-set size."""
    n_train = int(round(fraction * p * p))
    if value > n_train:
        raise ConfigError(f"{name}={value} exceeds the {n_train} training pairs at p={p} "
                          f"(train_fraction {fraction})")
    return value or None


def make_trainer(p: int, batch_size: int | None, steps: int, config) -> Trainer:
    """The 1-layer model on ``a + b mod p``, evaluated after every step (``eval_every = 1``)."""
    task = modular.make_task(p=p, op="add", batch_size=batch_size,
                             train_fraction=config.task.train_fraction,
                             split_seed=config.task.split_seed)
    model_values = experiment.as_dict(config.model)
    model_values.update(d_vocab=p, d_vocab_out=p, n_ctx=2)
    model_cfg = experiment.model_config(model_values)
    train_values = experiment.as_dict(config.train)
    train_cfg = TrainConfig(steps=steps, eval_every=1, eval_pools=(), **train_values)
    return make_train(task, model_cfg, train_cfg, modular.split_accuracy_eval(task, model_cfg))


def build(config) -> dict[str, Any]:
    """Every trainer of the checked ``config``; nothing is compiled or written."""
    seeds = experiment.seeds(config)
    frac = config.task.train_fraction
    om, ps, bench, hp = config.omega_sweep, config.p_sweep, config.benchmark, config.hparams
    p_omega, omegas, p_list = om.p, om.omegas, ps.ps
    batch_omega = _batch("omega_sweep.batch_size", om.batch_size, p_omega, frac)
    batches = {p: _batch("p_sweep.batch_size", ps.batch_size, p, frac) for p in p_list}

    omega_trainer = make_trainer(p_omega, batch_omega, om["steps"], config)
    p_trainers = {p: make_trainer(p, batches[p], ps["steps"], config) for p in p_list}
    defaults = omega_trainer.default_hparams(**experiment.as_dict(hp))
    return {"seeds": seeds, "omegas": omegas, "ps": p_list, "omega_trainer": omega_trainer,
            "p_trainers": p_trainers, "lr": float(defaults["lr"]),
            "init_scale": float(defaults["init_scale"]), "p_omega": p_omega,
            "p_sweep_omega": float(ps.omega), "bench": experiment.as_dict(bench)}


# ------------------------------------------------------------------------------------------------
# Sweeps
# ------------------------------------------------------------------------------------------------
def sweep(trainer: Trainer, seeds, grid: Mapping[str, Any], workdir: str,
          chunk_evals: int, threshold: float, stop_when_all_grokked: bool) -> dict[str, Any]:
    """One compiled program for seeds x grid; returns tau etc. as ``[n_grid, n_seeds]``.

    With ``stop_when_all_grokked`` the sweep ends after the first chunk at which every run has
    reached the threshold on both sets: later steps cannot change a first crossing.
    """
    def all_grokked(m) -> bool:
        return bool(gl.grok_times(m["step"][0, 0], m["acc/train"], m["acc/test"],
                                  threshold).grokked.all())

    t0 = time.perf_counter()
    result = run_sweep(trainer, seeds, grid, workdir, chunk_evals=chunk_evals,
                       stop=all_grokked if stop_when_all_grokked else None)
    seconds = time.perf_counter() - t0
    m, steps = result.metrics, result.steps
    times = gl.grok_times(steps, m["acc/train"], m["acc/test"], threshold)
    return {"t_mem": times.t_mem.T, "t_grok": times.t_grok.T, "tau": times.tau.T,
            "final_train": m["acc/train"][..., -1].T, "final_test": m["acc/test"][..., -1].T,
            "diverged": ~m["finite"][..., -1].astype(bool).T, "seconds": seconds,
            "traces": result.traces, "steps_run": int(np.nanmax(steps))}


# ------------------------------------------------------------------------------------------------
# The job
# ------------------------------------------------------------------------------------------------
def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    b = build(config)
    experiment.start(workdir, config, overwrite)
    seeds, omegas, ps = b["seeds"], b["omegas"], b["ps"]
    threshold = float(config.threshold)
    base = {"lr": [b["lr"]], "init_scale": [b["init_scale"]]}
    log(f"grokking_law: {len(seeds)} seeds x omegas {list(omegas)} at p={b['p_omega']} "
        f"(one program), then p in {list(ps)} at omega={b['p_sweep_omega']}")

    om = sweep(b["omega_trainer"], seeds, {**base, "weight_decay": list(omegas)},
               os.path.join(workdir, "omega_sweep"), config.omega_sweep.chunk_evals, threshold,
               config.stop_when_all_grokked)
    by_p = []
    for p in ps:
        log(f"p sweep: p={p}")
        by_p.append(sweep(b["p_trainers"][p], seeds, {**base, "weight_decay": [b["p_sweep_omega"]]},
                          os.path.join(workdir, "p_sweep", f"p{p}"),
                          config.p_sweep.chunk_evals, threshold, config.stop_when_all_grokked))
    pw = {k: np.concatenate([r[k] for r in by_p], 0) for k in
          ("t_mem", "t_grok", "tau", "final_train", "final_test", "diverged")}

    fits = gl.fit_laws(np.asarray(omegas), om["tau"], np.asarray(ps), pw["tau"])
    summary: dict[str, Any] = {
        "n_seeds": len(seeds), "seeds": seeds, "threshold": threshold,
        "omega_sweep/p": b["p_omega"], "omega_sweep/omegas": list(omegas),
        "p_sweep/omega": b["p_sweep_omega"], "p_sweep/ps": list(ps),
        **gl.fit_summary(fits, ps),
        "never_grokked": int(np.sum(~np.isfinite(om["tau"])) + np.sum(~np.isfinite(pw["tau"]))),
        "never_grokked/omega_sweep": int(np.sum(~np.isfinite(om["tau"]))),
        "never_grokked/p_sweep": int(np.sum(~np.isfinite(pw["tau"]))),
        "diverged_runs": int(om["diverged"].sum() + pw["diverged"].sum()),
        "train/omega_sweep_seconds": om["seconds"],
        "train/p_sweep_seconds": float(sum(r["seconds"] for r in by_p)),
        "compile/omega_sweep_traces": om["traces"],
        "steps_run/omega_sweep": om["steps_run"],
        "steps_run/p_sweep": [r["steps_run"] for r in by_p],
        "compile/p_sweep_traces": [r["traces"] for r in by_p],
        **gl.setting_summary("omega", omegas, om["tau"], om["t_mem"]),
        **gl.setting_summary("p", ps, pw["tau"], pw["t_mem"]),
    }

    bench = b["bench"]
    if bench["steps"]:
        log(f"benchmark: {len(seeds) * len(omegas)} runs x {bench['steps']} steps, grid program "
            "vs. one after another")
        trainer = make_trainer(b["p_omega"], config.omega_sweep.batch_size or None,
                               bench["steps"], config)
        hp = trainer.default_hparams(lr=b["lr"], init_scale=b["init_scale"])
        grid = {k: jnp.broadcast_to(v, (len(omegas),)) for k, v in hp.items()}
        grid["weight_decay"] = jnp.asarray(omegas, jnp.float32)
        timing = grid_vs_sequential(trainer, seeds, grid, bench["steps"], bench["vectorize"])
        summary.update({f"benchmark/{k}": v for k, v in timing.items()})
        log(f"benchmark: grid {timing['grid_seconds']:.1f}s vs sequential "
            f"{timing['sequential_seconds']:.1f}s ({timing['sequential_over_grid']:.2f}x)")

    arrays = {f"omega_sweep/{k}": om[k] for k in ("t_mem", "t_grok", "tau", "final_train",
                                                   "final_test")}
    arrays.update({f"p_sweep/{k}": pw[k] for k in ("t_mem", "t_grok", "tau", "final_train",
                                                    "final_test")})
    write_npz(os.path.join(workdir, "metrics.npz"),
              {"omegas": omegas, "ps": ps, "seeds": seeds, **arrays})
    save_figure(grokking_law_figure(
        omegas, om["tau"], (fits.omega.C, fits.omega.beta, fits.omega.r2), ps, pw["tau"],
        (fits.p.Omega, fits.p.p_crit, fits.p.r2),
        omega_title=f"p = {b['p_omega']}, {len(seeds)} seeds",
        p_title=f"omega = {b['p_sweep_omega']:g}, {len(seeds)} seeds"),
        os.path.join(workdir, "figures", "grokking_law.png"))
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and figures/grokking_law.png")
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"{'n_seeds':>32s}: {summary['n_seeds']}"]
    for k in ("beta", "beta_r2", "beta_runs", "beta_runs_r2", "Omega", "p_crit", "p_fit_r2",
              "Omega_times_p_crit", "tau_vs_p_loglog_slope"):
        lines.append(f"{k:>32s}: {summary[k]:.4g}")
    for k in ("p_crit_identified", "tau_decreasing_in_p", "never_grokked", "diverged_runs",
              "compile/omega_sweep_traces"):
        lines.append(f"{k:>32s}: {summary[k]}")
    for k, v in summary.items():
        if k.startswith("tau/") and v["n"]:
            lines.append(f"{k:>32s}: {v['mean']:.1f} +- {v['std']:.1f} ({v['n_never']} never)")
    for k, v in summary.items():
        if k.startswith("benchmark/") or k.startswith("train/"):
            lines.append(f"{k:>32s}: {v:.4g}" if isinstance(v, float) else f"{k:>32s}: {v}")
    return "\n".join(lines)
