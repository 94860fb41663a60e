"""Algorithmic Core Extraction (ACE, arXiv 2602.22600; SPEC section 2): extract, validate,
identify, compare.

Everything here is a pure function of arrays, so it jits and vmaps over seeds and checkpoints.
Where a step is data-dependent in size (the rank r of a core) the functions return full-size arrays
plus ``r`` as an int array; a rank *mask* zeroes the unused columns, which gives the same projector
as truncating, so a vmapped batch of cores with different ranks shares one shape.

Public functions are jitted (configs, hook names and callables static), so an eager call runs as
one compiled program, and they inline into an outer jit/vmap.

Shape legend: N activations (inputs x chosen positions), D activation width, S Jacobian samples,
K tail-output width, B sequences, T positions, P classes (answers), V vocabulary, n seeds.

Precision (SPEC 2.1 asks for float64). The functions compute in the dtype they are given (at least
float32): pass float64 arrays inside ``with jax.enable_x64(True):`` -- around the *whole* traced
call, jit and vmap included -- to get float64. Switching x64 on locally inside a traced function is
not used because it breaks when the function is later vmapped or differentiated as an already
traced jaxpr (the batching rule runs outside the context and truncates to float32), and switching
it on globally would change the rest of mechjax. In float32, the Gramians are trace-normalised
before factorisation and eigenvalues below the rounding floor ``D * eps * lambda_max`` are clipped
to zero together with the negative ones (in float64 that floor is ~1e-15 relative, i.e. SPEC's
"clip negatives"); without that floor, sqrt-factors of a rank-deficient Gramian carry sqrt(eps)
~ 3e-4 noise and the energy rule would count rounding noise as core dimensions.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Literal, Mapping, NamedTuple

import jax
import jax.numpy as jnp

from mechjax import linalg
from mechjax.config import ModelConfig
from mechjax.hooks import project_onto, run_with_cache, run_with_hooks
from mechjax.metrics import accuracy, cross_entropy, roc_auc
from mechjax.model import Params

Array = jax.Array
Metric = Literal["accuracy", "loss"] | Callable[[Array, Array, Array | None], Array]


# ================================================================================================
# Small helpers
# ================================================================================================
def _float(x: Any) -> Array:
    """``x`` as an array of at least float32 (float64 stays float64)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating) or jnp.finfo(x.dtype).bits < 32:
        x = x.astype(jnp.float32)
    return x


def _sym(a: Array) -> Array:
    return 0.5 * (a + a.T)


def rank_mask(rank: Array | int, size: int) -> Array:
    """``[..., size]`` bool: True for the first ``rank`` entries. ``rank [...]`` may be traced."""
    return jnp.arange(size) < jnp.asarray(rank)[..., None]


def mask_basis(basis: Array, rank: Array | int) -> Array:
    """``basis [..., D, R]`` with columns ``>= rank [...]`` zeroed: the projector of
    ``basis[:, :rank]`` at a fixed shape (works on vmapped stacks of cores too)."""
    return basis * rank_mask(rank, basis.shape[-1]).astype(basis.dtype)[..., None, :]


def projector(basis: Array, rank: Array | int | None = None) -> Array:
    """``P = Q Q^T [D, D]`` of the first ``rank`` columns of ``basis [D, R]`` (all if None)."""
    q = basis if rank is None else mask_basis(basis, rank)
    return q @ q.T


def truncate(basis: Array, rank: Array | int) -> Array:
    """``basis[:, :rank]`` with a concrete rank (outside jit; for plotting and reports)."""
    return basis[:, : int(rank)]


# ================================================================================================
# 2.1 Extract: Gramians, tail Jacobians, balanced truncation
# ================================================================================================
class Gramians(NamedTuple):
    cov: Array   # [D, D] reachability Gramian  Hc^T Hc / (N - 1)
    obs: Array   # [D, D] observability Gramian mean_s J_s^T J_s
    mean: Array  # [D]    activation mean (the centre for LLM interventions)


