"""The selections the manifold basis is built from.

Selections (``[d_e, d_e]`` bilinear forms on E): token selections act on the token coordinates and
are centred (``P A P``, ``P = I - J/V``); position selections are the centred cyclic shifts
``M^j`` (``(M^j)[q, k] = [k = q - j mod T]``: the query at q reads the key j positions back).
"""
from __future__ import annotations

import itertools
from typing import Literal, Sequence

import numpy as np

from mechjax.analysis.imir.manifold.frame import TokenStructure, centre


TokenMode = Literal["full", "split", "literal"]


PositionMode = Literal["all", "literal"]


def independent(mats: Sequence[np.ndarray], names: Sequence[str], tol: float = 1e-9,
                 ) -> tuple[list[np.ndarray], list[str]]:
    """Greedy maximal linearly independent subset, in order (Frobenius Gram-Schmidt)."""
    keep, keep_names, ortho = [], [], []
    for m, name in zip(mats, names):
        r = m.copy()
        for q in ortho:
            r = r - np.sum(q * r) * q
        norm = np.linalg.norm(r)
        if norm > tol * max(1.0, np.linalg.norm(m)):
            ortho.append(r / norm)
            keep.append(m)
            keep_names.append(name)
    return keep, keep_names


def token_selections(ts: TokenStructure, mode: TokenMode = "full",
                     ) -> tuple[np.ndarray, tuple[str, ...]]:
    """Centred token selections ``[n, V, V]`` and their names.

    ``literal``: the paper's ``{I_t, C}``. ``split``: the identity split by class (``I_common``,
    ``I_rare``, ...) and ``C^j`` (j = 1..cycle_len-1). ``full``: ``split`` plus the class-mean
    outer products ``J[A,B] = P 1_A 1_B^T P`` (pruned to an independent set): a basis of every
    bilinear form on centred tokens that the symmetry group fixes (docs/imir.md, section 2).
    """
    p = centre(ts.n_tokens)
    mats, names = [], []
    if mode == "literal":
        mats += [np.eye(ts.n_tokens), ts.assoc_matrix(1)]
        names += ["I_t", "C"]
    else:
        for name, _ in ts.classes:
            mats.append(np.diag(ts.class_indicator(name)))
            names.append(f"I_{name}")
        for j in range(1, ts.cycle_len):
            mats.append(ts.assoc_matrix(j))
            names.append("C" if j == 1 else f"C^{j}")
        if mode == "full":
            for (a, _), (b, _) in itertools.product(ts.classes, ts.classes):
                mats.append(np.outer(ts.class_indicator(a), ts.class_indicator(b)))
                names.append(f"J[{a},{b}]")
        elif mode != "split":
            raise ValueError(f"token mode {mode!r}: allowed full, split, literal")
    mats = [p @ m @ p for m in mats]
    mats, names = independent(mats, names)
    return np.stack(mats), tuple(names)


def position_selections(n_pos: int, mode: PositionMode = "all", block_len: int = 2,
                        ) -> tuple[np.ndarray, tuple[str, ...]]:
    """Centred cyclic shifts ``[n, T, T]``.

    ``all``: ``M^1 .. M^(T-1)`` (every relative offset; ``I_p = -sum_j M^j`` on centred positions,
    so it is left out). ``literal``: the paper's ``{I_p, M, .., M^(k-1)}``.
    """
    p = centre(n_pos)
    q = np.arange(n_pos)

    def shift(j):
        m = np.zeros((n_pos, n_pos))
        m[q, (q - j) % n_pos] = 1.0
        return m

    if mode == "all":
        js = list(range(1, n_pos))
    elif mode == "literal":
        js = list(range(0, block_len))
    else:
        raise ValueError(f"position mode {mode!r}: allowed all, literal")
    mats = [p @ shift(j) @ p for j in js]
    names = ["I_p" if j == 0 else ("M" if j == 1 else f"M^{j}") for j in js]
    mats, names = independent(mats, names)
    return np.stack(mats), tuple(names)
