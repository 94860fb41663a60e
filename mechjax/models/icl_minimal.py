"""Reddy's (ICLR 2024) minimal network for the in-context classification task.

Each token is its D-dim content concatenated with a one-hot position over the ``2N + 1`` slots
(``d_model = D + 2N + 1``). Two causal single-head attention layers, attention only, each added to
the residual stream (scores scaled by ``1/sqrt(d_model)``); then the query token's stream goes
through a ReLU MLP with ``n_mlp`` hidden layers (Reddy: a three-layer classifier) to L logits. Reddy leaves the head width open; here the
query/key/value maps are ``d_model x d_model`` (one head of full width), initialised with
standard deviation ``init_scale / sqrt(d_model)``.

``icl_model(cfg)`` is the network as a ``mechjax.models.Model`` (its task:
``mechjax.tasks.icl_minimal.make_task``; batches carry float ``tokens [b, 2N+1, D]``).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from mechjax.models.protocol import Model


Params = dict[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class IclModelConfig:
    """Sizes of the minimal network (``dropout`` and ``frozen`` are read by the trainer)."""

    d: int = 63
    n_pos: int = 17
    n_labels: int = 32
    n_layers: int = 2
    mlp_width: int = 128
    n_mlp: int = 3
    dropout: float = 0.0
    frozen: tuple = ()

    @property
    def d_model(self) -> int:
        return self.d + self.n_pos

    def is_frozen(self, name: str) -> bool:
        return False

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def init_params(key: jax.Array, cfg: IclModelConfig, scale: jax.Array | float = 1.0) -> Params:
    """Attention ``W_{Q,K,V}`` per layer and MLP weights; std ``scale / sqrt(fan_in)``."""
    dm = cfg.d_model
    shapes = {f"attn{i}.W_{m}": (dm, dm) for i in range(cfg.n_layers) for m in "QKV"}
    widths = [dm] + [cfg.mlp_width] * (cfg.n_mlp - 1) + [cfg.n_labels]
    for j in range(cfg.n_mlp):
        shapes[f"mlp{j}.W"] = (widths[j], widths[j + 1])
    keys = jax.random.split(key, len(shapes))
    out = {n: jax.random.normal(k, s) * scale / jnp.sqrt(s[0]) for (n, s), k in
           zip(shapes.items(), keys)}
    out.update({f"mlp{j}.b": jnp.zeros(widths[j + 1]) for j in range(cfg.n_mlp)})
    return out


def attention_patterns(params: Params, tokens: jax.Array, cfg: IclModelConfig) -> list[jax.Array]:
    """Per layer ``[b, p, p]`` attention weights (for induction-head checks)."""
    return _forward(params, tokens, cfg)[1]


def _forward(params: Params, tokens: jax.Array, cfg: IclModelConfig):
    b, p, _ = tokens.shape
    pos = jnp.broadcast_to(jnp.eye(p, cfg.n_pos, dtype=tokens.dtype), (b, p, cfg.n_pos))
    h = jnp.concatenate([tokens, pos], axis=-1)
    mask = jnp.tril(jnp.ones((p, p), bool))
    patterns = []
    for i in range(cfg.n_layers):
        q, k, v = (h @ params[f"attn{i}.W_{m}"] for m in "QKV")
        # Scores scaled by 1/sqrt(d_model), as in standard attention: unscaled, Adam at lr 1e-2
        # sent the scores' logits up until training diverged (docs/icl_minimal.md).
        scores = q @ jnp.swapaxes(k, 1, 2) / jnp.sqrt(jnp.asarray(h.shape[-1], h.dtype))
        scores = jnp.where(mask, scores, -jnp.inf)
        att = jax.nn.softmax(scores, axis=-1)
        patterns.append(att)
        h = h + att @ v
    z = h[:, -1]
    for j in range(cfg.n_mlp):
        z = z @ params[f"mlp{j}.W"] + params[f"mlp{j}.b"]
        if j < cfg.n_mlp - 1:
            z = jax.nn.relu(z)
    return z, patterns


def forward(params: Params, tokens: jax.Array, cfg: IclModelConfig) -> jax.Array:
    """``tokens [b, 2N+1, D]`` -> label logits at the query ``[b, L]``."""
    return _forward(params, tokens, cfg)[0]


def icl_model(cfg: IclModelConfig) -> Model:
    """The minimal network as a ``Model``: it reads the query itself (the label logits ``[b, L]``
    whatever the task's read-out), and has no fast path and no frozen parameters."""
    shapes = {k: tuple(v.shape) for k, v in
              jax.eval_shape(lambda: init_params(jax.random.PRNGKey(0), cfg)).items()}
    return Model(config=cfg, init=lambda key, scale: init_params(key, cfg, scale),
                 logits=lambda params, tokens, readout, key, hparams, fast: forward(
                     params, tokens, cfg),
                 param_shapes=lambda: shapes, is_frozen=cfg.is_frozen)
