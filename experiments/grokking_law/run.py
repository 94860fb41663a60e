"""The grokking-time law (SPEC 2.6, last bullets): tau_grok vs weight decay omega and vs modulus p.

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

from mechjax import experiment, metrics
from mechjax.analysis import grokking_law as gl
from mechjax.config import ConfigError
from mechjax.model import forward
from mechjax.plots.grokking_law import grokking_law_figure
from mechjax.plots.save import save_figure
from mechjax.sweep import log, run_sweep
from mechjax.timing import grid_vs_sequential
from mechjax.tasks import modular
from mechjax.train import Trainer, TrainConfig, make_train
from mechjax.io import write_json

TOP_KEYS = {"n_seeds", "seed_offset", "threshold", "stop_when_all_grokked", "task", "model",
            "train", "hparams", "omega_sweep", "p_sweep", "benchmark"}
TASK_KEYS = {"train_fraction", "split_seed"}
TRAIN_KEYS = {"optimizer", "b1", "b2", "eps"}
HPARAM_KEYS = {"lr", "init_scale"}
OMEGA_KEYS = {"p", "batch_size", "omegas", "steps", "chunk_evals"}
P_KEYS = {"ps", "batch_size", "omega", "steps", "chunk_evals"}
BENCH_KEYS = {"steps", "vectorize"}


# ------------------------------------------------------------------------------------------------
# Config -> objects (all checks before anything is compiled or written)
# ------------------------------------------------------------------------------------------------


def _modulus(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 3:
        raise ConfigError(f"{name}={value!r}: must be an integer >= 3")
    return value


def _batch(name: str, value: Any, p: int, fraction: float) -> int | None:
    """0 means full batch (every training pair each step); else at most the training-set size."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{name}={value!r}: must be 0 (full batch) or a positive integer")
    n_train = int(round(fraction * p * p))
    if value > n_train:
        raise ConfigError(f"{name}={value} exceeds the {n_train} training pairs at p={p} "
                          f"(train_fraction {fraction})")
    return value or None


def _positive_floats(name: str, values: Any) -> tuple[float, ...]:
    if isinstance(values, (int, float)) or not values:
        raise ConfigError(f"{name}={values!r}: must be a non-empty sequence of numbers")
    out = tuple(float(v) for v in values)
    if any(not np.isfinite(v) or v <= 0 for v in out) or len(set(out)) != len(out):
        raise ConfigError(f"{name}={values!r}: values must be distinct, finite and > 0")
    return out


def split_accuracy_eval(task, model_cfg):
    """``eval_fn`` for the trainer: train and test accuracy from ONE deterministic forward pass
    over every pair (the split mask tells them apart). Runs after every optimizer step."""
    everything = task.eval_pools["train"]  # all p^2 pairs; weights = the training mask

    def eval_fn(params, task_params, eval_key):
        batch = everything(eval_key, task_params)
        logits = forward(params, batch["tokens"], model_cfg)[:, -1]   # no key: dropout off
        train = batch["weights"]
        return {"acc/train": metrics.accuracy(logits, batch["labels"], train),
                "acc/test": metrics.accuracy(logits, batch["labels"], 1 - train)}

    return eval_fn


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
    return make_train(task, model_cfg, train_cfg, split_accuracy_eval(task, model_cfg))


def build(config) -> dict[str, Any]:
    """Validate the whole config and build every trainer; nothing is compiled or written."""
    experiment.check_keys("", config, TOP_KEYS)
    task_cfg = experiment.check_keys("task", config.task, TASK_KEYS)
    experiment.check_keys("train", config.train, TRAIN_KEYS)
    hp = experiment.check_keys("hparams", config.hparams, HPARAM_KEYS)
    om = experiment.check_keys("omega_sweep", config.omega_sweep, OMEGA_KEYS)
    ps = experiment.check_keys("p_sweep", config.p_sweep, P_KEYS)
    bench = experiment.check_keys("benchmark", config.benchmark, BENCH_KEYS)
    seeds = experiment.seeds(config)
    frac = experiment.check_fraction("task.train_fraction", task_cfg["train_fraction"])
    if not isinstance(config.stop_when_all_grokked, bool):
        raise ConfigError(f"stop_when_all_grokked={config.stop_when_all_grokked!r}: must be "
                          "True or False")
    if not 0.0 < config.threshold <= 1.0:
        raise ConfigError(f"threshold={config.threshold!r}: must be in (0, 1]")
    for name, value in hp.items():
        if not np.isfinite(value) or value <= 0:
            raise ConfigError(f"hparams.{name}={value!r}: must be finite and > 0")

    p_omega = _modulus("omega_sweep.p", om["p"])
    omegas = _positive_floats("omega_sweep.omegas", om["omegas"])
    batch_omega = _batch("omega_sweep.batch_size", om["batch_size"], p_omega, frac)
    experiment.positive_int("omega_sweep.steps", om["steps"])
    experiment.positive_int("omega_sweep.chunk_evals", om["chunk_evals"])
    if isinstance(ps["ps"], int) or not ps["ps"]:
        raise ConfigError(f"p_sweep.ps={ps['ps']!r}: must be a non-empty sequence of integers")
    p_list = tuple(_modulus("p_sweep.ps", p) for p in ps["ps"])
    if len(set(p_list)) != len(p_list):
        raise ConfigError(f"p_sweep.ps={ps['ps']!r}: values must be distinct")
    batches = {p: _batch("p_sweep.batch_size", ps["batch_size"], p, frac) for p in p_list}
    if not np.isfinite(ps["omega"]) or ps["omega"] <= 0:
        raise ConfigError(f"p_sweep.omega={ps['omega']!r}: must be finite and > 0")
    experiment.positive_int("p_sweep.steps", ps["steps"])
    experiment.positive_int("p_sweep.chunk_evals", ps["chunk_evals"])
    if not isinstance(bench["steps"], int) or bench["steps"] < 0:
        raise ConfigError(f"benchmark.steps={bench['steps']!r}: must be 0 (off) or positive")
    if bench["vectorize"] not in ("auto", "vmap", "map"):
        raise ConfigError(f"benchmark.vectorize={bench['vectorize']!r}: allowed "
                          "('auto', 'vmap', 'map')")

    omega_trainer = make_trainer(p_omega, batch_omega, om["steps"], config)
    p_trainers = {p: make_trainer(p, batches[p], ps["steps"], config) for p in p_list}
    defaults = omega_trainer.default_hparams(**hp)  # also rejects unknown names
    return {"seeds": seeds, "omegas": omegas, "ps": p_list, "omega_trainer": omega_trainer,
            "p_trainers": p_trainers, "lr": float(defaults["lr"]),
            "init_scale": float(defaults["init_scale"]), "p_omega": p_omega,
            "p_sweep_omega": float(ps["omega"]), "bench": bench}


