"""The block-list task specification (``BlockListSpec``: kinds, sizes, token classes, the
association map) and its symmetry group (``relabel``). Overview: ``mechjax.tasks.blocklist``."""
from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

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
