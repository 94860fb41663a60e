"""ACE cores (``mechjax.analysis.ace``) of modular-addition models trained at an attention rate.

``ace.analyse`` runs the plain ``mechjax.models.transformer.forward``; a model trained at attention rate
``rate < 1`` must be read at that rate, so the activation is taken here with
``mechjax.models.attention_rate.forward`` and handed to ``ace.analyse_linear`` (the tail after the last
block's output is the unembedding, so the observability Gramian is exact). The pipeline is the
one ``ace_grokking`` uses (``grokking_core.core_pipeline``): the core dimension
max(r_energy, r_nec) and the cyclic-shift fit's rotational modes.
"""
from __future__ import annotations

from typing import Mapping

import jax
import numpy as np

from mechjax.models import attention_rate
from mechjax.analysis import ace
from mechjax.studies import grokking_core
from mechjax.models.config import ModelConfig


def resid_at(params, tokens: jax.Array, cfg: ModelConfig, rate, hook_name: str,
             mixing: str = "uniform") -> jax.Array:
    """``[N, d_model]``: the activation at ``hook_name``, last position, at attention ``rate``
    (``mixing``: ``mechjax.models.attention_mix``)."""
    seen = {}

    def keep(name, x):
        if name == hook_name:
            seen["h"] = x
        return x
    attention_rate.forward(params, tokens, cfg, rate, hook=keep, mixing=mixing)
    return seen["h"][:, -1]


def core_stats_at_rate(stacked: Mapping[str, np.ndarray], inputs: ace.Inputs, cfg: ModelConfig,
                       rate: float, tau: float = 0.99, mixing: str = "uniform"
                       ) -> dict[str, np.ndarray]:
    """``CoreStats`` fields of every seed (``stacked``: ``{name: [n_seeds, ...]}``) as numpy
    ``{field: [n_seeds, ...]}``, read on ``inputs`` (e.g. the held-out pairs)."""
    hook = f"blocks.{cfg.n_layers - 1}.hook_resid_post"
    ace.check_linear_tail(cfg, hook)
    pipe = grokking_core.core_pipeline(tau=tau, hook_name=hook)

    def one(params):
        h = resid_at(params, inputs.tokens, cfg, rate, hook, mixing)
        w_u, b_u = ace.unembed(params, cfg, pipe.dtype)
        return grokking_core.core_stats(ace.analyse_linear(h, inputs.labels, w_u, b_u, pipe))

    with ace.precision(pipe.float64):
        out = jax.jit(jax.vmap(one))({k: jax.numpy.asarray(v) for k, v in stacked.items()})
    return {k: np.asarray(v) for k, v in out._asdict().items()}
