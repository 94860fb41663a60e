"""Zhong et al.'s (2023, "The Clock and the Pizza") attention rate as a traced hyperparameter.

Every attention pattern becomes ``rate * softmax(scores) + (1 - rate) * constant``
(``mechjax.attention_mix``). With ``mixing="uniform"`` (the default) the constant is ``1 / n_keys``
over the keys a query may see (rows sum to one; rate 0 averages the values); with ``"ones"``, the
paper's released code (``a * softmax + (1 - a)``), it is the all-ones matrix (rows sum to
``a + (1 - a) * n``; rate 0 sums the values). Both run from the standard transformer to constant
attention; the paper's rate ``a`` is the uniform mixing's ``a / (a + (1 - a) * n)`` up to a
rate-dependent scale of the attention output (with ``n = 2`` keys: 0.5 -> 1/3). The mixing is
applied at the ``hook_pattern`` hook of ``mechjax.model.forward``, so the model itself is
unchanged, and at rate 1 the pattern is the softmax bit for bit (``1 * p + 0 * c == p``).

``RateTrainer`` is ``mechjax.train.Trainer`` with the hyperparameter ``attn_rate`` (default 1)
and a fixed ``mixing``: a seeds x rates grid through ``run_sweep`` is one compiled program.
"""
from __future__ import annotations

import copy

import jax
import jax.numpy as jnp

from mechjax import attention_mix, fastpath
from mechjax.attention_mix import MIXINGS, uniform_pattern  # noqa: F401 (re-exported)
from mechjax.config import ConfigError, ModelConfig
from mechjax.model import HookFn, Params
from mechjax.model import forward as model_forward
from mechjax.train import Trainer, TrainState


def rate_hook(rate: jax.Array | float, cfg: ModelConfig, inner: HookFn | None = None,
              mixing: str = "uniform") -> HookFn:
    """A forward hook mixing every attention pattern towards ``mixing``'s constant at ``rate``
    (then ``inner``, if given, sees every hook point as usual)."""
    mix = attention_mix.rate_hook(rate, cfg, attention_mix.check_mixing(mixing))
    return mix if inner is None else (lambda name, x: inner(name, mix(name, x)))


def forward(params: Params, tokens: jax.Array, cfg: ModelConfig, rate: jax.Array | float,
            key: jax.Array | None = None, hook: HookFn | None = None,
            mixing: str = "uniform") -> jax.Array:
    """``mechjax.model.forward`` at attention rate ``rate``: ``tokens [b, p]`` -> ``[b, p, v]``."""
    return model_forward(params, tokens, cfg, rate_hook(rate, cfg, hook, mixing), key)


class RateTrainer(Trainer):
    """``Trainer`` whose model runs at the traced attention rate ``hparams['attn_rate']``.

    The rate reaches ``logits`` (training loss and every evaluation) through a throwaway copy of
    the trainer made for each ``run``, so no traced value outlives the trace. A task read at one
    position goes through the fast readout path (``mechjax.fastpath``, with the same rate), as
    the plain trainer's does. ``mixing`` (``"uniform"`` or ``"ones"``) is fixed per trainer.
    """

    _rate: jax.Array | float = 1.0

    def __init__(self, *args, mixing: str = "uniform", **kwargs):
        self.mixing = attention_mix.check_mixing(mixing)
        super().__init__(*args, **kwargs)

    def default_hparams(self, **overrides: float) -> dict[str, jax.Array]:
        rate = overrides.pop("attn_rate", 1.0)
        values = super().default_hparams(**overrides)
        values["attn_rate"] = jnp.asarray(rate, jnp.float32)
        return values

    def logits(self, params: Params, tokens: jax.Array, key: jax.Array | None = None):
        readout = self.task.readout
        if readout is not None and self.use_fastpath:
            return fastpath.readout_logits(params, tokens, self.model_cfg, readout, key,
                                           attn_rate=self._rate, attn_mixing=self.mixing)
        out = forward(params, tokens, self.model_cfg, self._rate, key, mixing=self.mixing)
        return out if self.task.readout is None else out[:, self.task.readout]

    def run(self, state: TrainState, hparams, n_evals: int, total=None):
        bound = copy.copy(self)
        bound._rate = hparams["attn_rate"]
        return Trainer.run(bound, state, hparams, n_evals, total)


def check_rates(rates) -> list[float]:
    """The rates of a sweep as floats, each in [0, 1] (a ConfigError naming the value if not)."""
    rates = [float(r) for r in rates]
    bad = [r for r in rates if not 0.0 <= r <= 1.0]
    if not rates or bad:
        raise ConfigError(f"attn_rates={rates!r}: need one or more rates, each in [0, 1]")
    return rates
