"""Theorem 3 on the exact model: the ICL gradient against burstiness ``b`` on the exact classes
(one model per ``b``), with the 4-coordinate fit on the same sizes for reference."""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from mechjax.analysis.imir.dynamics import four_coord as rd
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.theorems import four_coord as th
from mechjax.analysis.imir.theorems.gradient_suppression import icl_gradient
from mechjax.tasks import blocklist as bl


def theorem3(spec: bl.BlockListSpec, n_blocks: int, point_sub: Sequence[float],
                   f_r: float, f_v: float) -> dict:
    """The exact ICL gradient (``-dL/dgamma``, ``-dL/dbeta``) against burstiness
    ``b = 1 .. n_blocks - 1`` at the fixed sub-manifold point ``point_sub`` (the spec's
    vocabulary, ``n_blocks`` blocks; one exact model per ``b``: the classes depend on it),
    with ``theorems.four_coord.linear_fit`` and the 4-coordinate gradient on the same sizes. With
    ``n_blocks = 3`` the fit has two points and holds by construction."""
    bs = list(range(1, n_blocks))
    grads, n_classes = [], []
    for b in bs:
        m = exact.make(dataclasses.replace(spec, n_blocks=n_blocks, burstiness=b))
        grads.append(icl_gradient(m, exact.abgd_init(m, point_sub), f_r, f_v))
        n_classes.append(int(m.classes.size))
    g = np.array(grads)
    four = th.theorem3(rd.RecallSizes(spec.n_common, spec.n_rare, n_blocks), point_sub[:3],
                       point_sub[3], bs, f_r, f_v)
    fit_g = th.linear_fit(bs, g[:, 2])
    return {"b": bs, "n_blocks": n_blocks, "n_classes": n_classes,
            "grad_gamma": g[:, 2].tolist(), "grad_beta": g[:, 1].tolist(),
            "grad_alpha": g[:, 0].tolist(), "fit_gamma": fit_g,
            "fit_beta": th.linear_fit(bs, g[:, 1]),
            "max_rel_residual_gamma": float(np.max(np.abs(
                g[:, 2] - (fit_g["slope"] * np.array(bs) + fit_g["intercept"])))
                / np.max(np.abs(g[:, 2]))),
            "grad_gamma_4coord": four["grad_gamma"], "fit_gamma_4coord": four["fit_gamma"],
            "distractor_blocks_at_b_max": n_blocks - 1 - bs[-1],
            "points_in_fit": len(bs)}
