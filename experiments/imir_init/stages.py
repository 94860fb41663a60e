"""The stages of ``experiments.imir_init.run``: each solves, trains or explains one thing, adds
its numbers to ``summary`` and its arrays to ``metrics``.

Each takes ``c`` (the checked config's sections, ``config_checks.build``) and the ``RouteProblem``.
"""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold.basis import random_weights
from mechjax.analysis.imir.routes import init_map as im
from mechjax.analysis.imir.routes import route_units as rt
from mechjax.sweeps.sweep import log


def _winners(c: dict, pb: im.RouteProblem, rises: np.ndarray) -> np.ndarray:
    return rt.winners(rises, pb.dirs, c["ode"]["min_rise"])


def _route_index(pb: im.RouteProblem, name: str) -> int:
    return pb.dirs.route_names.index(name)


def grid_inits(c: dict, pb: im.RouteProblem) -> dict:
    """The map's initial points: route units at each scale, the axis routes' match units at
    ``scale * factor`` (``routes.init_map.map_inits``)."""
    g = c["grid"]
    axes = tuple(_route_index(pb, r) for r in g["axis_routes"])
    factors = np.linspace(g["factor_min"], g["factor_max"], g["n"])
    theta0 = im.map_inits(pb, g["scales"], axes, factors)
    return {"theta0": theta0.reshape(-1, theta0.shape[-1]), "axes": axes, "factors": factors,
            "shape": theta0.shape[:3]}


def random_inits(c: dict, pb: im.RouteProblem) -> dict:
    """Random full weights and their least-squares coordinates."""
    tr = c["trained"]
    weights = random_weights(pb.frame, jax.random.key(tr["seed"]), tr["init_std"],
                                tr["n_inits"])
    return {"weights": weights, "theta0": np.asarray(im.project_inits(pb, weights))}


def solve_all(c: dict, pb: im.RouteProblem, parts: list[np.ndarray], summary: dict,
              ) -> list[dict]:
    """The exact ODE from every initial point of every part (the map's cells and the projected
    random inits) in one vmapped program; returned split back into the parts."""
    o = c["ode"]
    theta0 = np.concatenate(parts)
    t0 = time.perf_counter()
    out = im.solve_from(pb, theta0, o["t1"], o["n_save"], rtol=o["rtol"], keep_theta=True)
    summary["ode/seconds"] = time.perf_counter() - t0
    summary["ode/points"] = int(theta0.shape[0])
    summary["ode/max_solver_steps"] = int(out["num_steps"].max())
    cuts = np.cumsum([len(p) for p in parts])[:-1]
    return [{k: v for k, v in zip(out, vs)} for vs in zip(*(np.split(v, cuts) for v in
                                                          out.values()))]


def grid_map(c: dict, pb: im.RouteProblem, grid: dict, out: dict, summary: dict,
             metrics: dict) -> dict:
    """Winners over the map from the ODE solved from its cells."""
    g, shape = c["grid"], grid["shape"]
    rises = out["rises"][:, -1]
    winner = _winners(c, pb, rises).reshape(shape)
    weights0 = np.asarray(rt.route_weights(jnp.asarray(out["values"][:, 0]), pb.dirs))
    largest = rt.largest_initial(weights0).reshape(shape)
    formed = winner >= 0
    summary["grid/cells"] = int(np.prod(shape))
    summary["n_boundary_cells"] = int(sum(im.boundary_cells(w) for w in winner))
    summary["grid/n_boundary_cells_per_scale"] = [im.boundary_cells(w) for w in winner]
    summary["grid/win_fractions"] = im.win_fractions(winner, pb.dirs)
    summary["grid/largest_init_predictor_accuracy"] = float(
        np.mean(largest[formed] == winner[formed])) if formed.any() else None
    summary["grid/n_cells_largest_init_loses"] = int(np.sum(formed & (largest != winner)))
    margin = rt.winner_margin(rises)
    metrics.update({"grid/factors": grid["factors"], "grid/scales": np.asarray(g["scales"]),
                    "grid/winner": winner, "grid/largest_init": largest,
                    "grid/rises": rises.reshape(shape + (-1,)),
                    "grid/margin": margin.reshape(shape),
                    "grid/loss": out["loss"].reshape(shape + (-1,))})
    log(f"grid: {np.prod(shape)} cells, win fractions {summary['grid/win_fractions']}")
    return {**grid, "winner": winner.ravel(), "largest": largest.ravel(), "margin": margin,
            "values": out["values"], "theta": out["theta"], "loss": out["loss"]}


