"""ACE on subject-verb agreement (ACE paper): the number margin, one rank-1 core per layer, its
centred keep / remove / flip validation, the knob fit, all as one pure function of one model.

``analyse_model`` jits and vmaps over seeds (stacked parameters); inside, every layer is batched
with ``vmap`` too: the Gramians of all layers come from one forward and one backward pass (a zero
perturbation added at every layer's residual output, at the last prompt position: its gradient is
the margin's gradient at each layer), the extraction is vmapped over layers, and the
interventions run with a hook on every layer that acts only where the layer index matches the
vmapped one.

Prompts are right-padded; the model is causal, so the output at ``last`` (each row's last prompt
token) never sees the padding, and every read and intervention is at ``last`` only (the ACE paper's
LLM validation). Shape legend: B prompts, T positions, D d_model, L layers, V vocabulary.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats

from mechjax.analysis.ace.compare import offdiag_mean
from mechjax.analysis.ace.extract import Gramians, covariance, extract_from_gramians
from mechjax.analysis.ace.validate import centred_hook
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_hooks
from mechjax.metrics import roc_auc
from mechjax.models.transformer import Params

Array = jax.Array
MODES = ("keep", "remove", "flip")


class Prompts(NamedTuple):
    """Tokenized prompts (``agreement.tokenize``) as arrays."""

    tokens: Array  # [B, T] int32, right-padded
    last: Array    # [B] int32, the position the verb is predicted from
    labels: Array  # [B] int32, 1 = plural head noun


class ModelResult(NamedTuple):
    """One model's analysis; ``vmap`` over seeds adds a leading axis to every field."""

    margin: Array            # [B] test margins, no intervention
    auc_base: Array          # []
    auc: dict[str, Array]    # {'keep', 'remove', 'flip'}: [L]
    margins: dict[str, Array]  # {'keep', 'remove', 'flip'}: [L, B] test margins intervened
    direction: Array         # [L, D] q, the rank-1 core of each layer (sign arbitrary)
    mean: Array              # [L, D] mu, the training-prompt mean at ``last``
    weight: Array            # [L] the core's balanced weight s_1^2
    coord: Array             # [L, B] z = (h - mu) . q on the test prompts
    knob_r2: Array           # [L] R^2 of the affine fit of margin on z
    selected: Array          # [] int32, the layer with the lowest flip AUC


def resid_names(cfg: ModelConfig) -> list[str]:
    """Every layer's residual output, in depth order."""
    return [f"blocks.{layer}.hook_resid_post" for layer in range(cfg.n_layers)]


def margin(logits: Array, verb_ids: Array) -> Array:
    """``logit(are) + logit(were) - logit(is) - logit(was)``: ``logits [..., V]`` -> ``[...]``;
    ``verb_ids [4]`` are the ids of is, are, was, were."""
    v = logits[..., verb_ids]
    return v[..., 1] + v[..., 3] - v[..., 0] - v[..., 2]


def copula_margin(logits: Array, verb_ids: Array) -> Array:
    """``logsumexp(are, were) - logsumexp(is, was)``: the log-odds of a plural copula against a
    singular one, ``logits [..., V]`` -> ``[...]``. Unlike ``margin`` the tense the context
    excludes carries (almost) no weight, so a push on it moves the verbs the sentence can take."""
    v = logits[..., verb_ids]
    plural = jax.nn.logsumexp(jnp.stack([v[..., 1], v[..., 3]]), axis=0)
    singular = jax.nn.logsumexp(jnp.stack([v[..., 0], v[..., 2]]), axis=0)
    return plural - singular


# the margins a steering target can be measured in (generation's ``PushMargin``)
MARGINS = {"copula": copula_margin, "summed": margin}


def last_logits(params: Params, prompts: Prompts, cfg: ModelConfig, hooks=None) -> Array:
    """Logits at each row's last prompt position, ``[B, V]``."""
    logits, _ = run_with_hooks(params, prompts.tokens, cfg, hooks or {})
    return logits[jnp.arange(logits.shape[0]), prompts.last]


def read_layers(params: Params, prompts: Prompts, cfg: ModelConfig, verb_ids: Array
                ) -> tuple[Array, Array, Array]:
    """``(h [L, B, D], grad [L, B, D], margin [B])``: every layer's residual output at ``last``
    and the margin's gradient there, from one forward and one backward pass.

    Rows are independent, so the gradient of the summed margin with respect to a zero
    perturbation ``delta [L, B, D]`` is each row's own gradient.
    """
    rows = jnp.arange(prompts.tokens.shape[0])
    names = resid_names(cfg)

    def total(delta):
        seen = []

        def at(layer):
            def fn(h):
                seen.append(h[rows, prompts.last])
                return h.at[rows, prompts.last].add(delta[layer].astype(h.dtype))
            return fn

        m = margin(last_logits(params, prompts, cfg, {n: at(i) for i, n in enumerate(names)}),
                   verb_ids)
        return m.sum(), (jnp.stack(seen), m)

    zero = jnp.zeros((cfg.n_layers, rows.shape[0], cfg.d_model), jnp.float32)
    grad, (h, m) = jax.grad(total, has_aux=True)(zero)
    return h, grad, m