class Core(NamedTuple):
    """An extracted core. Vmapped extraction stacks every field along a leading axis.

    basis:   [D, D] orthonormal, columns ordered by weight; the core is ``basis[:, :rank]``
             (``mask_basis(basis, rank)`` inside jit). Prefixes are nested: QR keeps the span of
             every leading block of ``Lc U``, so ``basis[:, :r]`` is the rank-r core for every r.
    weights: [D] ``s_i^2``, eigenvalues of ``Cov Obs``, descending.
    rank:    [] int32, the energy rank for the ``tau`` used.
    mean:    [D] the activation mean.
    """

    basis: Array
    weights: Array
    rank: Array
    mean: Array

    @property
    def core_basis(self) -> Array:
        """``[D, D]`` basis with columns beyond the rank zeroed (jit/vmap-safe)."""
        return mask_basis(self.basis, self.rank)


@functools.partial(jax.jit, static_argnames=("cfg", "hook_name", "position"))
def activations(params: Params, tokens: Array, cfg: ModelConfig, hook_name: str,
                position: int | None = None) -> Array:
    """``H``: the activation at ``hook_name`` for ``tokens [b, p]``.

    ``position=None`` stacks every position (``[b * p, D]``); an int picks one (``[b, D]``).
    """
    _, cache = run_with_cache(params, tokens, cfg, names_filter=hook_name)
    h = cache[hook_name]
    return h.reshape(-1, h.shape[-1]) if position is None else h[:, position]


@jax.jit
def covariance(h: Array) -> tuple[Array, Array]:
    """Reachability Gramian. ``h [N, D]`` -> ``(Cov [D, D], mean [D])``, ``Cov = Hc^T Hc/(N-1)``."""
    h = _float(h)
    mean = h.mean(0)
    hc = h - mean  # centre before the product: float32 loses the mean^2 term otherwise
    return _sym(hc.T @ hc) / (h.shape[0] - 1), mean


@jax.jit
def observability(jac: Array) -> Array:
    """Observability Gramian ``mean_s J_s^T J_s``. ``jac [S, K, D]`` -> ``[D, D]``."""
    jac = _float(jac)
    return _sym(jnp.einsum("ski,skj->ij", jac, jac)) / jac.shape[0]


def linear_observability(w_u: Array) -> Array:
    """Obs of a linear tail ``f(h) = h W_U + b`` (toy models): ``W_U W_U^T``, ``[D, D]``."""
    w_u = _float(w_u)
    return _sym(w_u @ w_u.T)


@jax.jit
def gramians(h: Array, jac: Array) -> Gramians:
    """Both Gramians from activations ``h [N, D]`` and tail Jacobians ``jac [S, K, D]``."""
    cov, mean = covariance(h)
    return Gramians(cov, observability(jac), mean)


@functools.partial(jax.jit, static_argnames=("f",))
def tail_jacobians(f: Callable[..., Array], h: Array, ctx: Any = None) -> Array:
    """Jacobians ``J_s = df/dh`` of a tail ``f: R^D -> R^K`` at ``h [S, D]`` -> ``[S, K, D]``.

    ``f(h)`` or, with ``ctx`` (a pytree with leading axis S), ``f(h, ctx_s)`` -- e.g. the tokens of
    sample s when the tail runs the rest of the model. A scalar output (a task margin) gives K = 1.

    Mode is picked by shape: forward mode costs one JVP per *input* dimension (D passes), reverse
    mode one VJP per *output* dimension (K passes). So ``jacrev`` when K < D (a scalar margin: one
    backward pass) and ``jacfwd`` when K >= D (full logits of a large vocabulary).
    """
    h = _float(h)
    d = h.shape[-1]
    args = (h[0],) if ctx is None else (h[0], jax.tree.map(lambda x: x[0], ctx))
    k = math.prod(jax.eval_shape(f, *args).shape)
    jac_fn = jax.jacrev(f) if k < d else jax.jacfwd(f)
    if ctx is None:
        return jax.vmap(lambda x: jac_fn(x).reshape(k, d))(h)
    return jax.vmap(lambda x, c: jac_fn(x, c).reshape(k, d))(h, ctx)


