"""The exact population of associative recall as a weighted sum over orbit classes whose number
does not grow with the vocabulary (docs/imir.md, section 9).

A class is one orbit of the task's symmetry group (association-preserving token relabellings and
cyclic rotations; ``population.canonical_form`` is its representative). Its probability is a
closed-form function of the sizes and the traced task parameters,
``factor * f_r^a (1 - f_r)^c f_v^d (1 - f_v)^e`` (``RecallClasses.probs``), obtained by walking
the sampler's draws (``sampling.assemble``) with every draw that only picks a group element
pinned (rotation, cycle, orientation, rare token) and the varied partners enumerated by what they
hit, not by their id: a token of a cycle already in the sequence (probability ``1 / (n_common -
2)`` each) or a fresh cycle (``2 u / (n_common - 2)``, ``u`` untouched cycles). So the number of
classes depends on the number of blocks and on ``b`` only; ``enumerate_support`` needs
``(n_common - 2)^items`` draws for the same population.

The walk, for ``BlockListSpec(kind="recall", offsets="cyclic")``: the ``b`` relevant blocks take
one of the ``C(n - 1, b)`` slot sets (uniform), distractor ``j`` the ``j``-th other slot (the items
are exchangeable, so this is the uniform permutation's law); item ``i`` is rare (``f_r``; fresh
rare tokens) or common on cycle ``i``, first token ``2 i``, partner ``2 i + 1`` (faithful,
``1 - f_v``) or a varied partner (``f_v``).
"""
from __future__ import annotations

import dataclasses
import itertools
from math import comb

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.tasks.base import TaskParams
from mechjax.tasks.blocklist.population import canonical_form
from mechjax.tasks.blocklist.spec import BlockListSpec


@dataclasses.dataclass(frozen=True)
class RecallClasses:
    """``N`` orbit classes: representatives (query last) and their probability polynomials.

    ``rel_exp [N, 2]``: the relevant item's (rare, varied) flags; ``dist_exp [N, 4]``: distractor
    counts (rare, common, varied, faithful). ``probs`` multiplies them out; ``given_rare`` drops
    the relevant item's rare draw (the distractors keep the training law).
    """

    tokens: np.ndarray      # [N, T] int32
    target: np.ndarray      # [N]
    is_rare: np.ndarray     # [N] relevant item rare
    factor: np.ndarray      # [N] float64: slot and collision probabilities
    rel_exp: np.ndarray     # [N, 2] int
    dist_exp: np.ndarray    # [N, 4] int

    @property
    def size(self) -> int:
        return int(self.target.shape[0])

    def _dist(self, task_params: TaskParams, dtype) -> jax.Array:
        fr = jnp.asarray(task_params["f_r"], dtype)
        fv = jnp.asarray(task_params["f_v"], dtype)
        e = jnp.asarray(self.dist_exp, dtype)
        return (jnp.asarray(self.factor, dtype) * fr ** e[:, 0] * (1 - fr) ** e[:, 1]
                * fv ** e[:, 2] * (1 - fv) ** e[:, 3])

    def probs(self, task_params: TaskParams, dtype=jnp.float32) -> jax.Array:
        """``[N]`` exact class probabilities (sum to 1), traced in ``f_r``, ``f_v``."""
        fr = jnp.asarray(task_params["f_r"], dtype)
        fv = jnp.asarray(task_params["f_v"], dtype)
        rare, varied = (jnp.asarray(self.rel_exp[:, j], dtype) for j in range(2))
        rel = rare * fr + (1 - rare) * (1 - fr) * (varied * fv + (1 - varied) * (1 - fv))
        return rel * self._dist(task_params, dtype)

    def given_rare(self, task_params: TaskParams, dtype=jnp.float32) -> jax.Array:
        """``[N]`` ``P(class | relevant item rare)`` (zero on common classes; defined at
        ``f_r = 0``)."""
        return jnp.asarray(self.is_rare, dtype) * self._dist(task_params, dtype)


