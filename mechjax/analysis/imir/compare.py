"""Full transformers trained on phase-diagram cells (``cells.train_cells``) against the reduced
4-coordinate ODE on the same cells: winners, rare-token probability, in-weights probability and
ICL emergence from both, where the projected transformer leaves the ODE, and the order in which
its coordinates move (docs/imir.md, section 6).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from mechjax.analysis.imir import phase as ph

EMERGENCE_LEVEL = 0.5  # coordinates start at 0.1: a move of 0.5 is well past the start


def cells_vs_ode(trained: dict[str, np.ndarray], ode_same_horizon: dict[str, np.ndarray],
                 ode_grid_horizon: dict[str, np.ndarray], t_grid: np.ndarray, b: int,
                 threshold: float, f_r: Sequence[float], f_v: Sequence[float],
                 ) -> tuple[dict, dict[str, np.ndarray]]:
    """Summary entries ``cells/*`` and ``emergence_*_trained``, and the trained cells'
    ``phase.readoff``.

    ``trained``: ``train_cells`` output (``theta``, ``p_rare``, ``p_iwl`` ``[C, n_t, ...]`` at
    times ``t``); ``ode_same_horizon``: ``solve_grid`` on the same cells and times;
    ``ode_grid_horizon``: the phase diagram's own solve at the nearest grid cells (times
    ``t_grid``). The first cell is the one whose coordinate emergence is reported."""
    bb = np.full(len(f_r), float(b))
    t = trained["t"]
    trc = ph.readoff({"p_rare": trained["p_rare"], "p_iwl": trained["p_iwl"],
                      "acc_rare": trained["p_rare"]}, t, bb, threshold)
    odc = ph.readoff(ode_same_horizon, t, bb, threshold)
    odg = ph.readoff(ode_grid_horizon, t_grid, bb, threshold)
    th_o, th_t = np.asarray(ode_same_horizon["theta"]), trained["theta"]
    dev = np.linalg.norm(th_t - th_o, axis=-1) / np.linalg.norm(th_o, axis=-1)
    em = ph.departure_times(t, th_t[0], EMERGENCE_LEVEL)
    return {
        "cells/f_r": [float(x) for x in f_r], "cells/f_v": [float(x) for x in f_v],
        "cells/horizon_t": float(t[-1]),
        "cells/winner_trained": [ph.WINNERS[w] for w in trc["winner"]],
        "cells/winner_ode_same_horizon": [ph.WINNERS[w] for w in odc["winner"]],
        "cells/winner_ode_grid_horizon": [ph.WINNERS[w] for w in odg["winner"]],
        "cells/p_rare_trained": trc["p_rare"].tolist(),
        "cells/p_rare_ode_same_horizon": odc["p_rare"].tolist(),
        "cells/p_iwl_trained": trc["p_iwl"].tolist(),
        "cells/p_iwl_ode_same_horizon": odc["p_iwl"].tolist(),
        "cells/icl_emergence_trained": trc["emergence"].tolist(),
        "cells/icl_emergence_ode": odc["emergence"].tolist(),
        # where the 4-coordinate ODE and the projected transformer part (relative, in theta)
        "cells/abgd_rel_deviation_max": dev.max(1).tolist(),
        "cells/abgd_rel_deviation_first_t_over_0.1": [
            float(t[np.argmax(d > 0.1)]) if (d > 0.1).any() else None for d in dev],
        "emergence_times_trained": em,
        "emergence_order_trained": ph.emergence_order(em),
        "emergence_times_trained_half_change": ph.coordinate_emergence(t, th_t[0]),
    }, trc


def reference_emergence(t: np.ndarray, theta: np.ndarray, f_r: float, f_v: float, b: int,
                        ) -> dict:
    """Coordinate emergence of one reduced-ODE trajectory ``theta [n_t, 4]`` (the reference
    cell): summary entries ``emergence_*``."""
    em = ph.departure_times(t, theta, EMERGENCE_LEVEL)
    return {"emergence_times_ode": em, "emergence_order": ph.emergence_order(em),
            "emergence_definition": (
                f"first time a coordinate has moved {EMERGENCE_LEVEL} from its initial value, "
                f"reduced ODE at the reference cell f_r={f_r}, f_v={f_v}, b={b}; *_half_change: "
                "first time it covers half of its change over the horizon"),
            "emergence_times_ode_half_change": ph.coordinate_emergence(t, theta)}
