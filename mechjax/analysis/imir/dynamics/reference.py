"""The enumerated reference: ``d theta / dt = - G^-1 grad_theta L(W(theta))`` with ``L`` the
population loss of an enumerated task (``blocklist.Support``) through the engine's forward on
``d_model``-wide weights. Independent of the exact model (``dynamics.model``: orbit classes and the
coordinate forward), so the tests compare that model with it; the experiments call the model.

The support's probabilities are traced functions of the task parameters, so the field vmaps over
initial conditions *and* data parameters. ``gradient_descent`` trains the full
weights (every entry of every ``W_KQ`` and ``W_U``) of the same model from ``W(theta_0)``; with
learning rate ``lr`` its step k sits at time ``t = k * lr`` of the gradient flow
``dW/dt = -grad_W L``, whose projection is the reduced ODE (docs/imir.md, section 4).

On a sub-manifold ``theta_full = theta_sub @ phi`` (``manifold.submanifold``) the field uses
``G_sub = phi G phi^T`` and ``grad_sub = phi grad_theta``.
"""
from __future__ import annotations

from typing import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.cells import sgd
from mechjax.analysis.imir.manifold.basis import Basis, fixed_params, imir_config
from mechjax.analysis.imir.forward.loss import readout_loss
from mechjax.tasks import blocklist as bl
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


def enumerated_field(basis: Basis, loss: LossFn, phi: np.ndarray | None = None):
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


def given_rare(support: bl.Support, task_params) -> jax.Array:
    """``P(sequence | relevant item rare)`` up to a constant: the support's probabilities without
    the relevant item's rare/common draw (``rare0``), restricted to ``rare0 = 1``. Defined at
    ``f_r = 0`` (the distractors keep the training distribution)."""
    p = jnp.asarray(support.count, jnp.float32) * support.base
    keep = None
    for j, v in enumerate(support.param_vars):
        if v.name == "rare0":
            keep = jnp.asarray(support.param_draws[:, j] == 1, jnp.float32)
            continue
        p = p * bl.var_probs(v, task_params)[support.param_draws[:, j]]
    if keep is None:
        raise ValueError("support has no 'rare0' draw")
    return p * keep
