"""Per-evaluation measures and seed-batched analyses of the Assign-and-Add training run.

Everything here is a pure function of a parameter dict (vmapped or ``lax.map``-ped over a leading
seed axis) or of the host metrics ``[n_seeds, n_evals]``:

* ``make_eval_fn``: what the trainer records at every evaluation, inside the compiled scan: the
  seven progress measures of the paper (``progress/<name>``) and the layer-2 QK gradient measures
  (``qk2grad/<name>``).
* ``ov_mlp_accuracy``: the OV2 -> MLP2 -> W_U addition measure, computed on the one position it
  reads with the model's own ``mlp`` and ``unembed`` (16x cheaper than
  ``assign_add_mech.ov_mlp_accuracy``, which runs the whole sequence; tested equal).
* ``qk2_gradient`` / ``qk2_gradient_measures``: the paper's theory made numerical. ``G = dL/dQK2``
  is the loss gradient with respect to the merged layer-2 bilinear form ``QK2 = W_Q2 W_K2^T``
  (scores are ``x_q QK2 x_k^T / sqrt(d_head)``), read off a zero-valued hook on the layer-2 scores:
  ``G = sum_{b,q,k} x_bq^T (dL/ds_bqk) x_bk / scale`` with ``x`` the layer-2 input. The
  *variable-identity block* is ``M = -A G A^T [12, 12]`` with ``A = W_E[a..l] OV1`` the OV1 images
  of the 12 variable embeddings (rows: query variable), the same block ``variable_qk2`` reads off
  the weights; ``-G`` is the descent direction, so a positive identity component means gradient
  descent is growing the associative memory. Reported: ``identity`` = mean diag(M) - mean
  offdiag(M) (the coefficient of the centred identity), ``identity_cos`` = Frobenius cosine of M
  (row-centred: softmax ignores per-query constants) with the centred identity ``I - J/12``,
  ``block_fraction`` = share of ``||G||_F`` inside the span of A on both sides.
* ``phase_steps``: phase detection per seed (``curves.first_crossing``).
"""
from __future__ import annotations

from typing import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechjax import linalg
from mechjax.studies import assign_add_mech as mech
from mechjax.analysis.curves import first_crossing
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_hooks
from mechjax.models.transformer import Params, identity_hook, mlp, unembed
from mechjax.tasks import assign_add as aa
from mechjax.metrics import accuracy, cross_entropy

GRAD_KEY = 7919  # fold_in constant of the fixed QK2-gradient batch (separate from pool keys)


# ================================================================================================
# Per-evaluation measures
# ================================================================================================
def ov_matrix(params: Params, layer: int) -> jax.Array:
    """``[d, d]`` output-value map ``W_V W_O`` of ``layer`` (summed over heads)."""
    pre = f"blocks.{layer}.attn."
    return jnp.einsum("hde,hef->df", params[pre + "W_V"], params[pre + "W_O"])


def ov_mlp_accuracy(params: Params, cfg: ModelConfig) -> jax.Array:
    """Share of the 3481 pairs for which ``x = (e_n + e_m) OV2`` taken as the whole layer-2
    residual at ``=`` gives ``(n + m) mod 59`` through MLP2 and W_U (a progress measure of the
    paper).

    Same quantity as ``assign_add_mech.ov_mlp_accuracy`` (the residual after layer 2 is
    ``x + MLP2(x)``; this model has no normalization), on one position instead of sixteen.
    """
    n, m = jnp.meshgrid(jnp.arange(aa.P), jnp.arange(aa.P), indexing="ij")
    n, m = n.reshape(-1), m.reshape(-1)
    w_e = params["embed.W_E"]
    x = (w_e[n] + w_e[m]) @ ov_matrix(params, 1)  # [3481, d]
    logits = unembed(params, x + mlp(params, 1, x, cfg, identity_hook), cfg, identity_hook)
    return accuracy(logits, (n + m) % aa.P)


def qk2_gradient(params: Params, tokens: jax.Array, labels: jax.Array, cfg: ModelConfig,
                 layer: int = 1) -> jax.Array:
    """``[d, d]`` gradient of the readout cross-entropy w.r.t. the merged ``QK = W_Q W_K^T`` of
    ``layer`` (summed over heads), via a zero-valued hook on ``hook_attn_scores``."""
    scores_name = f"blocks.{layer}.attn.hook_attn_scores"
    input_name = f"blocks.{layer}.hook_resid_pre"
    b, p = tokens.shape

    def loss_of(eps):
        logits, cache = run_with_hooks(params, tokens, cfg, {scores_name: lambda s: s + eps},
                                       names_filter=input_name)
        return cross_entropy(logits[:, -1], labels), cache[input_name]

    eps = jnp.zeros((b, cfg.n_heads, p, p), jnp.float32)
    g, x = jax.grad(loss_of, has_aux=True)(eps)
    return jnp.einsum("bhqk,bqd,bke->de", g, x, x) / cfg.scale