# ------------------------------------------------------------------------------------------------
# Sweeps
# ------------------------------------------------------------------------------------------------
class TraceCounter:
    """Wraps ``trainer.run`` to count how often it is traced (= how often the program compiles
    for new shapes); one per chunk shape is the expectation."""

    def __init__(self, trainer: Trainer):
        self.count, self._run = 0, trainer.run

        def counted(*args, **kwargs):
            self.count += 1
            return self._run(*args, **kwargs)

        trainer.run = counted


class _AllGrokked(Exception):
    """Raised from ``run_sweep``'s ``on_chunk`` once every run has crossed both thresholds."""


def sweep(trainer: Trainer, seeds, grid: Mapping[str, Any], workdir: str,
          chunk_evals: int, threshold: float, stop_when_all_grokked: bool) -> dict[str, Any]:
    """One compiled program for seeds x grid; returns tau etc. as ``[n_grid, n_seeds]``.

    With ``stop_when_all_grokked`` the sweep ends after the first chunk at which every run has
    reached the threshold on both sets: later steps cannot change a first crossing. The decision
    reads the metrics file ``run_sweep`` writes after each chunk (the whole history, so it also
    holds after a resume).
    """
    counter = TraceCounter(trainer)
    metrics_path = os.path.join(workdir, "metrics.npz")

    def on_chunk(done, chunk_metrics):
        del done, chunk_metrics
        with np.load(metrics_path) as f:
            times = gl.grok_times(f["metrics/step"][0, 0], f["metrics/acc/train"],
                                  f["metrics/acc/test"], threshold)
        if times.grokked.all():
            raise _AllGrokked

    t0 = time.perf_counter()
    try:
        result = run_sweep(trainer, seeds, grid, workdir, chunk_evals=chunk_evals,
                           on_chunk=on_chunk if stop_when_all_grokked else None)
        m = result.metrics
        stopped_early = False
    except _AllGrokked:
        with np.load(metrics_path) as f:
            m = {k[len("metrics/"):]: f[k] for k in f.files if k.startswith("metrics/")}
        stopped_early = True
    seconds = time.perf_counter() - t0
    steps = m["step"][0, 0]
    times = gl.grok_times(steps, m["acc/train"], m["acc/test"], threshold)
    if stopped_early:
        log(f"every run reached {threshold} on train and test by step {int(steps[-1])}: stopped")
    return {"t_mem": times.t_mem.T, "t_grok": times.t_grok.T, "tau": times.tau.T,
            "final_train": m["acc/train"][..., -1].T, "final_test": m["acc/test"][..., -1].T,
            "diverged": ~m["finite"][..., -1].astype(bool).T, "seconds": seconds,
            "traces": counter.count, "steps_run": int(np.nanmax(steps))}


# ------------------------------------------------------------------------------------------------
# The job
# ------------------------------------------------------------------------------------------------
def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
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
    np.savez(os.path.join(workdir, "metrics.npz"), omegas=np.asarray(omegas),
             ps=np.asarray(ps), seeds=np.asarray(seeds), **arrays)
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
        if k.startswith("tau/") and k.endswith("/mean"):
            std = summary[k[:-len('mean')] + "std"]
            lines.append(f"{k:>32s}: {v:.1f} +- {std:.1f}")
    for k, v in summary.items():
        if k.startswith("benchmark/") or k.startswith("train/"):
            lines.append(f"{k:>32s}: {v:.4g}" if isinstance(v, float) else f"{k:>32s}: {v}")
    return "\n".join(lines)