@functools.partial(jax.jit, static_argnames=("cfg", "hook_name", "out_fn"))
def hook_jacobians(params: Params, tokens: Array, cfg: ModelConfig, hook_name: str,
                   position: int | Array, out_fn: Callable[[Array], Array] | None = None,
                   read_position: int | Array | None = None) -> Array:
    """Tail Jacobians through the model's own forward pass (``run_with_hooks``).

    For each sample s the tail is ``h -> out_fn(logits[read_position])`` where ``h`` replaces the
    activation at ``hook_name``, position ``position`` of sequence ``tokens[s]``; every other
    activation keeps its value. ``tokens [S, p]``; ``position`` an int or ``[S]`` ints;
    ``read_position`` defaults to ``position``; ``out_fn`` maps logits ``[V]`` to ``[K]`` or a
    scalar (identity by default). Returns ``[S, K, D]``, evaluated at the actual activations.
    """
    n, p = tokens.shape
    pos = jnp.broadcast_to(jnp.asarray(position), (n,)) % p
    read = pos if read_position is None else jnp.broadcast_to(jnp.asarray(read_position), (n,)) % p
    _, cache = run_with_cache(params, tokens, cfg, names_filter=hook_name)
    h0 = jnp.take_along_axis(cache[hook_name], pos[:, None, None], axis=1)[:, 0]

    def tail(h, ctx):
        toks, q, r = ctx
        hooks = {hook_name: lambda x: x.at[0, q].set(h.astype(x.dtype))}
        logits, _ = run_with_hooks(params, toks[None], cfg, hooks)
        out = logits[0, r]
        return out if out_fn is None else out_fn(out)

    return tail_jacobians(tail, h0, (tokens, pos, read))


@jax.jit
def psd_factor(g: Array, jitter: float = 1e-8) -> Array:
    """``L`` with ``L L^T = G + jitter * tr(G)/D * I`` from the eigendecomposition of ``G [D, D]``.

    Negative eigenvalues, and positive ones below the rounding floor ``D * eps * lambda_max``,
    are clipped to zero before the jitter is added (see the module docstring).
    """
    g = _sym(_float(g))
    d = g.shape[0]
    lam, vec = linalg.eigh(g)
    floor = d * jnp.finfo(g.dtype).eps * jnp.maximum(lam[-1], 0.0)
    lam = jnp.where(lam > floor, lam, 0.0) + jitter * jnp.trace(g) / d
    return vec * jnp.sqrt(lam)


@jax.jit
def balanced_truncation(cov: Array, obs: Array, jitter: float = 1e-8) -> tuple[Array, Array]:
    """Square-root balanced truncation: ``(basis [D, D], weights [D])``, weights descending.

    ``Lc, Lo`` factor the Gramians; ``U, s, _ = svd(Lc^T Lo)``; ``weights = s^2`` (eigenvalues of
    ``Cov Obs``); ``basis = orthonormalize(Lc U)`` by QR, so ``basis[:, :r]`` spans ``Lc U[:, :r]``.
    """
    cov, obs = _sym(_float(cov)), _sym(_float(obs))
    # Trace normalisation keeps float32 factors O(1); the basis is scale-free, the weights are
    # scaled back.
    tc = jnp.maximum(jnp.trace(cov), jnp.finfo(cov.dtype).tiny)
    to = jnp.maximum(jnp.trace(obs), jnp.finfo(obs.dtype).tiny)
    lc, lo = psd_factor(cov / tc, jitter), psd_factor(obs / to, jitter)
    u, s, _ = linalg.svd(lc.T @ lo)
    basis, _ = linalg.qr(lc @ u)
    return basis, s ** 2 * tc * to


@jax.jit
def energy_rank(weights: Array, tau: float | Array) -> Array:
    """Smallest r with ``sum(w[:r]) / sum(w) >= tau`` (``weights`` descending). int32 scalar."""
    w = jnp.maximum(weights, 0.0)
    frac = jnp.cumsum(w) / jnp.maximum(w.sum(), jnp.finfo(w.dtype).tiny)
    r = jnp.sum(frac < tau) + 1
    return jnp.clip(r, 1, w.shape[-1]).astype(jnp.int32)


@jax.jit
def extract_from_gramians(g: Gramians, tau: float | Array, jitter: float = 1e-8) -> Core:
    """ACE extraction from precomputed Gramians."""
    basis, weights = balanced_truncation(g.cov, g.obs, jitter)
    return Core(basis, weights, energy_rank(weights, tau), g.mean)


@jax.jit
def extract(h: Array, jac: Array, tau: float | Array = 0.999, jitter: float = 1e-8) -> Core:
    """ACE extraction (Gramian form). ``h [N, D]`` activations, ``jac [S, K, D]`` tail Jacobians.

    For a linear tail pass ``jac = W_U.T[None]`` (then Obs = W_U W_U^T exactly).
    """
    return extract_from_gramians(gramians(h, jac), tau, jitter)


