"""Closed-form population loss of the 4-coordinate (alpha, beta, gamma, delta) IMIR model on
associative recall, for any context size; the engine behind the phase diagrams.

On the sub-manifold ``W_KQ1 = alpha M``, ``W_KQ2 = beta I_t O1^T``, ``W_U = gamma O2 I_t + delta C``
(``submanifold.abgd_coordinates``) of the centred IMIR frame (``basis.make_frame``), the forward
pass of a
recall sequence (``n`` blocks ``[x y]``, ring of ``T = 2n - 1`` positions, query token ``a`` whose
partner ``y`` sits in ``b`` copies of the relevant block) reduces to a few numbers
(docs/imir.md, section 6):

  layer 1   every position attends its predecessor with ``p1 = e^alpha / (e^alpha + T - 1)``,
            every other position with ``u = 1 / (e^alpha + T - 1)``;
  layer 2   key ``k`` scores ``beta * (p1 [t_(k-1) = a] + u #{j != k-1: t_j = a})``: the ``b + 1``
            *hit* positions that follow an ``a`` (the ``b`` answers and the block after the query)
            get weight ``E = e^(beta (p1 - u))``, the others 1, so ``h = E / Z``, ``l = 1 / Z``,
            ``Z = (b + 1) E + T - b - 1``;
  logits    ``gamma * (attention mass on the positions holding y') + delta * ([y' = C(a)] -
            [y' common] / V)`` (the centred association; constants dropped).

The population is enumerated analytically: the relevant item is rare (``f_r``), common and
faithful (``(1 - f_r)(1 - f_v)``, ``y = C(a)``) or common and varied (``(1 - f_r) f_v``); the block
after the query is relevant (``b / (n - 1)``) or a distractor; ``k ~ Bin(n - 1 - b, 1 - f_r)``
distractor items are common; the distractor after the query is common with probability
``k / n_d``. This is exact for ``blocklist.BlockListSpec(kind="recall", offsets="cyclic")`` when no
token repeats by chance (``f_v = 0``: checked against the engine's forward on the enumerated
support in tests/test_imir_phase.py); with ``f_v > 0`` the task's varied partner can collide
with a context token, which the *ideal* population here excludes.

``b``, ``f_r``, ``f_v`` are traced, so a grid of data parameters is one ``vmap``.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, xlogy

from mechjax.analysis.imir.dynamics import solver as solve

NAMES = ("alpha", "beta", "gamma", "delta")


@dataclasses.dataclass(frozen=True)
class RecallSizes:
    """Static sizes: ``n_common`` (in cycles of 2), ``n_rare`` tokens, ``n_blocks`` (with the
    query block). ``b`` (burstiness) is a traced parameter, ``1 <= b <= n_blocks - 1``."""

    n_common: int
    n_rare: int
    n_blocks: int

    def __post_init__(self):
        if self.n_blocks < 2:
            raise ValueError(f"n_blocks={self.n_blocks}: must be >= 2")
        if self.n_common % 2 or self.n_common < 2 * (self.n_blocks - 1):
            raise ValueError(f"n_common={self.n_common}: must be even and >= 2 * (n_blocks - 1) "
                             f"= {2 * (self.n_blocks - 1)} (a distinct cycle for every item)")
        if self.n_rare < 2 * (self.n_blocks - 1):
            raise ValueError(f"n_rare={self.n_rare}: must be >= 2 * (n_blocks - 1) = "
                             f"{2 * (self.n_blocks - 1)} (every context item may be rare)")

    @property
    def seq_len(self) -> int:
        return 2 * self.n_blocks - 1

    @property
    def vocab(self) -> int:
        return self.n_common + self.n_rare

    @classmethod
    def from_spec(cls, spec) -> "RecallSizes":
        if spec.kind != "recall" or spec.offsets != "cyclic" or spec.biased:
            raise ValueError("the closed form covers kind='recall', offsets='cyclic' only")
        return cls(spec.n_common, spec.n_rare, spec.n_blocks)


def gram_diag(sizes: RecallSizes) -> np.ndarray:
    """``diag(G_sub)`` of (alpha, beta, gamma, delta): Frobenius norms^2 of the centred
    selections ``P_T M P_T``, ``P_V I P_V`` (twice) and ``P_V C P_V``. The four live in different
    parameters or path blocks, so ``G_sub`` is diagonal (checked against ``project.gram``)."""
    t, v = sizes.seq_len, sizes.vocab
    pt, pv = np.eye(t) - 1.0 / t, np.eye(v) - 1.0 / v
    m = np.roll(np.eye(t), -1, axis=1)                    # any cyclic shift: same norm
    c = np.zeros((v, v))
    j = np.arange(sizes.n_common)
    c[j, j ^ 1] = 1.0                                       # pairs (2i, 2i+1)
    return np.array([np.sum((pt @ m @ pt) ** 2), np.sum(pv ** 2), np.sum(pv ** 2),
                     np.sum((pv @ c @ pv) ** 2)])


def _binom_pmf(k: jax.Array, n: jax.Array, q: jax.Array) -> jax.Array:
    """Bin(n, q) at integer ``k`` with traced (integer-valued) ``n``; 0 for ``k > n``."""
    ok = k <= n + 1e-6
    nn = jnp.maximum(n, k)
    logp = (gammaln(nn + 1) - gammaln(k + 1) - gammaln(nn - k + 1) + xlogy(k, q)
            + xlogy(nn - k, 1 - q))
    return jnp.where(ok, jnp.exp(logp), 0.0)


def _cases(sizes: RecallSizes, theta: jax.Array, b, f_r, f_v):
    """Every case of the population: ``(prob, logits [G], mult [G], target group, cat)``.

    Groups of output tokens with equal logits: 0 target y, 1 query token a, 2 the hit distractor
    token z, 3 other common context tokens, 4 other rare context tokens, 5 C(a) (varied case),
    6 common tokens off the context, 7 rare tokens off the context.
    Case axes: cat (rare, faithful, varied) x first block (relevant, distractor) x k common
    distractor items (0 .. n - 2) x class of z (common, rare).
    """
    alpha, beta, gamma, delta = theta[0], theta[1], theta[2], theta[3]
    dt = theta.dtype
    n, t, vc, vr = sizes.n_blocks, sizes.seq_len, sizes.n_common, sizes.n_rare
    v = sizes.vocab
    b = jnp.asarray(b, dt)
    nd = n - 1 - b
    ea = jnp.exp(alpha)
    p1, u = ea / (ea + t - 1), 1.0 / (ea + t - 1)
    e = jnp.exp(beta * (p1 - u))
    z = (b + 1) * e + (t - b - 1)
    h, lo = e / z, 1.0 / z
    pen = delta / v                                    # centring of C: every common token -pen

    cat = jnp.arange(3)[:, None, None, None]           # 0 rare, 1 faithful, 2 varied
    first = jnp.arange(2)[None, :, None, None]         # 0 relevant, 1 distractor
    k = jnp.arange(max(n - 1, 1), dtype=dt)[None, None, :, None]
    zc = jnp.arange(2)[None, None, None, :]            # 0 z common, 1 z rare
    rare_item = cat == 0
    rel_first = first == 0
    p_cat = jnp.stack([f_r, (1 - f_r) * (1 - f_v), (1 - f_r) * f_v]).astype(dt)[cat]
    p_first = jnp.where(rel_first, b / (n - 1), nd / (n - 1))
    p_k = _binom_pmf(k, nd, jnp.asarray(1 - f_r, dt))
    # z's class given k common items among nd (only meaningful when the first block is a distractor)
    frac_c = jnp.where(nd > 0.5, k / jnp.maximum(nd, 1.0), 0.0)
    p_z = jnp.where(rel_first, jnp.where(zc == 0, 1.0, 0.0),
                    jnp.where(zc == 0, frac_c, 1 - frac_c))
    prob = p_cat * p_first * p_k * p_z

    has_z = ~rel_first
    z_common = has_z & (zc == 0)
    z_rare = has_z & (zc == 1)
    cpen_ay = jnp.where(rare_item, 0.0, -pen)          # a and y share the item's class
    logit = [
        gamma * b * h + jnp.where(cat == 1, delta, 0.0) + cpen_ay,            # y
        gamma * ((b + 1) * lo + jnp.where(rel_first, h - lo, 0.0)) + cpen_ay,  # a
        gamma * h + jnp.where(zc == 0, -pen, 0.0),                             # z
        gamma * lo - pen,                                                      # other common ctx
        gamma * lo,                                                            # other rare ctx
        delta - pen,                                                           # C(a), varied only
        -pen,                                                                  # common off ctx
        jnp.zeros_like(h),                                                     # rare off ctx
    ]
    n_ctx_common = 2 * k + jnp.where(rare_item, 0, 2)
    n_ctx_rare = 2 * (nd - k) + jnp.where(rare_item, 2, 0)
    mult = [
        jnp.ones_like(k), jnp.ones_like(k),
        jnp.where(has_z, 1.0, 0.0),
        2 * k - jnp.where(z_common, 1.0, 0.0),
        2 * (nd - k) - jnp.where(z_rare, 1.0, 0.0),
        jnp.where(cat == 2, 1.0, 0.0),
        vc - n_ctx_common - jnp.where(cat == 2, 1.0, 0.0),
        vr - n_ctx_rare,
    ]
    shape = prob.shape
    logit = jnp.stack([jnp.broadcast_to(x, shape) for x in logit], -1)
    mult = jnp.stack([jnp.broadcast_to(jnp.asarray(x, dt), shape) for x in mult], -1)
    # impossible cases (k > nd, z's class absent) carry prob 0; keep their numbers finite
    mult = jnp.maximum(mult, 0.0)
    # the case probability *given* the item category (conditional read-offs stay defined when a
    # category has probability 0, e.g. rare items at f_r = 0)
    given_cat = jnp.broadcast_to(p_first * p_k * p_z, shape)
    return prob, logit, mult, jnp.broadcast_to(cat, shape), given_cat


def _case_stats(logit, mult):
    """Per case: cross-entropy of the target (group 0), its probability, and whether it is the
    strict argmax (every other group with a member has a smaller logit)."""
    present = mult > 0
    lse = jax.scipy.special.logsumexp(jnp.where(present, logit, -jnp.inf), axis=-1, b=jnp.where(
        present, mult, 1.0))
    ce = lse - logit[..., 0]
    others = jnp.where(present.at[..., 0].set(False), logit, -jnp.inf)
    return ce, jnp.exp(-ce), (logit[..., 0] > jnp.max(others, -1)).astype(logit.dtype)


def loss(sizes: RecallSizes, theta: jax.Array, b, f_r, f_v) -> jax.Array:
    """Population cross-entropy at the query (``theta = (alpha, beta, gamma, delta)``)."""
    prob, logit, mult, _, _ = _cases(sizes, theta, b, f_r, f_v)
    ce, _, _ = _case_stats(logit, mult)
    return jnp.sum(prob * ce)


def metrics(sizes: RecallSizes, theta: jax.Array, b, f_r, f_v) -> dict[str, jax.Array]:
    """``loss``; ``p_rare`` / ``acc_rare``: target probability / argmax accuracy on rare items
    (only in-context learning can solve them), conditional on the item being rare (defined at
    ``f_r = 0`` too; the distractors keep the training distribution); ``p_common`` /
    ``acc_common`` on common items;
    ``p_iwl``: probability of ``C(a)`` from the in-weights readout alone (no context evidence)."""
    prob, logit, mult, cat, given_cat = _cases(sizes, theta, b, f_r, f_v)
    ce, p, acc = _case_stats(logit, mult)
    dt = theta.dtype
    # common items: faithful vs varied in proportion (1 - f_v) : f_v
    w_common = jnp.where(cat == 1, 1 - f_v, jnp.where(cat == 2, f_v, 0.0)) * given_cat

    def mean(x, w):
        return jnp.sum(w * x) / jnp.maximum(jnp.sum(w), jnp.finfo(dt).tiny)

    w_rare = jnp.where(cat == 0, given_cat, 0.0)
    return {"loss": jnp.sum(prob * ce), "p_rare": mean(p, w_rare), "acc_rare": mean(acc, w_rare),
            "p_common": mean(p, w_common), "acc_common": mean(acc, w_common),
            "p_iwl": p_iwl(sizes, theta[3])}


def p_iwl(sizes: RecallSizes, delta: jax.Array) -> jax.Array:
    """Probability of ``C(a)`` for a common query from ``delta C`` alone."""
    v = sizes.vocab
    top = jnp.exp(delta * (1 - 1.0 / v))
    return top / (top + (sizes.n_common - 1) * jnp.exp(-delta / v) + sizes.n_rare)


def field(sizes: RecallSizes):
    """``f(theta, b, f_r, f_v) = -G_sub^-1 grad L``: the reduced gradient flow."""
    g_inv = 1.0 / gram_diag(sizes)
    grad = jax.grad(lambda th, b, fr, fv: loss(sizes, th, b, fr, fv))

    def f(theta, b, f_r, f_v):
        return -jnp.asarray(g_inv, theta.dtype) * grad(theta, b, f_r, f_v)

    return f


def integrate(sizes: RecallSizes, theta0: jax.Array, b, f_r, f_v, t1: float, n_save: int,
              rtol: float = solve.RTOL, atol: float = solve.ATOL, dt0: float | None = None,
              ) -> jax.Array:
    """The reduced flow from ``theta0`` to ``t1`` (``dynamics.solver``: adaptive, error-controlled);
    states ``[n_save + 1, 4]`` at equal times. ``jax.vmap`` over any of ``theta0``, ``b``,
    ``f_r``, ``f_v`` for a grid."""
    f = field(sizes)
    return solve.solve(lambda th, args: f(th, *args), theta0, (b, f_r, f_v), t1, n_save, rtol,
                       atol, dt0)
