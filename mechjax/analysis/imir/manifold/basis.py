"""The IMIR model frame and the basis of the invariant manifold (arXiv 2607.11875; docs/imir.md).

Residual-stream frame. The embedding space E has one coordinate per input token and one per
position (``d_e = n_tokens + n_pos``). Token ``a`` embeds as ``delta_a - 1/V`` in the token
coordinates, position ``i`` as ``delta_i - 1/T`` in the position coordinates (orthonormal one-hots,
centred: their mean is zero). A *path* ``c = (c_1, ..., c_L)``, ``c_l`` in ``{0 (skip), 1..H}``,
names the residual component that went through head ``c_l - 1`` at each layer with ``c_l > 0``;
every path owns its own copy of E, so ``d_model = d_e * (H + 1) ** L``. Head ``h`` of layer ``l``
has the frozen output-value map ``W_OV`` that swaps path blocks ``c_l = 0 <-> c_l = h + 1``: an
orthogonal block permutation sending the layer's input into a subspace orthogonal to the input and
to every other head's output (what the theory needs). ``V_c [d_e, d_model]`` is the isometry
putting E into path block ``c`` (row convention: ``e -> e @ V_c``; ``V_c`` is the product of the
OV maps along the path). An optional global rotation ``Q`` mixes all coordinates.

Selections (``[d_e, d_e]`` bilinear forms on E): token selections act on the token coordinates and
are centred (``P A P``, ``P = I - J/V``); position selections are the centred cyclic shifts
``M^j`` (``(M^j)[q, k] = [k = q - j mod T]``: the query at q reads the key j positions back).

Manifold basis (``Basis``; ``mode`` picks the selections, see ``token_selections``):
  ``blocks.l.attn.W_KQ[h]``: ``V_a^T S V_b`` for paths a, b populated at layer l's input and S a
  token or position selection (score(q, k) = (x_q V_a^T) S (x_k V_b^T)^T).
  ``unembed.W_U``: ``V_a^T R_t`` for every path a and token selection t (``R_t [d_e, n_out]``, the
  centred token selection in the token rows, zero in the position rows).
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Literal, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.config import ModelConfig

TokenMode = Literal["full", "split", "literal"]
PositionMode = Literal["all", "literal"]


# ------------------------------------------------------------------------------------------------
# Token structure (the symmetry group's orbits) and selections
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TokenStructure:
    """Input/output vocabulary, token classes (orbits) and the association map.

    ``classes``: name -> token ids (a partition of the input vocabulary; ``"common"`` holds the
    tokens ``assoc`` permutes in cycles of ``cycle_len``). Outputs are tokens ``[0, n_out)``.
    """

    n_tokens: int
    n_out: int
    classes: tuple[tuple[str, tuple[int, ...]], ...]
    assoc: tuple[int, ...]
    cycle_len: int

    @classmethod
    def from_spec(cls, spec) -> "TokenStructure":
        """From a ``mechjax.tasks.blocklist.BlockListSpec``."""
        classes = tuple((k, tuple(int(i) for i in v)) for k, v in spec.token_classes().items())
        assoc = tuple(int(i) for i in spec.association()) + tuple(
            range(spec.n_tokens, spec.vocab_in))
        return cls(n_tokens=spec.vocab_in, n_out=spec.n_tokens, classes=classes, assoc=assoc,
                   cycle_len=spec.cyc)

    def class_indicator(self, name: str) -> np.ndarray:
        v = np.zeros(self.n_tokens)
        v[list(dict(self.classes)[name])] = 1.0
        return v

    def assoc_matrix(self, power: int = 1) -> np.ndarray:
        """``C^j [V, V]``: ``C[x, y] = 1`` iff ``y = C(x)`` (x common); zero rows elsewhere."""
        perm = np.arange(self.n_tokens)
        for _ in range(power):
            perm = np.asarray(self.assoc)[perm]
        common = self.class_indicator("common")
        m = np.zeros((self.n_tokens, self.n_tokens))
        m[np.arange(self.n_tokens), perm] = 1.0
        return m * common[:, None]


def _centre(n: int) -> np.ndarray:
    return np.eye(n) - np.ones((n, n)) / n


def _independent(mats: Sequence[np.ndarray], names: Sequence[str], tol: float = 1e-9,
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
    p = _centre(ts.n_tokens)
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
    mats, names = _independent(mats, names)
    return np.stack(mats), tuple(names)


def position_selections(n_pos: int, mode: PositionMode = "all", block_len: int = 2,
                        ) -> tuple[np.ndarray, tuple[str, ...]]:
    """Centred cyclic shifts ``[n, T, T]``.

    ``all``: ``M^1 .. M^(T-1)`` (every relative offset; ``I_p = -sum_j M^j`` on centred positions,
    so it is left out). ``literal``: the paper's ``{I_p, M, .., M^(k-1)}``.
    """
    p = _centre(n_pos)
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
    mats, names = _independent(mats, names)
    return np.stack(mats), tuple(names)


# ------------------------------------------------------------------------------------------------
# The residual-stream frame and the IMIR model
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class Frame:
    """Residual-stream layout of the IMIR model (see module docstring)."""

    tokens: TokenStructure
    n_pos: int
    n_layers: int
    n_heads: int
    rotation: np.ndarray | None = None  # [d_model, d_model] orthogonal, or None
    centred: bool = True                # False: plain one-hots (violates the theory; for tests)

    @property
    def d_e(self) -> int:
        return self.tokens.n_tokens + self.n_pos

    @property
    def n_paths(self) -> int:
        return (self.n_heads + 1) ** self.n_layers

    @property
    def d_model(self) -> int:
        return self.d_e * self.n_paths

    @property
    def paths(self) -> list[tuple[int, ...]]:
        """Every path, in block order (the first is the embedding itself)."""
        return [tuple(reversed(c)) for c in itertools.product(range(self.n_heads + 1),
                                                              repeat=self.n_layers)]

    def path_index(self, c: Sequence[int]) -> int:
        return self.paths.index(tuple(c))

    def populated(self, layer: int) -> list[int]:
        """Indices of the paths present at the input of ``layer`` (``n_layers``: the output)."""
        return [i for i, c in enumerate(self.paths) if all(x == 0 for x in c[layer:])]

    def path_name(self, c: Sequence[int]) -> str:
        parts = [f"O{l + 1}" + (f".{h - 1}" if self.n_heads > 1 else "")
                 for l, h in enumerate(c) if h > 0]
        return "*".join(parts) if parts else "I"

    def _rot(self, m: np.ndarray) -> np.ndarray:
        return m if self.rotation is None else m @ self.rotation

    def path_maps(self) -> np.ndarray:
        """``V [n_paths, d_e, d_model]``: isometries of E onto each path block."""
        v = np.zeros((self.n_paths, self.d_e, self.d_model))
        for i in range(self.n_paths):
            v[i, :, i * self.d_e: (i + 1) * self.d_e] = np.eye(self.d_e)
        return np.stack([self._rot(x) for x in v])

    def embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        """``W_E [V, d_model]`` and ``W_pos [T, d_model]``: centred one-hots in path block 0."""
        v0 = self.path_maps()[0]
        n_t = self.tokens.n_tokens
        tok = np.zeros((n_t, self.d_e))
        tok[:, :n_t] = _centre(n_t) if self.centred else np.eye(n_t)
        pos = np.zeros((self.n_pos, self.d_e))
        pos[:, n_t:] = _centre(self.n_pos) if self.centred else np.eye(self.n_pos)
        return tok @ v0, pos @ v0

    def ov_maps(self, layer: int) -> np.ndarray:
        """``W_OV [n_heads, d_model, d_model]`` of ``layer``: block swaps c_l = 0 <-> h + 1."""
        out = []
        for h in range(self.n_heads):
            perm = np.zeros((self.d_model, self.d_model))
            for i, c in enumerate(self.paths):
                c2 = list(c)
                if c[layer] == 0:
                    c2[layer] = h + 1
                elif c[layer] == h + 1:
                    c2[layer] = 0
                j = self.path_index(c2)
                perm[i * self.d_e: (i + 1) * self.d_e, j * self.d_e: (j + 1) * self.d_e] = \
                    np.eye(self.d_e)
            if self.rotation is not None:
                perm = self.rotation.T @ perm @ self.rotation
            out.append(perm)
        return np.stack(out)


def make_frame(tokens: TokenStructure, n_pos: int, n_layers: int = 2, n_heads: int = 1,
               rotation_key: jax.Array | None = None, centred: bool = True) -> Frame:
    """The frame; ``rotation_key`` applies a random global rotation (basis independence);
    ``centred=False`` uses plain one-hot embeddings (breaks the theory's assumptions)."""
    frame = Frame(tokens, n_pos, n_layers, n_heads, None, centred)
    if rotation_key is None:
        return frame
    q = np.asarray(jax.random.normal(rotation_key, (frame.d_model, frame.d_model)), np.float64)
    q, _ = np.linalg.qr(q)
    return Frame(tokens, n_pos, n_layers, n_heads, q, centred)


FROZEN = ("embed.W_E", "pos_embed.W_pos", "attn.W_OV")


def imir_config(frame: Frame, causal: bool = False) -> ModelConfig:
    """Attention-only, merged KQ/OV, frozen embeddings and OV maps, scores unscaled."""
    return ModelConfig(n_layers=frame.n_layers, d_model=frame.d_model, n_heads=frame.n_heads,
                       d_head=frame.d_model, d_mlp=None, d_vocab=frame.tokens.n_tokens,
                       d_vocab_out=frame.tokens.n_out, n_ctx=frame.n_pos, attn_only=True,
                       merged_kq=True, merged_ov=True, frozen=FROZEN, attn_scale=1.0,
                       positional_embedding=True, causal=causal)


def fixed_params(frame: Frame, dtype=jnp.float32) -> dict[str, jax.Array]:
    """The frozen parameters (embeddings, OV maps)."""
    w_e, w_pos = frame.embeddings()
    out = {"embed.W_E": jnp.asarray(w_e, dtype), "pos_embed.W_pos": jnp.asarray(w_pos, dtype)}
    for l in range(frame.n_layers):
        out[f"blocks.{l}.attn.W_OV"] = jnp.asarray(frame.ov_maps(l), dtype)
    return out


def trainable_names(frame: Frame) -> list[str]:
    return [f"blocks.{l}.attn.W_KQ" for l in range(frame.n_layers)] + ["unembed.W_U"]


def zero_trainables(frame: Frame, dtype=jnp.float32) -> dict[str, jax.Array]:
    d, h = frame.d_model, frame.n_heads
    out = {f"blocks.{l}.attn.W_KQ": jnp.zeros((h, d, d), dtype) for l in range(frame.n_layers)}
    out["unembed.W_U"] = jnp.zeros((d, frame.tokens.n_out), dtype)
    return out


# ------------------------------------------------------------------------------------------------
# The basis
# ------------------------------------------------------------------------------------------------
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
    p_out = _centre(ts.n_out)
    sel_out[:, :n_t, :] = tok[:, :, : ts.n_out] @ p_out
    sel_out_names = tok_names
    # prune output selections that became dependent after restricting to the outputs
    kept, sel_out_names = _independent(list(sel_out), list(sel_out_names))
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
