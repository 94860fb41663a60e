"""Which induction route wins from which initialization (IMIR paper; docs/imir.md, section 8), in a
3-layer attention-only IMIR model on associative recall: routes L1>L2, L1>L3, L2>L3 (previous-
token head, match head; ``mechjax.analysis.imir.routes.route_units``).

Data flow: config -> build (every check; the route problem: frame, basis, routes, the exact model
pruned at the task parameters) -> winner map (the exact reduced ODE from a grid of route-unit inits
at several scales, one vmapped program) -> random initializations projected on the manifold, the ODE
from each projection and the full transformers trained from each (one vmapped program each), winners
compared with each other and with the largest-initial-route predictor -> the interaction in a cell
where the largest route loses (the reduced field's Jacobian along its trajectory) -> figures,
metrics.npz, summary.json.
"""
from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.cli import experiment
from mechjax.analysis.imir.routes import init_map as im
from mechjax.analysis.imir.routes import route_units as rt
from mechjax.models.config import ConfigError
from mechjax.io import write_json, write_npz
from mechjax.plots import imir_init as plots
from mechjax.plots.save import save_figure
from mechjax.tasks import blocklist as bl
from mechjax.sweeps.timing import load_average

from experiments.imir_init import stages
from experiments.imir_init.schema import SCHEMA

MAX_BLOCKS = 5  # the exact model's class count grows combinatorially with the blocks


def build(config) -> dict:
    """The checked config's sections and the route problem (relations between keys checked
    here, naming the bad value and what is allowed) before anything is compiled."""
    c = {k: experiment.as_dict(config[k]) for k in SCHEMA.keys}
    t = c["task"]
    try:
        spec = bl.BlockListSpec(kind="recall", n_common=t["n_common"], n_rare=t["n_rare"],
                                n_blocks=t["n_blocks"])
    except ValueError as err:
        raise ConfigError(f"task: {err}") from None
    if spec.n_blocks > MAX_BLOCKS:
        raise ConfigError(f"task.n_blocks={spec.n_blocks}: allowed 3..{MAX_BLOCKS} (the exact "
                          "model's class count grows combinatorially with the blocks)")
    g, o, tr = c["grid"], c["ode"], c["trained"]
    if g["factor_min"] >= g["factor_max"]:
        raise ConfigError(f"grid.factor_min={g['factor_min']} must be < grid.factor_max="
                          f"{g['factor_max']}")
    steps = o["t1"] / tr["lr"]
    if abs(steps - round(steps)) > 1e-9 or round(steps) % o["n_save"]:
        raise ConfigError(f"ode.t1 / trained.lr = {steps:g} training steps must be a whole "
                          f"multiple of ode.n_save={o['n_save']}")
    m = c["model"]
    pb = im.route_problem(spec, m["n_layers"], m["n_heads"], {"f_r": t["f_r"], "f_v": t["f_v"]})
    for r in g["axis_routes"]:
        if r not in pb.dirs.route_names:
            raise ConfigError(f"grid.axis_routes: {r!r} is not a route; allowed "
                              f"{pb.dirs.route_names}")
    if pb.model.classes.size == 0:
        raise ConfigError(f"task: f_r={t['f_r']}, f_v={t['f_v']} leave no sequence")
    return {**c, "problem": pb}


def overlay(c: dict, pb: im.RouteProblem, grid: dict, trained: dict) -> dict[int, dict]:
    """Trained initializations on the map panel whose scale is nearest their route units' RMS,
    at their axis match values divided by that scale."""
    v0 = trained["values0"]
    rms = float(np.sqrt(np.mean(v0 ** 2)))
    scales = np.asarray(c["grid"]["scales"])
    s = int(np.argmin(np.abs(np.log(scales / rms))))
    mx, my = pb.dirs.match_units()[list(grid["axes"])]
    return {s: {"x": v0[:, mx] / scales[s], "y": v0[:, my] / scales[s],
                "winner": trained["winner"]}}


