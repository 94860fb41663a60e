"""Fourier structure of maps over Z_p (embeddings, logit tables), batched over seeds by vmap."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def frequency_norms(w: jax.Array) -> jax.Array:
    """Norm of each frequency of ``w [p, d]`` along its first (token) axis -> ``[p // 2 + 1]``.

    Frequency k and p - k are one real mode, so their energies are added; the constant mode is
    entry 0. The squares sum to ``p * ||w||_F^2`` (Parseval), which the tests use.
    """
    p = w.shape[0]
    spectrum = jnp.abs(jnp.fft.fft(w, axis=0)) ** 2  # [p, d]
    per_k = spectrum.sum(-1)
    folded = per_k[: p // 2 + 1]
    mirrored = jnp.concatenate([jnp.zeros(1), per_k[1:][::-1][: p // 2]])  # energy of p - k
    if p % 2 == 0:  # the Nyquist mode is its own mirror
        mirrored = mirrored.at[p // 2].set(0.0)
    return jnp.sqrt(folded + mirrored)


def top_k_energy_fraction(norms: jax.Array, k: int) -> jax.Array:
    """Share of the non-constant energy in the ``k`` strongest frequencies (sparsity measure)."""
    energy = norms[1:] ** 2
    return jnp.sort(energy)[::-1][:k].sum() / jnp.maximum(energy.sum(), 1e-30)
