"""Plain (stochastic) gradient descent with a constant learning rate, recorded at equal intervals:
the Euler scheme of the gradient flow, so step ``k`` sits at time ``t = k * lr`` (docs/imir.md,
section 4). One loop for the full-batch descent on an exact population
(``dynamics.reference.gradient_descent``)
and for the sampled-batch training of grid cells (``cells.train_cells``).

(``mechjax.training.train.Trainer`` is the general training loop; these two stay apart from it because
they record the manifold coordinates between steps and draw their batches from their own key
stream, which their published numbers depend on.)
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import optax

Params = Mapping[str, jax.Array]


def descend(loss: Callable[..., jax.Array], w0: Params, lr: float, n_save: int,
            steps_per_save: int, record: Callable[[Params, jax.Array], Any],
            key: jax.Array | None = None) -> Any:
    """``w <- w - lr * grad loss(w)`` (``optax.sgd``), ``n_save * steps_per_save`` steps.

    ``loss(w)``, or ``loss(w, k)`` with a fresh key per step when ``key`` is given (split into
    ``n_save`` chunk keys, each split into ``steps_per_save`` step keys). ``record(w, loss)``
    is called at the start (with ``loss(w0[, key])``) and after every chunk (with the loss of
    the chunk's last step); returns the records stacked ``[n_save + 1, ...]``.
    """
    tx = optax.sgd(lr)
    grad = jax.value_and_grad(loss)

    def step(carry, k):
        w, opt_state, _ = carry
        val, g = grad(w) if key is None else grad(w, k)
        updates, opt_state = tx.update(g, opt_state, w)
        return (optax.apply_updates(w, updates), opt_state, val), None

    def chunk(carry, k):
        ks = None if key is None else jax.random.split(k, steps_per_save)
        carry, _ = jax.lax.scan(step, carry, ks, length=steps_per_save)
        return carry, record(carry[0], carry[2])

    loss0 = loss(w0) if key is None else loss(w0, key)
    first = record(w0, loss0)
    keys = None if key is None else jax.random.split(key, n_save)
    carry = (dict(w0), tx.init(dict(w0)), jnp.zeros_like(loss0))
    _, recs = jax.lax.scan(chunk, carry, keys, length=n_save)
    return jax.tree.map(lambda a, r: jnp.concatenate([jnp.asarray(a)[None], r]), first, recs)
