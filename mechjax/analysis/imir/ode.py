"""Reduced dynamics on the manifold: ``d theta / dt = - G^-1 grad_theta L(W(theta))``.

``L`` is the exact population loss of an enumerated tiny task (``blocklist.Support``), whose
probabilities are traced functions of the task parameters, so the dynamics vmap over initial
conditions *and* data parameters. Integration: ``imir.solve`` (diffrax, adaptive steps with error
control). ``gradient_descent`` trains the full
weights (every entry of every ``W_KQ`` and ``W_U``) of the same model from ``W(theta_0)``; with
learning rate ``lr`` its step k sits at time ``t = k * lr`` of the gradient flow
``dW/dt = -grad_W L``, whose projection is the reduced ODE (docs/imir.md, section 4).

A sub-manifold is a linear map ``theta_full = theta_sub @ phi`` (``phi [n_sub, n_full]``), e.g. the
four induction/in-weights coordinates of ``abgd_coordinates``; its reduced dynamics use
``G_sub = phi G phi^T`` and ``grad_sub = phi grad_theta``.
"""
from __future__ import annotations

from typing import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir import project as proj
from mechjax.analysis.imir import sgd, solve
from mechjax.analysis.imir.basis import Basis, fixed_params, imir_config
from mechjax.analysis.imir.loss import readout_loss
from mechjax.tasks.blocklist import Support

Params = Mapping[str, jax.Array]
LossFn = Callable[[Params, Mapping[str, jax.Array]], jax.Array]


def population_loss_fn(basis: Basis, support: Support, causal: bool = False,
                       chunk: int | None = None, dtype=jnp.float32) -> LossFn:
    """``loss(trainables, task_params)``: the exact population readout cross-entropy."""
    cfg = imir_config(basis.frame, causal=causal)
    fixed = fixed_params(basis.frame, dtype)
    tokens, labels = support.batch["tokens"], support.batch["labels"]
    onehot = support.batch["weights"].astype(dtype)

    def loss(trainables, task_params):
        w = onehot * support.probs(task_params).astype(dtype)[:, None]
        # the barrier keeps XLA from constant-folding the embedded population (slow compiles)
        toks, fixed_p = jax.lax.optimization_barrier((tokens, fixed))
        batch = {"tokens": toks, "labels": labels, "weights": w}
        return readout_loss({**fixed_p, **trainables}, cfg, batch, chunk)

    return loss


def abgd_coordinates(basis: Basis) -> tuple[tuple[str, ...], np.ndarray]:
    """The 4-coordinate sub-manifold (alpha, beta, gamma, delta) of a 2-layer, 1-head basis.

    alpha: ``W_KQ1 = alpha M`` (previous-token attention). beta: ``W_KQ2 = beta I_t O1^T`` (the
    query token matched against what layer 1 wrote). gamma: ``W_U += gamma O2 I_t`` (copy readout
    of what layer 2 wrote). delta: ``W_U += delta C`` (in-weights association).
    ``I_t`` is the sum of the class identities ``I_common + I_rare + ...``.
    """
    f = basis.frame
    if f.n_layers != 2 or f.n_heads != 1:
        raise ValueError("abgd_coordinates needs a 2-layer, 1-head frame")
    names = basis.names()
    idx = {n: i for i, n in enumerate(names)}
    ident = [s for s in basis.sel_kq_names if s.startswith("I_") and s != "I_p"]
    ident_out = [s for s in basis.sel_out_names if s.startswith("I_")]
    rows = {
        "alpha": ["L0H0 I|M|I"],
        "beta": [f"L1H0 I|{s}|O1" for s in ident],
        "gamma": [f"U O2|{s}" for s in ident_out],
        "delta": ["U I|C"],
    }
    phi = np.zeros((4, basis.size))
    for r, (_, members) in enumerate(rows.items()):
        for m in members:
            if m not in idx:
                raise KeyError(f"coordinate {m!r} is not in the basis")
            phi[r, idx[m]] = 1.0
    return tuple(rows), phi


