"""Head-level analysis set against coordinate-level detection (docs/imir.md, section 7).

``head_ablation`` mean-ablates each attention head of a model in turn, through mechjax's hooks:
the head's ``hook_z`` (for the merged-OV model: its attention-weighted residual, ``[b, p, h, d]``,
before ``W_OV``; ablating it there is ablating the head's output, ``W_OV`` being linear) is
replaced by its mean over the batch at each position, and the readout loss and accuracy are read
again. A head is *important* when its ablation raises the loss by more than ``tau`` (the same
budget the coordinate elimination spends), else head-level analysis calls it unimportant.

``blind_spots`` then lists the detected units head-level analysis cannot see: kept units (helpers
above all) that live in an unimportant head (a score unit: the head it belongs to; a readout
unit: every head on its path, so a direct-path readout ``U I|..`` has no head to ablate at all).
A helper can sit in such a head when another head duplicates the head's job (ablating one of two
redundant heads costs nothing) or when the helper's effect is a small correction of a head whose
mean output already carries most of what the readout needs.

All heads are ablated by one compiled function (a one-hot mask over ``[layer, head]``, mapped
over the masks), so the cost is one compilation and ``n_layers * n_heads + 1`` forward passes.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.detection.circuits import Unit, heads_on
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_cache, run_with_hooks
from mechjax.metrics import accuracy, cross_entropy

Batch = Mapping[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class HeadAblation:
    loss: float                  # the model's readout loss on the batch
    acc: float
    loss_ablated: np.ndarray     # [n_layers, n_heads]
    acc_ablated: np.ndarray      # [n_layers, n_heads]
    tau: float

    @property
    def loss_increase(self) -> np.ndarray:
        return self.loss_ablated - self.loss

    @property
    def acc_drop(self) -> np.ndarray:
        return self.acc - self.acc_ablated

    @property
    def important(self) -> np.ndarray:
        """bool ``[n_layers, n_heads]``: ablation raises the loss by more than ``tau``."""
        return self.loss_increase > self.tau


def _z_name(layer: int) -> str:
    return f"blocks.{layer}.attn.hook_z"


@functools.partial(jax.jit, static_argnames=("cfg",))
def _ablate_all(params: Mapping[str, jax.Array], cfg: ModelConfig, batch: Batch):
    """``((loss, acc), (loss [L*H], acc [L*H]))``: the model, then each head mean-ablated.
    At module level so every seed of one config reuses one compilation."""
    names = [_z_name(l) for l in range(cfg.n_layers)]
    tokens, labels, weights = batch["tokens"], batch["labels"], batch["weights"]

    def scores(logits):
        return cross_entropy(logits, labels, weights), accuracy(logits, labels, weights)

    logits, cache = run_with_cache(params, tokens, cfg, names)
    means = [cache[n].mean(axis=0) for n in names]       # [p, h, e] per layer

    def ablated(mask):                                    # mask [n_layers, n_heads]
        hooks = {n: (lambda z, l=l: z + mask[l][None, None, :, None] * (means[l] - z))
                 for l, n in enumerate(names)}
        return scores(run_with_hooks(params, tokens, cfg, hooks)[0])

    masks = jnp.eye(cfg.n_layers * cfg.n_heads).reshape(-1, cfg.n_layers, cfg.n_heads)
    return scores(logits), jax.lax.map(ablated, masks)


def head_ablation(params: Mapping[str, jax.Array], cfg: ModelConfig, batch: Batch,
                  tau: float) -> HeadAblation:
    """Mean-ablate every head of ``params`` (a mechjax model of ``cfg``) on ``batch``
    (``tokens``, ``labels``, ``weights [b, T]``) one at a time (module docstring)."""
    params = {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}
    batch = {k: jnp.asarray(batch[k]) for k in ("tokens", "labels", "weights")}
    (loss, acc), (loss_ab, acc_ab) = _ablate_all(params, cfg, batch)
    shape = (cfg.n_layers, cfg.n_heads)
    return HeadAblation(float(loss), float(acc), np.asarray(loss_ab, np.float64).reshape(shape),
                        np.asarray(acc_ab, np.float64).reshape(shape), float(tau))


def unit_heads(unit: Unit) -> list[tuple[int, int]]:
    """The heads a unit lives in: its own head (a score unit) or its path's heads (readout)."""
    return [unit.owner] if unit.owner is not None else heads_on(unit.path_q)


def blind_spots(units: Sequence[Unit], kinds: Mapping[str, str], ablation: HeadAblation,
                ) -> dict[str, list[str]]:
    """Kept units whose heads head-level analysis calls unimportant: ``helpers`` and
    ``canonical`` (names, in unit order)."""
    out: dict[str, list[str]] = {"helpers": [], "canonical": []}
    for u in units:
        if not any(ablation.important[h] for h in unit_heads(u)):
            out["helpers" if kinds[u.name] == "helper" else "canonical"].append(u.name)
    return out


def report(units: Sequence[Unit], kinds: Mapping[str, str], ablation: HeadAblation) -> dict:
    """JSON-ready summary: per head the loss increase and accuracy drop, and the blind spots."""
    n_layers, n_heads = ablation.loss_ablated.shape
    per_head = {f"L{l}H{h}": {"loss_increase": float(ablation.loss_increase[l, h]),
                              "acc_drop": float(ablation.acc_drop[l, h]),
                              "important": bool(ablation.important[l, h])}
                for l in range(n_layers) for h in range(n_heads)}
    blind = blind_spots(units, kinds, ablation)
    return {"per_head": per_head, "tau": ablation.tau, "loss": ablation.loss, "acc": ablation.acc,
            "n_heads_important": int(ablation.important.sum()),
            "helpers_in_unimportant_heads": blind["helpers"],
            "n_helpers_in_unimportant_heads": len(blind["helpers"]),
            "canonical_in_unimportant_heads": blind["canonical"]}
