"""The basis of the invariant manifold (arXiv 2607.11875; docs/imir.md).

Manifold basis (``Basis``; ``mode`` picks the selections, see ``token_selections``):
  ``blocks.l.attn.W_KQ[h]``: ``V_a^T S V_b`` for paths a, b populated at layer l's input and S a
  token or position selection (score(q, k) = (x_q V_a^T) S (x_k V_b^T)^T).
  ``unembed.W_U``: ``V_a^T R_t`` for every path a and token selection t (``R_t [d_e, n_out]``, the
  centred token selection in the token rows, zero in the position rows).

The frame (``manifold.frame``) and the selections (``manifold.selections``) are re-exported here:
callers build a frame and its basis together (``basis.make_frame``, ``basis.make_basis``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from mechjax.analysis.imir.manifold.frame import Frame, centre
# re-exported: callers build a frame and its basis together (``ib.make_frame``, ``ib.make_basis``)
from mechjax.analysis.imir.manifold.frame import (FROZEN, TokenStructure, fixed_params,
                                                  imir_config, make_frame, random_weights,
                                                  trainable_names, zero_trainables)
from mechjax.analysis.imir.manifold.selections import (PositionMode, TokenMode,
                                                       independent, position_selections,
                                                       token_selections)


__all__ = ["Basis", "FROZEN", "Frame", "Group", "PositionMode", "TokenMode", "TokenStructure",
           "dense_basis", "fixed_params", "imir_config", "make_basis", "make_frame",
           "position_selections", "random_weights", "token_selections", "trainable_names",
           "zero_trainables"]

@dataclasses.dataclass(frozen=True)
class Group:
    """Coordinates of one parameter (and head): KQ triples (a, b, s) or unembedding pairs (a, t)."""

    param: str
    head: int | None
    paths_q: tuple[int, ...]       # KQ: query-side paths a; W_U: paths a
    paths_k: tuple[int, ...]       # KQ: key-side paths b; W_U: ()
    n_sel: int
    offset: int

    @property
    def shape(self) -> tuple[int, ...]:
        if self.head is None:
            return (len(self.paths_q), self.n_sel)
        return (len(self.paths_q), len(self.paths_k), self.n_sel)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


@dataclasses.dataclass(frozen=True, eq=False)
class Basis:
    """A factored basis of the manifold: ``W = sum_i theta_i B_i`` per trainable parameter.

    ``sel_kq [n_s, d_e, d_e]`` (token selections in the token block, position selections in the
    position block), ``sel_out [n_t, d_e, n_out]``, ``maps [n_paths, d_e, d_model]`` (``V_c``).
    """

    frame: Frame
    sel_kq: np.ndarray
    sel_kq_names: tuple[str, ...]
    sel_out: np.ndarray
    sel_out_names: tuple[str, ...]
    maps: np.ndarray
    groups: tuple[Group, ...]

    @property
    def size(self) -> int:
        return sum(g.size for g in self.groups)

    def names(self) -> list[str]:
        """A readable label per coordinate, e.g. ``L1H0 I|I_common|O1``, ``U O2|I_rare``."""
        paths = self.frame.paths
        pn = [self.frame.path_name(c) for c in paths]
        out = []
        for g in self.groups:
            if g.head is None:
                out += [f"U {pn[a]}|{t}" for a in g.paths_q for t in self.sel_out_names]
            else:
                layer = int(g.param.split(".")[1])
                out += [f"L{layer}H{g.head} {pn[a]}|{s}|{pn[b]}" for a in g.paths_q
                        for b in g.paths_k for s in self.sel_kq_names]
        return out

    def index(self, name: str) -> int:
        return self.names().index(name)


def make_basis(frame: Frame, token_mode: TokenMode = "full", position_mode: PositionMode = "all",
               block_len: int = 2) -> Basis:
    """The IMIR basis of ``frame``. ``token_mode``/``position_mode`` as in the selections;
    ``("literal", "literal")`` is the span as the paper lists it (28 coordinates for 2 layers,
    1 head, k = 2)."""
    ts = frame.tokens
    tok, tok_names = token_selections(ts, token_mode)
    pos, pos_names = position_selections(frame.n_pos, position_mode, block_len)
    n_t, d_e = ts.n_tokens, frame.d_e
    sel_kq = np.zeros((len(tok) + len(pos), d_e, d_e))
    sel_kq[: len(tok), :n_t, :n_t] = tok
    sel_kq[len(tok):, n_t:, n_t:] = pos
    sel_out = np.zeros((len(tok), d_e, ts.n_out))
    p_out = centre(ts.n_out)
    sel_out[:, :n_t, :] = tok[:, :, : ts.n_out] @ p_out
    sel_out_names = tok_names
    # prune output selections that became dependent after restricting to the outputs
    kept, sel_out_names = independent(list(sel_out), list(sel_out_names))
    sel_out = np.stack(kept)
    groups, offset = [], 0
    for l in range(frame.n_layers):
        pop = tuple(frame.populated(l))
        for h in range(frame.n_heads):
            g = Group(f"blocks.{l}.attn.W_KQ", h, pop, pop, len(sel_kq), offset)
            groups.append(g)
            offset += g.size
    g = Group("unembed.W_U", None, tuple(frame.populated(frame.n_layers)), (), len(sel_out),
              offset)
    groups.append(g)
    return Basis(frame, sel_kq, tuple(tok_names) + tuple(pos_names), sel_out,
                 tuple(sel_out_names), frame.path_maps(), tuple(groups))


def dense_basis(basis: Basis) -> dict[str, np.ndarray]:
    """Materialised basis ``{param: [n_coords, *param_shape]}`` (zero outside the coordinate's
    parameter). For tests on tiny frames only."""
    n, f = basis.size, basis.frame
    d, h = f.d_model, f.n_heads
    out = {f"blocks.{l}.attn.W_KQ": np.zeros((n, h, d, d)) for l in range(f.n_layers)}
    out["unembed.W_U"] = np.zeros((n, d, f.tokens.n_out))
    v = basis.maps
    i = 0
    for g in basis.groups:
        if g.head is None:
            for a in g.paths_q:
                for t in range(g.n_sel):
                    out[g.param][i] = v[a].T @ basis.sel_out[t]
                    i += 1
        else:
            for a in g.paths_q:
                for b in g.paths_k:
                    for s in range(g.n_sel):
                        out[g.param][i, g.head] = v[a].T @ basis.sel_kq[s] @ v[b]
                        i += 1
    return out
