"""The IMIR model's forward pass at the query, written in manifold coordinates (docs/imir.md,
section 9): exact for weights on the manifold, at a cost that does not grow with ``d_model``.

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

from mechjax.analysis.imir.manifold.basis import Basis


@dataclasses.dataclass(frozen=True, eq=False)
class Features:
    """What the coordinate forward needs of ``N`` sequences (query at the last position).

    ``tok [N, n_tok_sel, T, T]``: token selections between the positions' tokens;
    ``pos [n_pos_sel, T, T]``: position selections (the same for every sequence);
    ``out [N, n_out_sel, T, K]``: output selections from each position's token to ``K`` output
    *representatives* (``out_ids``): every output token any sequence uses (whole association
    cycles), then one unused token per class standing for the ``exp(log_mult)`` unused tokens of
    that class, whose logits are equal (a symmetry permutes them and fixes the sequence);
    ``log_mult [K]`` (0 for used tokens, ``-inf`` for an empty class); ``target [N]``: index
    into ``out_ids``.
    """

    tok: np.ndarray
    pos: np.ndarray
    out: np.ndarray
    log_mult: np.ndarray
    out_ids: np.ndarray
    target: np.ndarray

    @property
    def size(self) -> int:
        return int(self.target.shape[0])

    def index(self, ids: np.ndarray) -> np.ndarray:
        """Positions in ``out_ids`` of output tokens ``ids`` (each must be a used token)."""
        where: dict[int, int] = {}
        for i, x in enumerate(self.out_ids):
            where.setdefault(int(x), i)   # a used token, not an empty class's stand-in
        return np.array([where[int(x)] for x in np.ravel(ids)], np.int32)


def n_token_selections(basis: Basis) -> int:
    """How many of ``basis.sel_kq`` act on tokens (they come first, positions after)."""
    v = basis.frame.tokens.n_tokens
    tok = np.abs(basis.sel_kq[:, :v, :v]).sum((1, 2)) > 0
    n = int(tok.sum())
    if not tok[:n].all():
        raise ValueError("token selections must precede position selections in the basis")
    return n


def output_representatives(basis: Basis, used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(out_ids [K], log_mult [K])`` for the token ids ``used`` (see ``Features``)."""
    ts = basis.frame.tokens
    n_out = ts.n_out
    used = {int(x) for x in np.ravel(used) if x < n_out}
    assoc = np.asarray(ts.assoc)
    for x in list(used):          # close under the association map (whole cycles)
        y = int(assoc[x])
        while y != x and y < n_out and y not in used:
            used.add(y)
            y = int(assoc[y])
    ids, mult = sorted(used), [0.0] * len(used)
    for _, members in ts.classes:
        free = [int(x) for x in members if x < n_out and x not in used]
        if members and min(members) < n_out:
            ids.append(free[0] if free else int(members[0]))
            mult.append(np.log(len(free)) if free else -np.inf)
    return np.asarray(ids, np.int32), np.asarray(mult)


def features(basis: Basis, tokens: np.ndarray, target: np.ndarray,
             extra_used: np.ndarray | None = None) -> Features:
    """``Features`` of sequences ``tokens [N, T]`` (ids of the frame's vocabulary, query last)
    with answers ``target [N]``; ``extra_used``: more output ids to keep explicit (other
    targets to read)."""
    tokens, target = np.asarray(tokens), np.asarray(target)
    f = basis.frame
    v, t = f.tokens.n_tokens, f.n_pos
    if tokens.ndim != 2 or tokens.shape[1] != t:
        raise ValueError(f"tokens has shape {tokens.shape}; need [N, {t}]")
    n_tok = n_token_selections(basis)
    sel_t = basis.sel_kq[:n_tok, :v, :v]                      # [n_tok, V, V]
    tok = sel_t[:, tokens[:, :, None], tokens[:, None, :]]    # [n_tok, N, T, T]
    pos = basis.sel_kq[n_tok:, v:, v:]                        # [n_pos, T, T]
    more = [] if extra_used is None else [np.ravel(extra_used)]
    ids, log_mult = output_representatives(
        basis, np.concatenate([tokens.ravel(), target.ravel()] + more))
    out = basis.sel_out[:, :v, :][:, tokens][..., ids]        # [n_out_sel, N, T, K]
    feats = Features(tok=np.moveaxis(tok, 1, 0), pos=pos, out=np.moveaxis(out, 1, 0),
                     log_mult=log_mult, out_ids=ids, target=np.zeros(len(target), np.int32))
    return dataclasses.replace(feats, target=feats.index(target))