def trained(c: dict, pb: im.RouteProblem, rand: dict, ode_out: dict, summary: dict,
            metrics: dict) -> dict:
    """Full transformers trained from the random initializations (one vmapped program); their
    winners against the ODE's from each projection and against the largest-init predictor."""
    tr, o = c["trained"], c["ode"]
    weights, theta0 = rand["weights"], rand["theta0"]
    steps = int(round(o["t1"] / tr["lr"]))
    t0 = time.perf_counter()
    tr_out = im.train_from(pb, weights, tr["lr"], steps, o["n_save"], tr["batch_size"],
                           jax.random.key(tr["seed"] + 1))
    summary["trained/train_seconds"] = time.perf_counter() - t0
    # winners at every saved time, each side once; the final winner is the last column
    per_save_ode = _winners(c, pb, ode_out["rises"])
    per_save_tr = _winners(c, pb, tr_out["rises"])
    w_ode, w_tr = per_save_ode[:, -1], per_save_tr[:, -1]
    v0 = np.asarray(pb.values(theta0))
    largest = rt.largest_initial(np.asarray(rt.route_weights(jnp.asarray(v0), pb.dirs)))
    margin = rt.winner_margin(tr_out["rises"][:, -1])
    confident = margin >= tr["confident_margin"]
    summary["winner_agreement_ode_vs_training"] = float(np.mean(w_ode == w_tr))
    summary["largest_init_predictor_accuracy"] = float(np.mean(largest == w_tr))
    summary["trained/n_inits"] = int(tr["n_inits"])
    summary["trained/training_steps"] = steps
    summary["trained/n_confident"] = int(confident.sum())
    summary["trained/winner_agreement_confident"] = float(
        np.mean(w_ode[confident] == w_tr[confident])) if confident.any() else None
    summary["trained/largest_init_accuracy_confident"] = float(
        np.mean(largest[confident] == w_tr[confident])) if confident.any() else None
    # read mid-race? the winner over the last quarter of the saved times, both sides
    settled = rt.settled(per_save_tr) & rt.settled(per_save_ode)
    summary["trained/n_settled"] = int(settled.sum())
    summary["trained/winner_agreement_settled"] = float(
        np.mean(w_ode[settled] == w_tr[settled])) if settled.any() else None
    summary["trained/winner_agreement_per_save"] = np.mean(
        per_save_tr == per_save_ode, axis=0).tolist()
    summary["trained/win_fractions"] = im.win_fractions(w_tr, pb.dirs)
    summary["trained/win_fractions_ode"] = im.win_fractions(w_ode, pb.dirs)
    summary["trained/final_loss_mean"] = float(tr_out["loss"][:, -1].mean())
    summary["trained/final_loss_mean_ode"] = float(ode_out["loss"][:, -1].mean())
    summary["trained/off_span_final_mean"] = float(tr_out["off_span"][:, -1].mean())
    summary["trained/route_unit_std_at_init"] = float(v0.std())
    metrics.update({"trained/values0": v0, "trained/winner": w_tr, "trained/winner_ode": w_ode,
                    "trained/largest_init": largest, "trained/margin": margin,
                    "trained/rises": tr_out["rises"], "trained/rises_ode": ode_out["rises"],
                    "trained/loss": tr_out["loss"], "trained/loss_ode": ode_out["loss"],
                    "trained/off_span": tr_out["off_span"], "trained/t": tr_out["t"]})
    log(f"trained: agreement ODE vs training {summary['winner_agreement_ode_vs_training']:.3f}, "
        f"largest-init predictor {summary['largest_init_predictor_accuracy']:.3f}")
    return {"values0": v0, "winner": w_tr, "winner_ode": w_ode}


def _pick_loser_cell(grid: dict) -> int | None:
    """The formed grid cell where the largest-initial route loses with the clearest margin."""
    lose = (grid["winner"] >= 0) & (grid["largest"] != grid["winner"])
    if not lose.any():
        return None
    return int(np.flatnonzero(lose)[np.argmax(grid["margin"][lose])])


def interaction(c: dict, pb: im.RouteProblem, grid: dict, summary: dict, metrics: dict,
                ) -> dict | None:
    """Along the trajectory of a cell where the largest-initial route loses: the route units'
    Jacobian and each route's drive on each route's match growth
    (``routes.init_map.route_drive``)."""
    cell = _pick_loser_cell(grid)
    if cell is None:
        summary["interaction"] = None
        log("interaction: no formed cell where the largest-initial route loses")
        return None
    o = c["ode"]
    theta = grid["theta"][cell]
    jac = im.route_jacobians(pb, theta)
    vals = grid["values"][cell]
    drive = np.stack([im.route_drive(j, v, pb.dirs) for j, v in zip(jac, vals)])  # [S, R, R]
    t = np.linspace(0.0, o["t1"], theta.shape[0])
    names = pb.dirs.route_names
    win, big = int(grid["winner"][cell]), int(grid["largest"][cell])
    # the moment the winner's match grows fastest: where the interaction decides
    m_win = pb.dirs.match_units()[win]
    k = int(np.argmax(np.gradient(vals[:, m_win], t)))
    s_idx, i, j = np.unravel_index(cell, grid["shape"])
    summary["interaction"] = {
        "cell": {"scale": float(c["grid"]["scales"][s_idx]),
                 "factor_" + names[grid["axes"][0]]: float(grid["factors"][i]),
                 "factor_" + names[grid["axes"][1]]: float(grid["factors"][j])},
        "largest_initial_route": names[big], "winner": names[win],
        "initial_route_weights": dict(zip(names, np.asarray(
            rt.route_weights(jnp.asarray(vals[0]), pb.dirs)).round(6).tolist())),
        "t_fastest_winner_growth": float(t[k]),
        "drive_at_t_fastest": {f"{names[q]} <- {names[r]}": float(drive[k, q, r])
                               for q in range(len(names)) for r in range(len(names))},
        "drive_at_t0": {f"{names[q]} <- {names[r]}": float(drive[0, q, r])
                        for q in range(len(names)) for r in range(len(names))},
        "jacobian_at_t_fastest": {f"d {pb.dirs.names[a]} / d {pb.dirs.names[b]}":
                                  float(jac[k, a, b]) for a in range(len(pb.dirs.names))
                                  for b in range(len(pb.dirs.names)) if abs(jac[k, a, b]) > 0},
    }
    metrics.update({"interaction/t": t, "interaction/values": vals, "interaction/jacobian": jac,
                    "interaction/drive": drive, "interaction/loss": grid["loss"][cell]})
    log(f"interaction: cell {cell}: {names[big]} starts largest, {names[win]} wins")
    return {"t": t, "values": vals, "drive": drive, "winner": win, "largest": big,
            "loss": grid["loss"][cell]}
