"""The IMIR model's forward pass at the query, written in manifold coordinates (docs/imir.md,
section 7): exact for weights on the manifold, at a cost that does not grow with ``d_model``.

On the manifold every residual-stream vector is a sum over paths ``a`` of a copy of the embedding
space E (``basis.Frame``), and the copy carried by path ``a`` at position ``i`` is a fixed mixture
of the embeddings: ``x_i^a = sum_j W_a[i, j] e_j`` (``W_I`` the identity; a head ``h`` of layer
``l`` with attention ``A`` sends path ``a`` to ``a`` with ``c_l = h + 1`` and ``W -> A W_a``,
because its OV map only moves the block). A KQ coordinate ``(a, b, s)`` scores
``(x_q^a)^T S_s x_k^b = (W_a K_s W_b^T)[q, k]`` with ``K_s[i, j] = S_s(e_i, e_j)``, the selection's
value between the tokens (token selections) or positions (position selections) of ``i`` and
``j``; an unembedding coordinate ``(a, t)`` adds ``W_a[q] R_t[tok, :]`` to the logits. So a
sequence enters only through ``K [n_tok_sel, T, T]`` and ``R [n_out_sel, T, n_out]``, gathered once
from the basis' selection matrices (``features``). Attention is non-causal and unscaled, as in
``basis.imir_config``; the readout is the last position (the canonical rotation of
``Support.orbit_quotient``).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.basis import Basis


@dataclasses.dataclass(frozen=True, eq=False)
class Features:
    """What the coordinate forward needs of ``N`` sequences (query at the last position).

    ``tok [N, n_tok_sel, T, T]``: token selections between the positions' tokens;
    ``pos [n_pos_sel, T, T]``: position selections (the same for every sequence);
    ``out [N, n_out_sel, T, n_out]``: output selections from each position's token;
    ``target [N]``. ``n_tok_sel`` = the leading token selections of ``basis.sel_kq``.
    """

    tok: np.ndarray
    pos: np.ndarray
    out: np.ndarray
    target: np.ndarray

    @property
    def size(self) -> int:
        return int(self.target.shape[0])


def n_token_selections(basis: Basis) -> int:
    """How many of ``basis.sel_kq`` act on tokens (they come first, positions after)."""
    v = basis.frame.tokens.n_tokens
    tok = np.abs(basis.sel_kq[:, :v, :v]).sum((1, 2)) > 0
    n = int(tok.sum())
    if not tok[:n].all():
        raise ValueError("token selections must precede position selections in the basis")
    return n


def features(basis: Basis, tokens: np.ndarray, target: np.ndarray) -> Features:
    """``Features`` of sequences ``tokens [N, T]`` (ids of the frame's vocabulary, query last)
    with answers ``target [N]``."""
    tokens, target = np.asarray(tokens), np.asarray(target)
    f = basis.frame
    v, t = f.tokens.n_tokens, f.n_pos
    if tokens.ndim != 2 or tokens.shape[1] != t:
        raise ValueError(f"tokens has shape {tokens.shape}; need [N, {t}]")
    n_tok = n_token_selections(basis)
    sel_t = basis.sel_kq[:n_tok, :v, :v]                      # [n_tok, V, V]
    tok = sel_t[:, tokens[:, :, None], tokens[:, None, :]]    # [n_tok, N, T, T]
    pos = basis.sel_kq[n_tok:, v:, v:]                        # [n_pos, T, T]
    out = basis.sel_out[:, :v, :][:, tokens, :]               # [n_out_sel, N, T, n_out]
    return Features(tok=np.moveaxis(tok, 1, 0), pos=pos, out=np.moveaxis(out, 1, 0),
                    target=target.astype(np.int32))


def _new_path(basis: Basis, a: int, layer: int, head: int) -> int:
    c = list(basis.frame.paths[a])
    c[layer] = head + 1
    return basis.frame.path_index(c)


def logits(basis: Basis, feats: Features, theta: jax.Array) -> jax.Array:
    """``[N, n_out]`` logits at the query of every sequence, for weights ``W(theta)``."""
    f = basis.frame
    dtype = theta.dtype
    tok = jnp.asarray(feats.tok, dtype)
    pos = jnp.asarray(feats.pos, dtype)
    n, t = feats.size, f.n_pos
    n_tok = tok.shape[1]
    q = t - 1
    # path mixtures: full [N, T, T] before the last layer; query rows [N, T] for the output
    mix = {0: jnp.broadcast_to(jnp.eye(t, dtype=dtype), (n, t, t))}
    rows: dict[int, jax.Array] = {}
    groups = {(g.param, g.head): g for g in basis.groups}
    for layer in range(f.n_layers):
        last = layer == f.n_layers - 1
        pop = f.populated(layer)
        new_mix, new_rows = {}, {}
        for h in range(f.n_heads):
            g = groups[(f"blocks.{layer}.attn.W_KQ", h)]
            th = theta[g.offset: g.offset + g.size].reshape(g.shape)  # [P, P, n_sel]
            score = 0.0
            for ia, a in enumerate(g.paths_q):
                wa = mix[a][:, q: q + 1] if last else mix[a]         # [N, Tq, T]
                for ib_, b in enumerate(g.paths_k):
                    m = (jnp.einsum("s,nsij->nij", th[ia, ib_, :n_tok], tok)
                         + jnp.einsum("s,sij->ij", th[ia, ib_, n_tok:], pos))
                    score = score + jnp.einsum("nqi,nij,nkj->nqk", wa, m, mix[b])
            att = jax.nn.softmax(score, axis=-1)                     # [N, Tq, T]
            for a in pop:
                w = jnp.einsum("nqk,nkj->nqj", att, mix[a])
                c = _new_path(basis, a, layer, h)
                if last:
                    new_rows[c] = w[:, 0]
                else:
                    new_mix[c] = w
        mix.update(new_mix)
        rows.update(new_rows)
    for a in f.populated(f.n_layers):
        if a not in rows:
            rows[a] = mix[a][:, q]
    g = groups[("unembed.W_U", None)]
    th = theta[g.offset: g.offset + g.size].reshape(g.shape)        # [P_out, n_out_sel]
    out = jnp.asarray(feats.out, dtype)                              # [N, n_t, T, n_out]
    read = jnp.stack([rows[a] for a in g.paths_q], 1)                # [N, P_out, T]
    return jnp.einsum("pt,npi,ntio->no", th, read, out)


def class_losses(basis: Basis, feats: Features, theta: jax.Array) -> jax.Array:
    """``[N]`` readout cross-entropy of every sequence."""
    lg = logits(basis, feats, theta)
    lp = jax.nn.log_softmax(lg, -1)
    return -jnp.take_along_axis(lp, jnp.asarray(feats.target)[:, None], 1)[:, 0]


def target_probs(basis: Basis, feats: Features, theta: jax.Array,
                 target: np.ndarray | None = None) -> jax.Array:
    """``[N]`` probability of ``target`` (default: each sequence's answer)."""
    y = feats.target if target is None else np.asarray(target)
    p = jax.nn.softmax(logits(basis, feats, theta), -1)
    return jnp.take_along_axis(p, jnp.asarray(y)[:, None], 1)[:, 0]
