"""Which induction route wins from which initialization (IMIR paper; docs/imir.md, section 8): the
exact reduced ODE of a deep attention-only model (every coordinate of ``make_basis``) started from
many initial points in one ``jit(vmap)``, full transformers trained from random weights in one
``jit(vmap)``, both classified by ``routes.winners``, and the interaction between routes from the
reduced field's Jacobian.

The flow is the exact model's (``dynamics.model``: the orbit classes of the recall population,
pruned to those of positive probability at the concrete task parameters), the projected gradient
flow of the population loss. Training draws fresh batches from the task (``bl.sample``)
with plain SGD, the Euler scheme of the same flow at ``t = step * lr`` (``sgd``), from full random
weights (off-manifold parts included); its trajectories are read through the least-squares
coordinates (``project.coords``).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import submanifold as subm
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.routes import route_units as rt
from mechjax.analysis.imir.cells import sgd
from mechjax.analysis.imir.dynamics import solver as solve
from mechjax.analysis.imir.forward.loss import readout_loss
from mechjax.tasks import blocklist as bl


@dataclasses.dataclass(frozen=True, eq=False)
class RouteProblem:
    """A task, the model frame and basis, the routes, the exact model and its flow."""

    spec: bl.BlockListSpec
    basis: ib.Basis
    dirs: rt.RouteDirections
    projector: np.ndarray               # [n_units, n]: Gram-weighted projection on the units
    model: exact.ExactRecall           # pruned at task_params
    task_params: dict[str, float]

    @property
    def frame(self) -> ib.Frame:
        return self.basis.frame

    def tp(self) -> dict[str, jax.Array]:
        return {k: jnp.float32(v) for k, v in self.task_params.items()}

    def loss(self):
        """``loss(theta [n]) -> scalar``: the exact population loss at ``W(theta)``."""
        return lambda theta: self.model.loss(theta, self.tp())

    def field(self):
        """``field(theta [n]) -> d theta / dt``: the exact reduced ODE on every coordinate."""
        return lambda theta: self.model.field(theta, self.tp())

    def values(self, theta: jax.Array) -> jax.Array:
        """``[..., n_units]``: the route units' values of ``theta [..., n]``."""
        return theta @ jnp.asarray(self.projector, theta.dtype).T


def route_problem(spec: bl.BlockListSpec, n_layers: int, n_heads: int,
                  task_params: Mapping[str, float]) -> RouteProblem:
    """The problem for ``spec`` (cyclic offsets) in an ``n_layers``-layer, ``n_heads``-head
    frame, at concrete ``task_params`` (``f_r``, ``f_v``)."""
    model = exact.make(spec, n_layers, n_heads)
    basis = model.basis
    dirs = rt.route_directions(basis, rt.induction_routes(basis))
    tp = {k: float(v) for k, v in task_params.items()}
    pruned = model.pruned({k: jnp.float32(v) for k, v in tp.items()})
    return RouteProblem(spec, basis, dirs, subm.sub_projector(basis, dirs.phi), pruned, tp)


# ------------------------------------------------------------------------------------------------
# Initial points
# ------------------------------------------------------------------------------------------------
def map_inits(problem: RouteProblem, scales: Sequence[float], axis_routes: tuple[int, int],
              factors: np.ndarray) -> np.ndarray:
    """``theta0 [n_scales, n_f, n_f, n]``: every route unit at ``scale``, except the match units
    of ``axis_routes = (rx, ry)``, at ``scale * factors[i]`` and ``scale * factors[j]``; every
    other coordinate zero."""
    d = problem.dirs
    mx, my = d.match_units()[list(axis_routes)]
    out = np.zeros((len(scales), len(factors), len(factors), problem.basis.size), np.float32)
    for s, scale in enumerate(scales):
        for i, fx in enumerate(factors):
            for j, fy in enumerate(factors):
                v = np.full(len(d.names), float(scale))
                v[mx], v[my] = scale * fx, scale * fy
                out[s, i, j] = v @ d.phi
    return out


def project_inits(problem: RouteProblem, weights: Mapping[str, jax.Array]) -> jax.Array:
    """``theta0 [n_inits, n]``: least-squares coordinates of each initialization."""
    return jax.jit(jax.vmap(lambda w: proj.coords(problem.basis, w)))(dict(weights))


# ------------------------------------------------------------------------------------------------
# The ODE from many points, training from many initializations
# ------------------------------------------------------------------------------------------------
def solve_from(problem: RouteProblem, theta0: jax.Array, t1: float, n_save: int,
               rtol: float = solve.RTOL, atol: float = solve.ATOL, keep_theta: bool = False,
               ) -> dict[str, np.ndarray]:
    """The exact reduced ODE from each ``theta0 [G, n]`` (one ``jit(vmap)``). Returns ``values
    [G, n_save + 1, n_units]``, ``loss [G, n_save + 1]``, ``rises [G, n_layers]`` (``routes.ablation_rises`` of each layer at t1),
    ``theta_end [G, n]``, ``num_steps [G]``; with ``keep_theta`` the whole ``theta
    [G, n_save + 1, n]``."""
    field, loss = problem.field(), problem.loss()
    masks = rt.layer_masks(problem.basis)

    def one(th0):
        traj, stats = solve.solve_with_stats(lambda th, _: field(th), th0, None, t1, n_save,
                                             rtol, atol)
        rises = jax.vmap(lambda th: rt.ablation_rises(loss, th, masks))(traj)
        return (problem.values(traj), jax.vmap(loss)(traj), rises,
                traj if keep_theta else traj[-1], stats["num_steps"])

    out = jax.jit(jax.vmap(one))(jnp.asarray(theta0, jnp.float32))
    keys = ("values", "loss", "rises", "theta" if keep_theta else "theta_end", "num_steps")
    return {k: np.asarray(v) for k, v in zip(keys, out)}


