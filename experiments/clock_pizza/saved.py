"""Zhong et al.'s two diagnostics per seed on saved runs, nothing trained: ``diagnose`` (one grid
point of one sweep, shared with the training job) and ``run`` (``--run=RUN``: every sweep and
grid point of a saved workdir, for example a quickstart, ace_grokking or clock_pizza run).

Data flow: ``runs.sweeps(RUN)`` -> per sweep ``runs.open`` -> per grid point
``seed_atlas.measure_table`` of ``clock_pizza.measures`` at the rate that grid point trained with
(its ``attn_rate`` hyperparameter, else 1; the mixing from RUN's ``config.json``, else uniform)
-> ``classify`` at the last snapshot -> ``workdir/{summary.json, table.npz}``.
"""
from __future__ import annotations

import json
import os
from typing import Any

import jax
import numpy as np

from mechjax.cli import experiment
from mechjax.sweeps import runs
from mechjax.studies import clock_pizza as cp
from mechjax.analysis import seed_atlas as sa
from mechjax.models.config import ConfigError
from mechjax.io import write_json, write_npz
from mechjax.sweeps.sweep import log

ALGORITHMS = ("clock", "pizza", "mixed")


def diagnose(config, run: runs.Run, grid: int, rate: float, mixing: str) -> dict[str, Any]:
    """Both diagnostics of every seed at every snapshot of grid point ``grid`` (trained at
    ``rate`` with ``mixing``) and each seed's algorithm at the last snapshot (``"not learned"``
    below ``grok_threshold`` test accuracy at the last evaluation)."""
    table = sa.measure_table(run, cp.measures(rate, config.n_triples, mixing=mixing), grid=grid)
    gs, di = table["clock_pizza/grad_sym"][:, -1], table["clock_pizza/dist_irr"][:, -1]
    acc = run.metrics_at(grid)["acc/test"][:, -1]
    learned = acc >= config.grok_threshold
    algo = np.where(learned, cp.classify(gs, di, config.pizza_min_grad_sym,
                                         config.clock_min_dist_irr), "not learned")
    n = int(learned.sum())
    return {"attn_rate": rate, "acc/test": acc.tolist(), "grad_sym": gs.tolist(),
            "dist_irr": di.tolist(), "algorithm": algo.tolist(), "n_learned": n,
            "fraction": {a: (float(np.mean(algo[learned] == a)) if n else None)
                         for a in ALGORITHMS},
            "table": table}


def trained_mixing(path: str) -> str:
    """The ``attn_mixing`` the run at ``path`` trained with (``"uniform"`` for runs without it:
    they trained at rate 1, where the mixing does not matter)."""
    config_file = os.path.join(path, "config.json")
    if not os.path.exists(config_file):
        return "uniform"
    with open(config_file) as f:
        return json.load(f).get("attn_mixing", "uniform")


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    """Every sweep and grid point of the saved run ``config.run`` (already schema-checked)."""
    found = runs.sweeps(config.run)
    if not found:
        raise ConfigError(f"run={config.run!r}: holds no sweep (no sweep.json in or under it)")
    experiment.start(workdir, config, overwrite)
    mixing, sweeps, tables = trained_mixing(config.run), {}, {}
    for name in found:
        saved = runs.open(config.run, name)
        rates = np.asarray(saved.hparams.get("attn_rate", np.ones(saved.n_grid)), float)
        log(f"clock_pizza --run: {name}: {len(saved.seeds)} seeds x {saved.n_grid} grid point(s), "
            f"{len(saved.steps_saved)} snapshots")
        per_grid = []
        for grid, rate in enumerate(rates.tolist()):
            out = diagnose(config, saved, grid, rate, mixing)
            tables.update({f"{name}/grid{grid}/{k}": v for k, v in out.pop("table").items()})
            per_grid.append(out)
        sweeps[name] = {"seeds": saved.seeds, "steps_saved": saved.steps_saved,
                        "per_grid": per_grid}
    summary = {"run": os.path.abspath(config.run), "attn_mixing": mixing, "sweeps": sweeps}
    if jax.process_index() == 0:
        write_npz(os.path.join(workdir, "table.npz"), tables)
        write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and table.npz")
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"{summary['run']} (attention mixing {summary['attn_mixing']}): per seed at the "
             "last snapshot"]
    for name, sweep in summary["sweeps"].items():
        for grid, r in enumerate(sweep["per_grid"]):
            lines.append(f"{name} grid {grid} (rate {r['attn_rate']:g}), seeds {sweep['seeds']}")
            for key in ("acc/test", "grad_sym", "dist_irr"):
                lines.append(f"  {key:>9s} " + " ".join(f"{v:.3f}" for v in r[key]))
            lines.append("  algorithm " + " ".join(r["algorithm"]))
    return "\n".join(lines)
