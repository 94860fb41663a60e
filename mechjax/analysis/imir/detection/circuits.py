"""Step 3 of circuit detection: name the surviving coordinates, group them into units and
circuits, and tell canonical units from helpers.

**Coordinates and units.** Every coordinate is ``(param, layer, head, query path A, key path B,
selection)`` (``Coord``; unembedding coordinates have no head and no key path). A *unit* merges
the coordinates that differ only in which token class an identity selection is restricted to
(``I_common``, ``I_rare``, ... all become ``I_t``): the theory's beta is ``I_t O1^T``, and the
full basis splits ``I_t`` by class (docs/imir.md 2.2), so one mechanism can survive as one or
several coordinates. Unit names read like coordinate names: ``L1H0 I|I_t|O1``, ``U O2|I_t``.

**Canonical units** are named by what they compute (``roles``, which holds the rules): a
``shift`` (a position unit by its net offset: ``I|M|I`` is -1, the previous token; ``I|M^(T-1)|I``
on a non-causal ring +1, the next token) that a look-up chain shifts through; a ``match`` (a
token look-up, with its shift on the key path as in the induction head or on the value path as
in the mirrored circuit, every hop of a chain); a ``copy`` (an unembedding ``P|I_t`` reading a
look-up that retrieves the token after the matched one, through one head or a composition of
heads such as ``O1*O2``); an ``iwl`` (the unembedding ``I|C``: the association stored in weights).
``describe`` gives each unit's description (``"offset -1 (back)"``, ``"hop 2 match, shift on the
key path"``, ``"2-hop readout through O4 (1 head)"``).

Everything else that survives is a *helper*. For 2 layers and 1 head the four kinds are exactly
``abgd_coordinates``' alpha ``L0H0 I|M|I``, beta ``L1H0 I|I_t|O1``, gamma ``U O2|I_t`` and delta
``U I|C``; ``ABGD`` maps those names.

**What reads what.** A unit reads every head named on its paths: ``L2H0 O1|I_t|O2`` reads
heads ``(0, 0)`` (query side) and ``(1, 0)`` (key side); ``U O1*O2|..`` reads both heads of its
path. Reading a head means depending on every kept unit *of* that head (they set its attention
pattern, hence what it writes). **A circuit** is one readout path's closure: the kept
unembedding units on one path ``A``, plus every kept unit reachable from them by "reads". Two
circuits may share a unit (a previous-token head used by two routes). Units reached from no
readout are listed as ``unread`` (they cannot change the logits; a correct elimination leaves
none). A circuit's ``hops`` is its longest chain of look-ups (a 2-hop composition is one
circuit with ``hops == 2``; 0: no look-up, e.g. the in-weights readout).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from mechjax.analysis.imir.detection.roles import Roles
from mechjax.analysis.imir.manifold.basis import Basis

Head = tuple[int, int]  # (layer, head)
KINDS = ("shift", "match", "copy", "iwl")
ABGD = {"L0H0 I|M|I": "alpha", "L1H0 I|I_t|O1": "beta", "U O2|I_t": "gamma", "U I|C": "delta"}


@dataclasses.dataclass(frozen=True)
class Coord:
    index: int
    name: str
    layer: int | None            # None: the unembedding
    head: int | None
    path_q: tuple[int, ...]      # a path c = (c_1, .., c_L), c_l = 0 (skip) or head + 1
    path_k: tuple[int, ...] | None
    sel: str

    @property
    def family(self) -> str:
        return "I_t" if self.sel.startswith("I_") and self.sel != "I_p" else self.sel


def coordinates(basis: Basis) -> list[Coord]:
    """Every coordinate of ``basis``, in basis order (names as ``Basis.names``)."""
    paths, names = basis.frame.paths, basis.names()
    out, i = [], 0
    for g in basis.groups:
        if g.head is None:
            for a in g.paths_q:
                for t in basis.sel_out_names:
                    out.append(Coord(i, names[i], None, None, paths[a], None, t))
                    i += 1
        else:
            layer = int(g.param.split(".")[1])
            for a in g.paths_q:
                for b in g.paths_k:
                    for s in basis.sel_kq_names:
                        out.append(Coord(i, names[i], layer, g.head, paths[a], paths[b], s))
                        i += 1
    return out


def heads_on(path: Sequence[int]) -> list[Head]:
    """The heads a path went through, in layer order."""
    return [(l, h - 1) for l, h in enumerate(path) if h > 0]


@dataclasses.dataclass(frozen=True)
class Unit:
    name: str
    layer: int | None
    head: int | None
    path_q: tuple[int, ...]
    path_k: tuple[int, ...] | None
    family: str
    coords: tuple[int, ...]

    @property
    def reads(self) -> list[Head]:
        """The heads whose outputs this unit reads (query side, then key side)."""
        return heads_on(self.path_q) + (heads_on(self.path_k) if self.path_k else [])

    @property
    def owner(self) -> Head | None:
        return None if self.layer is None else (self.layer, self.head)


def units(basis: Basis, indices: Sequence[int]) -> list[Unit]:
    """The units of the coordinates ``indices`` (module docstring), in basis order."""
    cs = coordinates(basis)
    f = basis.frame
    groups: dict[tuple, list[int]] = {}
    for i in sorted(int(i) for i in indices):
        c = cs[i]
        groups.setdefault((c.layer, c.head, c.path_q, c.path_k, c.family), []).append(i)
    out = []
    for (layer, head, pq, pk, fam), idx in groups.items():
        if layer is None:
            name = f"U {f.path_name(pq)}|{fam}"
        else:
            name = f"L{layer}H{head} {f.path_name(pq)}|{fam}|{f.path_name(pk)}"
        out.append(Unit(name, layer, head, pq, pk, fam, tuple(idx)))
    return out


def classify(us: Sequence[Unit], n_pos: int | None = None, causal: bool = False,
             ) -> dict[str, str]:
    """``{unit name: kind}`` with kind in ``KINDS`` or ``"helper"`` (module docstring).
    ``n_pos``/``causal``: the sequence length and mask, which fix a shift's direction
    (``roles.selection_offset``; without ``n_pos`` every ``M^j`` is j back)."""
    r = Roles(us, n_pos, causal)
    return {u.name: r.kind.get(u.name, "helper") for u in us}


def describe(us: Sequence[Unit], n_pos: int | None = None, causal: bool = False,
             ) -> dict[str, str]:
    """``{unit name: what it computes}`` where the rules can tell (``roles``), else its kind."""
    r = Roles(us, n_pos, causal)
    return {u.name: r.what.get(u.name, u.family) for u in us}


@dataclasses.dataclass(frozen=True)
class Circuit:
    readout: str                 # the readout path's name ("I": the direct path)
    units: tuple[str, ...]       # in the order reached (readout units first)
    edges: tuple[tuple[str, str], ...]  # (reader, read) unit names
    hops: int = 0                # the longest chain of look-ups it reads out (0: none)


def _by_head(us: Sequence[Unit]) -> dict[Head, list[Unit]]:
    out: dict[Head, list[Unit]] = {}
    for u in us:
        if u.owner is not None:
            out.setdefault(u.owner, []).append(u)
    return out


def circuits(basis: Basis, us: Sequence[Unit], causal: bool = False,
             ) -> tuple[list[Circuit], list[str]]:
    """One ``Circuit`` per readout path with a kept unit, and the unread units."""
    by_head = _by_head(us)
    hops = Roles(us, basis.frame.n_pos, causal).hops
    readouts: dict[tuple[int, ...], list[Unit]] = {}
    for u in us:
        if u.layer is None:
            readouts.setdefault(u.path_q, []).append(u)
    out, reached_any = [], set()
    for path, rs in readouts.items():
        seen, edges, queue = [u.name for u in rs], [], list(rs)
        while queue:
            u = queue.pop(0)
            for h in u.reads:
                for v in by_head.get(h, []):
                    edges.append((u.name, v.name))
                    if v.name not in seen:
                        seen.append(v.name)
                        queue.append(v)
        reached_any.update(seen)
        out.append(Circuit(basis.frame.path_name(path), tuple(seen), tuple(dict.fromkeys(edges)),
                           max((hops.get(u.name, 0) for u in rs), default=0)))
    unread = [u.name for u in us if u.name not in reached_any]
    return out, unread


def circuit_rows(circs: Sequence[Circuit], kinds: dict[str, str]) -> list[dict]:
    """JSON rows of ``circs`` (readout, units, hops, canonical and helper counts)."""
    return [{"readout": c.readout, "units": list(c.units), "hops": c.hops,
             "n_canonical": sum(kinds[u] != "helper" for u in c.units),
             "n_helpers": sum(kinds[u] == "helper" for u in c.units)} for c in circs]


def unit_edges(us: Sequence[Unit]) -> list[tuple[str, str]]:
    """Every (reader, read) pair among ``us`` (for the circuit diagram)."""
    by_head = _by_head(us)
    return list(dict.fromkeys((u.name, v.name) for u in us for h in u.reads
                              for v in by_head.get(h, [])))


def mask_of(us: Sequence[Unit], n: int, names: Sequence[str] | None = None) -> np.ndarray:
    """Bool ``[n]``: the coordinates of the units (of those named, when ``names`` is given)."""
    m = np.zeros(n, bool)
    for u in us:
        if names is None or u.name in names:
            m[list(u.coords)] = True
    return m