@jax.jit
def extract_data_form(h: Array, jac: Array, tau: float | Array = 0.999) -> Core:
    """ACE extraction in the equivalent data form: SVD of ``Hc J_stack^T`` mapped back by ``Hc^T``.

    ``Hc J^T = A S B^T`` has the non-zero eigenvalues of ``Cov Obs`` as ``S^2 / ((N-1) S_samples)``
    and the core directions ``Hc^T A``. Only ``m = min(N, S*K, D)`` directions exist; the basis is
    completed to ``[D, D]`` by QR against the identity and the missing weights are zero, so the
    output has the same shapes as ``extract`` (no jitter here: the factors are the data).
    """
    h, jac = _float(h), _float(jac)
    n, d = h.shape
    mean = h.mean(0)
    hc = h - mean
    j = jac.reshape(-1, d)  # J_stack [S*K, D]
    a, s, _ = linalg.svd(hc @ j.T, full_matrices=False)
    m = min(n, j.shape[0], d)
    directions = hc.T @ a[:, :m]  # [D, m]
    basis, _ = linalg.qr(jnp.concatenate([directions, jnp.eye(d, dtype=h.dtype)], axis=1))
    weights = jnp.zeros(d, h.dtype).at[:m].set(s[:m] ** 2 / ((n - 1) * jac.shape[0]))
    return Core(basis, weights, energy_rank(weights, tau), mean)


# ================================================================================================
# 2.2 Validate: interventions through hooks
# ================================================================================================
def core_only_hook(basis: Array) -> Callable[[Array], Array]:
    """``h <- h Q Q^T`` at every position, uncentred (toy models). Masked bases are fine."""
    return project_onto(basis, None, keep=True)


def core_removed_hook(basis: Array) -> Callable[[Array], Array]:
    """``h <- h - h Q Q^T`` at every position, uncentred (toy models)."""
    return project_onto(basis, None, keep=False)


def centred_hook(basis: Array, mean: Array, mode: Literal["keep", "remove", "flip"],
                 position: int = -1) -> Callable[[Array], Array]:
    """LLM intervention at one position, centred on the training mean ``mu`` (SPEC 2.2).

    ``x = h - mu``, ``xp = x Q Q^T``; keep ``x' = xp``; remove ``x' = x - xp``; flip
    ``x' = x - 2 xp``; ``h <- x' + mu``. Acts on ``h [b, p, D]`` at ``position`` only.
    """
    if mode not in ("keep", "remove", "flip"):
        raise ValueError(f"mode={mode!r}: allowed 'keep', 'remove', 'flip'")

    def fn(h):
        x = h[:, position] - mean
        xp = (x @ basis) @ basis.T
        new = {"keep": xp, "remove": x - xp, "flip": x - 2.0 * xp}[mode]
        return h.at[:, position].set((new + mean).astype(h.dtype))

    return fn


def _read(logits: Array, labels: Array, weights: Array | None, readout: int | None):
    if readout is not None:
        logits = logits[:, readout]
    return logits, labels, weights


def _score(kind: Metric, logits: Array, labels: Array, weights: Array | None) -> Array:
    if callable(kind):
        return kind(logits, labels, weights)
    if kind == "accuracy":
        return accuracy(logits, labels, weights)
    if kind == "loss":
        return cross_entropy(logits, labels, weights)
    raise ValueError(f"metric={kind!r}: allowed 'accuracy', 'loss' or a callable")


def intervened_metric(params: Params, tokens: Array, labels: Array, cfg: ModelConfig,
                      hook_name: str, hook_fn: Callable[[Array], Array] | None,
                      metric: Metric = "accuracy", readout: int | None = None,
                      weights: Array | None = None) -> Array:
    """Metric of the model with ``hook_fn`` applied at ``hook_name`` (None: no intervention).

    ``readout`` follows ``Task.readout``: an int scores that position (``labels [b]``), None
    scores every position (``labels [b, p]``).
    """
    hooks = {} if hook_fn is None else {hook_name: hook_fn}
    logits, _ = run_with_hooks(params, tokens, cfg, hooks)
    return _score(metric, *_read(logits, labels, weights, readout))


