"""Block-list tasks (IMIR, arXiv 2607.11875): jittable samplers and exact enumeration.

A sequence is a list of ``n_blocks`` blocks of ``block_len`` tokens; the last block is a partial
query (``block_len - 1`` tokens) and the target completes it. Instances (``BlockListSpec.kind``):

  recall  ``[a b] ... [a] -> b``                       (k = 2; 1-hop induction)
  khop    ``[a b] ... [b c] ... [a] -> c``             (k = 2; ``hops`` = 1..3 chained look-ups)
  ngram   ``[x1 .. xl] ... [x1 .. x(l-1)] -> xl``      (k = l; ``confusers`` share x(l-1))
  cond    ``[c key value] ... [c' key value'] ... [c key] -> value``  (k = 3; conditions c)
  ioi     ``[A B] ... [B] -> A`` or ``[A] -> B``       (k = 2; the query is either name)

Tokens. ids ``[0, n_common)`` are *common*: they form cycles of length ``cycle_len`` under the
association map ``C`` (``C(c*l + j) = c*l + (j+1) % l``; ``l = 2`` is a pairing). ids
``[n_common, n_common + n_rare)`` are *rare*: drawn without replacement per sequence, so they carry
no identity across sequences. ``cond`` adds ``n_cond`` condition tokens, ``linear_gap`` a pad.

Each sequence is built from *items* (chains of tokens). An item is rare with probability ``f_r``
(all its tokens fresh rare tokens) or common (a distinct cycle, uniform start ``x0``, then
``x(i+1) = C(x(i))``, except that with probability ``f_v`` a link's partner is replaced by a uniform
common token outside ``x(i)``'s cycle: within-class variability). The relevant item's blocks appear
``burstiness`` times; distractor items fill the other context slots; context blocks are shuffled.

Offsets (``BlockListSpec.offsets``):
  cyclic      the whole sequence (length T = n*k - 1) is rotated by a uniform offset in [0, T); the
              readout is the rotated query position. With non-causal attention and cyclic
              positions this is an exact symmetry (the IMIR theory needs it).
  fixed       no rotation: the query ends the sequence (breaks the cyclic position symmetry).
  linear_gap  a linear sequence: ``n_pad`` pad tokens dropped uniformly into the n gaps before
              the blocks; the query ends the sequence (for causal models).

Sampling and enumeration share one code path: a sequence is a pure function (``assemble``) of a
fixed list of independent categorical draws (``variables``); each draw is uniform or a Bernoulli
of a task parameter. ``sample`` draws them with ``jax.random``; ``enumerate_support`` lists every
combination, so tiny configurations have an exact population distribution whose probabilities are
traced functions of the task parameters (``support_probs``).

Batch (``readout=None``): ``tokens [b, T]``, ``labels [b, T]`` (the target at the query position,
0 elsewhere), ``weights [b, T]`` (one-hot at the query position), plus ``query_pos [b]``,
``target [b]``, ``is_rare [b]`` (the relevant item is rare).
Task parameters (traced scalars): ``f_r``, ``f_v`` and, with ``biased=True``, ``key_bias`` (the
probability that the relevant common item is forced onto cycle 0: an association-*breaking* bias).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Literal, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.tasks.base import Batch, Task, TaskParams

Kind = Literal["recall", "khop", "ngram", "cond", "ioi"]
Offsets = Literal["cyclic", "fixed", "linear_gap"]
KINDS = ("recall", "khop", "ngram", "cond", "ioi")
OFFSETS = ("cyclic", "fixed", "linear_gap")


@dataclasses.dataclass(frozen=True)
class BlockListSpec:
    """Static description of a block-list task (shapes and code paths; hashable).

    Attributes:
      kind: which instance (see module docstring).
      n_common, n_rare: sizes of the common and rare token pools.
      n_blocks: n, the number of blocks including the partial query block.
      block_len: k; ``None`` picks the kind's (2 for recall/khop/ioi, 3 for cond and ngram).
      hops: look-ups chained by ``khop`` (1..3); ``recall`` and ``ioi`` use 1.
      burstiness: b, copies of each relevant block in the context.
      cycle_len: length of the association cycles (``None``: 2, or hops + 1 / block_len if larger).
      n_cond: number of condition tokens (``cond`` only).
      confusers: ``ngram`` distractor blocks sharing the query's last token at the same slot.
      offsets: ``cyclic`` | ``fixed`` | ``linear_gap``.
      n_pad: pad tokens dropped into random gaps (``linear_gap`` only).
      biased: adds the ``key_bias`` task parameter (a symmetry-breaking knob for tests).
      f_r, f_v: defaults of the traced task parameters.
    """

    kind: Kind = "recall"
    n_common: int = 8
    n_rare: int = 8
    n_blocks: int = 4
    block_len: int | None = None
    hops: int = 1
    burstiness: int = 1
    cycle_len: int | None = None
    n_cond: int = 0
    confusers: int = 0
    offsets: Offsets = "cyclic"
    n_pad: int = 0
    biased: bool = False
    f_r: float = 0.5
    f_v: float = 0.0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r}: allowed {KINDS}")
        if self.offsets not in OFFSETS:
            raise ValueError(f"offsets={self.offsets!r}: allowed {OFFSETS}")
        fixed_k = {"recall": 2, "khop": 2, "ioi": 2, "cond": 3}.get(self.kind)
        if self.block_len is None:
            object.__setattr__(self, "block_len", fixed_k or 3)
        if fixed_k is not None and self.block_len != fixed_k:
            raise ValueError(f"kind={self.kind!r} has block_len {fixed_k}, got {self.block_len}")
        if self.kind != "khop" and self.hops != 1:
            raise ValueError(f"hops={self.hops} is only used by kind='khop'")
        if self.kind != "ngram" and self.confusers:
            raise ValueError("confusers is only used by kind='ngram'")
        if not 1 <= self.hops <= 3:
            raise ValueError(f"hops={self.hops}: allowed 1..3")
        if self.block_len < 2:
            raise ValueError(f"block_len={self.block_len}: must be >= 2")
        if self.burstiness < 1:
            raise ValueError(f"burstiness={self.burstiness}: must be >= 1")
        if self.n_dist < 0:
            raise ValueError(
                f"n_blocks={self.n_blocks} leaves {self.n_blocks - 1} context slots, fewer than "
                f"the {self.n_relevant_slots + self.n_conflict + self.confusers} relevant/conflict/"
                "confuser blocks; raise n_blocks or lower burstiness")
        if self.n_common % self.cyc:
            raise ValueError(f"n_common={self.n_common} is not a multiple of cycle_len={self.cyc}")
        if self.n_items > self.n_cycles:
            raise ValueError(f"{self.n_items} items need distinct cycles but n_common/cycle_len = "
                             f"{self.n_cycles}; raise n_common")
        if self.n_rare < sum(self.item_lens):
            raise ValueError(f"n_rare={self.n_rare} < {sum(self.item_lens)} rare tokens a sequence "
                             "may need (all items rare); raise n_rare")
        if self.kind in ("khop", "ngram") and self.cyc < self.rel_len:
            raise ValueError(f"cycle_len={self.cyc} < {self.rel_len} tokens of a relevant chain: "
                             "common chains would repeat tokens")
        if self.n_cycles < 2:
            raise ValueError("within-class variability needs at least 2 association cycles")
        if self.kind == "cond" and self.n_cond < 2:
            raise ValueError(f"cond needs n_cond >= 2 condition tokens, got {self.n_cond}")
        if self.kind != "cond" and self.n_cond:
            raise ValueError("n_cond is only used by kind='cond'")
        if self.offsets != "linear_gap" and self.n_pad:
            raise ValueError("n_pad is only used with offsets='linear_gap'")

    # ---- derived sizes --------------------------------------------------------------------------
    @property
    def cyc(self) -> int:
        if self.cycle_len is not None:
            return self.cycle_len
        need = self.hops + 1 if self.kind == "khop" else (
            self.block_len if self.kind == "ngram" else 2)
        return max(2, need)

    @property
    def n_cycles(self) -> int:
        return self.n_common // self.cyc

    @property
    def rel_len(self) -> int:
        """Tokens in the relevant item's chain."""
        return self.hops + 1 if self.kind == "khop" else (
            self.block_len if self.kind == "ngram" else 2)

    @property
    def other_len(self) -> int:
        return self.block_len if self.kind == "ngram" else 2

    @property
    def n_relevant_slots(self) -> int:
        return self.burstiness * (self.hops if self.kind == "khop" else 1)

    @property
    def n_conflict(self) -> int:
        return 1 if self.kind == "cond" else 0

    @property
    def n_dist(self) -> int:
        return (self.n_blocks - 1 - self.n_relevant_slots - self.n_conflict
                - (self.confusers if self.kind == "ngram" else 0))

    @property
    def n_items(self) -> int:
        """Relevant item, conflict item, confusers, distractors."""
        return 1 + self.n_conflict + (self.confusers if self.kind == "ngram" else 0) + self.n_dist

    @property
    def item_lens(self) -> tuple[int, ...]:
        return (self.rel_len,) + (self.other_len,) * (self.n_items - 1)

    @property
    def n_ctx_slots(self) -> int:
        return self.n_blocks - 1

    @property
    def base_len(self) -> int:
        return self.n_blocks * self.block_len - 1

    @property
    def seq_len(self) -> int:
        return self.base_len + (self.n_pad if self.offsets == "linear_gap" else 0)

    @property
    def n_tokens(self) -> int:
        """Output vocabulary: common, rare and condition tokens."""
        return self.n_common + self.n_rare + self.n_cond

    @property
    def vocab_in(self) -> int:
        return self.n_tokens + (1 if self.offsets == "linear_gap" else 0)

    @property
    def pad(self) -> int | None:
        return self.n_tokens if self.offsets == "linear_gap" else None

    @property
    def rare_ids(self) -> np.ndarray:
        return np.arange(self.n_common, self.n_common + self.n_rare)

    @property
    def cond_ids(self) -> np.ndarray:
        return np.arange(self.n_common + self.n_rare, self.n_tokens)

    def association(self) -> np.ndarray:
        """``C`` as an index map on the output vocabulary (identity outside common tokens)."""
        c = np.arange(self.n_tokens)
        j = np.arange(self.n_common)
        c[: self.n_common] = (j // self.cyc) * self.cyc + (j % self.cyc + 1) % self.cyc
        return c

    def token_classes(self) -> dict[str, np.ndarray]:
        """Orbits of the symmetry group on input tokens."""
        out = {"common": np.arange(self.n_common), "rare": self.rare_ids}
        if self.n_cond:
            out["cond"] = self.cond_ids
        if self.pad is not None:
            out["pad"] = np.array([self.pad])
        return out

    def default_params(self) -> dict[str, float]:
        out = {"f_r": float(self.f_r), "f_v": float(self.f_v)}
        if self.biased:
            out["key_bias"] = 0.0
        return out


# ------------------------------------------------------------------------------------------------
# Random variables: every sequence is assemble(draws), draws independent categoricals
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Var:
    """One categorical draw: uniform on ``[0, size)``, or a Bernoulli of task param ``param``."""

    name: str
    size: int
    param: str | None = None


def variables(spec: BlockListSpec) -> tuple[Var, ...]:
    """The independent draws a sequence of ``spec`` is built from, in a fixed order."""
    vs: list[Var] = []
    if spec.offsets == "cyclic":
        vs.append(Var("rot", spec.base_len))
    if spec.offsets == "linear_gap":
        vs += [Var(f"gap{i}", spec.n_blocks) for i in range(spec.n_pad)]
    vs += [Var(f"slot{i}", spec.n_ctx_slots - i) for i in range(spec.n_ctx_slots)]
    if spec.biased:
        vs.append(Var("bias", 2, "key_bias"))
    for i, length in enumerate(spec.item_lens):
        vs += [Var(f"rare{i}", 2, "f_r"), Var(f"cyc{i}", spec.n_cycles - i),
               Var(f"ori{i}", spec.cyc)]
        for t in range(length - 1):
            vs += [Var(f"flip{i}_{t}", 2, "f_v"),
                   Var(f"repl{i}_{t}", spec.n_common - spec.cyc)]
    vs += [Var(f"raretok{j}", spec.n_rare - j) for j in range(sum(spec.item_lens))]
    if spec.kind == "cond":
        vs += [Var("cond0", spec.n_cond), Var("cond1", spec.n_cond - 1)]
        vs += [Var(f"condd{i}", spec.n_cond) for i in range(spec.n_dist)]
    if spec.kind == "ioi":
        vs.append(Var("which", 2))
    return tuple(vs)


def var_probs(var: Var, task_params: TaskParams) -> jax.Array:
    """Probabilities ``[size]`` of one draw."""
    if var.param is None:
        return jnp.full((var.size,), 1.0 / var.size, jnp.float32)
    p = jnp.asarray(task_params[var.param], jnp.float32)
    return jnp.stack([1.0 - p, p])


def draw(spec: BlockListSpec, key: jax.Array, task_params: TaskParams,
         batch_size: int) -> dict[str, jax.Array]:
    """Independent draws ``{name: int32 [batch_size]}`` (one uniform per draw)."""
    vs = variables(spec)
    u = jax.random.uniform(key, (batch_size, len(vs)))
    out = {}
    for i, v in enumerate(vs):
        if v.param is None:
            out[v.name] = jnp.minimum((u[:, i] * v.size).astype(jnp.int32), v.size - 1)
        else:
            p = jnp.asarray(task_params[v.param], jnp.float32)
            out[v.name] = (u[:, i] < p).astype(jnp.int32)
    return out


def _pick(draws: list[jax.Array], n: int) -> jax.Array:
    """Sequential sampling without replacement: draw i in [0, n - i) indexes the unused ids."""
    if not draws:
        return jnp.zeros((0,), jnp.int32)

    def body(used, r):
        avail = ~used
        rank = jnp.cumsum(avail) - 1
        idx = jnp.argmax(avail & (rank == r)).astype(jnp.int32)
        return used.at[idx].set(True), idx

    _, out = jax.lax.scan(body, jnp.zeros((n,), bool), jnp.stack(draws))
    return out


def assemble(spec: BlockListSpec, d: Mapping[str, jax.Array], with_relevant: bool = True,
             ) -> dict[str, jax.Array]:
    """One sequence from scalar draws ``d`` (vmap for batches). Pure and jittable.

    ``with_relevant=False`` replaces the relevant blocks by copies of distractor 0's block (an
    in-weights-only evaluation: the answer is not in the context).
    Returns ``tokens [T]``, ``target``, ``query_pos``, ``is_rare``.
    """
    k, n_c, l = spec.block_len, spec.n_common, spec.cyc
    lens = spec.item_lens
    # ---- items (chains) ------------------------------------------------------------------------
    cyc_draws = [d[f"cyc{i}"] for i in range(spec.n_items)]
    if spec.biased:
        cyc_draws[0] = jnp.where(d["bias"] == 1, 0, cyc_draws[0])
    cycles = _pick(cyc_draws, spec.n_cycles)
    rare_tok = n_c + _pick([d[f"raretok{j}"] for j in range(sum(lens))], spec.n_rare)
    items, rare_flags, offset = [], [], 0
    for i, length in enumerate(lens):
        x = cycles[i] * l + d[f"ori{i}"]
        chain = [x]
        for t in range(length - 1):
            nxt = (x // l) * l + (x % l + 1) % l
            # repl indexes the common tokens outside x's cycle
            r = d[f"repl{i}_{t}"]
            start = (x // l) * l
            repl = jnp.where(r < start, r, r + l)
            x = jnp.where(d[f"flip{i}_{t}"] == 1, repl, nxt)
            chain.append(x)
        common_chain = jnp.stack(chain)
        rare_chain = rare_tok[offset: offset + length]
        offset += length
        is_rare = d[f"rare{i}"] == 1
        items.append(jnp.where(is_rare, rare_chain, common_chain).astype(jnp.int32))
        rare_flags.append(is_rare)
    rel = items[0]
    # ---- blocks ---------------------------------------------------------------------------------
    blocks: list[jax.Array] = []
    if spec.kind in ("recall", "ioi", "khop"):
        for t in range(spec.hops):
            blocks += [rel[t: t + 2]] * spec.burstiness
        query, target = rel[:1], rel[spec.hops]
        if spec.kind == "ioi":
            which = d["which"]
            query = jnp.where(which == 0, rel[:1], rel[1:2])
            target = jnp.where(which == 0, rel[1], rel[0])
        others = [it for it in items[1:]]
    elif spec.kind == "ngram":
        blocks += [rel] * spec.burstiness
        query, target = rel[: k - 1], rel[k - 1]
        conf = [it.at[k - 2].set(rel[k - 2]) for it in items[1: 1 + spec.confusers]]
        others = conf + items[1 + spec.confusers:]
    else:  # cond
        conds = spec.n_common + spec.n_rare + _pick([d["cond0"], d["cond1"]], spec.n_cond)
        blocks += [jnp.concatenate([conds[:1], rel])] * spec.burstiness
        query, target = jnp.concatenate([conds[:1], rel[:1]]), rel[1]
        conflict = jnp.stack([conds[1], rel[0], items[1][1]])
        dist = [jnp.concatenate([spec.n_common + spec.n_rare + d[f"condd{i}"][None], it])
                for i, it in enumerate(items[2:])]
        others = [conflict] + dist
    n_rel = len(blocks)
    blocks += others
    if not with_relevant:
        if not others:
            raise ValueError("with_relevant=False needs at least one non-relevant block")
        blocks = [others[0]] * n_rel + others
    ctx = jnp.stack([b.astype(jnp.int32) for b in blocks])  # [n_ctx_slots, k]
    order = _pick([d[f"slot{i}"] for i in range(spec.n_ctx_slots)], spec.n_ctx_slots)
    ctx = ctx[order]
    query = query.astype(jnp.int32)
    # ---- layout ---------------------------------------------------------------------------------
    if spec.offsets == "linear_gap":
        counts = jnp.zeros((spec.n_blocks,), jnp.int32)
        for i in range(spec.n_pad):
            counts = counts.at[d[f"gap{i}"]].add(1)
        gaps = jnp.cumsum(counts)
        tokens = jnp.full((spec.seq_len,), spec.pad, jnp.int32)
        for j in range(spec.n_ctx_slots):
            tokens = jax.lax.dynamic_update_slice(tokens, ctx[j], (j * k + gaps[j],))
        tokens = jax.lax.dynamic_update_slice(tokens, query, (spec.n_ctx_slots * k + gaps[-1],))
        qpos = jnp.int32(spec.seq_len - 1)
    else:
        tokens = jnp.concatenate([ctx.reshape(-1), query])
        rot = d["rot"] if spec.offsets == "cyclic" else jnp.int32(0)
        tokens = jnp.roll(tokens, rot)
        qpos = ((spec.base_len - 1 + rot) % spec.base_len).astype(jnp.int32)
    return {"tokens": tokens, "target": target.astype(jnp.int32), "query_pos": qpos,
            "is_rare": rare_flags[0].astype(jnp.int32)}


def to_batch(seqs: Mapping[str, jax.Array]) -> Batch:
    """Batched ``assemble`` output -> a ``Task`` batch (labels/weights one-hot at the query)."""
    tokens = seqs["tokens"]
    onehot = jax.nn.one_hot(seqs["query_pos"], tokens.shape[-1], dtype=jnp.float32)
    labels = jnp.where(onehot > 0, seqs["target"][:, None], 0).astype(jnp.int32)
    return {"tokens": tokens, "labels": labels, "weights": onehot, "query_pos": seqs["query_pos"],
            "target": seqs["target"], "is_rare": seqs["is_rare"]}


def sample(spec: BlockListSpec, key: jax.Array, task_params: TaskParams, batch_size: int,
           with_relevant: bool = True) -> Batch:
    """A batch of ``batch_size`` sequences. Jittable; ``task_params`` may be traced (vmap)."""
    draws = draw(spec, key, task_params, batch_size)
    seqs = jax.vmap(lambda dd: assemble(spec, dd, with_relevant))(draws)
    return to_batch(seqs)


# ------------------------------------------------------------------------------------------------
# Exact enumeration (tiny configurations)
# ------------------------------------------------------------------------------------------------
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
        t, l, n_c = tok.shape[1], spec.cyc, spec.n_common
        starts = {"rare": spec.n_common, "cond": spec.n_common + spec.n_rare}
        rows = []
        for row, q, y in zip(tok, qpos, tgt):
            seq = np.roll(row, t - 1 - q)
            cyc_map: dict[int, tuple[int, int]] = {}
            other: dict[int, int] = {}
            counters = {"rare": 0, "cond": 0}
            out = []
            for x in list(seq) + [y]:
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
            rows.append(out)
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


def support_size(spec: BlockListSpec) -> int:
    """Number of draw combinations ``enumerate_support`` visits (before merging duplicates)."""
    return int(np.prod([v.size for v in variables(spec)], dtype=np.float64))


@functools.lru_cache(maxsize=32)
def _assembler(spec: BlockListSpec, with_relevant: bool):
    return jax.jit(jax.vmap(lambda dd: assemble(spec, dd, with_relevant)))


@functools.lru_cache(maxsize=16)
def enumerate_support(spec: BlockListSpec, with_relevant: bool = True,
                      max_combos: int = 4_000_000, chunk: int = 200_000) -> Support:
    """Every sequence of a tiny ``spec`` with its exact probability, duplicates merged (cached
    per spec; treat the result as read-only)."""
    vs = variables(spec)
    total = support_size(spec)
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


# ------------------------------------------------------------------------------------------------
# Task objects
# ------------------------------------------------------------------------------------------------
def blocklist_task(spec: BlockListSpec, batch_size: int = 256, eval_size: int = 1024) -> Task:
    """A ``Task`` for ``spec``. Eval pools: ``train`` (training distribution), ``icl_rare``
    (every relevant item rare: only in-context learning can answer), ``icl_common`` (every item
    common), ``iwl`` (common items, relevant blocks removed from the context: only in-weights
    learning can answer; needs a distractor block)."""

    def train(key, task_params):
        return sample(spec, key, task_params, batch_size)

    def pool(f_r: float | None, with_relevant: bool = True):
        def fn(key, task_params):
            tp = dict(task_params)
            if f_r is not None:
                tp["f_r"] = jnp.asarray(f_r, jnp.float32)
            return sample(spec, key, tp, eval_size, with_relevant)
        return fn

    pools = {"train": pool(None), "icl_rare": pool(1.0), "icl_common": pool(0.0)}
    if spec.n_items > 1:
        pools["iwl"] = pool(0.0, with_relevant=False)
    return Task(name=f"blocklist_{spec.kind}", sample=train, eval_pools=pools, readout=None,
                default_params=spec.default_params(), seq_len=spec.seq_len,
                vocab_size=spec.vocab_in, vocab_out=spec.n_tokens)


def relabel(spec: BlockListSpec, seed: int) -> np.ndarray:
    """A random association-preserving relabelling of the input vocabulary (an index map ``g``;
    token t becomes g[t]): permutes cycles, rotates each cycle, permutes rare and condition
    tokens. The task distribution is invariant under every such g."""
    rng = np.random.default_rng(seed)
    g = np.arange(spec.vocab_in)
    l, m = spec.cyc, spec.n_cycles
    cyc_perm, rot = rng.permutation(m), rng.integers(0, l, m)
    for c in range(m):
        for j in range(l):
            g[c * l + j] = cyc_perm[c] * l + (j + rot[c]) % l
    g[spec.rare_ids] = rng.permutation(spec.rare_ids)
    if spec.n_cond:
        g[spec.cond_ids] = rng.permutation(spec.cond_ids)
    return g