def variable_block(params: Params, matrix: jax.Array) -> jax.Array:
    """``[12, 12]``: ``A matrix A^T`` with ``A = W_E[a..l] OV1`` (rows: query variable)."""
    a = params["embed.W_E"][aa.VAR0:aa.VAR0 + aa.N_VARS] @ ov_matrix(params, 0)
    return a @ matrix @ a.T


def identity_measures(block: jax.Array) -> dict[str, jax.Array]:
    """Identity component of a ``[n, n]`` score block (rows: queries): ``identity`` (mean
    diagonal minus mean off-diagonal) and ``identity_cos`` (cosine of the row-centred block with
    the centred identity ``I - J/n``). Row centring drops per-query constants, to which softmax
    attention is blind; neither measure sees them."""
    n = block.shape[0]
    eye = jnp.eye(n, dtype=bool)
    diag = jnp.sum(jnp.where(eye, block, 0.0)) / n
    off = jnp.sum(jnp.where(eye, 0.0, block)) / (n * (n - 1))
    centred_id = jnp.eye(n) - 1.0 / n
    rows = block - block.mean(axis=1, keepdims=True)
    cos = jnp.sum(rows * centred_id) / jnp.maximum(
        jnp.linalg.norm(rows) * jnp.linalg.norm(centred_id), 1e-30)
    return {"identity": diag - off, "identity_cos": cos}


def qk2_gradient_measures(params: Params, tokens: jax.Array, labels: jax.Array,
                          cfg: ModelConfig) -> dict[str, jax.Array]:
    """Projection of the descent direction ``-dL/dQK2`` on the variable-identity block (module
    docstring), plus the same identity measures of the weights' own block ``variable_qk2``."""
    g = qk2_gradient(params, tokens, labels, cfg)
    out = identity_measures(variable_block(params, -g))
    a = params["embed.W_E"][aa.VAR0:aa.VAR0 + aa.N_VARS] @ ov_matrix(params, 0)  # [12, d]
    q, _ = linalg.qr(a.T)  # [d, 12] orthonormal basis of the variable images
    out["block_fraction"] = jnp.linalg.norm(q.T @ g @ q) / jnp.maximum(jnp.linalg.norm(g), 1e-30)
    weights = identity_measures(mech.variable_qk2(params, cfg))
    out["weights_identity"] = weights["identity"]
    out["weights_identity_cos"] = weights["identity_cos"]
    return out


PROGRESS = ("ov_mlp_accuracy", "qk1_prev_token", "qk2_diagonal", "attn1_eq_operands",
            "attn1_value_to_var", "attn2_eq_values", "probe_accuracy")
QK2GRAD = ("identity", "identity_cos", "block_fraction", "weights_identity",
           "weights_identity_cos")


def make_eval_fn(cfg: ModelConfig, probe: mech.ProbeData,
                 grad_sampler: Callable[[jax.Array, Mapping[str, jax.Array]], dict]):
    """``eval_fn(params, task_params, eval_key)`` for ``make_train``: ``progress/<measure>`` (the
    paper's seven measures; attention and probe on the fixed ``probe`` sequences) and
    ``qk2grad/<measure>`` on a fixed training-distribution batch from ``grad_sampler``."""

    def eval_fn(params, task_params, eval_key):
        out = {"ov_mlp_accuracy": ov_mlp_accuracy(params, cfg),
               "qk1_prev_token": mech.qk1_prev_token_fraction(params, cfg),
               "qk2_diagonal": mech.qk2_diagonal_fraction(params, cfg),
               "probe_accuracy": mech.variable_probe_accuracy(params, probe, cfg)}
        out.update(mech.attention_measures(params, probe, cfg))
        metrics = {f"progress/{k}": v for k, v in out.items()}
        batch = grad_sampler(jax.random.fold_in(eval_key, GRAD_KEY), task_params)
        grad = qk2_gradient_measures(params, batch["tokens"], batch["labels"], cfg)
        metrics.update({f"qk2grad/{k}": v for k, v in grad.items()})
        return metrics

    return eval_fn


# ================================================================================================
# Phases
# ================================================================================================


def phase_steps(steps: np.ndarray, metrics: Mapping[str, np.ndarray],
                phases: Mapping[str, tuple[str, float]]) -> dict[str, np.ndarray]:
    """``{phase: [n_seeds] first step with metrics[name] >= threshold}`` (NaN: never)."""
    return {phase: first_crossing(steps, metrics[name], thr)
            for phase, (name, thr) in phases.items()}