@functools.partial(jax.jit, static_argnames=("cfg", "hook_name", "metric", "readout"))
def validate(params: Params, tokens: Array, labels: Array, cfg: ModelConfig, hook_name: str,
             basis: Array, metric: Metric = "accuracy", readout: int | None = None,
             weights: Array | None = None) -> dict[str, Array]:
    """Toy-model validation: ``{'full', 'core_only', 'core_removed'}`` metrics (SPEC 2.2).

    ``basis [D, R]``: the core (a masked ``[D, D]`` basis works). Uncentred, every position.
    """
    run = lambda fn: intervened_metric(params, tokens, labels, cfg, hook_name, fn, metric,
                                       readout, weights)
    return {"full": run(None), "core_only": run(core_only_hook(basis)),
            "core_removed": run(core_removed_hook(basis))}


@functools.partial(jax.jit, static_argnames=("cfg", "hook_name", "score_fn", "position"))
def validate_centred(params: Params, tokens: Array, cfg: ModelConfig, hook_name: str,
                     basis: Array, mean: Array, score_fn: Callable[[Array], Array],
                     positive: Array, position: int = -1) -> dict[str, Array]:
    """LLM validation: ROC-AUC of ``score_fn(logits[:, position]) [b]`` for ``positive [b]``.

    Returns ``{'base', 'keep', 'remove', 'flip'}`` (expected: keep ~ base, remove ~ 0.5,
    flip ~ 1 - base), interventions centred on ``mean`` at ``position`` only.
    """
    def auc(hooks):
        logits, _ = run_with_hooks(params, tokens, cfg, hooks)
        return roc_auc(score_fn(logits[:, position]), positive)

    out = {"base": auc({})}
    for mode in ("keep", "remove", "flip"):
        out[mode] = auc({hook_name: centred_hook(basis, mean, mode, position)})
    return out


@functools.partial(jax.jit,
                   static_argnames=("cfg", "hook_name", "metric", "readout", "batch_size"))
def causal_scan(params: Params, tokens: Array, labels: Array, cfg: ModelConfig, hook_name: str,
                basis: Array, metric: Metric = "accuracy", readout: int | None = None,
                weights: Array | None = None, batch_size: int | None = None,
                ) -> tuple[Array, Array]:
    """Core-only and core-removed metric at every rank r = 0..R: ``([R+1], [R+1])``.

    ``basis [D, R]`` is the full ordered basis; rank r uses its first r columns via a mask. The
    ranks run through ``lax.map`` (``batch_size`` of them vmapped at a time; None = one by one),
    not a Python loop, so this jits and vmaps over seeds.
    """
    masks = jnp.arange(basis.shape[-1] + 1)[:, None] > jnp.arange(basis.shape[-1])[None]

    def one(mask):
        q = basis * mask.astype(basis.dtype)
        run = lambda fn: intervened_metric(params, tokens, labels, cfg, hook_name, fn, metric,
                                           readout, weights)
        return run(core_only_hook(q)), run(core_removed_hook(q))

    return jax.lax.map(one, masks, batch_size=batch_size)


@jax.jit
def r_nec(core_removed: Array, r_energy: Array | int, n_classes: int) -> Array:
    """Smallest r >= r_energy with core-removed accuracy <= 2 / n_classes (SPEC 2.1).

    ``core_removed [R+1]`` from ``causal_scan``. Returns R when no rank qualifies (check
    ``core_removed[R]`` to tell that case apart).
    """
    r = jnp.arange(core_removed.shape[0])
    ok = (r >= r_energy) & (core_removed <= 2.0 / n_classes)
    return jnp.where(ok.any(), jnp.argmax(ok), r[-1]).astype(jnp.int32)


@jax.jit
def r_suf(core_only: Array, full: Array | float, tol: float = 1e-3) -> Array:
    """Smallest r with core-only accuracy >= full - tol (SPEC 2.1); R when none qualifies."""
    ok = core_only >= full - tol
    return jnp.where(ok.any(), jnp.argmax(ok), core_only.shape[0] - 1).astype(jnp.int32)


# ================================================================================================
# 2.3 Identify
# ================================================================================================
def _eig_sorted(a: Array) -> Array:
    """Eigenvalues of a real square matrix, by decreasing modulus (then decreasing angle)."""
    lam = linalg.eig(a)[0]
    order = jnp.lexsort((-jnp.angle(lam), -jnp.round(jnp.abs(lam), 6)))
    return lam[order]


