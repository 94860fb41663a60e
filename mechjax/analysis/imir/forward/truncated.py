"""The IMIR model's forward pass on the populated path blocks only (exact, much cheaper deep).

In the frame (``basis``' module docstring) path ``c`` owns residual block ``index(c)``, and the
paths present at layer ``l``'s input (``Frame.populated(l)``: no head at layers ``>= l``) are the
first ``(H + 1)^l`` blocks. So with the frame's own embeddings and ``W_OV`` (block swaps that
send layer ``l``'s input blocks into the first ``(H + 1)^(l + 1)``), the residual at layer ``l``
is zero beyond ``width(l) = d_e (H + 1)^l`` coordinates, and only the leading
``[width(l), width(l)]`` corner of ``W_KQ`` and ``[width(l), width(l + 1)]`` corner of ``W_OV``
ever act. ``truncated_forward`` computes exactly ``mechjax.models.transformer.forward`` on those corners:
``sum_l width(l)^2`` instead of ``L d_model^2`` work per position, 15x less for 5 layers and one
head (``tests/test_imir_truncated.py`` checks equality, gradients included). It needs an
unrotated frame (a rotation mixes the blocks) and the frame's embeddings and ``W_OV``; the
trained ``W_KQ`` / ``W_U`` may be anything (entries outside the corners get zero gradient, as in
the full forward).

Two more exact savings: the frozen ``W_OV`` is a block swap, so a head's output is placed by
concatenation instead of a ``[width(l), width(l + 1)]`` product; and a block-list loss reads one
position per sequence, so the last layer runs at that position only (``query_loss_and_accuracy``). ``stage_input`` /
``stage_loss`` split the loss at a layer, so a change confined to layer ``l`` re-runs only
layers ``>= l`` (the elimination's staged candidates, ``eliminate.Staged``).
``theta_weights`` builds the corners straight from manifold coordinates (block ``(a, b)`` of
``W_KQ`` is ``sum_s theta_abs S_s``), so a projected model never materialises a
``[d_model, d_model]`` matrix; ``truncated_model`` is the trainer's ``Model`` with this loss
(for training the IMIR model of a frame); ``coordinate_model`` is the same model whose only
parameter is ``theta`` (training inside the manifold: every step stays on the span).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import jax
import jax.numpy as jnp

from mechjax.analysis.imir.manifold.basis import Basis, Frame
from mechjax.analysis.imir.manifold.frame import fixed_params, imir_config
from mechjax.models.config import ModelConfig
from mechjax.models.protocol import Model, transformer_model
from mechjax.metrics import token_hits, token_nll

Params = Mapping[str, jax.Array]


def widths(frame: Frame) -> list[int]:
    """``width(l)`` for ``l = 0 .. n_layers`` (the last: the output, all of ``d_model``)."""
    return [frame.d_e * (frame.n_heads + 1) ** l for l in range(frame.n_layers + 1)]


def check_frame(frame: Frame) -> None:
    if frame.rotation is not None:
        raise ValueError("truncated_forward needs an unrotated frame (rotation=None): a global "
                         "rotation mixes the path blocks")


def _attend(x_q: jax.Array, x: jax.Array, kq: jax.Array, cfg: ModelConfig,
            allowed: jax.Array | None) -> jax.Array:
    """One IMIR attention layer at the queries ``x_q [b, q, w]`` over the keys ``x [b, k, w]``:
    the heads' outputs placed as the frame's ``W_OV`` places them (head ``h`` into block range
    ``[(h + 1) w, (h + 2) w)``), concatenated after the input: ``[b, q, (H + 1) w]``."""
    scores = jnp.einsum("bqhe,bke->bhqk", jnp.einsum("bqd,hde->bqhe", x_q, kq), x) / cfg.scale
    if allowed is not None:
        scores = jnp.where(allowed, scores, -jnp.inf)
    z = jnp.einsum("bhqk,bkd->bqhd", jax.nn.softmax(scores, axis=-1), x)
    return jnp.concatenate([x_q, z.reshape(z.shape[:2] + (-1,))], axis=-1)


def _embed(params: Params, tokens: jax.Array, frame: Frame) -> jax.Array:
    check_frame(frame)
    w0 = frame.d_e
    return params["embed.W_E"][tokens][..., :w0] + params["pos_embed.W_pos"][: tokens.shape[-1], :w0]


def _mask(cfg: ModelConfig, n_pos: int) -> jax.Array | None:
    return jnp.tril(jnp.ones((n_pos, n_pos), bool)) if cfg.causal else None


def truncated_forward(params: Params, tokens: jax.Array, frame: Frame, cfg: ModelConfig,
                      ) -> jax.Array:
    """``forward(params, tokens, cfg)`` (logits ``[b, p, n_out]``) for the IMIR model of
    ``frame`` (module docstring: its embeddings and ``W_OV``; ``cfg`` its ``imir_config``, whose
    score scale and causal flag are used). ``W_KQ`` / ``W_U`` may be the full ``[H, d, d]`` /
    ``[d, n_out]`` or already their leading corners; ``W_OV`` is not read (the frame's block
    swap is applied as a concatenation, which is what the frozen matrix does)."""
    w = widths(frame)
    x = _embed(params, tokens, frame)
    for l in range(frame.n_layers):
        x = _layer(params, l, x, frame, cfg)
    return x @ params["unembed.W_U"][: w[-1]]


def _layer(params: Params, l: int, x: jax.Array, frame: Frame, cfg: ModelConfig) -> jax.Array:
    w = widths(frame)[l]
    return _attend(x, x, params[f"blocks.{l}.attn.W_KQ"][:, :w, :w], cfg,
                   _mask(cfg, x.shape[1]))


def _query(batch: Mapping[str, jax.Array]) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Per sequence: the weighted position, its weight and its label."""
    weights = batch["weights"]
    q = jnp.argmax(weights, axis=-1)
    pick = lambda a: jnp.take_along_axis(a, q[:, None], axis=1)[:, 0]  # noqa: E731
    return q, pick(weights), pick(batch["labels"])