def train_from(problem: RouteProblem, weights: Mapping[str, jax.Array], lr: float, steps: int,
               n_save: int, batch_size: int, key: jax.Array) -> dict[str, np.ndarray]:
    """Full transformers (every entry of ``W_KQ``, ``W_U``) trained by SGD on fresh batches from
    each initialization in ``weights`` (``{name: [K, ..]}``), one ``jit(vmap)``. Returns the
    route units' values of the least-squares coordinates ``values [K, n_save + 1, n_units]``,
    the population ``loss`` of the projected weights and the off-span fraction ``off_span``
    ``[K, n_save + 1]``, ``rises [K, n_layers]`` (projected weights at the end), ``theta_end
    [K, n]`` and ``t [n_save + 1]``."""
    if steps % n_save:
        raise ValueError(f"steps={steps} must be a multiple of n_save={n_save}")
    basis, spec = problem.basis, problem.spec
    cfg, fixed = ib.imir_config(problem.frame), ib.fixed_params(problem.frame)
    loss, tp = problem.loss(), problem.tp()
    masks = rt.layer_masks(problem.basis)

    def record(w, _):
        th = proj.coords(basis, w)
        rel, _ = proj.rel_residual(basis, w)
        return th, problem.values(th), loss(th), rel

    def one(w0, k):
        def batch_loss(w, kk):
            return readout_loss({**fixed, **w}, cfg, bl.sample(spec, kk, tp, batch_size))

        th, vals, ls, rel = sgd.descend(batch_loss, w0, lr, n_save, steps // n_save, record, k)
        rises = jax.vmap(lambda x: rt.ablation_rises(loss, x, masks))(th)
        return vals, ls, rel, rises, th[-1]

    n = next(iter(weights.values())).shape[0]
    out = jax.jit(jax.vmap(one))(dict(weights), jax.random.split(key, n))
    keys = ("values", "loss", "off_span", "rises", "theta_end")
    res = {k: np.asarray(v) for k, v in zip(keys, out)}
    res["t"] = np.arange(n_save + 1) * (lr * steps / n_save)
    return res


# ------------------------------------------------------------------------------------------------
# Read-offs
# ------------------------------------------------------------------------------------------------
def boundary_cells(winner: np.ndarray) -> int:
    """Cells of a 2-D winner map ``[nx, ny]`` with a 4-neighbour of another winner."""
    w = np.asarray(winner)
    edge = np.zeros(w.shape, bool)
    dx = w[1:, :] != w[:-1, :]
    dy = w[:, 1:] != w[:, :-1]
    edge[1:, :] |= dx
    edge[:-1, :] |= dx
    edge[:, 1:] |= dy
    edge[:, :-1] |= dy
    return int(edge.sum())


def win_fractions(winner: np.ndarray, dirs: rt.RouteDirections) -> dict[str, float]:
    """Share of points won by each route (and by ``none``)."""
    w = np.asarray(winner).ravel()
    out = {name: float(np.mean(w == i)) for i, name in enumerate(dirs.route_names)}
    out["none"] = float(np.mean(w < 0))
    return out


def route_jacobians(problem: RouteProblem, thetas: jax.Array) -> np.ndarray:
    """``J [S, n_units, n_units]`` at each ``thetas [S, n]`` (one ``jit(vmap)``): ``J[s, i, j] =
    d (d v_i / dt) / d v_j``, how the growth rate of unit i changes when unit j grows
    (``jax.jacfwd`` of the projected field along the unit directions). ``J[., i, j] > 0``: j
    stimulates i; ``< 0``: j inhibits i."""
    field = problem.field()
    phi = jnp.asarray(problem.dirs.phi, jnp.float32)

    def one(theta):
        return jax.jacfwd(lambda v: problem.values(field(theta + v @ phi)))(
            jnp.zeros(phi.shape[0], jnp.float32))

    return np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(thetas, jnp.float32)))


def route_drive(jac: np.ndarray, values: np.ndarray, dirs: rt.RouteDirections) -> np.ndarray:
    """``D [n_routes, n_routes]``: ``D[q, r] = sum_u J[match_q, u] v_u`` over route r's units
    (prev, match, copy): the part of route q's match growth rate that route r's current values
    drive (linearised; a shared unit counts for each route that has it). Positive: r helps q
    grow; negative: r holds q back."""
    jac, values = np.asarray(jac), np.asarray(values)
    m = dirs.match_units()
    return np.stack([[np.sum(jac[mq, dirs.route_units[r]] * values[dirs.route_units[r]])
                      for r in range(len(dirs.routes))] for mq in m])
