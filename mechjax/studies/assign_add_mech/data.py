"""Fixed inputs of the mechanism measures: probe sequences, literal twins, the core inputs
``PAD*12 + n m =`` over all pairs, and the default architecture."""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from mechjax.models.config import ModelConfig
from mechjax.tasks import assign_add as aa


def resolve_cfg(cfg: ModelConfig | None) -> ModelConfig:
    """``cfg``, or the authors' architecture when it is None."""
    return aa.model_config() if cfg is None else cfg


class ProbeData(NamedTuple):
    tokens: jax.Array  # [b, 16] 2-var sequences, allowed operands, training pairs
    labels: jax.Array  # [b]
    value_pos: jax.Array  # [b, 2] positions of the two operand values
    value_mask: jax.Array  # [b, 12] True at prefix value positions
    owner: jax.Array  # [b, 12] variable index (0..11) owning each value position (0 elsewhere)


def probe_data(key: jax.Array, n: int = 1024, split: aa.PairSplit | None = None,
               f: float = 0.7) -> ProbeData:
    """``n`` 2-var sequences (allowed operands, training pairs) with their value positions."""
    split = aa.authors_split() if split is None else split
    seqs = aa.sample_sequences(key, n, (0.0, 0.0, 0.0, 1.0), split, f, False, "allowed")
    return _with_positions(seqs["tokens"], seqs["label"], seqs["value_pos"])


def _with_positions(tokens: jax.Array, labels: jax.Array, value_pos: jax.Array) -> ProbeData:
    prefix = tokens[:, :aa.PREFIX_LEN]
    prev = jnp.concatenate([jnp.full_like(prefix[:, :1], aa.PAD), prefix[:, :-1]], axis=1)
    mask = (prefix < aa.P) & (prev >= aa.VAR0)
    owner = jnp.where(mask, prev - aa.VAR0, 0)
    return ProbeData(tokens, labels, value_pos, mask, owner)


class PairedData(NamedTuple):
    variable: jax.Array  # [b, 16] sequences with variable operands
    literal: jax.Array  # [b, 16] the same sequences, operand variables replaced by their values
    pairs: jax.Array  # [b, 2] the addition pairs (n1, n2)


def paired_data(key: jax.Array, n: int = 1024, kinds=(0.0, 1.0, 1.0, 0.0),
                split: aa.PairSplit | None = None, f: float = 0.7) -> PairedData:
    """``n`` sequences with variable operands (default 1-var, LHS and RHS 50/50; allowed operands,
    training pairs) and their literal twins: same prefix, operands replaced by their values."""
    split = aa.authors_split() if split is None else split
    seqs = aa.sample_sequences(key, n, kinds, split, f, False, "allowed")
    tok = seqs["tokens"]
    vals = jnp.take_along_axis(tok, seqs["value_pos"], axis=1)  # [b, 2] the operand values
    lit = tok.at[:, aa.POS_X].set(vals[:, 0]).at[:, aa.POS_Y].set(vals[:, 1])
    return PairedData(tok, lit, vals)


def all_pairs() -> tuple[jax.Array, jax.Array]:
    n, m = jnp.meshgrid(jnp.arange(aa.P), jnp.arange(aa.P), indexing="ij")
    return n.reshape(-1), m.reshape(-1)


def core_tokens(n: jax.Array, m: jax.Array) -> jax.Array:
    """``PAD*12 + n m =`` for each pair -> ``[b, 16]``."""
    b = n.shape[0]
    return jnp.concatenate([jnp.full((b, aa.PREFIX_LEN), aa.PAD, jnp.int32),
                            jnp.full((b, 1), aa.PLUS, jnp.int32), n[:, None].astype(jnp.int32),
                            m[:, None].astype(jnp.int32), jnp.full((b, 1), aa.EQ, jnp.int32)],
                           axis=1)