class MarkovFit(NamedTuple):
    operator: Array       # [r, r] A with z_{t+1} ~ A z_t (centred)
    eigenvalues: Array    # [r] complex, by decreasing modulus; masked coordinates give zeros
    r2: Array             # [] R^2, mean over (active) coordinates
    r2_per_coord: Array   # [r]
    r2_ratio: Array       # [] r2 / r2_oracle


@jax.jit
def markov_operator(z: Array, rank: Array | int | None = None, r2_oracle: float = 0.5,
                    ) -> MarkovFit:
    """Least-squares linear operator across consecutive positions (SPEC 2.3, Markov).

    ``z [B, T, r]`` core coordinates per sequence (``H Q``); pairs (z_t, z_{t+1}) pooled over B and
    t; each side centred separately; ``Z_{t+1} ~ Z_t A^T`` without intercept. ``rank`` restricts
    the R^2 mean to the first ``rank`` coordinates (columns beyond it should be zero, as with a
    masked basis).
    """
    z = _float(z)
    r = z.shape[-1]
    x = z[:, :-1].reshape(-1, r)
    y = z[:, 1:].reshape(-1, r)
    x, y = x - x.mean(0), y - y.mean(0)
    a_t = linalg.lstsq(x, y)[0]  # [r, r] = A^T
    ss_res = ((y - x @ a_t) ** 2).sum(0)
    ss_tot = (y ** 2).sum(0)
    per = 1.0 - ss_res / jnp.maximum(ss_tot, jnp.finfo(z.dtype).tiny)
    active = (ss_tot > 0) if rank is None else rank_mask(rank, r) & (ss_tot > 0)
    r2 = jnp.where(active, per, 0.0).sum() / jnp.maximum(active.sum(), 1)
    return MarkovFit(a_t.T, _eig_sorted(a_t.T), r2, jnp.where(active, per, jnp.nan),
                     r2 / r2_oracle)


@functools.partial(jax.jit, static_argnames=("n_classes",))
def class_means(z: Array, classes: Array, n_classes: int) -> Array:
    """Mean of ``z [N, r]`` per class ``classes [N]`` -> ``[n_classes, r]`` (empty classes: 0)."""
    z = _float(z)
    sums = jax.ops.segment_sum(z, classes, n_classes)
    counts = jax.ops.segment_sum(jnp.ones(z.shape[0], z.dtype), classes, n_classes)
    return sums / jnp.maximum(counts, 1.0)[:, None]


class ShiftFit(NamedTuple):
    operator: Array       # [r, r] A with Y[c] A ~ Y[c+1] in principal coordinates (row vectors)
    eigenvalues: Array    # [r] complex, by decreasing modulus; dropped directions give zeros
    r2: Array             # [] pooled R^2 of the fit on all P shifts
    heldout_r2: Array     # [] pooled R^2 on the held-out block, fit without it
    on_circle: Array      # [r] bool, ||lambda| - 1| <= sin(pi / P)
    n_rotational: Array   # [] int32, distinct folded frequencies among on-circle eigenvalues
    n_directions: Array   # [] int32, principal directions kept (relative tolerance)


def _shift_fit(reps: Array, use: Array, rel_tol: float):
    """Centre on the ``use`` classes, keep principal directions above ``rel_tol`` of the top
    singular value, and least-squares fit ``Y[c] A ~ Y[c+1]`` over shifts with both ends used."""
    w = use.astype(reps.dtype)
    mu = (reps * w[:, None]).sum(0) / jnp.maximum(w.sum(), 1.0)
    xc = reps - mu
    _, s, vt = linalg.svd(xc * w[:, None], full_matrices=False)
    keep = s > rel_tol * s[0]
    y = (xc @ vt.T) * keep.astype(reps.dtype)  # [P, k]; dropped directions are zero columns
    y_next = jnp.roll(y, -1, axis=0)
    pair = (use & jnp.roll(use, -1)).astype(reps.dtype)[:, None]
    a = linalg.lstsq(y * pair, y_next * pair)[0]
    return a, y, y_next, keep


