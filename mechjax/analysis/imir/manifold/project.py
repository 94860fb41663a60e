"""Coordinates on the manifold: weights from coordinates, the Gram matrix, projection, residual.

All functions take and return dicts of the trainable parameters (``blocks.l.attn.W_KQ [H, d, d]``,
``unembed.W_U [d, n_out]``; other keys are ignored) and are pure and jittable. Because the path
blocks are mutually orthogonal copies of E, the Frobenius Gram matrix of the basis factorises:
``<V_a^T S V_b, V_a'^T S' V_b'> = [a = a'] [b = b'] <S, S'>`` (docs/imir.md, section 3), so it is
block diagonal, one small ``<S, S'>`` block per (parameter, head, path pair).
"""
from __future__ import annotations

import functools
import weakref
from typing import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold.basis import Basis, Group

Params = Mapping[str, jax.Array]


_JITTED: "weakref.WeakKeyDictionary[Basis, dict]" = weakref.WeakKeyDictionary()


def _jit_per_basis(fn: Callable) -> Callable:
    """``fn(basis, *args)`` compiled once per basis (the basis arrays become constants)."""
    @functools.wraps(fn)
    def wrapper(basis: Basis, *args):
        cache = _JITTED.setdefault(basis, {})
        if fn.__name__ not in cache:
            cache[fn.__name__] = jax.jit(functools.partial(fn, basis))
        return cache[fn.__name__](*args)
    return wrapper


def selection_grams(basis: Basis) -> tuple[np.ndarray, np.ndarray]:
    """``<S, S'>`` of the KQ selections and ``<R, R'>`` of the output selections."""
    s = basis.sel_kq.reshape(len(basis.sel_kq), -1)
    r = basis.sel_out.reshape(len(basis.sel_out), -1)
    return s @ s.T, r @ r.T


def gram(basis: Basis) -> np.ndarray:
    """The full Gram matrix ``G [n, n]`` of the basis (block diagonal)."""
    g_s, g_r = selection_grams(basis)
    blocks = []
    for g in basis.groups:
        n_pairs = g.size // g.n_sel
        blocks.append(np.kron(np.eye(n_pairs), g_r if g.head is None else g_s))
    out = np.zeros((basis.size, basis.size))
    for g, b in zip(basis.groups, blocks):
        out[g.offset: g.offset + g.size, g.offset: g.offset + g.size] = b
    return out


def _group_arrays(basis: Basis, g: Group, dtype):
    vq = jnp.asarray(basis.maps[list(g.paths_q)], dtype)
    if g.head is None:
        return vq, None, jnp.asarray(basis.sel_out, dtype)
    vk = jnp.asarray(basis.maps[list(g.paths_k)], dtype)
    return vq, vk, jnp.asarray(basis.sel_kq, dtype)


@_jit_per_basis
def weights(basis: Basis, theta: jax.Array) -> dict[str, jax.Array]:
    """``W(theta) = sum_i theta_i B_i`` as a dict of the trainable parameters (dtype of theta)."""
    dtype = theta.dtype
    f = basis.frame
    d = f.d_model
    out = {f"blocks.{l}.attn.W_KQ": jnp.zeros((f.n_heads, d, d), dtype)
           for l in range(f.n_layers)}
    for g in basis.groups:
        th = theta[g.offset: g.offset + g.size].reshape(g.shape).astype(dtype)
        vq, vk, sel = _group_arrays(basis, g, dtype)
        if g.head is None:
            out[g.param] = jnp.einsum("at,tio,aid->do", th, sel, vq)
        else:
            m = jnp.einsum("abs,sij->abij", th, sel)
            w = jnp.einsum("abij,aid,bje->de", m, vq, vk)
            out[g.param] = out[g.param].at[g.head].set(w)
    return out


def inner(basis: Basis, params: Params) -> jax.Array:
    """``<B_i, W>`` for every coordinate (the gradient in coordinates when W is a gradient)."""
    return _inner(basis, {g.param: params[g.param] for g in basis.groups})


@_jit_per_basis
def _inner(basis: Basis, params: Params) -> jax.Array:
    parts = []
    for g in basis.groups:
        w = params[g.param] if g.head is None else params[g.param][g.head]
        vq, vk, sel = _group_arrays(basis, g, w.dtype)
        if g.head is None:
            parts.append(jnp.einsum("aid,do,tio->at", vq, w, sel).reshape(-1))
        else:
            x = jnp.einsum("aid,de,bje->abij", vq, w, vk)
            parts.append(jnp.einsum("abij,sij->abs", x, sel).reshape(-1))
    return jnp.concatenate(parts)


@_jit_per_basis
def solve_gram(basis: Basis, c: jax.Array) -> jax.Array:
    """``G^-1 c`` using the factorised Gram matrix."""
    g_s, g_r = selection_grams(basis)
    inv_s, inv_r = np.linalg.inv(g_s), np.linalg.inv(g_r)
    parts = []
    for g in basis.groups:
        cg = c[g.offset: g.offset + g.size].reshape(-1, g.n_sel)
        inv = jnp.asarray(inv_r if g.head is None else inv_s, c.dtype)
        parts.append((cg @ inv).reshape(-1))  # inv is symmetric
    return jnp.concatenate(parts)


def coords(basis: Basis, params: Params) -> jax.Array:
    """Least-squares coordinates ``theta = G^-1 <B, W>`` of any weights."""
    return solve_gram(basis, inner(basis, params))


def project(basis: Basis, params: Params) -> dict[str, jax.Array]:
    """Orthogonal (Frobenius) projection of the trainable parameters onto the span."""
    return weights(basis, coords(basis, params))


def residual(basis: Basis, params: Params) -> dict[str, jax.Array]:
    """``W - proj(W)`` per trainable parameter."""
    return _residual(basis, {g.param: params[g.param] for g in basis.groups})


@_jit_per_basis
def _residual(basis: Basis, params: Params) -> dict[str, jax.Array]:
    proj = project(basis, params)
    return {k: params[k] - v for k, v in proj.items()}


def rel_residual(basis: Basis, params: Params) -> tuple[jax.Array, dict[str, jax.Array]]:
    """``||W - proj W|| / ||W||`` over all trainable parameters, and per parameter."""
    res = residual(basis, params)
    num = sum(jnp.sum(r ** 2) for r in res.values())
    den = sum(jnp.sum(params[k] ** 2) for k in res)
    per = {k: jnp.linalg.norm(r) / jnp.maximum(jnp.linalg.norm(params[k]), 1e-30)
           for k, r in res.items()}
    return jnp.sqrt(num / den), per