def sub_projector(basis: Basis, phi: np.ndarray) -> np.ndarray:
    """``[n_sub, n]``: the Gram-weighted projection of full coordinates onto the sub-manifold
    ``theta_full = theta_sub @ phi``, ``(phi G phi^T)^-1 phi G`` (``theta_sub = P theta``; exact
    on the sub-manifold)."""
    g = proj.gram(basis)
    return np.linalg.solve(phi @ g @ phi.T, phi @ g)


def abgd_projector(basis: Basis) -> np.ndarray:
    """``[4, n]``: ``sub_projector`` onto (alpha, beta, gamma, delta)."""
    return sub_projector(basis, abgd_coordinates(basis)[1])


def vector_field(basis: Basis, loss: LossFn, phi: np.ndarray | None = None):
    """``field(theta, task_params) -> d theta / dt`` (theta in sub-coordinates when ``phi``)."""
    g_sub_inv = None
    if phi is not None:
        g_sub_inv = np.linalg.inv(phi @ proj.gram(basis) @ phi.T)

    def field(theta, task_params):
        full = theta if phi is None else theta @ jnp.asarray(phi, theta.dtype)
        grad_w = jax.grad(loss)(proj.weights(basis, full), task_params)
        c = proj.inner(basis, grad_w)
        if phi is None:
            return -proj.solve_gram(basis, c)
        return -jnp.asarray(g_sub_inv, c.dtype) @ (jnp.asarray(phi, c.dtype) @ c)

    return field


def integrate(field, theta0: jax.Array, task_params, t1: float, n_save: int,
              rtol: float = solve.RTOL, atol: float = solve.ATOL, dt0: float | None = None,
              ) -> jax.Array:
    """``field`` from 0 to ``t1`` (``imir.solve``: adaptive, error-controlled); ``[n_save + 1, n]``
    states at equal times. Jittable and vmappable over ``theta0`` and ``task_params``."""
    return solve.solve(field, theta0, task_params, t1, n_save, rtol, atol, dt0)


def gradient_descent(basis: Basis, loss: LossFn, theta0: jax.Array, task_params, lr: float,
                     n_steps: int, n_save: int) -> dict[str, jax.Array]:
    """Full-weight gradient descent from ``W(theta0)``; every ``n_steps / n_save`` steps records
    the least-squares coordinates, the loss and the off-span fraction ``||W - proj W|| / ||W||``.
    """
    if n_steps % n_save:
        raise ValueError(f"n_steps={n_steps} must be a multiple of n_save={n_save}")

    def record(w, _):
        rel, _ = proj.rel_residual(basis, w)
        return proj.coords(basis, w), loss(w, task_params), rel

    th, ls, rel = sgd.descend(lambda w: loss(w, task_params), proj.weights(basis, theta0), lr,
                              n_save, n_steps // n_save, record)
    return {"theta": th, "loss": ls, "off_span": rel,
            "t": jnp.arange(n_save + 1) * (lr * n_steps / n_save)}


def max_rel_deviation(theta_a: jax.Array, theta_b: jax.Array, upto: int | None = None,
                      ) -> dict[str, float]:
    """Deviation of trajectory ``a`` from reference ``b`` (``[n_t, n]``), over the first ``upto``
    saved times: ``norm`` = max_t ||a - b|| / ||b||; ``coord`` = max_i max_t |a_i - b_i| /
    max_t |b_i| over coordinates whose range exceeds 1% of the largest one."""
    a, b = np.asarray(theta_a)[:upto], np.asarray(theta_b)[:upto]
    norm = np.max(np.linalg.norm(a - b, axis=1) / np.maximum(np.linalg.norm(b, axis=1), 1e-30))
    scale = np.max(np.abs(b), axis=0)
    big = scale > 0.01 * scale.max()
    coord = np.max(np.max(np.abs(a - b), axis=0)[big] / scale[big])
    return {"norm": float(norm), "coord": float(coord)}
