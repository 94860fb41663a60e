"""Exact reduced dynamics of associative recall on the whole invariant manifold, at sizes the
enumerated engine population cannot reach (docs/imir.md, section 9).

The population loss is ``sum_c P_c(f_r, f_v) loss_c(theta)`` over the orbit classes of
``blocklist.classes`` (closed-form probabilities, a class count independent of the vocabulary),
each class's loss from ``coordinate_forward`` (the forward pass in manifold coordinates, cost
independent of ``d_model``). Both are exact on the manifold, so ``d theta / dt = -G^-1 grad L`` is
the full-manifold reduced ODE of ``ode.vector_field`` (= full training, docs/imir.md section 4),
without enumerating sequences or forming ``d_model``-wide weights.

Read-offs along a trajectory, as ``full_phase``: ``p_rare`` = mean target probability given a
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

from mechjax.analysis.imir import basis as ib
from mechjax.analysis.imir import coordinate_forward as cfw
from mechjax.analysis.imir import ode
from mechjax.analysis.imir import project as proj
from mechjax.analysis.imir import solve
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
    _, phi = ode.abgd_coordinates(model.basis)
    return np.asarray(init_sub, np.float64) @ phi


def padded_size(n_cells: int) -> int:
    """The cell count a solve is compiled for: ``n_cells`` rounded up to a power of two, at
    least 4 (padded cells repeat the last one), so solves of a few cells share one program."""
    return max(4, 1 << (max(int(n_cells), 1) - 1).bit_length())


def solve_cells(model: ExactRecall, theta0, f_r, f_v, t1: float, n_save: int,
                dtype=jnp.float32, rtol: float = solve.RTOL, atol: float = solve.ATOL,
                dt0: float | None = None, solver: str = "tsit5") -> dict[str, np.ndarray]:
    """The exact reduced ODE from ``theta0 [n]`` for every cell ``(f_r[c], f_v[c])`` (one jitted
    ``vmap``): ``theta [G, n_save + 1, n]`` and the ``readouts`` ``[G, n_save + 1]``. Raises
    when a cell does not reach ``t1`` within ``solve.MAX_STEPS`` steps."""
    f_r, f_v = np.ravel(f_r), np.ravel(f_v)
    fn = cells_solver(model, t1, n_save, rtol, atol, dt0, solver=solver, dtype=dtype,
                      size=padded_size(f_r.size))
    idx = np.minimum(np.arange(fn.size), f_r.size - 1)   # pad with the last cell
    out = fn(jnp.asarray(theta0, dtype), f_r[idx], f_v[idx])
    return {k: np.asarray(v)[: f_r.size] for k, v in out.items()}


class CellsSolver:
    """A compiled ``(theta0 [n], f_r [size], f_v [size]) -> solve_cells output`` (``cells_solver``).
    Calls with ``max_steps=None`` raise when a cell did not reach ``t1``."""

    def __init__(self, compiled, size: int, scalars: tuple, capped: bool, keep_theta: bool,
                 t1: float):
        self.compiled, self.size, self.scalars = compiled, size, scalars
        self.capped, self.keep_theta, self.t1 = capped, keep_theta, t1

    def __call__(self, theta0, f_r, f_v) -> dict[str, jax.Array]:
        dtype = self.scalars[0].dtype
        out = dict(self.compiled(jnp.asarray(theta0, dtype), jnp.asarray(f_r, dtype),
                                 jnp.asarray(f_v, dtype), *self.scalars))
        if not self.keep_theta:
            out["theta"] = out["theta"][:, -1]
        if not self.capped:
            done = np.asarray(out.pop("done"))
            out.pop("steps")
            if not done.all():
                raise RuntimeError(f"{int((~done).sum())} of {done.size} cells did not reach "
                                   f"t1={self.t1} within {solve.MAX_STEPS} solver steps")
        return out


def cells_solver(model: ExactRecall, t1: float, n_save: int, rtol: float = solve.RTOL,
                 atol: float = solve.ATOL, dt0: float | None = None, keep_theta: bool = True,
                 solver: str = "tsit5", max_steps: int | None = None, size: int = 4,
                 dtype=jnp.float32) -> CellsSolver:
    """The compiled solve of ``size`` cells (compiled apart from the solve, so its time can be
    measured). ``keep_theta=False`` returns the read-offs and the final state only.
    ``max_steps``: a step cap per cell (``solve.solve_capped``); the output then has ``done
    [G]``, False for the cells the cap stopped (their read-offs are not to be used), and
    ``steps [G]``, the solver steps each took (rejected ones included).

    ``t1``, ``rtol``, ``atol`` and ``dt0`` are arguments of the compiled program, not constants,
    so the solves of one model at one ``n_save``, method, cap and size share one compilation
    (a test-size run compiles a handful of programs, not one per stage)."""
    scalars = tuple(jnp.asarray(x, dtype) for x in (t1, rtol, atol, 0.0 if dt0 is None else dt0))
    compiled = _program(model, n_save, solver, max_steps or solve.MAX_STEPS, dt0 is not None,
                        size, jnp.dtype(dtype).name)
    return CellsSolver(compiled, size, scalars, max_steps is not None, keep_theta, t1)


@functools.lru_cache(maxsize=32)
def _program(model: ExactRecall, n_save: int, solver: str, max_steps: int, has_dt0: bool,
             size: int, dtype: str):
    def one(th0, fr, fv, t1, rtol, atol, dt0):
        tp = {"f_r": fr, "f_v": fv}
        traj, ok, steps = solve.solve_capped(model.field, th0, tp, t1, n_save, rtol, atol,
                                             dt0 if has_dt0 else None, max_steps, solver)
        ro = jax.vmap(lambda th: model.readouts(th, tp))(traj)
        return {"theta": traj, **ro, "done": ok, "steps": steps}

    cells = jax.ShapeDtypeStruct((size,), dtype)
    scalar = jax.ShapeDtypeStruct((), dtype)
    theta0 = jax.ShapeDtypeStruct((model.n_coords,), dtype)
    return jax.jit(jax.vmap(one, in_axes=(None, 0, 0, None, None, None, None))).lower(
        theta0, cells, cells, scalar, scalar, scalar, scalar).compile()
