"""Zhong et al.'s (2023, "The Clock and the Pizza") attention rate as a traced hyperparameter.

Every attention pattern becomes ``rate * softmax(scores) + (1 - rate) * constant``
(``mechjax.models.attention_mix``). With ``mixing="uniform"`` (the default) the constant is ``1 / n_keys``
over the keys a query may see (rows sum to one; rate 0 averages the values); with ``"ones"``, the
paper's released code (``a * softmax + (1 - a)``), it is the all-ones matrix (rows sum to
``a + (1 - a) * n``; rate 0 sums the values). Both run from the standard transformer to constant
attention; the paper's rate ``a`` is the uniform mixing's ``a / (a + (1 - a) * n)`` up to a
rate-dependent scale of the attention output (with ``n = 2`` keys: 0.5 -> 1/3). The mixing is
applied at the ``hook_pattern`` hook of ``mechjax.models.transformer.forward``, so the model itself is
unchanged, and at rate 1 the pattern is the softmax bit for bit (``1 * p + 0 * c == p``).

``rate_model(cfg, mixing)`` is the transformer at the traced hyperparameter ``attn_rate`` (default 1)
as a ``mechjax.models.Model``: ``make_train`` on it trains a seeds x rates grid as one program.
"""
from __future__ import annotations

import dataclasses

import jax

from mechjax.models import attention_mix, fastpath
from mechjax.models.attention_mix import MIXINGS, uniform_pattern  # noqa: F401 (re-exported)
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.models.protocol import Model, transformer_model
from mechjax.models.transformer import HookFn, Params
from mechjax.models.transformer import forward as model_forward


def rate_hook(rate: jax.Array | float, cfg: ModelConfig, inner: HookFn | None = None,
              mixing: str = "uniform") -> HookFn:
    """A forward hook mixing every attention pattern towards ``mixing``'s constant at ``rate``
    (then ``inner``, if given, sees every hook point as usual)."""
    mix = attention_mix.rate_hook(rate, cfg, attention_mix.check_mixing(mixing))
    return mix if inner is None else (lambda name, x: inner(name, mix(name, x)))


def forward(params: Params, tokens: jax.Array, cfg: ModelConfig, rate: jax.Array | float,
            key: jax.Array | None = None, hook: HookFn | None = None,
            mixing: str = "uniform") -> jax.Array:
    """``mechjax.models.transformer.forward`` at attention rate ``rate``: ``tokens [b, p]`` -> ``[b, p, v]``."""
    return model_forward(params, tokens, cfg, rate_hook(rate, cfg, hook, mixing), key)


def check_rates(rates) -> list[float]:
    """The rates of a sweep as floats, each in [0, 1] (a ConfigError naming the value if not)."""
    rates = [float(r) for r in rates]
    bad = [r for r in rates if not 0.0 <= r <= 1.0]
    if not rates or bad:
        raise ConfigError(f"attn_rates={rates!r}: need one or more rates, each in [0, 1]")
    return rates


def rate_logits(cfg: ModelConfig, mixing: str, params: Params, tokens: jax.Array,
                readout: int | None, key: jax.Array | None, rate: jax.Array | float,
                fast: bool) -> jax.Array:
    """The logits where the labels are read at attention rate ``rate`` (the fast path at one
    position, with the same rate, where the trainer allows it)."""
    if readout is not None and fast:
        return fastpath.readout_logits(params, tokens, cfg, readout, key, attn_rate=rate,
                                       attn_mixing=mixing)
    out = forward(params, tokens, cfg, rate, key, mixing=mixing)
    return out if readout is None else out[:, readout]


def rate_model(cfg: ModelConfig, mixing: str = "uniform") -> Model:
    """The transformer at the traced attention rate ``hparams['attn_rate']`` (default 1), with a
    fixed ``mixing`` (``"uniform"`` or ``"ones"``)."""
    mixing = attention_mix.check_mixing(mixing)
    return dataclasses.replace(
        transformer_model(cfg), hparams={"attn_rate": 1.0},
        logits=lambda params, tokens, readout, key, hparams, fast: rate_logits(
            cfg, mixing, params, tokens, readout, key, hparams["attn_rate"], fast))
