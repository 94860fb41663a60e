"""Zhong et al. (2023, "The Clock and the Pizza", arXiv 2306.17844): telling the two modular
addition algorithms apart from a model's behaviour.

**Gradient symmetricity** (their Def. 4.1): over a fixed random set S of triples (a, b, c) in
Z_p^3 (c any output, not only the answer), the mean cosine between the gradients of the output
logit Q_abc with respect to the two input embeddings E_a and E_b. The Pizza reads its inputs
through E_a + E_b, so both gradients are the same vector (symmetricity 1); the Clock multiplies
the two rotations, so for Q = Re(z_a z_b conj z_c) the gradients are the two embeddings rotated
by c and their cosine is cos(w (a - b)), which averages to about 0 over S.

**Distance irrelevance** (their Def. 4.2): with L[a, b] the logit of the correct answer a + b,
the mean over differences d of the spread of L over the pairs with a - b = d, over the spread of
L over all pairs, ``q = mean_d std_a L[a, a - d] / std L``. The Pizza's correct logit depends
on the distance a - b (its |cos(w (a - b) / 2)|), so q is small; the Clock's does not, q near 1.
The paper reports 0.99 / 0.17 (symmetricity / irrelevance) for its pizza model and 0.33 / 0.85
for its clock. Population standard deviations, as in the paper.

Model measures (``gradient_symmetricity_measure``, ``distance_irrelevance_measure``) are
``fn(params, model_cfg) -> float`` for ``seed_atlas.measure_table``, on a transformer reading
``[a, b]`` (answer at the last position, ``d_vocab_out = p``), at an attention rate
(``mechjax.models.attention_rate``, either ``mixing``), JAX throughout so a table vmaps them over
seeds.
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.models import attention_rate
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import Params

# (e_a [d], e_b [d]) -> logits [p] for the pair whose embeddings these are
LogitFn = Callable[[jax.Array, jax.Array], jax.Array]

# ``classify``'s thresholds (ours: the paper plots the two numbers, its pizza at 0.99 / 0.17 and
# its clock at 0.33 / 0.85); experiments and tests read them from here.
PIZZA_MIN_GRAD_SYM = 0.9
CLOCK_MIN_DIST_IRR = 0.5


def triples(p: int, n: int = 100, seed: int = 0) -> np.ndarray:
    """``[min(n, p^3), 3]`` distinct (a, b, c) drawn uniformly from Z_p^3 (fixed by ``seed``)."""
    flat = np.random.default_rng(seed).choice(p ** 3, size=min(n, p ** 3), replace=False)
    return np.stack([flat // (p * p), (flat // p) % p, flat % p], 1).astype(np.int32)


def _cosine(u: jax.Array, v: jax.Array) -> jax.Array:
    return jnp.vdot(u, v) / (jnp.linalg.norm(u) * jnp.linalg.norm(v))


def gradient_symmetricity(logit_fn: LogitFn, embed: jax.Array, abc: jax.Array) -> jax.Array:
    """Mean over ``abc [n, 3]`` of cos(dQ_abc/dE_a, dQ_abc/dE_b), ``embed [p, d]`` the input
    embeddings ``logit_fn`` is differentiated at."""
    def one(t):
        grads = jax.grad(lambda ea, eb: logit_fn(ea, eb)[t[2]], argnums=(0, 1))(
            embed[t[0]], embed[t[1]])
        return _cosine(*grads)
    return jnp.mean(jax.vmap(one)(jnp.asarray(abc)))


def distance_irrelevance(correct: jax.Array) -> jax.Array:
    """``q`` of the correct-logit table ``correct [p, p]`` (``correct[a, b]``: the logit of the
    answer a + b): mean over d of the std of ``correct[a, (a - d) % p]`` over a, over the std
    of the whole table. Every d holds exactly the p pairs at that difference, for any p."""
    p = correct.shape[0]
    a = jnp.arange(p)
    by_distance = correct[a[None, :], (a[None, :] - a[:, None]) % p]  # [d, a]
    return jnp.mean(jnp.std(by_distance, axis=1)) / jnp.std(correct)


# ---- on a transformer -------------------------------------------------------------------------
def model_logit_fn(params: Params, cfg: ModelConfig, rate: jax.Array | float = 1.0,
                   mixing: str = "uniform") -> LogitFn:
    """The transformer's last-position logits as a function of the two input embeddings (the
    rows of ``W_E`` the tokens look up; the position embedding is added after, as always)."""
    tokens = jnp.zeros((1, 2), jnp.int32)  # looked-up rows are replaced by the hook below

    def fn(e_a, e_b):
        def hook(name, x):
            return x.at[:, 0].set(e_a).at[:, 1].set(e_b) if name == "hook_embed" else x
        return attention_rate.forward(params, tokens, cfg, rate, hook=hook, mixing=mixing)[0, -1]
    return fn


def correct_logits(params: Params, cfg: ModelConfig, rate: jax.Array | float = 1.0,
                   mixing: str = "uniform") -> jax.Array:
    """``[p, p]``: ``[a, b]`` -> the logit of ``(a + b) % p`` on input ``[a, b]`` (p =
    ``cfg.vocab_out``)."""
    p = cfg.vocab_out
    a, b = jnp.meshgrid(jnp.arange(p), jnp.arange(p), indexing="ij")
    tokens = jnp.stack([a.ravel(), b.ravel()], 1)
    logits = attention_rate.forward(params, tokens, cfg, rate, mixing=mixing)[:, -1]
    return logits[jnp.arange(p * p), (tokens[:, 0] + tokens[:, 1]) % p].reshape(p, p)


def gradient_symmetricity_measure(rate: float = 1.0, n_triples: int = 100, seed: int = 0,
                                  mixing: str = "uniform"):
    """``fn(params, cfg)``: the model's gradient symmetricity at attention rate ``rate``."""
    def fn(params: Params, cfg: ModelConfig) -> jax.Array:
        abc = triples(cfg.vocab_out, n_triples, seed)
        logit_fn = model_logit_fn(params, cfg, rate, mixing)
        return gradient_symmetricity(logit_fn, params["embed.W_E"], abc)
    return fn


def distance_irrelevance_measure(rate: float = 1.0, mixing: str = "uniform"):
    """``fn(params, cfg)``: the model's distance irrelevance at attention rate ``rate``."""
    def fn(params: Params, cfg: ModelConfig) -> jax.Array:
        return distance_irrelevance(correct_logits(params, cfg, rate, mixing))
    return fn


def measures(rate: float = 1.0, n_triples: int = 100, seed: int = 0,
             mixing: str = "uniform") -> dict:
    """Both diagnostics as ``seed_atlas.measure_table`` measures for a run trained at ``rate``
    with ``mixing``."""
    return {"clock_pizza/grad_sym": gradient_symmetricity_measure(rate, n_triples, seed, mixing),
            "clock_pizza/dist_irr": distance_irrelevance_measure(rate, mixing)}


def classify(grad_sym: np.ndarray, dist_irr: np.ndarray,
             pizza_min_grad_sym: float = PIZZA_MIN_GRAD_SYM,
             clock_min_dist_irr: float = CLOCK_MIN_DIST_IRR) -> np.ndarray:
    """Per model ``"pizza"`` (symmetric gradients and distance-dependent correct logits),
    ``"clock"`` (neither) or ``"mixed"`` (the two diagnostics disagree)."""
    sym = np.asarray(grad_sym) >= pizza_min_grad_sym
    irr = np.asarray(dist_irr) >= clock_min_dist_irr
    return np.where(sym & ~irr, "pizza", np.where(~sym & irr, "clock", "mixed"))
