"""Full transformers trained on grid cells of a phase diagram, vmapped over cells.

Every cell is the IMIR model of ``basis.make_frame`` (the engine's forward, ``mechjax.model``) with
every entry of every ``W_KQ`` and of ``W_U`` trained, started at the same (alpha, beta, gamma,
delta) point as the reduced ODE, on freshly sampled recall batches of the cell's ``(f_r, f_v)``
(the task parameters are traced, so all cells are one ``vmap``). Plain SGD with learning rate
``lr`` is the Euler scheme of the gradient flow at time ``t = step * lr`` (docs/imir.md, section 4),
so training time and ODE time are on one axis.

Recorded every ``steps / n_save`` steps: the Gram-weighted projection of the weights on the four
directions, ``p_rare`` (mean target probability on rare items; the sampled evaluation pool has
``f_r = 1``, so its distractors are rare as well), ``p_iwl`` (mean
probability of ``C(a)`` for common queries whose relevant block was removed from the context:
in-weights only), and the training loss.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir import basis as ib
from mechjax.analysis.imir import ode
from mechjax.analysis.imir import project as proj
from mechjax.analysis.imir import sgd
from mechjax.analysis.imir.loss import readout_loss
from mechjax.model import forward
from mechjax.tasks import blocklist as bl


def _pool(spec: bl.BlockListSpec, key, n: int, f_r: float, with_relevant: bool):
    tp = {"f_r": jnp.float32(f_r), "f_v": jnp.float32(0.0)}
    draws = bl.draw(spec, key, tp, n)
    seqs = jax.vmap(lambda d: bl.assemble(spec, d, with_relevant))(draws)
    return seqs["tokens"], seqs["query_pos"], seqs["target"]


def train_cells(spec: bl.BlockListSpec, theta0_sub, f_r: np.ndarray, f_v: np.ndarray, lr: float,
                steps: int, n_save: int, batch_size: int, eval_size: int, seed: int = 0,
                ) -> dict[str, np.ndarray]:
    """Train one model per cell ``(f_r[c], f_v[c])``; returns arrays ``[n_cells, n_save + 1, ...]``
    (``theta`` projected on (alpha, beta, gamma, delta), ``p_rare``, ``p_iwl``, ``loss``) and
    ``t [n_save + 1]``."""
    if steps % n_save:
        raise ValueError(f"steps={steps} must be a multiple of n_save={n_save}")
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len)
    basis = ib.make_basis(frame)
    _, phi = ode.abgd_coordinates(basis)
    to_sub = jnp.asarray(ode.abgd_projector(basis), jnp.float32)  # [4, n]
    cfg = ib.imir_config(frame)
    fixed = ib.fixed_params(frame)
    w0 = proj.weights(basis, jnp.asarray(theta0_sub, jnp.float32) @ jnp.asarray(phi, jnp.float32))
    k_rare, k_iwl, k_train = jax.random.split(jax.random.key(seed), 3)
    rare = _pool(spec, k_rare, eval_size, 1.0, True)
    iwl = _pool(spec, k_iwl, eval_size, 0.0, False)
    assoc = jnp.asarray(spec.association())

    def target_prob(w, pool, assoc_target):
        toks, qpos, tgt = pool
        logits = forward({**fixed, **w}, toks, cfg)
        logits = jnp.take_along_axis(logits, qpos[:, None, None], 1)[:, 0]
        # in-weights pool: the answer is C(query token)
        query = jnp.take_along_axis(toks, qpos[:, None], 1)[:, 0]
        y = assoc[query] if assoc_target else tgt
        p = jax.nn.softmax(logits, -1)
        return jnp.mean(jnp.take_along_axis(p, y[:, None], 1))

    def record(w, loss):
        sub = to_sub @ proj.coords(basis, w)
        return sub, target_prob(w, rare, False), target_prob(w, iwl, True), loss

    def one(fr, fv, key):
        tp = {"f_r": fr, "f_v": fv}

        def lossf(w, k):
            return readout_loss({**fixed, **w}, cfg, bl.sample(spec, k, tp, batch_size))

        return sgd.descend(lossf, w0, lr, n_save, steps // n_save, record, key)

    keys = jax.random.split(k_train, len(f_r))
    sub, p_rare, p_iwl, loss = jax.jit(jax.vmap(one))(
        jnp.asarray(f_r, jnp.float32), jnp.asarray(f_v, jnp.float32), keys)
    t = np.arange(n_save + 1) * (lr * steps / n_save)
    return {"theta": np.asarray(sub), "p_rare": np.asarray(p_rare), "p_iwl": np.asarray(p_iwl),
            "loss": np.asarray(loss), "t": t}
