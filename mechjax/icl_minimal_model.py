"""Reddy's (ICLR 2024) minimal network for the in-context classification task, and its trainer.

Each token is its D-dim content concatenated with a one-hot position over the ``2N + 1`` slots
(``d_model = D + 2N + 1``). Two causal single-head attention layers, attention only, each added to
the residual stream (scores scaled by ``1/sqrt(d_model)``); then the query token's stream goes
through a ReLU MLP with ``n_mlp`` hidden layers (Reddy: a three-layer classifier) to L logits. Reddy leaves the head width open; here the
query/key/value maps are ``d_model x d_model`` (one head of full width), initialised with
standard deviation ``init_scale / sqrt(d_model)``.

``IclTrainer`` is ``mechjax.train.Trainer`` with this model in place of the transformer: batches
carry float ``tokens [b, 2N+1, D]``, so ``run_sweep`` trains seeds x (K, B, eps, alpha, lr,
weight decay) grids as one compiled program.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from mechjax.tasks import icl_minimal as icl
from mechjax.tasks.base import Task
from mechjax.train import Trainer, TrainConfig, TrainState

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
        # sent the scores' logits up until training diverged (BUILD_NOTES, issue 27 items 3-4).
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


def make_task(spec: icl.IclSpec, batch_size: int, eval_size: int) -> Task:
    """The task as a ``mechjax`` Task: training batches and the ``icl``/``iwl`` probes."""
    def sampler(kind: str, n: int):
        def sample(key, task_params):
            out = icl.sample(key, spec, dict(spec.default_params(), **task_params), n, kind)
            return {"tokens": out["inputs"], "labels": out["labels"]}
        return sample
    return Task("icl_minimal", sampler("train", batch_size),
                {"icl": sampler("icl", eval_size), "iwl": sampler("iwl", eval_size)},
                readout=-1, default_params=spec.default_params(), seq_len=None)


class IclTrainer(Trainer):
    """``Trainer`` with the minimal network; everything else (optimizer, scan, sweeps) shared."""

    def __init__(self, task: Task, model_cfg: IclModelConfig, train_cfg: TrainConfig):
        super().__init__(task, model_cfg, dataclasses.replace(train_cfg, fast_readout=False))

    def logits(self, params, tokens, key=None):
        return forward(params, tokens, self.model_cfg)

    def _param_names(self):
        return init_params(jax.random.PRNGKey(0), self.model_cfg)

    def init(self, key, hparams):
        k_init, k_run, k_eval = jax.random.split(key, 3)
        params = init_params(k_init, self.model_cfg, hparams["init_scale"])
        return TrainState(params, self.optimizer(hparams).init(params), k_run, k_eval,
                          jnp.zeros((), jnp.int32), jnp.ones((), bool))

def make_trainer(spec: icl.IclSpec, train_cfg: TrainConfig, batch_size: int, eval_size: int,
                 mlp_width: int = 128) -> IclTrainer:
    model_cfg = IclModelConfig(d=spec.d, n_pos=spec.seq_len, n_labels=spec.n_labels,
                               mlp_width=mlp_width)
    return IclTrainer(make_task(spec, batch_size, eval_size), model_cfg, train_cfg)