def _last_at_query(params: Params, x: jax.Array, batch: Mapping[str, jax.Array], frame: Frame,
                   cfg: ModelConfig) -> jax.Array:
    """The last layer at each sequence's query, from its input ``x [b, p, w]`` -> ``[b, d]``."""
    q, _, _ = _query(batch)
    x_q = jnp.take_along_axis(x, q[:, None, None], axis=1)               # [b, 1, w]
    allowed = None
    if cfg.causal:
        allowed = (jnp.arange(x.shape[1])[None, :] <= q[:, None])[:, None, None]
    last = frame.n_layers - 1
    w = widths(frame)[last]
    return _attend(x_q, x, params[f"blocks.{last}.attn.W_KQ"][:, :w, :w], cfg, allowed)[:, 0]


def stage_input(params: Params, batch: Mapping[str, jax.Array], frame: Frame,
                cfg: ModelConfig, stage: int) -> jax.Array:
    """What the model computes before ``stage`` (static): for ``stage < n_layers`` the input of
    layer ``stage`` at every position ``[b, p, width(stage)]``; for ``stage = n_layers`` the
    output residual at each sequence's query ``[b, d_model]``. A change of ``W_KQ`` of layer
    ``l`` (or of ``W_U``: stage ``n_layers``) leaves ``stage_input(.., l)`` unchanged, which is
    what the elimination's staged candidates reuse."""
    x = _embed(params, batch["tokens"], frame)
    last = frame.n_layers - 1
    for l in range(min(stage, last)):
        x = _layer(params, l, x, frame, cfg)
    return x if stage <= last else _last_at_query(params, x, batch, frame, cfg)


def stage_loss(params: Params, cache: jax.Array, batch: Mapping[str, jax.Array], frame: Frame,
               cfg: ModelConfig, stage: int) -> tuple[jax.Array, jax.Array]:
    """Loss and accuracy from ``cache = stage_input(.., stage)``: the rest of the model (the
    last layer at the query only), then the weighted readout cross-entropy and accuracy."""
    x = cache
    if stage < frame.n_layers:
        for l in range(stage, frame.n_layers - 1):
            x = _layer(params, l, x, frame, cfg)
        x = _last_at_query(params, x, batch, frame, cfg)
    logits = x @ params["unembed.W_U"][: widths(frame)[-1]]
    _, w_q, labels = _query(batch)
    mass = jnp.sum(w_q)
    return (jnp.sum(w_q * token_nll(logits, labels, w_q.dtype)) / mass,
            jnp.sum(w_q * token_hits(logits, labels, w_q.dtype)) / mass)


def query_loss_and_accuracy(params: Params, batch: Mapping[str, jax.Array], frame: Frame,
                            cfg: ModelConfig) -> tuple[jax.Array, jax.Array]:
    """The weighted readout cross-entropy and accuracy (``loss.readout_loss`` /
    ``readout_accuracy``) for batches with one weighted position per sequence (block-list
    batches: one-hot or probability times one-hot at the query); the last layer runs at the
    query only."""
    return stage_loss(params, stage_input(params, batch, frame, cfg, 0), batch, frame, cfg, 0)


