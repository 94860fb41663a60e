"""Name the kept units by what they compute (docs/imir.md, section 7; ``circuits.classify``).

**What a path carries.** In the IMIR model every head copies a block of the residual stream at
the key it attends to into a new path block, so a path ``c`` read at position q carries one
token (or position) of the sequence. A head whose kept scores are all *position* units (the
selections ``I_p``, ``M``, ``M^j``) attends a fixed offset away: a *position head* with offset
``o`` (``q -> q + o``). A head with a kept token-identity score (``I_t``) whose operands resolve
is a *look-up head*. Walking a path's heads, a path carries

* ``Pos(d)``: the token at ``q + d``, when every head on it is a position head (``d`` = the sum
  of their offsets; the embedding ``I`` is ``Pos(0)``);
* ``Look(m, d)``: the token ``d`` after the key found by look-up head ``m``, when the path is
  position heads (the *value path*, offset ``d``) into ``m`` and then only offset-0 position heads
  (relays, which keep the query where it is);
* nothing resolvable otherwise (two look-ups on one path, a head with no kept score, ...).

**Position units** are named by their *net offset*: ``s + d_A - d_B`` for a score with shift
``s`` between paths carrying ``Pos(d_A)`` (query) and ``Pos(d_B)`` (key): ``I|M|I`` is -1 (back:
the previous token), ``O1|I_p|O1`` 0. A selection ``M^j`` shifts j back; on a non-causal model
the shorter way round the ring is meant (``M^(T-1)`` is +1: the next token), on a causal one
every key after the query is masked, so it is j back. A position head's offset is the unique
nonzero net offset of its position units (0 when all are 0); units with another offset, and
heads whose nonzero offsets disagree, are helpers.

**A look-up** ``A|I_t|B`` of head m with ``B`` carrying ``Pos(d_B)`` finds the key k whose token
``k + d_B`` equals what ``A`` carries; the reader of m's output through a value path of offset
``d_V`` gets the token at ``k + d_V``. It retrieves what followed the matched token when
``d_V > d_B``: the shift sits on the *key path* (``d_B < 0``: the induction head, key = the
previous-token head's output), on the *value path* (``d_V > 0``: the mirrored circuit, a
self-match read through a next-token head, ``O1*O2``) or on both. The query ``A`` is the
current token (``Pos(0)``: a first hop) or a previous look-up's result (``Look``: the next hop of
a chain, checked the same way).

**Kinds** (the canonical units, alpha .. delta generalised): ``copy``: an unembedding ``P|I_t``
whose path carries a look-up that retrieves a later token; ``match``: the look-up scores on that
chain (every hop); ``shift``: the position units of the heads the chain shifts through (key
paths, value paths, relays); ``iwl``: the unembedding ``I|C``. The circuit's depth is its number
of chained look-ups (``hops``).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

Head = tuple[int, int]  # (layer, head)


@dataclasses.dataclass(frozen=True)
class Pos:
    d: int                      # carries the token at q + d


@dataclasses.dataclass(frozen=True)
class Look:
    head: Head                  # the look-up head
    d: int                      # the value path's offset
    value: tuple[Head, ...]     # the position heads on the value path and the relays after it


def is_position(family: str) -> bool:
    return family == "I_p" or family == "M" or family.startswith("M^")


def selection_offset(family: str, n_pos: int | None, causal: bool) -> int:
    """The key's offset from the query a position selection scores (``M^j``: -j, module doc)."""
    j = 0 if family == "I_p" else 1 if family == "M" else int(family[2:])
    if not causal and n_pos is not None and 2 * j > n_pos:
        return n_pos - j
    return -j


def offset_text(o: int) -> str:
    return f"offset {o:+d} ({'self' if o == 0 else 'back' if o < 0 else 'forward'})"


