"""Competing induction routes of a deep attention-only model, on the IMIR manifold
(docs/imir.md, section 8).

In an ``L``-layer model an induction circuit can form on any pair of heads ``(p, m)`` with ``p``
in an earlier layer than ``m``: a *route*. Each route has three units (``circuits.units`` names):

* ``prev``  ``L{p}H{hp} I|M|I``: head p attends to the previous position (writes the token before
  each key into its output block ``O_p``);
* ``match`` ``L{m}H{hm} I|I_t|O_p``: head m scores the query token against what head p wrote;
* ``copy``  ``U O_m|I_t``: the unembedding reads the token head m copied.

Routes share units: in 3 layers, 1 head the routes ``L1>L2``, ``L1>L3`` and ``L2>L3`` (1-based
layers) share ``L1>L2``'s and ``L1>L3``'s previous-token head, and ``L1>L3``'s and ``L2>L3``'s
readout; only the match unit belongs to one route. ``I_t`` is the sum of the class identities
(``I_common + I_rare``), as for the 2-layer beta and gamma (``submanifold.abgd_coordinates``).

A route's *directions* are its units as unit vectors of summed coordinates (``phi [n_units, n]``,
``theta_full = values @ phi``); ``values`` of any point are its Gram-weighted projection
(``submanifold.sub_projector``).

Winner (``winners``): the layer pair that carries the loss drop, by ablation. Zeroing every
``W_KQ`` coordinate of layer l (uniform attention there) raises the final loss by ``rise_l``; a
layer the circuit does not use raises it by ~0. The winner is the route on the two layers with
the largest rises, or ``-1`` (none) when the second largest is not above ``min_rise`` (no
two-layer circuit formed). Classifying by layers, not by the route units, also names circuits
built from other coordinates of the manifold (a next-token head ``I|M^-1|I``, anti-copy
readouts), which random initializations do grow on the cyclic task: each is charged to the pair
of layers it uses. Needs one head per layer (then a layer pair is one route).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.detection import circuits as cc
from mechjax.analysis.imir.manifold.basis import Basis

@dataclasses.dataclass(frozen=True)
class Route:
    """An induction route: previous-token head ``prev_head`` feeding match head ``match_head``
    (``(layer, head)``, 0-based) and the readout of the match head's output."""

    name: str
    prev_head: tuple[int, int]
    match_head: tuple[int, int]
    units: tuple[str, str, str]   # (prev, match, copy) unit names


def _head_path(n_layers: int, layer: int, head: int) -> tuple[int, ...]:
    return tuple(head + 1 if l == layer else 0 for l in range(n_layers))


def _head_label(basis: Basis, layer: int, head: int) -> str:
    return f"L{layer + 1}" + (f".{head}" if basis.frame.n_heads > 1 else "")


def induction_routes(basis: Basis) -> list[Route]:
    """Every route ``(p, m)`` of the basis' frame, in order of (prev layer, match layer, heads);
    named ``L{p+1}>L{m+1}`` (heads as ``.h`` when there are several)."""
    f = basis.frame
    if f.n_layers < 2:
        raise ValueError(f"n_layers={f.n_layers}: induction routes need at least 2 layers")
    heads = [(l, h) for l in range(f.n_layers) for h in range(f.n_heads)]
    zero = f.path_name(tuple(0 for _ in range(f.n_layers)))
    out = []
    for p, hp in heads:
        for m, hm in heads:
            if m <= p:
                continue
            o_p = f.path_name(_head_path(f.n_layers, p, hp))
            o_m = f.path_name(_head_path(f.n_layers, m, hm))
            units = (f"L{p}H{hp} {zero}|M|{zero}", f"L{m}H{hm} {zero}|I_t|{o_p}",
                     f"U {o_m}|I_t")
            out.append(Route(f"{_head_label(basis, p, hp)}>{_head_label(basis, m, hm)}",
                             (p, hp), (m, hm), units))
    return out


@dataclasses.dataclass(frozen=True)
class RouteDirections:
    """The distinct units of ``routes`` as directions on the manifold.

    ``names [n_units]`` (unit names), ``phi [n_units, n]`` (1 on each coordinate of the unit),
    ``route_units [n_routes, 3]`` (index into ``names`` of each route's prev, match, copy).
    """

    routes: tuple[Route, ...]
    names: tuple[str, ...]
    phi: np.ndarray
    route_units: np.ndarray

    @property
    def route_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.routes)

    def match_units(self) -> np.ndarray:
        return self.route_units[:, 1]


