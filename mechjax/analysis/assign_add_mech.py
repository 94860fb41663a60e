"""Mechanism of the Assign-and-Add model (SPEC 1.4): progress measures, cosines, Fourier fits.

Paper layer 1 / layer 2 are ``blocks.0`` / ``blocks.1``. Every analysis is a pure function of a
parameter dict (plus fixed probe data built once by ``probe_data``), so stacking checkpoints or
seeds along a leading axis and calling ``jax.vmap(fn, in_axes=(0, None))`` evaluates them all in
one compiled program. Activations come from ``mechjax.hooks`` (``run_with_cache`` /
``run_with_hooks``); weight-space quantities (QK and OV products) read the parameters directly.

Progress measures (``progress_measures``):
  ov_mlp_accuracy     feed ``x = (e_n + e_m) W_V2 W_O2`` as the layer-2 residual at ``=`` (a hook
                      on ``blocks.1.hook_resid_mid``) through MLP2 and W_U; share of the 3481
                      pairs whose argmax is ``(n + m) mod 59``. ``e`` = token embedding ``W_E``.
  qk1_prev_token      share of prefix queries q = 1..11 whose positional QK1 row
                      ``W_pos W_Q1 W_K1^T W_pos^T`` over the earlier keys k < q peaks at q - 1
                      (the self key is excluded; see ``qk1_prev_token_fraction``).
  qk2_diagonal        share of the 12 variables v whose row of
                      ``(W_E[v] OV1) QK2 (W_E[w] OV1)^T`` peaks at w = v.
  attn1_eq_operands   layer-1 attention from ``=`` summed over the operand slots 13, 14.
  attn1_value_to_var  layer-1 attention from each prefix value to its variable (one back).
  attn2_eq_values     layer-2 attention from ``=`` summed over the two operand values' positions.
  probe_accuracy      closed-form ridge probe (one-hot targets, bias column) predicting the owning
                      variable from ``blocks.0.hook_resid_mid`` at prefix value positions; fitted on
                      the first half of the probe batch, scored on the second.
The attention measures and the probe use ``probe_data``: 2-var sequences with allowed operands and
training pairs (so every query reads two bound values).

Mechanism numbers (``mechanism_summary``):
  mlp_in_cos_*        cosine of ``blocks.1.hook_resid_mid`` at ``=`` between a 1-var sequence and
                      its literal twin (same prefix, the variable replaced by its value): matched;
                      against the next row's twin: mismatched (``paired_data``).
  attn_out_cos_*      cosine of ``blocks.1.hook_attn_out`` at ``=`` with ``(e_n1 + e_n2) OV2``:
                      on 0-var sequences (the literal twins; ``literal``) and on the 2-var probe
                      sequences (``variable``).
  fourier_*           single-frequency fits of the layer-2 MLP pre-activation maps over the core
                      inputs ``PAD*12 + n m =`` (``fourier_fit``), for the best-fitting neuron and
                      for the neuron with the largest pre-activation variance.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from mechjax import linalg
from mechjax.config import ModelConfig
from mechjax.hooks import run_with_cache, run_with_hooks
from mechjax.metrics import accuracy
from mechjax.model import Params
from mechjax.tasks import assign_add as aa


def _cfg(cfg: ModelConfig | None) -> ModelConfig:
    return aa.model_config() if cfg is None else cfg


def _cos(a: jax.Array, b: jax.Array) -> jax.Array:
    """Cosine along the last axis."""
    na = jnp.linalg.norm(a, axis=-1)
    nb = jnp.linalg.norm(b, axis=-1)
    return jnp.sum(a * b, -1) / jnp.maximum(na * nb, 1e-30)


# ================================================================================================
# Probe data
# ================================================================================================
class ProbeData(NamedTuple):
    tokens: jax.Array  # [b, 16] 2-var sequences, allowed operands, training pairs
    labels: jax.Array  # [b]
    value_pos: jax.Array  # [b, 2] positions of the two operand values
    value_mask: jax.Array  # [b, 12] True at prefix value positions
    owner: jax.Array  # [b, 12] variable index (0..11) owning each value position (0 elsewhere)


def probe_data(key: jax.Array, n: int = 1024, split: aa.PairSplit | None = None,
               f: float = 0.7) -> ProbeData:
    """``n`` 2-var sequences (allowed operands, training pairs) with their value positions."""
    split = aa.authors_split() if split is None else split
    seqs = aa.sample_sequences(key, n, (0.0, 0.0, 0.0, 1.0), split, f, False, "allowed")
    return _with_positions(seqs["tokens"], seqs["label"], seqs["value_pos"])


def _with_positions(tokens: jax.Array, labels: jax.Array, value_pos: jax.Array) -> ProbeData:
    prefix = tokens[:, :aa.PREFIX_LEN]
    prev = jnp.concatenate([jnp.full_like(prefix[:, :1], aa.PAD), prefix[:, :-1]], axis=1)
    mask = (prefix < aa.P) & (prev >= aa.VAR0)
    owner = jnp.where(mask, prev - aa.VAR0, 0)
    return ProbeData(tokens, labels, value_pos, mask, owner)


# ================================================================================================
# Weight-space matrices
# ================================================================================================
def _qk(params: Params, layer: int) -> jax.Array:
    pre = f"blocks.{layer}.attn."
    return jnp.einsum("hde,hfe->df", params[pre + "W_Q"], params[pre + "W_K"])  # sum of heads (1)


def _ov(params: Params, layer: int) -> jax.Array:
    pre = f"blocks.{layer}.attn."
    return jnp.einsum("hde,hef->df", params[pre + "W_V"], params[pre + "W_O"])


def positional_qk1(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """``[16, 16]`` scores ``W_pos QK1 W_pos^T / scale`` (query rows, key columns); ``-inf`` above
    the diagonal (causal mask)."""
    cfg = _cfg(cfg)
    w_pos = params["pos_embed.W_pos"]
    scores = w_pos @ _qk(params, 0) @ w_pos.T / cfg.scale
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
    cfg = _cfg(cfg)
    a = params["embed.W_E"][aa.VAR0:aa.VAR0 + aa.N_VARS] @ _ov(params, 0)
    return a @ _qk(params, 1) @ a.T / cfg.scale


def qk2_diagonal_fraction(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """Share of the 12 variables whose ``variable_qk2`` row peaks on the diagonal."""
    return accuracy(variable_qk2(params, cfg), jnp.arange(aa.N_VARS))


# ================================================================================================
# OV2 -> MLP -> W_U addition
# ================================================================================================
def _all_pairs() -> tuple[jax.Array, jax.Array]:
    n, m = jnp.meshgrid(jnp.arange(aa.P), jnp.arange(aa.P), indexing="ij")
    return n.reshape(-1), m.reshape(-1)


def _core_tokens(n: jax.Array, m: jax.Array) -> jax.Array:
    """``PAD*12 + n m =`` for each pair -> ``[b, 16]``."""
    b = n.shape[0]
    return jnp.concatenate([jnp.full((b, aa.PREFIX_LEN), aa.PAD, jnp.int32),
                            jnp.full((b, 1), aa.PLUS, jnp.int32), n[:, None].astype(jnp.int32),
                            m[:, None].astype(jnp.int32), jnp.full((b, 1), aa.EQ, jnp.int32)],
                           axis=1)


def ov_mlp_logits(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """``[59, 59, 59]`` logits when ``x = (e_n + e_m) OV2`` is the whole layer-2 residual at ``=``.

    The model runs on the core tokens with ``blocks.1.hook_resid_mid`` replaced at the last
    position, so MLP2 and the unembedding are the model's own (output = ``(x + MLP2(x)) W_U``).
    """
    cfg = _cfg(cfg)
    n, m = _all_pairs()
    w_e = params["embed.W_E"]
    x = (w_e[n] + w_e[m]) @ _ov(params, 1)  # [3481, d]
    hook = {"blocks.1.hook_resid_mid": lambda r: r.at[:, -1].set(x)}
    logits, _ = run_with_hooks(params, _core_tokens(n, m), cfg, hook)
    return logits[:, -1].reshape(aa.P, aa.P, -1)


def ov_mlp_accuracy(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """Share of the 3481 pairs the OV2 -> MLP2 -> W_U path adds correctly."""
    n, m = jnp.meshgrid(jnp.arange(aa.P), jnp.arange(aa.P), indexing="ij")
    return accuracy(ov_mlp_logits(params, cfg), (n + m) % aa.P)


# ================================================================================================
# Attention measures and the probe
# ================================================================================================
_ATTN_NAMES = ("blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern",
               "blocks.0.hook_resid_mid")


def _cache(params: Params, data: ProbeData, cfg: ModelConfig) -> dict[str, jax.Array]:
    _, cache = run_with_cache(params, data.tokens, cfg, _ATTN_NAMES)
    return cache


def attention_measures(params: Params, data: ProbeData, cfg: ModelConfig | None = None
                       ) -> dict[str, jax.Array]:
    """``attn1_eq_operands``, ``attn1_value_to_var``, ``attn2_eq_values`` (batch means; patterns
    averaged over heads)."""
    cfg = _cfg(cfg)
    cache = _cache(params, data, cfg)
    return _attention_from_cache(cache, data)


def _attention_from_cache(cache, data: ProbeData) -> dict[str, jax.Array]:
    p1 = cache["blocks.0.attn.hook_pattern"].mean(1)  # [b, q, k] averaged over heads
    p2 = cache["blocks.1.attn.hook_pattern"].mean(1)
    eq1 = p1[:, aa.POS_EQ]
    eq2 = p2[:, aa.POS_EQ]
    pos = jnp.arange(aa.PREFIX_LEN)
    prev = p1[:, pos, jnp.maximum(pos - 1, 0)]  # [b, 12] attention from q to q - 1
    mask = data.value_mask.astype(jnp.float32)
    two_values = jnp.take_along_axis(eq2, data.value_pos, axis=1).sum(-1)
    return {"attn1_eq_operands": jnp.mean(eq1[:, aa.POS_X] + eq1[:, aa.POS_Y]),
            "attn1_value_to_var": jnp.sum(prev * mask) / jnp.maximum(mask.sum(), 1.0),
            "attn2_eq_values": jnp.mean(two_values)}


def ridge_probe_accuracy(features: jax.Array, labels: jax.Array, mask: jax.Array,
                         n_classes: int, ridge: float = 1e-2) -> jax.Array:
    """Closed-form ridge probe: fit one-hot targets on the first half of the rows, score the
    second half. ``features [n, d]``, ``labels [n]``, ``mask [n]`` (rows that count).

    Features are standardised with the training rows' mean and scale; ``ridge`` is relative to the
    mean diagonal of the Gram matrix. Pure and vmappable.
    """
    n = features.shape[0]
    train = (jnp.arange(n) < n // 2) & mask
    test = (jnp.arange(n) >= n // 2) & mask
    w_tr = train.astype(features.dtype)[:, None]
    count = jnp.maximum(w_tr.sum(), 1.0)
    mu = jnp.sum(features * w_tr, 0) / count
    sd = jnp.sqrt(jnp.sum(((features - mu) ** 2) * w_tr, 0) / count) + 1e-6
    x = (features - mu) / sd
    x = jnp.concatenate([x, jnp.ones((n, 1), x.dtype)], axis=1)
    y = jax.nn.one_hot(labels, n_classes, dtype=x.dtype)
    gram = (x * w_tr).T @ x
    reg = ridge * jnp.trace(gram) / gram.shape[0]
    coef = linalg.solve(gram + reg * jnp.eye(gram.shape[0], dtype=x.dtype), (x * w_tr).T @ y)
    return accuracy(x @ coef, labels, test)


def variable_probe_accuracy(params: Params, data: ProbeData, cfg: ModelConfig | None = None,
                            ridge: float = 1e-2) -> jax.Array:
    """Ridge probe of the owning variable from ``blocks.0.hook_resid_mid`` at value positions."""
    cfg = _cfg(cfg)
    cache = _cache(params, data, cfg)
    return _probe_from_cache(cache, data, ridge)


def _probe_from_cache(cache, data: ProbeData, ridge: float) -> jax.Array:
    resid = cache["blocks.0.hook_resid_mid"][:, :aa.PREFIX_LEN]  # [b, 12, d]
    d = resid.shape[-1]
    return ridge_probe_accuracy(resid.reshape(-1, d), data.owner.reshape(-1),
                                data.value_mask.reshape(-1), aa.N_VARS, ridge)


def progress_measures(params: Params, data: ProbeData, cfg: ModelConfig | None = None,
                      ridge: float = 1e-2) -> dict[str, jax.Array]:
    """The seven progress measures of SPEC 1.4 (scalars). Vmap over stacked params with
    ``jax.vmap(progress_measures, in_axes=(0, None))``."""
    cfg = _cfg(cfg)
    cache = _cache(params, data, cfg)
    out = {"ov_mlp_accuracy": ov_mlp_accuracy(params, cfg),
           "qk1_prev_token": qk1_prev_token_fraction(params, cfg),
           "qk2_diagonal": qk2_diagonal_fraction(params, cfg),
           "probe_accuracy": _probe_from_cache(cache, data, ridge)}
    out.update(_attention_from_cache(cache, data))
    return out


# ================================================================================================
# Cosines
# ================================================================================================
class PairedData(NamedTuple):
    variable: jax.Array  # [b, 16] sequences with variable operands
    literal: jax.Array  # [b, 16] the same sequences, operand variables replaced by their values
    pairs: jax.Array  # [b, 2] the addition pairs (n1, n2)


def paired_data(key: jax.Array, n: int = 1024, kinds=(0.0, 1.0, 1.0, 0.0),
                split: aa.PairSplit | None = None, f: float = 0.7) -> PairedData:
    """``n`` sequences with variable operands (default 1-var, LHS and RHS 50/50; allowed operands,
    training pairs) and their literal twins: same prefix, operands replaced by their values."""
    split = aa.authors_split() if split is None else split
    seqs = aa.sample_sequences(key, n, kinds, split, f, False, "allowed")
    tok = seqs["tokens"]
    vals = jnp.take_along_axis(tok, seqs["value_pos"], axis=1)  # [b, 2] the operand values
    lit = tok.at[:, aa.POS_X].set(vals[:, 0]).at[:, aa.POS_Y].set(vals[:, 1])
    return PairedData(tok, lit, vals)


def mlp_input_cosines(params: Params, data: PairedData, cfg: ModelConfig | None = None
                      ) -> dict[str, jax.Array]:
    """Cosine of the layer-2 MLP input at ``=`` (``blocks.1.hook_resid_mid``) between a literal
    sequence and its variable twin (``matched [b]``) and the next row's twin (``mismatched [b]``,
    a different sequence and, almost always, a different pair)."""
    cfg = _cfg(cfg)
    name = "blocks.1.hook_resid_mid"
    _, c_lit = run_with_cache(params, data.literal, cfg, name)
    _, c_var = run_with_cache(params, data.variable, cfg, name)
    lit, var = c_lit[name][:, -1], c_var[name][:, -1]
    return {"matched": _cos(lit, var), "mismatched": _cos(lit, jnp.roll(var, 1, axis=0))}


def attn_out_cosines(params: Params, tokens: jax.Array, cfg: ModelConfig | None = None
                     ) -> jax.Array:
    """``[b]`` cosine of the layer-2 attention output at ``=`` with ``(W_E[n1] + W_E[n2]) OV2``,
    ``n1, n2`` the operand values of each sequence of ``tokens [b, 16]`` (any kind)."""
    cfg = _cfg(cfg)
    name = "blocks.1.hook_attn_out"
    vals = jnp.take_along_axis(tokens, aa.operand_value_positions(tokens), axis=1)
    w_e = params["embed.W_E"]
    target = (w_e[vals[:, 0]] + w_e[vals[:, 1]]) @ _ov(params, 1)
    _, cache = run_with_cache(params, tokens, cfg, name)
    return _cos(cache[name][:, -1], target)


# ================================================================================================
# Fourier fits of layer-2 MLP pre-activations
# ================================================================================================
def mlp_preactivation_maps(params: Params, cfg: ModelConfig | None = None) -> jax.Array:
    """``[59, 59, d_mlp]`` layer-2 MLP pre-activations at ``=`` for ``PAD*12 + n m =``."""
    cfg = _cfg(cfg)
    n, m = _all_pairs()
    name = "blocks.1.mlp.hook_pre"
    _, cache = run_with_cache(params, _core_tokens(n, m), cfg, name)
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


# ================================================================================================
# One-call summary
# ================================================================================================
def mechanism_summary(params: Params, data: ProbeData, paired: PairedData,
                      cfg: ModelConfig | None = None) -> dict[str, jax.Array]:
    """Progress measures plus the SPEC 1.4 mechanism numbers, all scalars (vmappable).

    ``fourier_max_*``: the neuron with the best single-frequency fit; ``fourier_top_*``: the
    neuron whose pre-activation map has the largest variance (the most active neuron).
    """
    cfg = _cfg(cfg)
    out = progress_measures(params, data, cfg)
    mlp_cos = mlp_input_cosines(params, paired, cfg)
    maps = mlp_preactivation_maps(params, cfg)
    fit = fourier_fit(maps)
    best = jnp.argmax(fit.best_evr)
    top = jnp.argmax(jnp.var(maps, axis=(0, 1)))
    out.update({"mlp_in_cos_matched": mlp_cos["matched"].mean(),
                "mlp_in_cos_mismatched": mlp_cos["mismatched"].mean(),
                "attn_out_cos_literal": attn_out_cosines(params, paired.literal, cfg).mean(),
                "attn_out_cos_variable": attn_out_cosines(params, data.tokens, cfg).mean(),
                "fourier_max_evr": fit.best_evr[best],
                "fourier_max_k": fit.best_k[best],
                "fourier_top_evr": fit.best_evr[top],
                "fourier_top_k": fit.best_k[top],
                "qk2_diagonal_count": qk2_diagonal_fraction(params, cfg) * aa.N_VARS})
    return out
