"""Gradient confinement: at weights on the manifold, does the population gradient stay on it?

``rel_residual = ||g - proj(g)|| / ||g||`` over the trainable parameters, with ``g`` the gradient
of the readout loss (``jax.grad`` through ``mechjax.models.transformer.forward``):
  * exactly, with the population batch of an enumerated tiny task (``exact_confinement``); under
    the symmetries this is rounding error (docs/imir.md, section 2);
  * by Monte Carlo (``mc_confinement``); the residual of an estimate from B sequences is its noise
    off the span, ``~ 1/sqrt(B)``. The noise floor is estimated from two independent half batches
    (``||perp(g1 - g2)||^2 / 4`` estimates ``E||perp(g - E g)||^2``), and the excess
    ``sqrt(max(res^2 - floor^2, 0))`` estimates the residual of the expected gradient.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.manifold.basis import Basis, fixed_params, imir_config
from mechjax.analysis.imir.forward.loss import readout_loss
from mechjax.tasks import blocklist

Params = Mapping[str, jax.Array]


def loss_grad_fn(basis: Basis, causal: bool = False, chunk: int | None = None, dtype=None):
    """Jitted ``(trainables, batch) -> (loss, grads)`` for the frame of ``basis``."""
    cfg = imir_config(basis.frame, causal=causal)
    fixed = fixed_params(basis.frame, dtype or jnp.float32)

    def loss(trainables, batch):
        return readout_loss({**fixed, **trainables}, cfg, batch, chunk)

    return jax.jit(jax.value_and_grad(loss))


def _sq_off_span(basis: Basis, g: Params) -> tuple[jax.Array, jax.Array]:
    res = proj.residual(basis, g)
    return (sum(jnp.sum(r ** 2) for r in res.values()),
            sum(jnp.sum(g[k] ** 2) for k in res))


def grad_residual(basis: Basis, grads: Params) -> dict[str, float]:
    """``{"rel_residual": ..., "<param>": ...}`` for a gradient dict."""
    rel, per = proj.rel_residual(basis, grads)
    return {"rel_residual": float(rel), **{k: float(v) for k, v in per.items()}}


def population_batch(spec: blocklist.BlockListSpec, task_params: Mapping[str, float] | None = None,
                     dtype=jnp.float32, support: blocklist.Support | None = None) -> dict:
    """The enumerated population of a tiny ``spec`` as one probability-weighted batch."""
    support = support or blocklist.enumerate_support(spec)
    tp = {**spec.default_params(), **dict(task_params or {})}
    batch = support.weighted({k: jnp.asarray(v) for k, v in tp.items()})
    return {"tokens": batch["tokens"], "labels": batch["labels"],
            "weights": batch["weights"].astype(dtype)}


def population_gradient(spec: blocklist.BlockListSpec, frame, trainables: Params,
                        task_params: Mapping[str, float] | None = None, causal: bool = False,
                        chunk: int | None = 20_000) -> tuple[jax.Array, dict[str, jax.Array]]:
    """``(loss, grads)`` of the exact population loss of a tiny enumerated ``spec`` (in the dtype
    of ``trainables``; use float64 inside ``jax.enable_x64(True)`` for ~1e-15 residuals)."""
    dtype = next(iter(trainables.values())).dtype
    batch = population_batch(spec, task_params, dtype)
    cfg = imir_config(frame, causal=causal)
    fixed = fixed_params(frame, dtype)
    fn = jax.jit(jax.value_and_grad(
        lambda tr, b: readout_loss({**fixed, **tr}, cfg, b, chunk)))
    return fn(dict(trainables), batch)


def exact_confinement(spec: blocklist.BlockListSpec, basis: Basis, trainables: Params,
                      task_params: Mapping[str, float] | None = None, causal: bool = False,
                      chunk: int | None = 20_000) -> dict[str, float]:
    """Residual of the exact population gradient at ``trainables`` (see population_gradient)."""
    loss, g = population_gradient(spec, basis.frame, trainables, task_params, causal, chunk)
    out = grad_residual(basis, g)
    out["loss"] = float(loss)
    return out


def mc_confinement(spec: blocklist.BlockListSpec, basis: Basis, trainables: Params,
                   batch_sizes: Sequence[int], key: jax.Array,
                   task_params: Mapping[str, float] | None = None, n_rep: int = 1,
                   causal: bool = False, chunk: int | None = 16_384) -> list[dict[str, float]]:
    """Monte Carlo residual against batch size: root-mean-square over ``n_rep`` draws of the
    residual and of the noise floor (half-batch estimate), and the excess
    ``sqrt(max(mean(res^2 - floor^2), 0))`` (``excess_sq`` is the unbiased, possibly negative,
    mean of ``res^2 - floor^2``)."""
    tp = {k: jnp.asarray(v, jnp.float32)
          for k, v in {**spec.default_params(), **dict(task_params or {})}.items()}
    dtype = next(iter(trainables.values())).dtype
    grad = loss_grad_fn(basis, causal, chunk, dtype)
    sample = jax.jit(lambda k, n: blocklist.sample(spec, k, tp, n), static_argnums=1)
    out = []
    for bs in batch_sizes:
        half = bs // 2
        rows = []
        for rep in range(n_rep):
            key, sub = jax.random.split(key)
            b = sample(sub, 2 * half)
            b = {"tokens": b["tokens"], "labels": b["labels"],
                 "weights": b["weights"].astype(dtype)}
            h1 = {k: v[:half] for k, v in b.items()}
            h2 = {k: v[half:] for k, v in b.items()}
            _, g1 = grad(dict(trainables), h1)
            _, g2 = grad(dict(trainables), h2)
            g = {k: (g1[k] + g2[k]) / 2 for k in g1}
            off, tot = _sq_off_span(basis, g)
            off_d, _ = _sq_off_span(basis, {k: g1[k] - g2[k] for k in g1})
            floor_sq = off_d / 4.0
            rows.append([float(off / tot), float(floor_sq / tot), float((off - floor_sq) / tot)])
        r = np.mean(np.asarray(rows), 0)  # averages of squares; the excess square is unbiased
        out.append({"batch": 2 * half, "rel_residual": float(np.sqrt(r[0])),
                    "noise_floor": float(np.sqrt(r[1])),
                    "excess": float(np.sqrt(max(r[2], 0.0))),
                    "excess_sq": float(r[2])})
    return out


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log y against log x (-0.5 for Monte Carlo noise)."""
    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])