class Roles:
    """The heads' types and the units' kinds and descriptions (module docstring); ``us`` are
    ``circuits.Unit``s, read in layer order."""

    def __init__(self, us: Sequence, n_pos: int | None = None, causal: bool = False):
        self.offset: dict[Head, int] = {}
        self.looks: dict[Head, list] = {}
        self.pos_units: dict[Head, list] = {}
        self.net: dict[str, int] = {}
        self.kind: dict[str, str] = {}
        self.what: dict[str, str] = {}
        self.hops: dict[str, int] = {}
        layered = sorted((u for u in us if u.layer is not None), key=lambda u: u.layer)
        for layer in sorted({u.layer for u in layered}):
            for u in (u for u in layered if u.layer == layer):
                self._type_unit(u, n_pos, causal)
            for h in {u.owner for u in layered if u.layer == layer}:
                self._type_head(h)
        for u in us:
            if u.layer is None:
                self._readout(u)

    def carry(self, path: Sequence[int]) -> Pos | Look | None:
        """What ``path`` carries (module docstring), from the heads typed so far."""
        heads = self._heads_of(path)
        odd = [i for i, h in enumerate(heads) if h not in self.offset]
        if not odd:
            return Pos(sum(self.offset[h] for h in heads))
        i = odd[0]
        m, after = heads[i], heads[i + 1:]
        if len(odd) > 1 or m not in self.looks or any(self.offset[h] for h in after):
            return None
        before = heads[:i]
        return Look(m, sum(self.offset[h] for h in before), tuple(before + after))

    def _type_unit(self, u, n_pos, causal) -> None:
        a, b = self.carry(u.path_q), self.carry(u.path_k)
        if is_position(u.family) and isinstance(a, Pos) and isinstance(b, Pos):
            self.net[u.name] = selection_offset(u.family, n_pos, causal) + a.d - b.d
            self.pos_units.setdefault(u.owner, []).append(u)
            self.what[u.name] = offset_text(self.net[u.name])
        elif u.family == "I_t" and a is not None and isinstance(b, Pos):
            self.looks.setdefault(u.owner, []).append((u, a, b))
            self.what[u.name] = "token match"

    def _type_head(self, h: Head) -> None:
        if h not in self.pos_units:
            return
        nets = {self.net[u.name] for u in self.pos_units[h]}
        nonzero = nets - {0}
        if h in self.looks:
            # a shift with a same-token bias (every token score compares the tokens at the
            # same offset, a == b) is a position head; the bias is a helper. A look-up with a
            # shift elsewhere (a != b) or no shift at all stays a look-up.
            if len(nonzero) != 1 or any(a != b for _, a, b in self.looks[h]):
                return
            for u, _, _ in self.looks.pop(h):
                self.what[u.name] = "same-token bias of a position head"
        if len(nonzero) <= 1:
            self.offset[h] = nonzero.pop() if nonzero else 0

    def _mark_shifts(self, heads: Sequence[Head]) -> None:
        for h in heads:
            for u in self.pos_units[h]:
                if self.net[u.name] == self.offset[h]:
                    self.kind[u.name] = "shift"

    def _chain(self, look: Look) -> int | None:
        """Hops of the longest canonical chain ending in ``look`` (None: none), marked."""
        best = None
        for u, a, b in self.looks.get(look.head, []):
            if look.d <= b.d:
                continue
            if a == Pos(0):
                hops = 1
            elif isinstance(a, Look):
                inner = self._chain(a)
                if inner is None:
                    continue
                hops = inner + 1
            else:
                continue
            self.kind[u.name] = "match"
            where = ("key and value paths" if b.d and look.d else
                     "key path" if b.d else "value path")
            self.what[u.name] = f"hop {hops} match, shift on the {where}"
            self.hops[u.name] = hops
            self._mark_shifts(self._heads_of(u.path_k) + list(look.value))
            if isinstance(a, Pos):
                self._mark_shifts(self._heads_of(u.path_q))
            best = hops if best is None else max(best, hops)
        return best

    @staticmethod
    def _heads_of(path: Sequence[int]) -> list[Head]:
        return [(l, h - 1) for l, h in enumerate(path) if h > 0]

    def _readout(self, u) -> None:
        path = u.name[2:].rsplit("|", 1)[0]
        if u.family == "C" and not any(u.path_q):
            self.kind[u.name] = "iwl"
            self.what[u.name] = "in-weights association"
            return
        c = self.carry(u.path_q)
        if u.family != "I_t" or not isinstance(c, Look):
            return
        hops = self._chain(c)
        if hops is not None:
            n = len(self._heads_of(u.path_q))
            self.kind[u.name] = "copy"
            self.what[u.name] = (f"{hops}-hop readout through {path} "
                                 f"({n} head{'s' if n > 1 else ''})")
            self.hops[u.name] = hops
