"""Sub-manifolds: a linear map ``theta_full = theta_sub @ phi`` (``phi [n_sub, n_full]``), e.g. the
four induction/in-weights coordinates (alpha, beta, gamma, delta) of ``abgd_coordinates``; a
point's sub-coordinates are its Gram-weighted projection (``sub_projector``).
"""
from __future__ import annotations

import numpy as np

from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.manifold.basis import Basis


def abgd_coordinates(basis: Basis) -> tuple[tuple[str, ...], np.ndarray]:
    """The 4-coordinate sub-manifold (alpha, beta, gamma, delta) of a 2-layer, 1-head basis.

    alpha: ``W_KQ1 = alpha M`` (previous-token attention). beta: ``W_KQ2 = beta I_t O1^T`` (the
    query token matched against what layer 1 wrote). gamma: ``W_U += gamma O2 I_t`` (copy readout
    of what layer 2 wrote). delta: ``W_U += delta C`` (in-weights association).
    ``I_t`` is the sum of the class identities ``I_common + I_rare + ...``.
    """
    f = basis.frame
    if f.n_layers != 2 or f.n_heads != 1:
        raise ValueError("abgd_coordinates needs a 2-layer, 1-head frame")
    names = basis.names()
    idx = {n: i for i, n in enumerate(names)}
    ident = [s for s in basis.sel_kq_names if s.startswith("I_") and s != "I_p"]
    ident_out = [s for s in basis.sel_out_names if s.startswith("I_")]
    rows = {
        "alpha": ["L0H0 I|M|I"],
        "beta": [f"L1H0 I|{s}|O1" for s in ident],
        "gamma": [f"U O2|{s}" for s in ident_out],
        "delta": ["U I|C"],
    }
    phi = np.zeros((4, basis.size))
    for r, (_, members) in enumerate(rows.items()):
        for m in members:
            if m not in idx:
                raise KeyError(f"coordinate {m!r} is not in the basis")
            phi[r, idx[m]] = 1.0
    return tuple(rows), phi


def sub_projector(basis: Basis, phi: np.ndarray) -> np.ndarray:
    """``[n_sub, n]``: the Gram-weighted projection of full coordinates onto the sub-manifold
    ``theta_full = theta_sub @ phi``, ``(phi G phi^T)^-1 phi G`` (``theta_sub = P theta``; exact
    on the sub-manifold)."""
    g = proj.gram(basis)
    return np.linalg.solve(phi @ g @ phi.T, phi @ g)


def abgd_projector(basis: Basis) -> np.ndarray:
    """``[4, n]``: ``sub_projector`` onto (alpha, beta, gamma, delta)."""
    return sub_projector(basis, abgd_coordinates(basis)[1])
