"""ACE extraction (the ACE paper's method; docs/ace.md): the two Gramians, square-root balanced
truncation, the energy rank.

Precision (the paper computes in float64). The functions compute in the dtype they are given (at
least float32): pass float64 arrays inside ``with jax.enable_x64(True):`` -- around the *whole* traced
call, jit and vmap included -- to get float64. Switching x64 on locally inside a traced function is
not used because it breaks when the function is later vmapped or differentiated as an already
traced jaxpr (the batching rule runs outside the context and truncates to float32), and switching
it on globally would change the rest of mechjax. In float32, the Gramians are trace-normalised
before factorisation and eigenvalues below the rounding floor ``D * eps * lambda_max`` are clipped
to zero together with the negative ones (in float64 that floor is ~1e-15 relative, i.e. the paper's
"clip negatives"); without that floor, sqrt-factors of a rank-deficient Gramian carry sqrt(eps)
~ 3e-4 noise and the energy rule would count rounding noise as core dimensions.

Shape legend: N activations, D activation width, S Jacobian samples, K tail-output width.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from mechjax import linalg
from mechjax.analysis.ace.basis import as_float, mask_basis, symmetric

Array = jax.Array


class Gramians(NamedTuple):
    cov: Array   # [D, D] reachability Gramian  Hc^T Hc / (N - 1)
    obs: Array   # [D, D] observability Gramian mean_s J_s^T J_s
    mean: Array  # [D]    activation mean (the centre for LLM interventions)


class Core(NamedTuple):
    """An extracted core. Vmapped extraction stacks every field along a leading axis.

    basis:   [D, D] orthonormal, columns ordered by weight; the core is ``basis[:, :rank]``
             (``mask_basis(basis, rank)`` inside jit). Prefixes are nested: QR keeps the span of
             every leading block of ``Lc U``, so ``basis[:, :r]`` is the rank-r core for every r.
    weights: [D] ``s_i^2``, eigenvalues of ``Cov Obs``, descending.
    rank:    [] int32, the energy rank for the ``tau`` used.
    mean:    [D] the activation mean.
    """

    basis: Array
    weights: Array
    rank: Array
    mean: Array

    @property
    def core_basis(self) -> Array:
        """``[D, D]`` basis with columns beyond the rank zeroed (jit/vmap-safe)."""
        return mask_basis(self.basis, self.rank)


@jax.jit
def covariance(h: Array) -> tuple[Array, Array]:
    """Reachability Gramian. ``h [N, D]`` -> ``(Cov [D, D], mean [D])``, ``Cov = Hc^T Hc/(N-1)``."""
    h = as_float(h)
    mean = h.mean(0)
    hc = h - mean  # centre before the product: float32 loses the mean^2 term otherwise
    return symmetric(hc.T @ hc) / (h.shape[0] - 1), mean


@jax.jit
def observability(jac: Array) -> Array:
    """Observability Gramian ``mean_s J_s^T J_s``. ``jac [S, K, D]`` -> ``[D, D]``."""
    jac = as_float(jac)
    return symmetric(jnp.einsum("ski,skj->ij", jac, jac)) / jac.shape[0]


def linear_observability(w_u: Array) -> Array:
    """Obs of a linear tail ``f(h) = h W_U + b`` (toy models): ``W_U W_U^T``, ``[D, D]``."""
    w_u = as_float(w_u)
    return symmetric(w_u @ w_u.T)


@jax.jit
def gramians(h: Array, jac: Array) -> Gramians:
    """Both Gramians from activations ``h [N, D]`` and tail Jacobians ``jac [S, K, D]``."""
    cov, mean = covariance(h)
    return Gramians(cov, observability(jac), mean)


@jax.jit
def psd_factor(g: Array, jitter: float = 1e-8) -> Array:
    """``L`` with ``L L^T = G + jitter * tr(G)/D * I`` from the eigendecomposition of ``G [D, D]``.

    Negative eigenvalues, and positive ones below the rounding floor ``D * eps * lambda_max``,
    are clipped to zero before the jitter is added (see the module docstring).
    """
    g = symmetric(as_float(g))
    d = g.shape[0]
    lam, vec = linalg.eigh(g)
    floor = d * jnp.finfo(g.dtype).eps * jnp.maximum(lam[-1], 0.0)
    lam = jnp.where(lam > floor, lam, 0.0) + jitter * jnp.trace(g) / d
    return vec * jnp.sqrt(lam)


@jax.jit
def balanced_truncation(cov: Array, obs: Array, jitter: float = 1e-8) -> tuple[Array, Array]:
    """Square-root balanced truncation: ``(basis [D, D], weights [D])``, weights descending.

    ``Lc, Lo`` factor the Gramians; ``U, s, _ = svd(Lc^T Lo)``; ``weights = s^2`` (eigenvalues of
    ``Cov Obs``); ``basis = orthonormalize(Lc U)`` by QR, so ``basis[:, :r]`` spans ``Lc U[:, :r]``.
    """
    cov, obs = symmetric(as_float(cov)), symmetric(as_float(obs))
    # Trace normalisation keeps float32 factors O(1); the basis is scale-free, the weights are
    # scaled back.
    tc = jnp.maximum(jnp.trace(cov), jnp.finfo(cov.dtype).tiny)
    to = jnp.maximum(jnp.trace(obs), jnp.finfo(obs.dtype).tiny)
    lc, lo = psd_factor(cov / tc, jitter), psd_factor(obs / to, jitter)
    u, s, _ = linalg.svd(lc.T @ lo)
    basis, _ = linalg.qr(lc @ u)
    return basis, s ** 2 * tc * to


@jax.jit
def energy_rank(weights: Array, tau: float | Array) -> Array:
    """Smallest r with ``sum(w[:r]) / sum(w) >= tau`` (``weights`` descending). int32 scalar."""
    w = jnp.maximum(weights, 0.0)
    frac = jnp.cumsum(w) / jnp.maximum(w.sum(), jnp.finfo(w.dtype).tiny)
    r = jnp.sum(frac < tau) + 1
    return jnp.clip(r, 1, w.shape[-1]).astype(jnp.int32)


@jax.jit
def extract_from_gramians(g: Gramians, tau: float | Array, jitter: float = 1e-8) -> Core:
    """ACE extraction from precomputed Gramians."""
    basis, weights = balanced_truncation(g.cov, g.obs, jitter)
    return Core(basis, weights, energy_rank(weights, tau), g.mean)


@jax.jit
def extract(h: Array, jac: Array, tau: float | Array = 0.999, jitter: float = 1e-8) -> Core:
    """ACE extraction (Gramian form). ``h [N, D]`` activations, ``jac [S, K, D]`` tail Jacobians.

    For a linear tail pass ``jac = W_U.T[None]`` (then Obs = W_U W_U^T exactly).
    """
    return extract_from_gramians(gramians(h, jac), tau, jitter)


@jax.jit
def extract_data_form(h: Array, jac: Array, tau: float | Array = 0.999) -> Core:
    """ACE extraction in the equivalent data form: SVD of ``Hc J_stack^T`` mapped back by ``Hc^T``.

    ``Hc J^T = A S B^T`` has the non-zero eigenvalues of ``Cov Obs`` as ``S^2 / ((N-1) S_samples)``
    and the core directions ``Hc^T A``. Only ``m = min(N, S*K, D)`` directions exist; the basis is
    completed to ``[D, D]`` by QR against the identity and the missing weights are zero, so the
    output has the same shapes as ``extract`` (no jitter here: the factors are the data).
    """
    h, jac = as_float(h), as_float(jac)
    n, d = h.shape
    mean = h.mean(0)
    hc = h - mean
    j = jac.reshape(-1, d)  # J_stack [S*K, D]
    a, s, _ = linalg.svd(hc @ j.T, full_matrices=False)
    m = min(n, j.shape[0], d)
    directions = hc.T @ a[:, :m]  # [D, m]
    basis, _ = linalg.qr(jnp.concatenate([directions, jnp.eye(d, dtype=h.dtype)], axis=1))
    weights = jnp.zeros(d, h.dtype).at[:m].set(s[:m] ** 2 / ((n - 1) * jac.shape[0]))
    return Core(basis, weights, energy_rank(weights, tau), mean)
