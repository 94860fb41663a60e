"""Weight-space measures: positional QK1, variable QK2 and the OV2 -> MLP2 -> W_U addition path."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from mechjax.studies.assign_add_mech.data import all_pairs, core_tokens, resolve_cfg
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_hooks
from mechjax.metrics import accuracy
from mechjax.models.transformer import Params
from mechjax.tasks import assign_add as aa


def qk_matrix(params: Params, layer: int) -> jax.Array:
    """``[d_model, d_model]`` ``W_Q W_K^T`` of ``layer`` (summed over heads; there is one)."""
    pre = f"blocks.{layer}.attn."
    return jnp.einsum("hde,hfe->df", params[pre + "W_Q"], params[pre + "W_K"])


def ov_matrix(params: Params, layer: int) -> jax.Array:
    """``[d_model, d_model]`` ``W_V W_O`` of ``layer`` (summed over heads)."""
    pre = f"blocks.{layer}.attn."
    return jnp.einsum("hde,hef->df", params[pre + "W_V"], params[pre + "W_O"])


def positional_qk1(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """``[16, 16]`` scores ``W_pos QK1 W_pos^T / scale`` (query rows, key columns); ``-inf`` above
    the diagonal (causal mask)."""
    cfg = resolve_cfg(cfg)
    w_pos = params["pos_embed.W_pos"]
    scores = w_pos @ qk_matrix(params, 0) @ w_pos.T / cfg.scale
    n = w_pos.shape[0]
    return jnp.where(jnp.tril(jnp.ones((n, n), bool)), scores, -jnp.inf)


def qk1_prev_token_fraction(params: Params, cfg: ModelConfig | None = None,
                            include_self: bool = False) -> jax.Array:
    """Share of prefix queries q = 1..11 whose positional-QK1 row, over the earlier keys k < q
    (``include_self``: k <= q), peaks at k = q - 1.

    The self key is excluded by default: on the authors' checkpoints the positional diagonal is
    large (a query's position matches itself) while token content decides value -> variable
    attention; among the earlier positions the previous one wins for every prefix query.
    """
    scores = positional_qk1(params, cfg)
    if not include_self:
        n = scores.shape[0]
        scores = jnp.where(jnp.eye(n, dtype=bool), -jnp.inf, scores)
    q = jnp.arange(1, aa.PREFIX_LEN)  # prefix queries with a previous token
    return accuracy(scores[q], q - 1)


def variable_qk2(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """``[12, 12]``: ``(W_E[v] OV1) QK2 (W_E[w] OV1)^T / scale``; rows query variable v."""
    cfg = resolve_cfg(cfg)
    a = params["embed.W_E"][aa.VAR0:aa.VAR0 + aa.N_VARS] @ ov_matrix(params, 0)
    return a @ qk_matrix(params, 1) @ a.T / cfg.scale


def qk2_diagonal_fraction(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """Share of the 12 variables whose ``variable_qk2`` row peaks on the diagonal."""
    return accuracy(variable_qk2(params, cfg), jnp.arange(aa.N_VARS))


def ov_mlp_logits(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """``[59, 59, 59]`` logits when ``x = (e_n + e_m) OV2`` is the whole layer-2 residual at ``=``.

    The model runs on the core tokens with ``blocks.1.hook_resid_mid`` replaced at the last
    position, so MLP2 and the unembedding are the model's own (output = ``(x + MLP2(x)) W_U``).
    """
    cfg = resolve_cfg(cfg)
    n, m = all_pairs()
    w_e = params["embed.W_E"]
    x = (w_e[n] + w_e[m]) @ ov_matrix(params, 1)  # [3481, d]
    hook = {"blocks.1.hook_resid_mid": lambda r: r.at[:, -1].set(x)}
    logits, _ = run_with_hooks(params, core_tokens(n, m), cfg, hook)
    return logits[:, -1].reshape(aa.P, aa.P, -1)


def ov_mlp_accuracy(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """Share of the 3481 pairs the OV2 -> MLP2 -> W_U path adds correctly."""
    n, m = jnp.meshgrid(jnp.arange(aa.P), jnp.arange(aa.P), indexing="ij")
    return accuracy(ov_mlp_logits(params, cfg), (n + m) % aa.P)
