"""The exact reduced model of associative recall on the whole invariant manifold: the one vector
field ``ExactRecall.field`` that every IMIR feature integrates (the phase diagrams, the route
maps of ``routes.init_map``, the theorems; docs/imir.md, section 9).

The population loss is ``sum_c P_c(f_r, f_v) loss_c(theta)`` over the orbit classes of
``blocklist.classes`` (closed-form probabilities, a class count independent of the vocabulary),
each class's loss from ``forward.coordinates`` (the forward pass in manifold coordinates, cost
independent of ``d_model``). Both are exact on the manifold, so ``d theta / dt = -G^-1 grad L`` is
the full-manifold reduced ODE (= full training, docs/imir.md section 4) without enumerating
sequences or forming ``d_model``-wide weights; ``dynamics.reference.enumerated_field`` computes the
same field through the engine on an enumerated support, and the tests compare the two.

Read-offs along a trajectory: ``p_rare`` = mean target probability given a
rare relevant item (distractors at the training law), ``acc_rare`` = the same for the argmax,
``p_iwl`` = mean probability of ``C(a)`` on common faithful queries whose relevant block was
replaced by a distractor block (in-weights only; the layout of ``b = 1`` for every ``b``, so it
needs ``n_blocks >= 3``), and the population ``loss``.
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import submanifold as subm
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.forward import coordinates as cfw
from mechjax.analysis.imir.manifold import project as proj
from mechjax.tasks import blocklist as bl
from mechjax.tasks.blocklist import classes as cl

ZERO = {"f_r": 0.0, "f_v": 0.0}


@dataclasses.dataclass(frozen=True, eq=False)
class ExactRecall:
    """The exact reduced model of one recall spec (``make``)."""

    spec: bl.BlockListSpec
    basis: ib.Basis
    classes: cl.RecallClasses
    feats: cfw.Features
    iwl_feats: cfw.Features       # in-weights read-off population (f_r = f_v = 0), pruned
    iwl_weights: np.ndarray       # [N_iwl]
    iwl_target: np.ndarray        # [N_iwl] C(query token)

    @property
    def n_coords(self) -> int:
        return self.basis.size

    def loss(self, theta: jax.Array, task_params) -> jax.Array:
        """The exact population readout cross-entropy at ``W(theta)``."""
        w = self.classes.probs(task_params, theta.dtype)
        return jnp.sum(w * cfw.class_losses(self.basis, self.feats, theta)) / jnp.sum(w)

    def field(self, theta: jax.Array, task_params) -> jax.Array:
        """``d theta / dt = -G^-1 grad_theta L``."""
        return -proj.solve_gram(self.basis, jax.grad(self.loss)(theta, task_params))

    def pruned(self, task_params) -> "ExactRecall":
        """The model with only the classes of positive probability at the concrete
        ``task_params`` (the same loss and field there, fewer classes to differentiate)."""
        keep = np.flatnonzero(np.asarray(self.classes.probs(task_params, jnp.float32)) > 0)
        classes = dataclasses.replace(self.classes, **{
            f.name: getattr(self.classes, f.name)[keep]
            for f in dataclasses.fields(self.classes)})
        feats = dataclasses.replace(self.feats, tok=self.feats.tok[keep],
                                    out=self.feats.out[keep], target=self.feats.target[keep])
        return dataclasses.replace(self, classes=classes, feats=feats)

    def readouts(self, theta: jax.Array, task_params) -> dict[str, jax.Array]:
        """``p_rare``, ``acc_rare``, ``p_iwl``, ``loss`` at ``theta`` (scalars)."""
        dtype = theta.dtype
        lg = cfw.logits(self.basis, self.feats, theta)
        lp = jax.nn.log_softmax(lg, -1)
        y = jnp.asarray(self.feats.target)
        lp_y = jnp.take_along_axis(lp, y[:, None], 1)[:, 0]
        w = self.classes.probs(task_params, dtype)
        wr = self.classes.given_rare(task_params, dtype)
        wr = wr / jnp.maximum(jnp.sum(wr), 1e-30)
        hit = (jnp.argmax(lg, -1) == y).astype(dtype)
        p_iwl = cfw.target_probs(self.basis, self.iwl_feats, theta, self.iwl_target)
        return {"p_rare": jnp.sum(wr * jnp.exp(lp_y)), "acc_rare": jnp.sum(wr * hit),
                "p_iwl": jnp.sum(jnp.asarray(self.iwl_weights, dtype) * p_iwl),
                "loss": -jnp.sum(w * lp_y) / jnp.sum(w)}


@functools.lru_cache(maxsize=8)
def make(spec: bl.BlockListSpec, n_layers: int = 2, n_heads: int = 1) -> ExactRecall:
    """The exact reduced model of recall ``spec`` (``classes.recall_classes`` checks the kind).
    Kept per spec, so the grids of one spec share their compiled solvers."""
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len, n_layers, n_heads)
    basis = ib.make_basis(frame)
    classes = cl.recall_classes(spec)
    feats = cfw.features(basis, classes.tokens, classes.target)
    # the read-off layout is b = 1's for every b (so it exists at b = n_blocks - 1, where no
    # distractor block is left to replace the answers, and is the same across a (b, f_r) grid)
    iwl = cl.recall_classes(dataclasses.replace(spec, burstiness=1), with_relevant=False)
    w = np.asarray(iwl.probs(ZERO), np.float64)
    keep = w > 0
    query = iwl.tokens[keep, -1]
    return ExactRecall(spec=spec, basis=basis, classes=classes, feats=feats,
                       iwl_feats=cfw.features(basis, iwl.tokens[keep], iwl.target[keep]),
                       iwl_weights=w[keep] / w[keep].sum(),
                       iwl_target=spec.association()[query])


def abgd_init(model: ExactRecall, init_sub) -> np.ndarray:
    """Full coordinates of the (alpha, beta, gamma, delta) point ``init_sub`` (2 layers, 1 head)."""
    _, phi = subm.abgd_coordinates(model.basis)
    return np.asarray(init_sub, np.float64) @ phi


def random_start(model: ExactRecall, key: jax.Array, std: float) -> np.ndarray:
    """Full coordinates of a random initialization: every trained entry of the theory's
    architecture (``W_KQ``, ``W_U``) i.i.d. normal with ``std`` (``basis.random_weights``),
    projected on the manifold by least squares (``project.coords``). Most of such a draw lies
    off the manifold; its projection is what the reduced dynamics can start from."""
    w = ib.random_weights(model.basis.frame, key, std, 1)
    return np.asarray(proj.coords(model.basis, {k: v[0] for k, v in w.items()}), np.float64)
