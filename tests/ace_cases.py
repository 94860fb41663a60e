"""Planted ACE cases shared by the tests of the ACE modules: activations whose relevant subspace is
known, and a small post-LN model with NumPy-initialized parameters."""
from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from mechjax.models.config import ModelConfig
from mechjax.models.transformer import param_shapes


def orthogonal(rng: np.random.Generator, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


def uncorrelated(rng: np.random.Generator, n: int, stds: np.ndarray) -> np.ndarray:
    """[n, len(stds)] with sample covariance exactly diag(stds^2) (no finite-sample leakage)."""
    g = rng.normal(size=(n, len(stds)))
    q, _ = np.linalg.qr(g - g.mean(0))
    return q * np.sqrt(n - 1) * stds


def planted(seed: int, n: int = 4000, d: int = 16, k: int = 3, out: int = 5):
    """Activations with a known k-dim relevant subspace that PCA cannot find.

    Relevant directions have std 0.1; five irrelevant ones std 10, the rest std 1; a non-zero
    mean. The linear tail reads only the relevant directions (gains 3, 2, 1).
    """
    rng = np.random.default_rng(seed)
    rot = orthogonal(rng, d)
    stds = np.concatenate([np.full(k, 0.1), np.full(5, 10.0), np.ones(d - k - 5)])
    h = uncorrelated(rng, n, stds) @ rot.T + 3.0
    mix = orthogonal(rng, out)[:, :k]  # [out, k] orthonormal columns
    w_u = rot[:, :k] @ np.diag([3.0, 2.0, 1.0]) @ mix.T  # [d, out]
    return (jnp.asarray(h, jnp.float32), jnp.asarray(w_u, jnp.float32),
            jnp.asarray(rot[:, :k], jnp.float32))


@functools.lru_cache(maxsize=None)
def tiny_model(n_layers: int = 1):
    """A small post-LN model with biases. NumPy parameters: eager ``init_params`` compiles one
    random program per parameter shape, which costs more CPU time than the tests themselves."""
    cfg = ModelConfig(n_layers=n_layers, d_model=16, n_heads=2, d_mlp=32, d_vocab=5, n_ctx=6,
                      normalization="post", use_bias=True)
    rng = np.random.default_rng(n_layers)
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith(".w"):
            value = 1.0 + 0.1 * rng.normal(size=shape)
        elif len(shape) == 1:
            value = 0.5 * rng.normal(size=shape)
        else:
            value = rng.normal(size=shape) / np.sqrt(shape[-2])
        params[name] = jnp.asarray(value, jnp.float32)
    tokens = jnp.asarray(rng.integers(0, 5, size=(24, 6)), jnp.int32)
    return cfg, params, tokens
