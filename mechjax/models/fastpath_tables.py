"""Layer 0 of a two-layer model as embedding-sized tables: no ``[batch, position, d_model]`` tensor.

For the fast path (``mechjax.models.fastpath``) when layer 0 is attention only, with no LayerNorm and no
dropout drawn. Then layer 1 sees

    x[b, k] = E[t_bk] + P[k] + sum_{g, j} pattern[b, g, k, j] (VE[t_bj, g] + VP[j, g])

(``E = W_E``, ``P = W_pos (+ b_O)``, ``VE``, ``VP``: the same through ``W_V W_O``), and reads it
only through linear maps: its query row, ``u . x[b, k]`` for every key and
``sum_k pattern1[b, k] x[b, k]``. Each map is taken through the tables: ``u . E[t]`` is
``(u E^T)[t]``, a ``[b, d] x [d, V]`` product read at the tokens (a gather), and
``sum_k w[b, k] E[t_bk]`` is ``(sum_k w[b, k] onehot[b, k]) E``, the weights added into their
tokens' bins (a scatter-add) before the product. Gathers, not batched one-hot products: XLA's CPU
dot runs ``[b, 1, V] x [b, V, p]`` at 7-20 GFLOP/s (1.06x for the step, measured; docs/design.md,
"The one-position fast path"). Layer 0's scores are
``(Q[t_q] + Q_pos[q]) . (K[t_k] + K_pos[k])``: four gathers from the ``[V + p, V + p]`` table of
all token/position score pairs. The arithmetic is the full forward's, summed in another order
(equal in float64, ``tests/test_fastpath.py``; in float32 equal to rounding). What it saves is
the ``[b, p, d]`` form's transposed batched products and re-layout copies, which took most of the
backward (measured; docs/design.md, "The one-position fast path").
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from mechjax.models.attention_mix import Rate, mix
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import Params


class Tables(NamedTuple):
    """Layer 1's input (module docstring); ``n_keys``: positions read as keys."""

    tokens: jax.Array   # [b, p] uint32
    emb: jax.Array      # [V, d]
    pos: jax.Array      # [p, d]
    vo_emb: jax.Array   # [V, g, d]
    vo_pos: jax.Array   # [p, g, d]
    pattern: jax.Array  # [b, g, p, p] layer 0's
    n_keys: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.tokens.shape + self.emb.shape[1:]

    def keys(self, n_keys: int) -> "Tables":
        return self._replace(n_keys=n_keys)

    def _at_tokens(self, table: jax.Array) -> jax.Array:
        """``table[b, m..., t_bk]`` for every key ``k`` -> ``[b, m..., p]`` (the one-hot product
        ``table . onehot[b, k]`` as a gather: a batched one-hot product is slower on CPU)."""
        b, v = table.shape[0], table.shape[-1]
        read = jax.vmap(lambda t, i: t[:, i])(table.reshape(b, -1, v), self.tokens)
        return read.reshape(table.shape[:-1] + self.tokens.shape[1:])

    def _into_tokens(self, weights: jax.Array) -> jax.Array:
        """``sum_k weights[b, m..., k] onehot[b, k]`` -> ``[b, m..., V]``: each weight added
        into its token's bin (the transpose of ``_at_tokens``)."""
        b, p = weights.shape[0], weights.shape[-1]
        v = self.emb.shape[0]
        # promise_in_bounds: tokens are in range (first_layer), and the default scatter's
        # bounds mask, fused into every consumer of layer 0's score gradient, cost 1.03-1.04x
        add = jax.vmap(lambda w, i: jnp.zeros((w.shape[0], v), w.dtype).at[:, i].add(
            w, mode="promise_in_bounds"))
        return add(weights.reshape(b, -1, p), self.tokens).reshape(weights.shape[:-1] + (v,))

    def row(self, position: int) -> jax.Array:
        """``x[:, position]`` ``[b, d]``."""
        through = self.pattern[:, :, position]  # [b, g, j]: position's own layer-0 pattern
        return (self.emb[self.tokens[:, position]] + self.pos[position]
                + jnp.einsum("bgv,vgd->bd", self._into_tokens(through), self.vo_emb)
                + jnp.einsum("bgj,jgd->bd", through, self.vo_pos))

    def dot(self, u: jax.Array) -> jax.Array:
        """``u [b, h, d] . x[b, k]`` for every key ``k < n_keys`` -> ``[b, h, k]``."""
        n, p = self.n_keys, self.tokens.shape[1]
        g = self.vo_pos.shape[1]
        at_pos = jnp.einsum("bhd,rd->bhr", u, self._positions()).reshape(u.shape[:2] + (1 + g, p))
        direct = self._at_tokens(jnp.einsum("bhd,vd->bhv", u, self.emb))[..., :n] \
            + at_pos[:, :, 0, :n]
        u_vo = self._at_tokens(jnp.einsum("bhd,vgd->bhgv", u, self.vo_emb)) + at_pos[:, :, 1:]
        return direct + jnp.einsum("bgkj,bhgj->bhk", self.pattern[:, :, :n], u_vo)

    def _positions(self) -> jax.Array:
        """``[(1 + g) p, d]``: ``P``, then ``VP`` of each head. ``dot`` and ``mix`` read both
        through one product: XLA's CPU dot runs the ``[b, p] x [p, d]`` products' transposes
        (the backward) at 12-60 GFLOP/s, so two of them cost more than one twice as wide
        (1.02-1.03x for the step, measured)."""
        return jnp.concatenate([self.pos[None], jnp.moveaxis(self.vo_pos, 1, 0)]).reshape(
            -1, self.pos.shape[-1])

    def mix(self, weights: jax.Array) -> jax.Array:
        """``sum_k weights[b, h, k] x[b, k]`` over ``k < n_keys`` -> ``[b, h, d]``."""
        n, p = self.n_keys, self.tokens.shape[1]
        padded = jnp.pad(weights, ((0, 0), (0, 0), (0, p - n)))  # keys past n_keys weigh 0
        direct = jnp.einsum("bhv,vd->bhd", self._into_tokens(padded), self.emb)
        through = jnp.einsum("bhk,bgkj->bhgj", weights, self.pattern[:, :, :n])
        both = jnp.concatenate([padded[:, :, None], through], 2).reshape(weights.shape[:2] + (-1,))
        return (direct + jnp.einsum("bhr,rd->bhd", both, self._positions())
                + jnp.einsum("bhgv,vgd->bhd", self._into_tokens(through), self.vo_emb))