def _pooled_r2(pred: Array, target: Array, rows: Array) -> Array:
    rows = rows.astype(pred.dtype)[:, None]
    ss_res = (((pred - target) ** 2) * rows).sum()
    ss_tot = ((target ** 2) * rows).sum()  # targets are centred on the fitted classes' mean
    return 1.0 - ss_res / jnp.maximum(ss_tot, jnp.finfo(pred.dtype).tiny)


@functools.partial(jax.jit, static_argnames=("holdout_frac",))
def cyclic_shift(reps: Array, rel_tol: float = 1e-3, holdout_start: int | Array = 0,
                 holdout_frac: float = 0.075) -> ShiftFit:
    """Cyclic-shift operator over class means (SPEC 2.3, modular addition).

    ``reps [P, r]``: class means of core coordinates per answer c (``class_means``). Fit
    ``reps[c] A ~ reps[c+1 mod P]`` after centring, in the principal directions of reps whose
    singular values exceed ``rel_tol`` times the largest. Eigenvalues and R^2 come from the fit on
    all P shifts. Held-out R^2: the block of ``round(holdout_frac * P)`` answers starting at
    ``holdout_start`` is dropped (centring, directions and fit use the other classes and the
    shifts between them) and the fit predicts every held-out answer from its predecessor.
    R^2 is pooled over coordinates (1 - total SS_res / total SS_tot), so near-degenerate
    directions do not dominate it.
    """
    reps = _float(reps)
    p = reps.shape[0]
    every = jnp.ones(p, bool)
    a, y, y_next, keep = _shift_fit(reps, every, rel_tol)
    r2 = _pooled_r2(y @ a, y_next, every)

    m = int(math.floor(holdout_frac * p + 0.5))
    held = jnp.zeros(p, bool).at[(holdout_start + jnp.arange(m)) % p].set(True)
    a_tr, y_tr, y_tr_next, _ = _shift_fit(reps, ~held, rel_tol)
    target_held = jnp.roll(held, -1)  # row c predicts answer c+1; score rows whose target is held
    heldout_r2 = _pooled_r2(y_tr @ a_tr, y_tr_next, target_held)

    lam = _eig_sorted(a)
    on_circle = jnp.abs(jnp.abs(lam) - 1.0) <= math.sin(math.pi / p)
    k = jnp.round(jnp.angle(lam) * p / (2 * math.pi)).astype(jnp.int32) % p
    folded = jnp.minimum(k, p - k)
    present = jnp.zeros(p // 2 + 1, bool).at[folded].max(on_circle)
    return ShiftFit(a, lam, r2, heldout_r2, on_circle, present.sum().astype(jnp.int32),
                    keep.sum().astype(jnp.int32))


# ================================================================================================
# 2.4 Compare cores across seeds
# ================================================================================================
def _masked(q: Array, rank: Array | int | None) -> Array:
    return q if rank is None else mask_basis(q, rank)


@jax.jit
def projector_overlap(qa: Array, qb: Array, ra: Array | int | None = None,
                      rb: Array | int | None = None) -> Array:
    """``||Q_A^T Q_B||_F^2 / sqrt(r_A r_B)``: 1 identical, 0 orthogonal, ~r/D at random.

    ``qa [D, Ra], qb [D, Rb]``; ranks (optional, traced ok) mask columns beyond them.
    """
    qa, qb = _masked(_float(qa), ra), _masked(_float(qb), rb)
    ra = qa.shape[-1] if ra is None else ra
    rb = qb.shape[-1] if rb is None else rb
    return jnp.sum((qa.T @ qb) ** 2) / jnp.sqrt(jnp.asarray(ra * rb, qa.dtype))


@jax.jit
def principal_angles(qa: Array, qb: Array, ra: Array | int | None = None,
                     rb: Array | int | None = None) -> Array:
    """Principal angles (radians, ascending) between span(qa) and span(qb): ``[min(Ra, Rb)]``.

    With rank masks only the first ``min(ra, rb)`` entries are meaningful (the rest are pi/2).
    """
    qa, qb = _masked(_float(qa), ra), _masked(_float(qb), rb)
    cos = linalg.svd(qa.T @ qb, compute_uv=False)
    return jnp.arccos(jnp.clip(cos, 0.0, 1.0))


@jax.jit
def cca(za: Array, zb: Array, r: Array | int | None = None, eps: float = 1e-8,
        ) -> tuple[Array, Array]:
    """CCA between core coordinates of two models on the same inputs.

    ``za [N, ra], zb [N, rb]``. Centre; whiten each side with the inverse Cholesky factor of
    ``cov + eps I``; SVD of the whitened cross-covariance. Returns ``(mean of the top r
    correlations, correlations [min(ra, rb)] descending)``; ``r`` defaults to ``min(ra, rb)``.
    Zero columns (masked bases) whiten to zero and add zero correlations.
    """
    za, zb = _float(za), _float(zb)
    n = za.shape[0]

    def whiten(z):
        z = z - z.mean(0)
        scale = jnp.sqrt(jnp.maximum((z ** 2).mean(), jnp.finfo(z.dtype).tiny))
        z = z / scale  # correlations are scale-free; this keeps eps relative in float32
        c = z.T @ z / (n - 1) + eps * jnp.eye(z.shape[1], dtype=z.dtype)
        chol = linalg.cholesky(_sym(c))
        return linalg.solve_triangular(chol, z.T, lower=True).T  # z L^{-T}

    wa, wb = whiten(za), whiten(zb)
    corr = linalg.svd(wa.T @ wb / (n - 1), compute_uv=False)
    r = min(za.shape[1], zb.shape[1]) if r is None else r
    top = rank_mask(r, corr.shape[0]).astype(corr.dtype)
    return (corr * top).sum() / jnp.maximum(top.sum(), 1.0), corr


def flatten_params(params: Mapping[str, Array]) -> Array:
    """All parameters as one vector (keys in sorted order)."""
    return jnp.concatenate([jnp.ravel(params[k]) for k in sorted(params)])


@jax.jit
def weight_cosine(pa: Mapping[str, Array], pb: Mapping[str, Array]) -> Array:
    """Cosine between two whole flattened parameter dicts."""
    a, b = _float(flatten_params(pa)), _float(flatten_params(pb))
    return a @ b / jnp.maximum(jnp.linalg.norm(a) * jnp.linalg.norm(b), jnp.finfo(a.dtype).tiny)


def pairwise(fn: Callable[[Any, Any], Any], xs: Any) -> Any:
    """``fn(x_i, x_j)`` for every seed pair: ``xs`` a pytree with leading axis n -> ``[n, n, ...]``.

    A nested vmap, so all n^2 pairs run as one batched computation.
    """
    return jax.vmap(lambda a: jax.vmap(lambda b: fn(a, b))(xs))(xs)


@jax.jit
def overlap_matrix(bases: Array, ranks: Array | None = None) -> Array:
    """Projector overlap of every seed pair. ``bases [n, D, R]``, ``ranks [n]`` -> ``[n, n]``."""
    if ranks is None:
        return pairwise(lambda a, b: projector_overlap(a, b), bases)
    return pairwise(lambda a, b: projector_overlap(a[0], b[0], a[1], b[1]), (bases, ranks))


@jax.jit
def principal_angle_matrix(bases: Array, ranks: Array | None = None) -> Array:
    """Principal angles of every seed pair: ``[n, n, R]``."""
    if ranks is None:
        return pairwise(lambda a, b: principal_angles(a, b), bases)
    return pairwise(lambda a, b: principal_angles(a[0], b[0], a[1], b[1]), (bases, ranks))


@jax.jit
def cca_matrix(z: Array, ranks: Array | None = None, r: int | None = None) -> Array:
    """Mean top-r CCA of every seed pair: ``z [n, N, R]`` core coordinates -> ``[n, n]``.

    ``r`` fixed, or (None) ``min(r_A, r_B)`` per pair from ``ranks`` (all columns if no ranks).
    """
    if ranks is None:
        return pairwise(lambda a, b: cca(a, b, r)[0], z)

    def fn(a, b):
        za, zb = a[0] * rank_mask(a[1], a[0].shape[-1]), b[0] * rank_mask(b[1], b[0].shape[-1])
        return cca(za, zb, jnp.minimum(a[1], b[1]) if r is None else r)[0]

    return pairwise(fn, (z, ranks))


@jax.jit
def weight_cosine_matrix(params: Mapping[str, Array]) -> Array:
    """Whole-weight cosine of every seed pair: stacked ``{name: [n, ...]}`` -> ``[n, n]``."""
    return pairwise(weight_cosine, dict(params))