def route_directions(basis: Basis, routes: Sequence[Route]) -> RouteDirections:
    """``RouteDirections`` of ``routes`` (their units looked up in ``circuits.units`` of every
    coordinate; raises KeyError naming a unit the basis lacks)."""
    by_name = {u.name: u for u in cc.units(basis, range(basis.size))}
    names: list[str] = []
    for r in routes:
        for u in r.units:
            if u not in by_name:
                raise KeyError(f"unit {u!r} of route {r.name} is not in the basis")
            if u not in names:
                names.append(u)
    phi = np.zeros((len(names), basis.size))
    for i, n in enumerate(names):
        phi[i, list(by_name[n].coords)] = 1.0
    idx = np.array([[names.index(u) for u in r.units] for r in routes])
    return RouteDirections(tuple(routes), tuple(names), phi, idx)


def route_weights(values: jax.Array, dirs: RouteDirections) -> jax.Array:
    """``[..., n_routes]``: each route's strength, the product of its three direction values
    (``values [..., n_units]``): the induction logit is trilinear in them at small weights, and
    the product's sign says whether the route points toward induction or against it."""
    return jnp.prod(values[..., jnp.asarray(dirs.route_units)], axis=-1)


def layer_masks(basis: Basis) -> np.ndarray:
    """Bool ``[n_layers, n]``: the coordinates of each layer's ``W_KQ``."""
    out = np.zeros((basis.frame.n_layers, basis.size), bool)
    for g in basis.groups:
        if g.head is not None:
            out[int(g.param.split(".")[1]), g.offset: g.offset + g.size] = True
    return out


def ablation_rises(loss: Callable[[jax.Array], jax.Array], theta: jax.Array,
                   masks: np.ndarray) -> jax.Array:
    """``[n_masks]``: ``loss(theta with the coordinates of mask k zeroed) - loss(theta)``
    (``theta [n]``, ``masks [n_masks, n]`` bool)."""
    keep = jnp.asarray(~np.asarray(masks), theta.dtype)
    return jax.vmap(loss)(theta[None, :] * keep) - loss(theta)


def winners(layer_rises: np.ndarray, dirs: RouteDirections, min_rise: float) -> np.ndarray:
    """Winner route index per point from ``layer_rises [..., n_layers]`` (module docstring):
    the route whose (prev, match) layers are the two largest rises; ``-1`` where the second
    largest is not above ``min_rise``."""
    rises = np.asarray(layer_rises)
    layers = {frozenset((r.prev_head[0], r.match_head[0])): i for i, r in enumerate(dirs.routes)}
    if len(layers) != len(dirs.routes):
        raise ValueError("winners needs one route per layer pair (one head per layer)")
    order = np.argsort(-rises, axis=-1)
    top2 = order[..., :2]
    second = np.take_along_axis(rises, order[..., 1:2], -1)[..., 0]
    idx = np.vectorize(lambda a, b: layers.get(frozenset((int(a), int(b))), -1))(
        top2[..., 0], top2[..., 1])
    return np.where(second > min_rise, idx, -1).astype(int)


def settled(winner_t: np.ndarray, last: float = 0.25) -> np.ndarray:
    """Bool ``[...]``: the winner ``winner_t [..., n_saved]`` (over saved times) is the same at
    every saved time in the last ``last`` of the horizon (at least the last two). A point that
    still changes winner there is read mid-race: its final winner is a snapshot, not a result."""
    w = np.asarray(winner_t)
    k = max(2, int(np.ceil(last * (w.shape[-1] - 1))) + 1)
    tail = w[..., -k:]
    return np.all(tail == tail[..., -1:], axis=-1)


def winner_margin(layer_rises: np.ndarray) -> np.ndarray:
    """``(second largest - smallest) / second largest`` of the layer rises ``[..., n_layers]``:
    1 when the idle layer is truly idle, near 0 when the third layer matters as much (a point
    near a boundary between two winners)."""
    r = np.sort(np.asarray(layer_rises), axis=-1)
    return (r[..., -2] - r[..., 0]) / np.maximum(r[..., -2], 1e-12)


def largest_initial(weights0: np.ndarray) -> np.ndarray:
    """The naive predictor: the route with the largest initial strength (``[..., n_routes]``)."""
    return np.argmax(np.asarray(weights0), axis=-1)