def rank1_cores(h: Array, grad: Array) -> tuple[Array, Array, Array]:
    """ACE with r = 1 at every layer: ``(q [L, D], mu [L, D], weight [L])`` from activations
    ``h [L, N, D]`` (Cov) and margin gradients ``grad [L, S, D]`` (Obs, K = 1)."""
    def one(h_l, g_l):
        cov, mu = covariance(h_l)
        obs = g_l.T @ g_l / g_l.shape[0]
        core = extract_from_gramians(Gramians(cov, obs, mu), 1.0)
        return core.basis[:, 0], mu, core.weights[0]

    return jax.vmap(one)(h, grad)


def intervened_margins(params: Params, prompts: Prompts, cfg: ModelConfig, verb_ids: Array,
                       q: Array, mu: Array, mode: str) -> Array:
    """Test margins ``[L, B]`` with the centred ``mode`` intervention on layer l's rank-1 core
    (row l), at ``last`` only; the layers are a ``vmap`` axis."""
    names = resid_names(cfg)

    def at_layer(layer):
        def hook(j):
            fn = centred_hook(q[j][:, None], mu[j], mode, prompts.last)
            return lambda h: jnp.where(layer == j, fn(h), h)
        return margin(last_logits(params, prompts, cfg, {n: hook(j) for j, n in
                                                         enumerate(names)}), verb_ids)

    return jax.vmap(at_layer)(jnp.arange(cfg.n_layers))


def r_squared(x: Array, y: Array) -> Array:
    """R^2 of the least-squares affine fit ``y ~ a x + b`` (the squared correlation), over the
    last axis."""
    xc, yc = x - x.mean(-1, keepdims=True), y - y.mean(-1, keepdims=True)
    cov = (xc * yc).sum(-1)
    return cov ** 2 / jnp.maximum((xc * xc).sum(-1) * (yc * yc).sum(-1), 1e-30)


@functools.partial(jax.jit, static_argnames=("cfg",))
def analyse_model(params: Params, train: Prompts, test: Prompts, cfg: ModelConfig,
                  verb_ids: Array) -> ModelResult:
    """The whole agreement analysis of one model (pure; vmap over stacked seeds).

    The cores and their centres come from the ``train`` prompts; margins, AUCs, coordinates and
    the knob fit are measured on the ``test`` prompts.
    """
    h_train, g_train, _ = read_layers(params, train, cfg, verb_ids)
    q, mu, weight = rank1_cores(h_train, g_train)
    h_test, _, m = read_layers(params, test, cfg, verb_ids)
    auc = lambda scores: roc_auc(scores, test.labels)  # noqa: E731
    margins = {mode: intervened_margins(params, test, cfg, verb_ids, q, mu, mode)
               for mode in MODES}
    aucs = {mode: jax.vmap(auc)(v) for mode, v in margins.items()}
    coord = jnp.einsum("lbd,ld->lb", h_test - mu[:, None], q)
    return ModelResult(margin=m, auc_base=auc(m), auc=aucs, margins=margins, direction=q,
                       mean=mu, weight=weight, coord=coord, knob_r2=r_squared(coord, m[None]),
                       selected=jnp.argmin(aucs["flip"]).astype(jnp.int32))


def aligned_coords(result: ModelResult, layers: np.ndarray) -> np.ndarray:
    """``z`` of each model at ``layers [n]`` (one layer per model), signed so that it rises with
    the margin (the sign of a core direction is arbitrary): ``[n, B]`` from a result stacked over
    ``n`` models."""
    coord = np.asarray(result.coord)                      # [n, L, B]
    z = coord[np.arange(coord.shape[0]), np.asarray(layers)]  # [n, B]
    m = np.asarray(result.margin)
    sign = np.sign([np.corrcoef(zi, mi)[0, 1] for zi, mi in zip(z, m)])
    return z * np.where(sign == 0, 1.0, sign)[:, None]


def selected_coords(result: ModelResult) -> np.ndarray:
    """``aligned_coords`` at each model's selected layer: ``[n, B]``."""
    return aligned_coords(result, result.selected)


def per_layer_spearman(result: ModelResult) -> list[float]:
    """Mean off-diagonal Spearman of the sign-aligned core coordinate across the ``n`` stacked
    models, at each layer (every model read at the same depth): ``[L]``; NaN when ``n = 1``."""
    n, n_layers = np.asarray(result.coord).shape[:2]
    if n == 1:  # np.corrcoef of one row is a scalar, not a matrix
        return [float("nan")] * n_layers
    return [offdiag_mean(spearman_matrix(aligned_coords(result, np.full(n, layer))))
            for layer in range(n_layers)]


def spearman_matrix(z: np.ndarray) -> np.ndarray:
    """Spearman rank correlations between the rows of ``z [n, B]`` (mid-ranks for ties):
    ``[n, n]``. ``scipy`` comes with jax."""
    return np.corrcoef(scipy.stats.rankdata(np.asarray(z, float), method="average", axis=1))


__all__ = ["MARGINS", "MODES", "ModelResult", "Prompts", "analyse_model", "copula_margin",
           "intervened_margins", "last_logits", "margin", "r_squared", "rank1_cores",
           "aligned_coords", "per_layer_spearman", "read_layers", "resid_names",
           "selected_coords", "spearman_matrix"]
