"""``make_train(task, model, train_cfg) -> train(key, hparams)``: one pure training function over
any ``mechjax.models.Model`` (a ``ModelConfig`` means the built-in transformer).

Everything random happens inside from the key; the step loop is ``lax.scan`` (an outer scan over
evaluations, an inner scan over ``eval_every`` steps), and metrics are returned stacked along
evaluations, never logged from inside. Continuous hyperparameters (``lr``, ``weight_decay``,
``init_scale``, task knobs ``task.<name>``) are traced values, so

    jax.jit(jax.vmap(jax.vmap(train, (None, 0)), (0, None)))(seed_keys, hparam_grid)

trains a seeds x hyperparameter grid as one compiled program. ``Trainer.run`` advances a state by a
fixed number of evaluations, which is what the sweep runner calls between checkpoints.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mechjax import chunks, metrics
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.models.protocol import Model, as_model
from mechjax.models.transformer import Params
from mechjax.tasks.base import Batch, Task

HParams = Mapping[str, jax.Array]
EvalFn = Callable[[Params, Mapping[str, jax.Array], jax.Array], Mapping[str, jax.Array]]

OPTIMIZERS = ("adamw", "adam", "sgd")
SCHEDULES = ("constant", "cosine", "linear")
COMPUTE_DTYPES = ("float32", "bfloat16")
BASE_HPARAMS = {"lr": 1e-3, "weight_decay": 0.0, "init_scale": 1.0}
# What the command line allows for each base hyperparameter: (lower bound, bound included).
HPARAM_BOUNDS = {"lr": (0.0, False), "weight_decay": (0.0, True), "init_scale": (0.0, False)}


def check_hparams(hparams: Mapping[str, Any]) -> None:
    """Raise ``ConfigError`` naming the first base hyperparameter (every value of a grid axis)
    that is not finite or not above its bound; task hyperparameters are the task's to check."""
    for name, (bound, inclusive) in HPARAM_BOUNDS.items():
        if name not in hparams:
            continue
        values = np.atleast_1d(np.asarray(hparams[name], np.float64)).ravel()
        for i, value in enumerate(values):
            if np.isfinite(value) and (value >= bound if inclusive else value > bound):
                continue
            where = f"[{i}]" if values.size > 1 else ""
            finite = "" if np.isfinite(value) else "finite and "
            raise ConfigError(f"hparams[{name!r}]{where}={value:.6g}: must be {finite}"
                              f"{'>=' if inclusive else '>'} {bound:g}")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Static training settings (shapes and code paths). Traced ones live in ``hparams``."""

    steps: int = 1000
    eval_every: int = 100
    optimizer: str = "adamw"
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    warmup_steps: int = 0
    schedule: str = "constant"
    grad_clip: float | None = None
    eval_pools: tuple[str, ...] | None = None  # None: every pool of the task
    fast_readout: bool = True  # use mechjax.models.fastpath where it applies
    # The forward and backward pass (training and evaluation). bfloat16 is mixed precision: the
    # parameters, gradients and optimizer state stay float32, the loss is taken in float32.
    compute_dtype: str = "float32"
    # Sequences of an evaluation pool scored at a time (``mechjax.chunks``): memory follows the
    # chunk, not the pool size (times the seeds under vmap). None scores a pool at once.
    eval_chunk: int | None = chunks.DEFAULT_CHUNK

    def __post_init__(self):
        for name in ("steps", "eval_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f"train.{name}={value!r}: must be a positive integer")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"train.optimizer={self.optimizer!r}: allowed {OPTIMIZERS}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"train.schedule={self.schedule!r}: allowed {SCHEDULES}")
        if self.compute_dtype not in COMPUTE_DTYPES:
            raise ConfigError(f"train.compute_dtype={self.compute_dtype!r}: allowed "
                              f"{COMPUTE_DTYPES}")
        if not isinstance(self.warmup_steps, int) or not 0 <= self.warmup_steps <= self.steps:
            raise ConfigError(f"train.warmup_steps={self.warmup_steps!r}: must be in "
                              f"[0, steps={self.steps}]")
        if self.grad_clip is not None and self.grad_clip <= 0:
            raise ConfigError(f"train.grad_clip={self.grad_clip!r}: must be positive or None")
        for name in ("b1", "b2"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"train.{name}={getattr(self, name)!r}: must be in [0, 1)")
        try:
            chunks.check_chunk_size(self.eval_chunk, "train.eval_chunk")
        except ValueError as err:
            raise ConfigError(str(err)) from None

    @property
    def n_evals(self) -> int:
        return -(-self.steps // self.eval_every)


class TrainState(NamedTuple):
    """Everything a run needs to continue: checkpointing this is checkpointing the run."""

    params: Params
    opt_state: Any
    key: jax.Array        # uint32[2], advanced every step
    eval_key: jax.Array   # fixed per run: the same evaluation sets at every evaluation
    step: jax.Array       # int32 scalar
    finite: jax.Array     # bool scalar; False once a loss or gradient was non-finite


def split_hparams(hparams: HParams) -> tuple[dict, dict]:
    """Split ``{'lr':..., 'task.f':...}`` into optimizer/init values and task parameters."""
    base = {k: v for k, v in hparams.items() if not k.startswith("task.")}
    task = {k[len("task."):]: v for k, v in hparams.items() if k.startswith("task.")}
    return base, task


def check_task_vocab(task: Task, model_cfg: Any) -> None:
    """Raise ``ConfigError`` unless one training batch of ``task`` (drawn from a fixed key with
    the default task parameters) has tokens in ``[0, d_vocab)`` and labels in ``[0, vocab_out)``.

    Only for configs with a ``d_vocab``. Inside the compiled step an out-of-range index is not an
    error: the embedding gather clamps it and the loss reads a wrong (or NaN) entry, silently.
    """
    d_vocab = getattr(model_cfg, "d_vocab", None)
    if d_vocab is None:
        return
    vocab_out = getattr(model_cfg, "vocab_out", None) or d_vocab
    # One jitted draw: eager sampling dispatches (and compiles) every op of the sampler singly.
    batch = jax.jit(task.sample)(jax.random.PRNGKey(0), task.params_with_defaults())
    for name, field, size in (("tokens", "d_vocab", d_vocab), ("labels", "vocab_out", vocab_out)):
        values = np.asarray(batch[name]) if name in batch else None
        if values is None or values.size == 0:
            continue
        low, high = values.min(), values.max()
        if low < 0 or high >= size:
            raise ConfigError(f"task {task.name!r} samples {name} in [{low}, {high}] but "
                              f"model.{field}={size} allows [0, {size - 1}]")


class Trainer:
    """The compiled-step building blocks; calling it is ``train(key, hparams)``."""

    def __init__(self, task: Task, model: Model | ModelConfig, train_cfg: TrainConfig,
                 eval_fn: EvalFn | None = None):
        model = as_model(model)
        model_cfg = model.config
        pools = train_cfg.eval_pools if train_cfg.eval_pools is not None else tuple(task.eval_pools)
        unknown = sorted(set(pools) - set(task.eval_pools))
        if unknown:
            raise ConfigError(f"eval pools {unknown} do not exist for task {task.name!r}; "
                              f"it has {sorted(task.eval_pools)}")
        d_vocab, n_ctx = getattr(model_cfg, "d_vocab", None), getattr(model_cfg, "n_ctx", None)
        if task.vocab_size is not None and d_vocab is not None and task.vocab_size > d_vocab:
            raise ConfigError(f"task {task.name!r} uses {task.vocab_size} tokens but "
                              f"model.d_vocab={model_cfg.d_vocab}")
        if task.seq_len is not None and n_ctx is not None and task.seq_len > n_ctx:
            raise ConfigError(f"task {task.name!r} has sequences of {task.seq_len} tokens but "
                              f"model.n_ctx={model_cfg.n_ctx}")
        check_task_vocab(task, model_cfg)
        self.task, self.model, self.model_cfg, self.train_cfg = task, model, model_cfg, train_cfg
        self.pools, self.eval_fn = pools, eval_fn
        self.use_fastpath = bool(train_cfg.fast_readout and task.readout is not None
                                 and model.fast_readout is not None and model.fast_readout(True))

    # ---- hyperparameters ----------------------------------------------------------------------
    def default_hparams(self, **overrides: float) -> dict[str, jax.Array]:
        """Defaults for every traced hyperparameter; unknown names raise."""
        values = dict(BASE_HPARAMS)
        values.update({"task." + k: v for k, v in self.task.default_params.items()})
        values.update(self.model.hparams)
        unknown = sorted(set(overrides) - set(values))
        if unknown:
            raise ConfigError(f"unknown hyperparameters {unknown}; allowed: {sorted(values)}")
        values.update(overrides)
        return {k: jnp.asarray(v, jnp.float32) for k, v in values.items()}

    # ---- optimizer ----------------------------------------------------------------------------
    def _schedule(self, lr: jax.Array) -> optax.Schedule:
        """``lr`` times a linear warm-up ``(count + 1) / warmup_steps``, then the decay."""
        cfg = self.train_cfg
        decay_steps = max(cfg.steps - cfg.warmup_steps, 1)
        if cfg.schedule == "cosine":
            decay = optax.cosine_decay_schedule(lr, decay_steps)
        elif cfg.schedule == "linear":
            decay = optax.linear_schedule(lr, 0.0, decay_steps)
        else:
            decay = optax.constant_schedule(lr)
        if not cfg.warmup_steps:
            return decay
        warm = optax.linear_schedule(lr / cfg.warmup_steps, lr, cfg.warmup_steps - 1)
        return optax.join_schedules([warm, decay], [cfg.warmup_steps])

    def optimizer(self, hparams: HParams) -> optax.GradientTransformation:
        """The optax transform for (possibly traced) ``hparams``."""
        cfg = self.train_cfg
        lr = self._schedule(hparams["lr"])
        if cfg.optimizer == "adamw":
            tx = optax.adamw(lr, cfg.b1, cfg.b2, cfg.eps, weight_decay=hparams["weight_decay"])
        elif cfg.optimizer == "adam":
            tx = optax.adam(lr, cfg.b1, cfg.b2, cfg.eps)
        else:
            tx = optax.chain(optax.add_decayed_weights(hparams["weight_decay"]), optax.sgd(lr))
        if cfg.grad_clip is not None:
            tx = optax.chain(optax.clip_by_global_norm(cfg.grad_clip), tx)
        if self.model.has_frozen:
            labels = {k: "frozen" if self.model.is_frozen(k) else "train"
                      for k in self.model.param_shapes()}
            tx = optax.multi_transform({"train": tx, "frozen": optax.set_to_zero()}, labels)
        return tx

    # ---- model evaluation ---------------------------------------------------------------------
    def logits(self, params: Params, tokens: jax.Array, key: jax.Array | None = None,
               hparams: HParams | None = None) -> jax.Array:
        """Logits where the task's labels are read: ``[b, v]`` (readout) or ``[b, p, v]``;
        ``hparams``: the traced values the model reads (default: ``default_hparams()``)."""
        hparams = self.default_hparams() if hparams is None else hparams
        return self.model.logits(params, tokens, self.task.readout, key, hparams,
                                 self.use_fastpath)

    def _compute_params(self, params: Params) -> Params:
        if self.train_cfg.compute_dtype == "float32":
            return params
        dtype = jnp.dtype(self.train_cfg.compute_dtype)  # the cast is differentiated: f32 grads
        return {k: v.astype(dtype) for k, v in params.items()}

    def loss(self, params: Params, batch: Batch, key: jax.Array | None = None,
             hparams: HParams | None = None):
        """``(cross-entropy, accuracy)`` of one batch (the model's own ``loss`` where it has one)."""
        if self.model.loss is not None:
            return self.model.loss(params, batch, key, hparams)
        logits = self.logits(self._compute_params(params), batch["tokens"], key, hparams)
        logits = logits.astype(jnp.float32)
        labels, weights = batch["labels"], batch.get("weights")
        return (metrics.cross_entropy(logits, labels, weights),
                metrics.accuracy(logits, labels, weights))

    def pool_scores(self, params: Params, batch: Batch,
                    hparams: HParams | None = None) -> tuple[jax.Array, jax.Array]:
        """``(loss, accuracy)`` of ``params`` on an evaluation pool, ``train_cfg.eval_chunk``
        sequences at a time: the per-sequence scores of ``loss``, averaged over the whole pool."""
        params = self._compute_params(params)

        def per_row(rows):
            logits = self.logits(params, rows["tokens"], None, hparams).astype(jnp.float32)
            return (metrics.token_nll(logits, rows["labels"]),
                    metrics.token_hits(logits, rows["labels"]))

        nll, hits = chunks.map_chunks(per_row, {"tokens": batch["tokens"],
                                                "labels": batch["labels"]},
                                      self.train_cfg.eval_chunk)
        weights = batch.get("weights")
        return metrics.weighted_mean(nll, weights), metrics.weighted_mean(hits, weights)

    def evaluate(self, params: Params, task_params: Mapping[str, jax.Array],
                 eval_key: jax.Array, hparams: HParams | None = None) -> dict[str, jax.Array]:
        out = {}
        for i, name in enumerate(self.pools):
            batch = self.task.eval_pools[name](jax.random.fold_in(eval_key, i), task_params)
            loss, acc = self.pool_scores(params, batch, hparams)
            out[f"acc/{name}"], out[f"loss/{name}"] = acc, loss
        if self.eval_fn is not None:
            out.update(self.eval_fn(params, task_params, eval_key))
        return out

    # ---- state transitions --------------------------------------------------------------------
    def init(self, key: jax.Array, hparams: HParams) -> TrainState:
        base, _ = split_hparams(hparams)
        k_init, k_run, k_eval = jax.random.split(key, 3)
        params = self.model.init(k_init, base["init_scale"])
        opt_state = self.optimizer(hparams).init(params)
        return TrainState(params, opt_state, k_run, k_eval, jnp.zeros((), jnp.int32),
                          jnp.ones((), bool))

    def init_from_params(self, key: jax.Array, hparams: HParams, params: Params) -> TrainState:
        """A fresh run (new optimizer, step 0) starting from given parameters."""
        state = self.init(key, hparams)
        params = {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}
        return state._replace(params=params, opt_state=self.optimizer(hparams).init(params))

    def branch(self, state: TrainState, hparams: HParams,
               reset_optimizer: bool = True) -> TrainState:
        """Continue ``state`` under new ``hparams`` (e.g. weight decay 0), optimizer reset."""
        if not reset_optimizer:
            return state
        return state._replace(opt_state=self.optimizer(hparams).init(state.params))

    def _step(self, state: TrainState, hparams: HParams):
        base, task_params = split_hparams(hparams)
        key, k_data, k_drop = jax.random.split(state.key, 3)
        batch = self.task.sample(k_data, task_params)
        dropout_key = k_drop if getattr(self.model_cfg, "dropout", 0.0) > 0 else None
        (loss, acc), grads = jax.value_and_grad(self.loss, has_aux=True)(
            state.params, batch, dropout_key, hparams)
        updates, opt_state = self.optimizer(hparams).update(grads, state.opt_state, state.params)
        new_params = optax.apply_updates(state.params, updates)
        ok = (state.finite & jnp.isfinite(loss) & jnp.isfinite(optax.tree.norm(grads))
              & jnp.isfinite(optax.tree.norm(new_params)))
        # A diverged run keeps its last finite parameters, so its analyses stay meaningful.
        keep = lambda new, old: jnp.where(ok, new, old)
        params = jax.tree.map(keep, new_params, state.params)
        opt_state = jax.tree.map(keep, opt_state, state.opt_state)
        return state._replace(params=params, opt_state=opt_state, key=key,
                              step=state.step + 1, finite=ok), (loss, acc)

    def run(self, state: TrainState, hparams: HParams, n_evals: int,
            total: jax.Array | int | None = None):
        """Advance ``n_evals`` evaluation intervals, skipping steps past ``total`` (default
        ``train_cfg.steps``; traced, so trainers differing only in ``steps`` share a program).
        Returns ``(state, metrics [n_evals])``; ``metrics['step']``: the step after each one."""
        total, task_params = (self.train_cfg.steps if total is None else total,
                              split_hparams(hparams)[1])

        def one_step(carry, _):
            new, out = self._step(carry, hparams)
            active = carry.step < total
            carry = jax.tree.map(lambda a, b: jnp.where(active, a, b), new, carry)
            return carry, jnp.where(active, jnp.stack(out), jnp.nan)

        def interval(carry, _):
            carry, outs = jax.lax.scan(one_step, carry, None, length=self.train_cfg.eval_every)
            row = {"train/loss": jnp.nanmean(outs[:, 0]), "train/acc": jnp.nanmean(outs[:, 1])}
            row.update(self.evaluate(carry.params, task_params, carry.eval_key, hparams))
            row["step"], row["finite"] = carry.step, carry.finite
            return carry, row

        return jax.lax.scan(interval, state, None, length=n_evals)

    def total_steps(self) -> np.ndarray:  # the int32 ``total`` that sweep_program takes
        return np.asarray(self.train_cfg.steps, np.int32)

    def __call__(self, key: jax.Array, hparams: HParams):
        """``train(key, hparams) -> (final_state, metrics)`` for the whole ``train_cfg.steps``."""
        return self.run(self.init(key, hparams), hparams, self.train_cfg.n_evals)


def make_train(task: Task, model: Model | ModelConfig, train_cfg: TrainConfig,
               eval_fn: EvalFn | None = None) -> Trainer:
    """Build ``train(key, hparams) -> (final_state, metrics)``; see the module docstring."""
    return Trainer(task, model, train_cfg, eval_fn)