def map_cell_agreement(c: dict, grid: dict, trained: dict, where: dict[int, dict],
                       summary: dict) -> None:
    """How often the map cell nearest a trained init (on the overlay panel; its other route
    units and every other coordinate at the map's values, not the init's) names its trained
    winner."""
    (s, o), = where.items()
    f = grid["factors"]
    i = np.clip(np.rint((o["x"] - f[0]) / (f[1] - f[0])).astype(int), 0, len(f) - 1)
    j = np.clip(np.rint((o["y"] - f[0]) / (f[1] - f[0])).astype(int), 0, len(f) - 1)
    cell = grid["winner"].reshape(grid["shape"])[s, i, j]
    summary["trained/winner_agreement_map_cell_vs_training"] = float(
        np.mean(cell == trained["winner"]))
    summary["trained/overlay_scale"] = float(c["grid"]["scales"][s])


def figures(c: dict, pb: im.RouteProblem, fig_dir: str, grid: dict, where: dict[int, dict],
            inter: dict | None) -> None:
    names = pb.dirs.route_names
    ax_names = [names[a] for a in grid["axes"]]
    fig = plots.winner_maps(grid["factors"], c["grid"]["scales"],
                            grid["winner"].reshape(grid["shape"]),
                            grid["largest"].reshape(grid["shape"]), names,
                            f"{ax_names[0]} match / scale", f"{ax_names[1]} match / scale",
                            where)
    save_figure(fig, os.path.join(fig_dir, "winner_maps.png"))
    if inter is not None:
        w = np.asarray(rt.route_weights(jnp.asarray(inter["values"]), pb.dirs))
        fig = plots.route_dynamics(inter["t"], inter["values"], pb.dirs.names, w, names,
                                   inter["drive"], inter["loss"],
                                   f"{names[inter['largest']]} starts largest, "
                                   f"{names[inter['winner']]} wins")
        save_figure(fig, os.path.join(fig_dir, "largest_loses_trajectories.png"))


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    c = build(config)
    pb = c["problem"]
    experiment.start(workdir, config, overwrite)
    fig_dir = os.path.join(workdir, "figures")
    summary: dict[str, Any] = {"load_at_start": load_average(), "devices": jax.device_count(),
                               "routes": {r.name: list(r.units) for r in pb.dirs.routes},
                               "n_coordinates": pb.basis.size,
                               "population_classes": pb.model.classes.size}
    metrics: dict[str, np.ndarray] = {}
    grid = stages.grid_inits(c, pb)
    rand = stages.random_inits(c, pb)
    ode_grid, ode_rand = stages.solve_all(c, pb, [grid["theta0"], rand["theta0"]], summary)
    grid = stages.grid_map(c, pb, grid, ode_grid, summary, metrics)
    trained = stages.trained(c, pb, rand, ode_rand, summary, metrics)
    inter = stages.interaction(c, pb, grid, summary, metrics)
    where = overlay(c, pb, grid, trained)
    map_cell_agreement(c, grid, trained, where, summary)
    figures(c, pb, fig_dir, grid, where, inter)
    summary["load_at_end"] = load_average()
    write_npz(os.path.join(workdir, "metrics.npz"), metrics)
    write_json(os.path.join(workdir, "summary.json"), summary)
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    keys = ["winner_agreement_ode_vs_training", "largest_init_predictor_accuracy",
            "n_boundary_cells", "trained/win_fractions", "trained/win_fractions_ode",
            "trained/winner_agreement_confident", "trained/n_confident",
            "trained/winner_agreement_settled", "trained/n_settled",
            "trained/winner_agreement_map_cell_vs_training",
            "grid/win_fractions", "grid/largest_init_predictor_accuracy",
            "grid/n_cells_largest_init_loses", "ode/seconds", "ode/points",
            "trained/train_seconds"]
    lines = [f"{k:>40s}: {summary[k]}" for k in keys if k in summary]
    inter = summary.get("interaction")
    if inter:
        lines.append(f"{'interaction':>40s}: {inter['largest_initial_route']} starts largest, "
                     f"{inter['winner']} wins at {inter['cell']}")
    return "\n".join(lines)
