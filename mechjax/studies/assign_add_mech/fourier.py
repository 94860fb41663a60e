"""Single-frequency Fourier fits of the layer-2 MLP pre-activation maps over the core inputs."""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from mechjax.studies.assign_add_mech.data import all_pairs, core_tokens, resolve_cfg
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_cache
from mechjax.models.transformer import Params
from mechjax.tasks import assign_add as aa


def mlp_preactivation_maps(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """``[59, 59, d_mlp]`` layer-2 MLP pre-activations at ``=`` for ``PAD*12 + n m =``."""
    cfg = resolve_cfg(cfg)
    n, m = all_pairs()
    name = "blocks.1.mlp.hook_pre"
    _, cache = run_with_cache(params, core_tokens(n, m), cfg, name)
    return cache[name][:, -1].reshape(aa.P, aa.P, -1)


class FourierFit(NamedTuple):
    evr: jax.Array  # [n_neurons, p // 2] explained-variance ratio of frequency k = 1..p//2
    best_k: jax.Array  # [n_neurons] frequency (1..p//2) with the largest ratio
    best_evr: jax.Array  # [n_neurons] that ratio


def fourier_fit(maps: jax.Array) -> FourierFit:
    """Single-frequency fits of ``maps [p, p, n]`` (one centred p x p map per neuron).

    For k = 1..p//2 the map is projected on {cos kn, sin kn, cos km, sin km} (angles 2 pi k / p);
    these four are orthogonal on the grid, so the fit is exact least squares and its explained
    variance ratio is the projection's energy over the centred map's energy.
    """
    p = maps.shape[0]
    x = maps - maps.mean(axis=(0, 1), keepdims=True)
    k = jnp.arange(1, p // 2 + 1)
    ang = 2 * jnp.pi * k[:, None] * jnp.arange(p)[None, :] / p  # [K, p]
    basis = jnp.stack([jnp.cos(ang), jnp.sin(ang)], 1)  # [K, 2, p]
    basis = basis / jnp.linalg.norm(basis, axis=-1, keepdims=True)
    # along n: <x, b(n)> / sqrt(p) over m gives the coefficient of b(n) (x 1_m / sqrt(p))
    row = jnp.einsum("kcn,nmj->kcmj", basis, x).sum(2) / jnp.sqrt(p)  # [K, 2, n_neurons]
    col = jnp.einsum("kcm,nmj->kcnj", basis, x).sum(2) / jnp.sqrt(p)
    energy = (row ** 2).sum(1) + (col ** 2).sum(1)  # [K, n_neurons]
    total = jnp.maximum((x ** 2).sum(axis=(0, 1)), 1e-30)
    evr = (energy / total).T
    best = jnp.argmax(evr, axis=-1)
    return FourierFit(evr, best + 1, jnp.take_along_axis(evr, best[:, None], 1)[:, 0])


def mlp_fourier_fit(params: Params, cfg: ModelConfig | None = None) -> FourierFit:
    """``fourier_fit`` of the layer-2 MLP pre-activation maps."""
    return fourier_fit(mlp_preactivation_maps(params, cfg))
