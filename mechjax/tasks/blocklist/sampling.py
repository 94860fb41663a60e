"""Block-list sequences as pure functions of independent categorical draws: the draws
(``variables``, ``var_probs``, ``draw``), one sequence from them (``assemble``), and Monte
Carlo batches (``to_batch``, ``sample``). Enumeration reuses the same ``assemble``
(``population``)."""
from __future__ import annotations

import dataclasses
from typing import Mapping

import jax
import jax.numpy as jnp

from mechjax.tasks.base import Batch, TaskParams
from mechjax.tasks.blocklist.spec import BlockListSpec


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

    rs = jnp.stack(draws)
    # The carry starts from the draws (all >= 0, so every entry is False) rather than a constant,
    # so that under shard_map (run_sweep's seed axis) it has the draws' varying type, as the
    # scan's output carry does.
    used0 = jnp.zeros((n,), bool) | (rs[:1] < 0)
    _, out = jax.lax.scan(body, used0, rs)
    return out


def _items(spec: BlockListSpec, d: Mapping[str, jax.Array]
           ) -> tuple[list[jax.Array], list[jax.Array]]:
    """The items (token chains ``[item_len]``, item 0 the relevant one) and their rare flags."""
    n_c, l = spec.n_common, spec.cyc
    lens = spec.item_lens
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
    return items, rare_flags


def _context(spec: BlockListSpec, d: Mapping[str, jax.Array], items: list[jax.Array],
             with_relevant: bool) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The shuffled context blocks ``[n_ctx_slots, k]``, the query ``[k - 1]`` and the target."""
    k = spec.block_len
    rel = items[0]
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
    return ctx[order], query.astype(jnp.int32), target


def _layout(spec: BlockListSpec, d: Mapping[str, jax.Array], ctx: jax.Array, query: jax.Array
            ) -> tuple[jax.Array, jax.Array]:
    """The sequence ``tokens [T]`` (offsets applied) and the query position."""
    k = spec.block_len
    if spec.offsets == "linear_gap":
        counts = jnp.zeros((spec.n_blocks,), jnp.int32)
        for i in range(spec.n_pad):
            counts = counts.at[d[f"gap{i}"]].add(1)
        gaps = jnp.cumsum(counts)
        tokens = jnp.full((spec.seq_len,), spec.pad, jnp.int32)
        for j in range(spec.n_ctx_slots):
            tokens = jax.lax.dynamic_update_slice(tokens, ctx[j], (j * k + gaps[j],))
        tokens = jax.lax.dynamic_update_slice(tokens, query, (spec.n_ctx_slots * k + gaps[-1],))
        return tokens, jnp.int32(spec.seq_len - 1)
    tokens = jnp.concatenate([ctx.reshape(-1), query])
    rot = d["rot"] if spec.offsets == "cyclic" else jnp.int32(0)
    tokens = jnp.roll(tokens, rot)
    return tokens, ((spec.base_len - 1 + rot) % spec.base_len).astype(jnp.int32)


def assemble(spec: BlockListSpec, d: Mapping[str, jax.Array], with_relevant: bool = True,
             ) -> dict[str, jax.Array]:
    """One sequence from scalar draws ``d`` (vmap for batches). Pure and jittable.

    ``with_relevant=False`` replaces the relevant blocks by copies of distractor 0's block (an
    in-weights-only evaluation: the answer is not in the context).
    Returns ``tokens [T]``, ``target``, ``query_pos``, ``is_rare``.
    """
    items, rare_flags = _items(spec, d)
    ctx, query, target = _context(spec, d, items, with_relevant)
    tokens, qpos = _layout(spec, d, ctx, query)
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
