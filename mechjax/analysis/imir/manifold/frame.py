"""The IMIR model frame (arXiv 2607.11875; docs/imir.md): the token structure, the path blocks of
the residual stream and the frozen weights.

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
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.models.config import ModelConfig


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


def centre(n: int) -> np.ndarray:
    return np.eye(n) - np.ones((n, n)) / n


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
        tok[:, :n_t] = centre(n_t) if self.centred else np.eye(n_t)
        pos = np.zeros((self.n_pos, self.d_e))
        pos[:, n_t:] = centre(self.n_pos) if self.centred else np.eye(self.n_pos)
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


def random_weights(frame: Frame, key: jax.Array, std: float, n: int) -> dict[str, jax.Array]:
    """``n`` initializations of every trained entry (``W_KQ``, ``W_U``), i.i.d. normal with
    ``std``: ``{name: [n, *shape]}``."""
    shapes = {k: v.shape for k, v in zero_trainables(frame).items()}
    keys = jax.random.split(key, len(shapes))
    return {k: std * jax.random.normal(kk, (n,) + shp)
            for (k, shp), kk in zip(shapes.items(), keys)}
