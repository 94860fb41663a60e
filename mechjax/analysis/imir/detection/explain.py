"""Step 1 of circuit detection: any attention-only model's weights on the IMIR coordinates.

A user's parameter dict (TransformerLens names, one model, no seed axis) is reduced to the
*effective* matrices the theory talks about: per layer and head the bilinear score form
``W_KQ [d, d]`` (``W_Q W_K^T / attn_scale`` for standard Q/K/V) and the output-value map
``W_OV [d, d]`` (``W_V W_O``), and the unembedding ``W_U [d, n_out]``. Their coordinates on the
manifold are the Gram least squares of ``project.coords`` (per layer, head and output: the Gram
matrix is block diagonal, docs/imir.md section 3), and the *explained fraction* of a matrix is
``||proj W||^2 / ||W||^2`` (the projection is orthogonal, so this is ``1 - rel_residual^2``).

The coordinates only mean what docs/imir.md says when the model *is* the theory's model: the
frame's centred one-hot embeddings and block-swapping ``W_OV``, merged key-query, no biases, no
normalization. ``check_assumptions`` measures how far a model is from that and returns one line
per deviation; the detector prints them as a warning with the explained fraction (a model
outside the assumptions is still projected, never silently). A model the coordinates cannot be
computed for at all (MLPs, LayerNorm, a residual width or vocabulary that is not the frame's)
raises ``DetectError`` with one line naming the value and what is allowed, before any compute.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Mapping

import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.manifold.basis import Basis, Frame, fixed_params

ArrayDict = Mapping[str, np.ndarray]
TOL = 1e-4  # relative deviation from the frame below which an assumption counts as met


class DetectError(ValueError):
    """Input that circuit detection cannot use (one line: the value and what is allowed)."""


@dataclasses.dataclass(frozen=True)
class Effective:
    """A model's weights as the theory reads them (numpy, float64)."""

    kq: tuple[np.ndarray, ...]   # per layer [n_heads, d, d]
    ov: tuple[np.ndarray, ...]   # per layer [n_heads, d, d]
    w_e: np.ndarray              # [d_vocab, d]
    w_pos: np.ndarray | None     # [n_ctx, d]
    w_u: np.ndarray              # [d, n_out]
    notes: tuple[str, ...]       # structural deviations (unmerged Q/K/V, biases, tied unembed)

    @property
    def n_layers(self) -> int:
        return len(self.kq)

    @property
    def n_heads(self) -> int:
        return self.kq[0].shape[0]

    @property
    def d_model(self) -> int:
        return self.w_e.shape[1]

    def trainables(self) -> dict[str, jnp.ndarray]:
        """``blocks.l.attn.W_KQ`` and ``unembed.W_U`` as float32 (what ``project`` reads)."""
        out = {f"blocks.{l}.attn.W_KQ": jnp.asarray(k, jnp.float32) for l, k in enumerate(self.kq)}
        out["unembed.W_U"] = jnp.asarray(self.w_u, jnp.float32)
        return out


def _n_layers(params: ArrayDict) -> int:
    layers = {int(m.group(1)) for k in params if (m := re.match(r"blocks\.(\d+)\.", k))}
    if not layers:
        raise DetectError(f"no 'blocks.<l>.attn.*' weights among keys {sorted(params)[:6]}; "
                          "detection needs a mechjax/TransformerLens attention-only state dict")
    return max(layers) + 1