def first_layer(params: Params, tokens: jax.Array, cfg: ModelConfig, rate: Rate = None,
                mixing: str = "uniform") -> Tables:
    """Layer 1's input as ``Tables``: layer 0's pattern from its score table, and the tables."""
    pre = "blocks.0.attn."
    n_pos, n_vocab = tokens.shape[1], cfg.d_vocab
    emb = params["embed.W_E"]
    pos = params["pos_embed.W_pos"][:n_pos] if cfg.positional_embedding \
        else jnp.zeros((n_pos, cfg.d_model), emb.dtype)
    both = jnp.concatenate([emb, pos])  # [V + p, d]: a token's rows, then a position's
    q = jnp.einsum("wd,hde->hwe", both, params[pre + "W_Q"])
    k = jnp.einsum("wd,hde->hwe", both, params[pre + "W_K"])
    w_vo = jnp.einsum("hde,hef->hdf", params[pre + "W_V"], params[pre + "W_O"])
    vo_pos = jnp.einsum("pd,hdf->phf", pos, w_vo)
    if cfg.use_bias:  # each (token, position) pair holds one position row: the biases go there
        q = q.at[:, n_vocab:].add(params[pre + "b_Q"][:, None])
        k = k.at[:, n_vocab:].add(params[pre + "b_K"][:, None])
        vo_pos = vo_pos + jnp.einsum("he,hed->hd", params[pre + "b_V"], params[pre + "W_O"])
        pos = pos + params[pre + "b_O"]
    table = jnp.einsum("hwe,hxe->hwx", q, k) / cfg.scale  # [h, V + p, V + p]
    # scores = token-token + token-position + position-token + position-position, each a gather
    # from a block of the table (the backward: scatter-adds into the [V + p, V + p] table); the
    # token pair read through one flat index (a [b, q, k, 2] index array is slower to build)
    tok_tok, tok_pos = table[:, :n_vocab, :n_vocab], table[:, :n_vocab, n_vocab:]
    pos_tok, pos_pos = table[:, n_vocab:, :n_vocab], table[:, n_vocab:, n_vocab:]
    tokens = tokens.astype(jnp.uint32)  # unsigned: no negative-index wrap before each gather
    pair = tokens[:, :, None] * n_vocab + tokens[:, None, :]
    scores = (tok_tok.reshape(-1, n_vocab * n_vocab)[:, pair] + tok_pos[:, tokens]
              + jnp.swapaxes(jnp.swapaxes(pos_tok, 1, 2)[:, tokens], 2, 3) + pos_pos[:, None])
    scores = jnp.swapaxes(scores, 0, 1)  # [b, h, q, k]
    if cfg.causal:
        scores = jnp.where(jnp.tril(jnp.ones((n_pos, n_pos), bool)), scores, -jnp.inf)
    pattern = mix(jax.nn.softmax(scores, axis=-1), rate, cfg.causal, mixing)
    return Tables(tokens, emb, pos, jnp.einsum("vd,hdf->vhf", emb, w_vo), vo_pos, pattern, n_pos)
