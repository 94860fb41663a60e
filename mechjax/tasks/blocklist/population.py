"""The exact population of a tiny block-list task: every distinct sequence with its
probability as a traced function of the task parameters (``Support``, ``enumerate_support``),
and its quotients by the task's symmetries."""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.tasks.base import Batch, TaskParams
from mechjax.tasks.blocklist.sampling import Var, assemble, to_batch, var_probs, variables
from mechjax.tasks.blocklist.spec import BlockListSpec


@dataclasses.dataclass(frozen=True)
class Support:
    """Every distinct outcome of a tiny task, with probabilities as traced functions of params.

    ``probs = count * prod(uniform 1/size) * prod_v var_probs(v)[param_draws[:, v]]``.
    """

    batch: Batch                         # to_batch of the distinct outcomes
    count: np.ndarray                    # [N] multiplicity among equally likely uniform combos
    base: float                          # probability of one uniform combination
    param_vars: tuple[Var, ...]          # Bernoulli draws the probability depends on
    param_draws: np.ndarray              # [N, len(param_vars)]

    def probs(self, task_params: TaskParams) -> jax.Array:
        """``[N]`` exact probabilities (sum to 1); differentiable/vmappable in the params."""
        p = jnp.asarray(self.count, jnp.float32) * self.base
        for j, v in enumerate(self.param_vars):
            p = p * var_probs(v, task_params)[self.param_draws[:, j]]
        return p

    def weighted(self, task_params: TaskParams) -> Batch:
        """The batch with ``weights`` scaled by each outcome's probability (a population batch)."""
        out = dict(self.batch)
        out["weights"] = self.batch["weights"] * self.probs(task_params)[:, None]
        return out

    @property
    def size(self) -> int:
        return int(self.count.shape[0])

    def select(self, rows: np.ndarray, scale: float = 1.0) -> "Support":
        """The outcomes ``rows`` (bool mask or indices), probabilities multiplied by ``scale``."""
        rows = np.arange(self.size)[np.asarray(rows)]
        return Support(batch={k: v[rows] for k, v in self.batch.items()},
                       count=self.count[rows], base=self.base * scale,
                       param_vars=self.param_vars, param_draws=self.param_draws[rows])

    def prune(self, task_params: TaskParams) -> "Support":
        """Drops the outcomes that have probability 0 at these (concrete) parameter values."""
        return self.select(np.asarray(self.probs(task_params)) > 0)

    def rotation_quotient(self) -> "Support":
        """One representative per cyclic-rotation orbit (query at the end), weighted by the orbit
        size. Exact for expectations of rotation-invariant functions, e.g. the loss and the
        manifold-coordinate gradient at weights on the manifold (docs/imir.md, section 4); not for
        the full weight gradient. Needs ``offsets='cyclic'``."""
        t = self.batch["tokens"].shape[1]
        return self.select(np.asarray(self.batch["query_pos"]) == t - 1, scale=float(t))

    def orbit_quotient(self, spec: BlockListSpec) -> "Support":
        """One representative per orbit of the whole symmetry group (token relabellings that
        preserve the association, and cyclic rotations), weighted by the orbit's mass.

        Canonical form: rotate the query to the end, then relabel tokens in order of first
        appearance (the target last): each newly seen common cycle becomes the next cycle,
        rotated so the first-seen member is its first token; rare and condition tokens take the
        next free id of their class. The relabelling is a group element, and the canonical form
        is the same for every member of an orbit, so expectations of invariant functions (the
        loss and the manifold-coordinate gradient on the manifold) are exact. Needs ``cyclic``.
        """
        if spec.offsets != "cyclic":
            raise ValueError("orbit_quotient needs offsets='cyclic'")
        tok = np.asarray(self.batch["tokens"])
        qpos = np.asarray(self.batch["query_pos"])
        tgt = np.asarray(self.batch["target"])
        t = tok.shape[1]
        rows = [canonical_form(spec, np.roll(row, t - 1 - q), y)
                for row, q, y in zip(tok, qpos, tgt)]
        rows = np.asarray(rows, np.int32)
        key = np.concatenate([rows, np.asarray(self.batch["is_rare"])[:, None],
                              self.param_draws], 1)
        uniq, inverse = np.unique(key, axis=0, return_inverse=True)
        count = np.zeros(len(uniq), np.float64)
        np.add.at(count, inverse.reshape(-1), self.count)
        seqs = {"tokens": jnp.asarray(uniq[:, :t]), "target": jnp.asarray(uniq[:, t]),
                "query_pos": jnp.full((len(uniq),), t - 1, jnp.int32),
                "is_rare": jnp.asarray(uniq[:, t + 1])}
        return Support(batch=to_batch(seqs), count=count, base=self.base,
                       param_vars=self.param_vars, param_draws=uniq[:, t + 2:])