def _new_path(basis: Basis, a: int, layer: int, head: int) -> int:
    c = list(basis.frame.paths[a])
    c[layer] = head + 1
    return basis.frame.path_index(c)


def logits(basis: Basis, feats: Features, theta: jax.Array) -> jax.Array:
    """``[N, K]`` logits at the query of every sequence for weights ``W(theta)``, one per output
    representative, ``log_mult`` added (so a softmax over them is the model's over the whole
    output vocabulary, grouped)."""
    f = basis.frame
    dtype = theta.dtype
    tok = jnp.asarray(feats.tok, dtype)
    pos = jnp.asarray(feats.pos, dtype)
    t = f.n_pos
    n_tok = tok.shape[1]
    q = t - 1
    # path mixtures [N, T, T] (None: the identity, the embedding's own path); at the last
    # layer only the query's row [N, T] is needed
    mix: dict[int, jax.Array | None] = {0: None}
    rows: dict[int, jax.Array | None] = {}
    groups = {(g.param, g.head): g for g in basis.groups}

    def selection(th, row):
        """``sum_s th_s K_s`` ([N, T, T], or its query row [N, T])."""
        if row:
            return (jnp.einsum("s,nsj->nj", th[:n_tok], tok[:, :, q])
                    + jnp.einsum("s,sj->j", th[n_tok:], pos[:, q]))
        return (jnp.einsum("s,nsij->nij", th[:n_tok], tok)
                + jnp.einsum("s,sij->ij", th[n_tok:], pos))

    for layer in range(f.n_layers):
        last = layer == f.n_layers - 1
        for h in range(f.n_heads):
            g = groups[(f"blocks.{layer}.attn.W_KQ", h)]
            th = theta[g.offset: g.offset + g.size].reshape(g.shape)  # [P, P, n_sel]
            score = 0.0
            for ia, a in enumerate(g.paths_q):
                for ib_, b in enumerate(g.paths_k):
                    if last and mix[a] is None:       # the query row of M, mixed on keys
                        m = selection(th[ia, ib_], True)                       # [N?, T]
                        sc = m if mix[b] is None else jnp.einsum("nj,nkj->nk", m, mix[b])
                        sc = sc[:, None]
                    else:
                        m = selection(th[ia, ib_], False)                      # [N?, T, T]
                        wa = mix[a]
                        if wa is not None:
                            wa = wa[:, q: q + 1] if last else wa
                            m = jnp.einsum("nqi,nij->nqj", wa, m)
                        elif last:
                            m = m[..., q: q + 1, :]
                        sc = m if mix[b] is None else jnp.einsum("nqj,nkj->nqk", m, mix[b])
                    score = score + sc
            att = jax.nn.softmax(score, axis=-1)                     # [N, Tq, T]
            for a in f.populated(layer):
                w = att if mix[a] is None else jnp.einsum("nqk,nkj->nqj", att, mix[a])
                c = _new_path(basis, a, layer, h)
                if last:
                    rows[c] = w[:, 0]
                else:
                    mix[c] = w
    n = feats.size
    g = groups[("unembed.W_U", None)]
    th = theta[g.offset: g.offset + g.size].reshape(g.shape)        # [P_out, n_out_sel]
    eq = jnp.zeros((n, t), dtype).at[:, q].set(1.0)
    read = jnp.stack([rows[a] if a in rows else (eq if mix[a] is None else mix[a][:, q])
                      for a in g.paths_q], 1)                        # [N, P_out, T]
    v = jnp.einsum("pt,npi->nti", th, read)
    out = jnp.asarray(feats.out, dtype)                              # [N, n_t, T, K]
    return jnp.einsum("nti,ntik->nk", v, out) + jnp.asarray(feats.log_mult, dtype)


def class_losses(basis: Basis, feats: Features, theta: jax.Array) -> jax.Array:
    """``[N]`` readout cross-entropy of every sequence."""
    lg = logits(basis, feats, theta)
    lp = jax.nn.log_softmax(lg, -1)
    return -jnp.take_along_axis(lp, jnp.asarray(feats.target)[:, None], 1)[:, 0]


def target_probs(basis: Basis, feats: Features, theta: jax.Array,
                 target: np.ndarray | None = None) -> jax.Array:
    """``[N]`` probability of output token ``target`` (default: each sequence's answer)."""
    y = feats.target if target is None else feats.index(target)
    p = jax.nn.softmax(logits(basis, feats, theta), -1)
    return jnp.take_along_axis(p, jnp.asarray(y)[:, None], 1)[:, 0]
