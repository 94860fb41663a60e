"""The emergence order of (alpha, beta, gamma, delta): the exact model, full training and the
4-coordinate closed form from the same point, read on the same Gram-weighted projection."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from mechjax.analysis.imir.cells import theory as imir_cells
from mechjax.analysis.imir.dynamics import four_coord as rd
from mechjax.analysis.imir.manifold import submanifold as subm
from mechjax.analysis.imir.phase import four_coord as fc
from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.theorems.gradient_suppression import solve_settings


ORDER_NAMES = ("alpha", "beta", "gamma", "delta")


def _order(times: dict[str, float]) -> dict:
    """Emergence order over ``ORDER_NAMES`` (those that never moved listed apart)."""
    order = ph.emergence_order(times, ORDER_NAMES)
    return {"order": [n for n in order if np.isfinite(times[n])],
            "never": [n for n in order if not np.isfinite(times[n])],
            "times": {n: (float(times[n]) if np.isfinite(times[n]) else None)
                      for n in ORDER_NAMES}}


def emergence(model: exact.ExactRecall, init_sub: Sequence[float], f_r: float, f_v: float,
              lr: float, steps: int, n_save: int, batch_size: int, eval_size: int,
              seed: int = 0, rtol: float = 1e-3,
              exact_traj: tuple[np.ndarray, np.ndarray] | None = None,
              four_coord: bool = True) -> dict:
    """The emergence times and order of (alpha, beta, gamma, delta) from the same point
    ``init_sub``, at one cell ``(f_r, f_v)``, up to ``t1 = steps * lr``:

    * exact reduced dynamics: the full-coordinate trajectory at ``n_save + 1`` equal times (or
      ``exact_traj = (t, theta [n_t, n])``, a solve of the same cell from the same point over at
      least ``t1``, read on its own times up to ``t1``), projected on the four directions with
      ``submanifold.abgd_projector`` (the Gram-weighted projection);
    * full training: ``cells.train_cells`` (every ``W_KQ`` and ``W_U`` entry, SGD at ``lr``,
      fresh batches of ``batch_size``; time ``step * lr``), projected by the same projector;
    * with ``four_coord``, the 4-coordinate closed form on the same spec, for reference.

    Emergence of a coordinate is ``phase.departure_times`` at ``phase.readoffs.EMERGENCE_LEVEL``
    (the
    first time it has moved that far from its initial value, linear interpolation between
    saved times), as ``phase.four_coord.reference_emergence``.
    """
    t1 = float(steps) * float(lr)
    t = np.linspace(0.0, t1, n_save + 1)
    if exact_traj is None:
        ex = solve_settings(model, init_sub, [(f_r, f_v)], t1, n_save, rtol)
        t_ex, th_ex = t, ex["theta"][0]
    else:
        t_ex, th_ex = (np.asarray(a, np.float64) for a in exact_traj)
        if t_ex[-1] < t1 * (1 - 1e-9):
            raise ValueError(f"exact_traj ends at t={t_ex[-1]}, before steps * lr = {t1}")
        keep = t_ex <= t1 * (1 + 1e-9)
        t_ex, th_ex = t_ex[keep], th_ex[keep]
    sub_exact = th_ex @ subm.abgd_projector(model.basis).T
    tr = imir_cells.train_cells(model.spec, init_sub, np.array([f_r]), np.array([f_v]),
                                float(lr), steps, n_save, batch_size, eval_size, seed,
                                rare_pool="cell")  # p_rare unused; the grid cells' program
    sub_train = tr["theta"][0].astype(np.float64)
    runs = [("exact", t_ex, sub_exact), ("trained", t, sub_train)]
    if four_coord:
        four = fc.solve_grid(rd.RecallSizes.from_spec(model.spec), init_sub,
                             model.spec.burstiness, f_r, f_v, t1, n_save)
        runs.append(("four_coord", t, np.asarray(four["theta"][0], np.float64)))
    lvl = ph.EMERGENCE_LEVEL
    res = {name: _order(ph.departure_times(tt, sub, lvl, ORDER_NAMES)) for name, tt, sub in runs}
    # the exact trajectory at the training's saved times (linear between its own)
    at_t = np.stack([np.interp(t, t_ex, sub_exact[:, j]) for j in range(4)], 1)
    dev = np.linalg.norm(sub_train - at_t, axis=1) / np.linalg.norm(at_t, axis=1)
    return {**res, "t": t.tolist(), "t_exact": t_ex.tolist(), "f_r": float(f_r),
            "f_v": float(f_v), "t1": t1,
            "trained_vs_exact_max_rel_deviation_abgd": float(dev.max()),
            **{f"theta_{name}": sub for name, _, sub in runs},
            "definition": (
                f"first time a coordinate (Gram-weighted projection on alpha, beta, gamma, "
                f"delta) has moved {lvl} from its initial value {list(init_sub)}; cell "
                f"f_r={f_r}, f_v={f_v}, b={model.spec.burstiness}, T={model.spec.seq_len}, "
                f"V={model.spec.n_tokens}; training: SGD lr {lr}, batch {batch_size}, "
                f"{steps} steps (t = step * lr)")}
