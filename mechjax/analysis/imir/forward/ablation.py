"""Exact closed form of the loss after removing one last-layer ``W_KQ`` coordinate, for many
coordinates at once (the elimination's last-layer candidates, ``detector.staged_loss``).

The last layer runs at each sequence's query only (``truncated``). Coordinate ``(h, a, b, s)``
of its ``W_KQ`` is ``theta * E_ab (x) S_s`` in head ``h``, so removing it changes the query's
score for key ``k`` by ``-theta x_q[a]^T S_s x_k[b] / scale`` and nothing else: one contraction
gives every coordinate's score change ``[cand, batch, key]``. The head's output is ``attn @ x``
and the readout is linear, so the logits are ``x_q U_0 + sum_h attn_h @ (x U_h)`` with
``x U_h`` computed once: per candidate only a softmax over keys and a ``[key] x [key, n_out]``
product remain, instead of re-running the layer (``[w, w]`` products at width ``w``) and
rebuilding every layer's weights. The same numbers as ``truncated.stage_loss`` up to float
rounding (``tests/test_imir_ablation.py``).
"""
from __future__ import annotations

from typing import Mapping

import jax
import jax.numpy as jnp

from mechjax.analysis.imir.forward import truncated as tr
from mechjax.analysis.imir.manifold.basis import Frame
from mechjax.models.config import ModelConfig
from mechjax.metrics import token_nll


def last_kq_ablations(params: tr.Params, x: jax.Array, batch: Mapping[str, jax.Array],
                      frame: Frame, cfg: ModelConfig, sel_kq: jax.Array, coords: jax.Array,
                      value: jax.Array) -> jax.Array:
    """Loss (``truncated.stage_loss``) after removing, one at a time, the last layer's ``W_KQ``
    coordinate ``coords[c] = (head, a, b, s)`` (int ``[C, 4]``) whose value in ``params`` is
    ``value[c]`` (0: nothing removed); ``x = stage_input(.., n_layers - 1)`` ``[B, P, w]``;
    ``sel_kq [S, d_e, d_e]`` the basis' selections. Returns ``[C]``."""
    q, w_q, labels = tr._query(batch)
    last, d_e = frame.n_layers - 1, frame.d_e
    w = tr.widths(frame)[last]
    n_b, (n_seq, n_pos, _) = w // d_e, x.shape
    x_q = jnp.take_along_axis(x, q[:, None, None], axis=1)[:, 0]                      # [B, w]
    kq = params[f"blocks.{last}.attn.W_KQ"][:, :w, :w]
    scores = jnp.einsum("bd,hde,bke->hbk", x_q, kq, x) / cfg.scale                     # [H, B, P]
    allowed = (jnp.arange(n_pos)[None, :] <= q[:, None]) if cfg.causal else None
    # every coordinate's score change at once: pair[b, a, s, blk, k] = x_q[a] S_s x_k[blk]
    pair = jnp.einsum("bad,sde,bkce->basck", x_q.reshape(n_seq, n_b, d_e), sel_kq,
                      x.reshape(n_seq, n_pos, n_b, d_e))
    head, a, blk, s = (coords[:, j] for j in range(4))
    delta = jnp.moveaxis(pair[:, a, s, blk, :], 1, 0)                                   # [C, B, P]
    attn_old = _softmax(scores, allowed)
    attn_new = _softmax(scores[head] - value[:, None, None] * delta / cfg.scale, allowed)
    one_hot = jax.nn.one_hot(head, frame.n_heads, dtype=bool)[:, :, None, None]
    attn = jnp.where(one_hot, attn_new[:, None], attn_old[None])                     # [C, H, B, P]
    w_u = params["unembed.W_U"][: tr.widths(frame)[-1]]
    xu = jnp.einsum("bkd,hdo->hbko", x, w_u[w:].reshape(frame.n_heads, w, -1))      # [H, B, P, o]
    logits = (x_q @ w_u[:w])[None] + jnp.einsum("chbk,hbko->cbo", attn, xu)
    nll = token_nll(logits, jnp.broadcast_to(labels, logits.shape[:2]), w_q.dtype)
    return jnp.sum(w_q * nll, axis=-1) / jnp.sum(w_q)


def _softmax(scores: jax.Array, allowed: jax.Array | None) -> jax.Array:
    """Softmax over keys (last axis) with the causal ``allowed [B, P]`` mask."""
    if allowed is not None:
        scores = jnp.where(allowed, scores, -jnp.inf)
    return jax.nn.softmax(scores, axis=-1)
