"""Full transformers trained on grid cells of a phase diagram, vmapped over cells.

Every cell is the IMIR model of ``basis.make_frame`` (the engine's forward, ``mechjax.models.transformer``) with
every entry of every ``W_KQ`` and of ``W_U`` trained, started at the same (alpha, beta, gamma,
delta) point as the reduced ODE, on freshly sampled recall batches of the cell's ``(f_r, f_v)``
(the task parameters are traced, so all cells are one ``vmap``). Plain SGD with learning rate
``lr`` is the Euler scheme of the gradient flow at time ``t = step * lr`` (docs/imir.md, section 4),
so training time and ODE time are on one axis.

Recorded every ``steps / n_save`` steps: the Gram-weighted projection of the weights on the four
directions, ``p_rare`` (mean target probability on rare items; the sampled evaluation pool has
``f_r = 1``, so its distractors are rare as well), ``p_iwl`` (mean
probability of ``C(a)`` for common queries whose relevant block was removed from the context:
in-weights only, ``iwl_pool``), and the training loss.
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import submanifold as subm
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.cells import sgd
from mechjax.analysis.imir.forward.loss import readout_loss
from mechjax.models.transformer import forward
from mechjax.tasks import blocklist as bl


def eval_pool(spec: bl.BlockListSpec, key, n: int, f_r, with_relevant: bool, f_v=0.0,
              rare_relevant: bool = False) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``n`` sequences ``(tokens, query_pos, target)`` at ``(f_r, f_v)`` (may be traced);
    ``with_relevant=False`` removes the relevant blocks (the in-weights pool),
    ``rare_relevant`` makes every relevant item rare (the exact dynamics' ``p_rare`` pool)."""
    tp = {"f_r": jnp.asarray(f_r, jnp.float32), "f_v": jnp.asarray(f_v, jnp.float32)}
    draws = bl.draw(spec, key, tp, n)
    if rare_relevant:  # the relevant item rare, the distractors at the cell's law
        draws["rare0"] = jnp.ones_like(draws["rare0"])
    seqs = jax.vmap(lambda d: bl.assemble(spec, d, with_relevant))(draws)
    return seqs["tokens"], seqs["query_pos"], seqs["target"]


def iwl_pool(spec: bl.BlockListSpec, key, n: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The in-weights read-off pool: ``n`` common faithful queries (``f_r = f_v = 0``) whose
    relevant block is replaced by a distractor block, in the ``b = 1`` layout for every ``b``,
    the population of the exact dynamics' ``p_iwl`` (``dynamics.model.make``); with the spec's
    own ``b`` copies, ``b > 1`` would read another population (``b`` copies of the distractor)."""
    return eval_pool(dataclasses.replace(spec, burstiness=1), key, n, 0.0, False)


def train_cells(spec: bl.BlockListSpec, theta0_sub, f_r: np.ndarray, f_v: np.ndarray, lr: float,
                steps: int, n_save: int, batch_size: int, eval_size: int, seed: int = 0,
                full_coords: bool = False, rare_pool: str = "all_rare",
                ) -> dict[str, np.ndarray]:
    """Train one model per cell ``(f_r[c], f_v[c])``; returns arrays ``[n_cells, n_save + 1, ...]``
    (``theta`` projected on (alpha, beta, gamma, delta), ``p_rare``, ``p_iwl``, ``loss``; with
    ``full_coords`` also ``theta_full``, the least-squares coordinates on the whole manifold) and
    ``t [n_save + 1]``. ``rare_pool``: ``all_rare`` (the pool above) or ``cell`` (relevant item
    rare, distractors at the cell's ``(f_r, f_v)``: the exact dynamics' ``p_rare``)."""
    if rare_pool not in ("all_rare", "cell"):
        raise ValueError(f"rare_pool={rare_pool!r}: allowed all_rare, cell")
    if steps % n_save:
        raise ValueError(f"steps={steps} must be a multiple of n_save={n_save}")
    program = _program(spec, steps, n_save, batch_size, eval_size, rare_pool, len(f_r))
    res = program(jnp.asarray(theta0_sub, jnp.float32), jnp.asarray(lr, jnp.float32),
                  jnp.asarray(seed, jnp.uint32), jnp.asarray(f_r, jnp.float32),
                  jnp.asarray(f_v, jnp.float32))
    t = np.arange(n_save + 1) * (lr * steps / n_save)
    names = ("theta", "p_rare", "p_iwl", "loss", "theta_full")[: 5 if full_coords else 4]
    return {k: np.asarray(v) for k, v in zip(names, res)} | {"t": t}


@functools.lru_cache(maxsize=16)
def _program(spec: bl.BlockListSpec, steps: int, n_save: int, batch_size: int, eval_size: int,
             rare_pool: str, n_cells: int):
    """The compiled ``train_cells`` of one spec and set of sizes: the start point, learning
    rate, seed and cells are its arguments, so calls that differ only in those share it."""
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len)
    basis = ib.make_basis(frame)
    _, phi = subm.abgd_coordinates(basis)
    to_sub = jnp.asarray(subm.abgd_projector(basis), jnp.float32)  # [4, n]
    cfg = ib.imir_config(frame)
    fixed = ib.fixed_params(frame)
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

    def program(theta0_sub, lr, seed, f_r, f_v):
        w0 = proj.weights(basis, theta0_sub @ jnp.asarray(phi, jnp.float32))
        k_rare, k_iwl, k_train = jax.random.split(jax.random.key(seed), 3)
        rare = eval_pool(spec, k_rare, eval_size, 1.0, True)
        iwl = iwl_pool(spec, k_iwl, eval_size)

        def one(fr, fv, key):
            tp = {"f_r": fr, "f_v": fv}
            pool = rare if rare_pool == "all_rare" else eval_pool(
                spec, k_rare, eval_size, fr, True, fv, rare_relevant=True)

            def record(w, loss):
                full = proj.coords(basis, w)
                return (to_sub @ full, target_prob(w, pool, False), target_prob(w, iwl, True),
                        loss, full)

            def lossf(w, k):
                return readout_loss({**fixed, **w}, cfg, bl.sample(spec, k, tp, batch_size))

            return sgd.descend(lossf, w0, lr, n_save, steps // n_save, record, key)

        return jax.vmap(one)(f_r, f_v, jax.random.split(k_train, n_cells))

    vec = jax.ShapeDtypeStruct((n_cells,), jnp.float32)
    scalar = jax.ShapeDtypeStruct((), jnp.float32)
    return jax.jit(program).lower(jax.ShapeDtypeStruct((4,), jnp.float32), scalar,
                                  jax.ShapeDtypeStruct((), jnp.uint32), vec, vec).compile()