def _check(spec: BlockListSpec) -> None:
    if spec.kind != "recall" or spec.offsets != "cyclic" or spec.biased or spec.cyc != 2:
        raise ValueError("recall_classes covers kind='recall', offsets='cyclic', cycle_len=2, "
                         f"biased=False; got kind={spec.kind!r}, offsets={spec.offsets!r}, "
                         f"cycle_len={spec.cyc}, biased={spec.biased}")


def _partners(types: tuple[int, ...], n_cycles: int):
    """Every joint outcome of the varied partners: ``(partner token per item or None,
    probability)``. ``types[i]``: 0 rare, 1 common faithful, 2 common varied."""
    n_other = 2 * n_cycles - 2

    def walk(i, touched, chosen, p):
        if i == len(types):
            yield tuple(chosen), p
            return
        if types[i] != 2:
            yield from walk(i + 1, touched, chosen + [None], p)
            return
        for c in sorted(touched - {i}):
            for tok in (2 * c, 2 * c + 1):
                yield from walk(i + 1, touched, chosen + [tok], p / n_other)
        untouched = n_cycles - len(touched)
        if untouched > 0:
            fresh = min(set(range(n_cycles)) - touched)
            yield from walk(i + 1, touched | {fresh}, chosen + [2 * fresh],
                            p * 2 * untouched / n_other)

    common = {i for i, ty in enumerate(types) if ty > 0}
    yield from walk(0, common, [], 1.0)


def recall_classes(spec: BlockListSpec, with_relevant: bool = True) -> RecallClasses:
    """The orbit classes of ``spec`` (see module docstring). ``with_relevant=False``: the
    relevant blocks replaced by copies of distractor 1's block, as ``assemble`` does (the
    in-weights read-off)."""
    _check(spec)
    n, b = spec.n_blocks, spec.burstiness
    n_items = spec.n_items
    if not with_relevant and n_items < 2:
        raise ValueError("with_relevant=False needs a distractor block (n_blocks - 1 > b)")
    slot_sets = list(itertools.combinations(range(n - 1), b))
    p_slots = 1.0 / comb(n - 1, b)
    merged: dict[tuple, float] = {}
    for types in itertools.product((0, 1, 2), repeat=n_items):
        for partners, p in _partners(types, spec.n_cycles):
            blocks, rare_next = [], spec.n_common
            for i, ty in enumerate(types):
                if ty == 0:
                    blocks.append((rare_next, rare_next + 1))
                    rare_next += 2
                else:
                    blocks.append((2 * i, 2 * i + 1 if ty == 1 else partners[i]))
            rel, others = blocks[0], blocks[1:]
            fill = rel if with_relevant else others[0]
            rare = [int(ty == 0) for ty in types[1:]]
            dist = (sum(rare), len(rare) - sum(rare), sum(ty == 2 for ty in types[1:]),
                    sum(ty == 1 for ty in types[1:]))
            rel_e = (int(types[0] == 0), int(types[0] == 2))
            # with the relevant blocks, distractor j can take the j-th free slot (the items
            # are exchangeable); without, distractor 1's block is special, so the others are
            # placed in every order
            orders = [others] if with_relevant else list(itertools.permutations(others))
            for slots in slot_sets:
                for order in orders:
                    it = iter(order)
                    ctx = [fill if s in slots else next(it) for s in range(n - 1)]
                    seq = np.array([x for blk in ctx for x in blk] + [rel[0]])
                    canon = tuple(canonical_form(spec, seq, rel[1]))
                    key = (canon, rel_e, dist)
                    merged[key] = merged.get(key, 0.0) + p * p_slots / len(orders)
    keys = sorted(merged)
    t = spec.seq_len
    toks = np.array([k[0] for k in keys], np.int32)
    return RecallClasses(tokens=toks[:, :t], target=toks[:, t],
                         is_rare=np.array([k[1][0] for k in keys], np.int32),
                         factor=np.array([merged[k] for k in keys]),
                         rel_exp=np.array([k[1] for k in keys], np.int32),
                         dist_exp=np.array([k[2] for k in keys], np.int32))