def canonical_form(spec: BlockListSpec, seq: np.ndarray, target: int) -> list[int]:
    """``seq [T]`` (query last) and its ``target`` relabelled by first appearance (the target
    last): each newly seen common cycle becomes the next cycle, rotated so its first-seen member
    is its first token; rare and condition tokens take the next free id of their class; pads
    stay. Returns ``T + 1`` ids (the relabelled sequence, then the target). The relabelling is a
    symmetry of the task, and equal for every member of an orbit (``orbit_quotient``)."""
    l, n_c = spec.cyc, spec.n_common
    starts = {"rare": spec.n_common, "cond": spec.n_common + spec.n_rare}
    cyc_map: dict[int, tuple[int, int]] = {}
    other: dict[int, int] = {}
    counters = {"rare": 0, "cond": 0}
    out = []
    for x in list(seq) + [target]:
        x = int(x)
        if x < n_c:
            c, j = divmod(x, l)
            if c not in cyc_map:
                cyc_map[c] = (len(cyc_map), j)
            nc, j0 = cyc_map[c]
            out.append(nc * l + (j - j0) % l)
        elif x >= spec.n_tokens:  # pad
            out.append(x)
        else:
            cls = "rare" if x < spec.n_common + spec.n_rare else "cond"
            if x not in other:
                other[x] = starts[cls] + counters[cls]
                counters[cls] += 1
            out.append(other[x])
    return out


def support_size(spec: BlockListSpec, pinned: tuple[str, ...] = ()) -> int:
    """Number of draw combinations ``enumerate_support`` visits (before merging duplicates)."""
    return int(np.prod([v.size for v in _variables(spec, pinned)], dtype=np.float64))


def _variables(spec: BlockListSpec, pinned: tuple[str, ...]) -> tuple[Var, ...]:
    return tuple(Var(v.name, 1, v.param) if v.param is None and _pinned(v.name, pinned) else v
                 for v in variables(spec))


@functools.lru_cache(maxsize=32)
def _assembler(spec: BlockListSpec, with_relevant: bool):
    return jax.jit(jax.vmap(lambda dd: assemble(spec, dd, with_relevant)))


# Uniform draws that only pick a group element (a rotation, which cycle / orientation an item
# takes, which rare tokens): every value gives a sequence in the orbit of value 0.
SYMMETRY_DRAWS = ("rot", "cyc", "ori", "raretok")


def _pinned(name: str, pinned: tuple[str, ...]) -> bool:
    return any(name == p or (name.startswith(p) and name[len(p):][:1].isdigit())
               for p in pinned)


@functools.lru_cache(maxsize=16)
def enumerate_support(spec: BlockListSpec, with_relevant: bool = True,
                      max_combos: int = 4_000_000, chunk: int = 200_000,
                      pinned: tuple[str, ...] = ()) -> Support:
    """Every sequence of a tiny ``spec`` with its exact probability, duplicates merged (cached
    per spec; treat the result as read-only). ``pinned``: uniform draws (names, or prefixes
    followed by an item index) held at value 0 instead of enumerated (``symmetric_support``)."""
    vs = _variables(spec, pinned)
    total = support_size(spec, pinned)
    if total > max_combos:
        raise ValueError(f"{total} draw combinations exceed max_combos={max_combos}; shrink the "
                         "spec (fewer blocks, smaller pools) or raise max_combos")
    uni = [i for i, v in enumerate(vs) if v.param is None]
    par = [i for i, v in enumerate(vs) if v.param is not None]
    grids = np.stack(np.meshgrid(*[np.arange(v.size) for v in vs], indexing="ij"),
                     -1).reshape(-1, len(vs)).astype(np.int32)
    build = _assembler(spec, with_relevant)
    parts = []
    for s in range(0, grids.shape[0], chunk):
        g = grids[s: s + chunk]
        out = build({v.name: jnp.asarray(g[:, i]) for i, v in enumerate(vs)})
        parts.append(np.concatenate(
            [np.asarray(out["tokens"]), np.asarray(out["target"])[:, None],
             np.asarray(out["query_pos"])[:, None], np.asarray(out["is_rare"])[:, None],
             g[:, par]], axis=1))
    rows = np.concatenate(parts)
    uniq, count = np.unique(rows, axis=0, return_counts=True)
    seq_len = spec.seq_len
    seqs = {"tokens": jnp.asarray(uniq[:, :seq_len]), "target": jnp.asarray(uniq[:, seq_len]),
            "query_pos": jnp.asarray(uniq[:, seq_len + 1]),
            "is_rare": jnp.asarray(uniq[:, seq_len + 2])}
    base = 1.0 / float(np.prod([vs[i].size for i in uni], dtype=np.float64))
    return Support(batch=to_batch(seqs), count=count, base=base,
                   param_vars=tuple(vs[i] for i in par), param_draws=uniq[:, seq_len + 3:])


def symmetric_support(spec: BlockListSpec, with_relevant: bool = True,
                      max_combos: int = 4_000_000) -> Support:
    """``orbit_quotient`` of the support enumerated with the ``SYMMETRY_DRAWS`` pinned: the same
    orbits and orbit masses, from far fewer combinations (a 4-block recall spec: ~10^4 instead of
    ~10^10). Exact for what ``orbit_quotient`` is exact for. Needs ``offsets='cyclic'`` and a
    kind without condition tokens (their draws are not pinned, so any kind works, but only
    recall and khop save much)."""
    return enumerate_support(spec, with_relevant, max_combos,
                             pinned=SYMMETRY_DRAWS).orbit_quotient(spec)