def theta_weights(basis: Basis, theta: jax.Array, layers: tuple[int, ...] | None = None,
                  ) -> dict[str, jax.Array]:
    """The trained corners of ``W(theta)``: ``blocks.l.attn.W_KQ [H, width(l), width(l)]`` and
    ``unembed.W_U [d_model, n_out]`` (equal to ``project.weights``' leading corners);
    ``layers``: only those layers' ``W_KQ`` (and ``W_U``), default all."""
    f = basis.frame
    check_frame(f)
    w = widths(f)
    out: dict[str, list] = {}
    for g in basis.groups:
        if g.head is not None and layers is not None and int(g.param.split(".")[1]) not in layers:
            continue
        th = theta[g.offset: g.offset + g.size].reshape(g.shape)
        if g.head is None:
            sel = jnp.asarray(basis.sel_out, theta.dtype)
            out[g.param] = jnp.einsum("at,tio->aio", th, sel).reshape(w[-1], -1)
        else:
            # populated paths are the leading blocks in order: block (a, b) is sum_s th_abs S_s
            sel = jnp.asarray(basis.sel_kq, theta.dtype)
            layer = int(g.param.split(".")[1])
            blocks = jnp.einsum("abs,sij->aibj", th, sel).reshape(w[layer], w[layer])
            out.setdefault(g.param, []).append(blocks)
    return {k: (jnp.stack(v) if isinstance(v, list) else v) for k, v in out.items()}


def truncated_model(frame: Frame, cfg: ModelConfig) -> Model:
    """The ``imir_config(frame)`` transformer as a ``Model`` whose logits and loss come from
    ``truncated_forward`` / ``query_loss_and_accuracy`` (the same numbers, less work): frozen
    frame embeddings and ``W_OV``, block-list batches (one weighted position per sequence, so a
    task read at a fixed position is refused)."""
    check_frame(frame)
    not_frozen = [k for k in ("embed.W_E", "pos_embed.W_pos", "blocks.0.attn.W_OV")
                  if not cfg.is_frozen(k)]
    if not_frozen:
        raise ValueError(f"the truncated IMIR model needs frozen frame weights (not frozen: "
                         f"{not_frozen})")

    def logits(params, tokens, readout, key, hparams, fast):
        del key, hparams, fast  # the IMIR model has no dropout and no traced settings
        if readout is not None:
            raise ValueError(f"the truncated IMIR model reads the task through its weights "
                             f"(readout=None), not at position {readout}")
        return truncated_forward(params, tokens, frame, cfg)

    return dataclasses.replace(
        transformer_model(cfg), logits=logits, fast_readout=None,
        loss=lambda params, batch, key, hparams: query_loss_and_accuracy(params, batch, frame,
                                                                         cfg))


COORDINATE_KIND = "imir_coordinates"  # model_config.json's "kind" of a coordinate-model run


@dataclasses.dataclass(frozen=True)
class CoordinateConfig:
    """What a run trained in manifold coordinates records (``model_config.json``): the
    coordinate count and the transformer ``W(theta)`` runs in (``imir_config`` of the frame)."""

    n_coordinates: int
    transformer: ModelConfig

    # the trainer checks a task's tokens and length against these
    @property
    def d_vocab(self) -> int:
        return self.transformer.d_vocab

    @property
    def vocab_out(self) -> int:
        return self.transformer.d_vocab_out or self.transformer.d_vocab

    @property
    def n_ctx(self) -> int:
        return self.transformer.n_ctx

    def to_dict(self) -> dict:
        return {"kind": COORDINATE_KIND, "n_coordinates": self.n_coordinates,
                "transformer": self.transformer.to_dict()}


def coordinate_model(basis: Basis, causal: bool) -> Model:
    """The IMIR model of ``basis.frame`` parametrised by its manifold coordinates: params
    ``{"theta": [basis.size]}``, weights ``W(theta)`` (``theta_weights``) with the frame's frozen
    embeddings and ``W_OV``, the truncated loss. Gradient steps move ``theta``, so the weights
    never leave the span (the IMIR paper trains its model there); ``init`` draws
    ``theta ~ N(0, scale^2)``. ``causal``: the attention mask (the paper's model is causal)."""
    frame = basis.frame
    check_frame(frame)
    cfg = imir_config(frame, causal)
    fixed = fixed_params(frame)

    def weights(params):
        return {**fixed, **theta_weights(basis, params["theta"])}

    def logits(params, tokens, readout, key, hparams, fast):
        del key, hparams, fast
        if readout is not None:
            raise ValueError(f"the IMIR coordinate model reads the task through its weights "
                             f"(readout=None), not at position {readout}")
        return truncated_forward(weights(params), tokens, frame, cfg)

    return Model(
        config=CoordinateConfig(basis.size, cfg),
        init=lambda key, scale: {"theta": scale * jax.random.normal(key, (basis.size,))},
        logits=logits, param_shapes=lambda: {"theta": (basis.size,)},
        loss=lambda params, batch, key, hparams: query_loss_and_accuracy(weights(params), batch,
                                                                         frame, cfg))