def effective_weights(params: ArrayDict, attn_scale: float | None = None) -> Effective:
    """The effective ``W_KQ``, ``W_OV``, embeddings and unembedding of ``params``.

    ``attn_scale``: what scores are divided by; ``None`` is mechjax's convention for the layout
    found (1 for a merged ``W_KQ``, as ``imir_config``; ``sqrt(d_head)`` for ``W_Q``/``W_K``).
    Raises ``DetectError`` for MLP or LayerNorm weights and for missing attention weights.
    """
    params = {k: np.asarray(v, np.float64) for k, v in params.items()}
    mlp = sorted(k for k in params if ".mlp." in k)
    if mlp:
        raise DetectError(f"model has MLP weights ({mlp[0]}, ...); circuit detection needs an "
                          "attention-only model (attn_only=True)")
    norm = sorted(k for k in params if re.search(r"(^|\.)ln(\d|_final)", k))
    if norm:
        raise DetectError(f"model has LayerNorm weights ({norm[0]}, ...); circuit detection "
                          "needs normalization='none'")
    if "embed.W_E" not in params:
        raise DetectError("no 'embed.W_E' in the weights; detection needs the token embedding")
    notes: list[str] = []
    kq, ov = [], []
    for l in range(_n_layers(params)):
        pre = f"blocks.{l}.attn."
        if pre + "W_KQ" in params:
            scale = 1.0 if attn_scale is None else attn_scale
            kq.append(params[pre + "W_KQ"] / scale)
        elif pre + "W_Q" in params and pre + "W_K" in params:
            w_q, w_k = params[pre + "W_Q"], params[pre + "W_K"]
            scale = np.sqrt(w_q.shape[-1]) if attn_scale is None else attn_scale
            kq.append(np.einsum("hde,hfe->hdf", w_q, w_k) / scale)
            if l == 0:
                notes.append("standard W_Q/W_K (merged here into W_KQ = W_Q W_K^T / scale)")
        else:
            raise DetectError(f"layer {l}: neither {pre}W_KQ nor {pre}W_Q and {pre}W_K present")
        if pre + "W_OV" in params:
            ov.append(params[pre + "W_OV"])
        elif pre + "W_V" in params and pre + "W_O" in params:
            ov.append(np.einsum("hde,hef->hdf", params[pre + "W_V"], params[pre + "W_O"]))
            if l == 0:
                notes.append("standard W_V/W_O (merged here into W_OV = W_V W_O)")
        else:
            raise DetectError(f"layer {l}: neither {pre}W_OV nor {pre}W_V and {pre}W_O present")
    biases = sorted(k for k in params if re.search(r"\.b_[A-Za-z]+$", k) and np.any(params[k]))
    if biases:
        notes.append(f"non-zero biases {biases[:3]}{' ...' if len(biases) > 3 else ''} "
                     "(the theory has none; they are ignored by the projection)")
    w_u = params.get("unembed.W_U")
    if w_u is None:
        w_u = params["embed.W_E"].T
        notes.append("tied unembedding (W_U = W_E^T)")
    return Effective(tuple(kq), tuple(ov), params["embed.W_E"], params.get("pos_embed.W_pos"),
                     w_u, tuple(notes))


def check_shapes(eff: Effective, frame: Frame) -> None:
    """Raise ``DetectError`` (one line) when ``eff`` cannot be read in ``frame`` at all."""
    want = {"n_layers": (eff.n_layers, frame.n_layers), "n_heads": (eff.n_heads, frame.n_heads),
            "d_model": (eff.d_model, frame.d_model),
            "d_vocab": (eff.w_e.shape[0], frame.tokens.n_tokens),
            "d_vocab_out": (eff.w_u.shape[1], frame.tokens.n_out)}
    for name, (got, need) in want.items():
        if got != need:
            raise DetectError(f"weights have {name}={got}; the IMIR frame of this task needs "
                              f"{name}={need} (d_model = (vocab + positions) * (heads + 1)^layers)")
    if eff.w_pos is None or eff.w_pos.shape[0] < frame.n_pos:
        got = None if eff.w_pos is None else eff.w_pos.shape[0]
        raise DetectError(f"weights have positional embeddings for n_ctx={got}; the task needs "
                          f"n_ctx >= {frame.n_pos}")


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def check_assumptions(eff: Effective, frame: Frame, tol: float = TOL) -> list[str]:
    """One line per way ``eff`` is not the theory's model (empty: every assumption holds)."""
    fixed = {k: np.asarray(v, np.float64) for k, v in fixed_params(frame).items()}
    out = list(eff.notes)
    dev = _rel(eff.w_e, fixed["embed.W_E"])
    if dev > tol:
        out.append(f"token embeddings are not the frame's centred one-hots "
                   f"(relative deviation {dev:.3g})")
    dev = _rel(eff.w_pos[: frame.n_pos], fixed["pos_embed.W_pos"])
    if dev > tol:
        out.append(f"positional embeddings are not the frame's centred one-hots "
                   f"(relative deviation {dev:.3g})")
    for l, w in enumerate(eff.ov):
        dev = _rel(w, fixed[f"blocks.{l}.attn.W_OV"])
        if dev > tol:
            out.append(f"layer {l} W_OV is not the frame's block swap (relative deviation "
                       f"{dev:.3g})")
    return out


def explained_fractions(basis: Basis, trainables: Mapping[str, jnp.ndarray],
                        ) -> dict[str, float | None]:
    """``||proj W||^2 / ||W||^2`` per matrix (``blocks.l.attn.W_KQ[h]``, ``unembed.W_U``) and
    over all of them (``total``); None for an all-zero matrix."""
    res = {k: np.asarray(v, np.float64) for k, v in proj.residual(basis, trainables).items()}
    w = {k: np.asarray(trainables[k], np.float64) for k in res}

    def frac(r, x):
        den = float(np.sum(x ** 2))
        return None if den == 0 else 1.0 - float(np.sum(r ** 2)) / den

    out: dict[str, float | None] = {}
    for k in sorted(res):
        if k.endswith("W_KQ"):
            for h in range(res[k].shape[0]):
                out[f"{k}[{h}]"] = frac(res[k][h], w[k][h])
        else:
            out[k] = frac(res[k], w[k])
    out["total"] = frac(np.concatenate([r.ravel() for r in res.values()]),
                        np.concatenate([x.ravel() for x in w.values()]))
    return out
