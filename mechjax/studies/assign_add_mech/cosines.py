"""Cosines at ``=``: the layer-2 MLP input against the literal twin, the layer-2 attention output
against ``(e_n1 + e_n2) OV2``."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from mechjax.studies.assign_add_mech.data import PairedData, resolve_cfg
from mechjax.studies.assign_add_mech.weight_space import ov_matrix
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_cache
from mechjax.models.transformer import Params
from mechjax.tasks import assign_add as aa


def _cos(a: jax.Array, b: jax.Array) -> jax.Array:
    """Cosine along the last axis."""
    na = jnp.linalg.norm(a, axis=-1)
    nb = jnp.linalg.norm(b, axis=-1)
    return jnp.sum(a * b, -1) / jnp.maximum(na * nb, 1e-30)


def mlp_input_cosines(params: Params, data: PairedData, cfg: ModelConfig | None = None
                      ) -> dict[str, jax.Array]:
    """Cosine of the layer-2 MLP input at ``=`` (``blocks.1.hook_resid_mid``) between a literal
    sequence and its variable twin (``matched [b]``) and the next row's twin (``mismatched [b]``,
    a different sequence and, almost always, a different pair)."""
    cfg = resolve_cfg(cfg)
    name = "blocks.1.hook_resid_mid"
    _, c_lit = run_with_cache(params, data.literal, cfg, name)
    _, c_var = run_with_cache(params, data.variable, cfg, name)
    lit, var = c_lit[name][:, -1], c_var[name][:, -1]
    return {"matched": _cos(lit, var), "mismatched": _cos(lit, jnp.roll(var, 1, axis=0))}


def attn_out_cosines(params: Params, tokens: jax.Array, cfg: ModelConfig | None = None
                     ) -> jax.Array:
    """``[b]`` cosine of the layer-2 attention output at ``=`` with ``(W_E[n1] + W_E[n2]) OV2``,
    ``n1, n2`` the operand values of each sequence of ``tokens [b, 16]`` (any kind)."""
    cfg = resolve_cfg(cfg)
    name = "blocks.1.hook_attn_out"
    vals = jnp.take_along_axis(tokens, aa.operand_value_positions(tokens), axis=1)
    w_e = params["embed.W_E"]
    target = (w_e[vals[:, 0]] + w_e[vals[:, 1]]) @ ov_matrix(params, 1)
    _, cache = run_with_cache(params, tokens, cfg, name)
    return _cos(cache[name][:, -1], target)
