"""Training at a traced attention rate (``mechjax.models.attention_rate``): a seeds x rates grid
through ``run_sweep`` is one compiled program."""
from __future__ import annotations

import copy

import jax
import jax.numpy as jnp

from mechjax.models import attention_mix, fastpath
from mechjax.models.attention_rate import forward
from mechjax.models.transformer import Params
from mechjax.training.train import Trainer, TrainState


class RateTrainer(Trainer):
    """``Trainer`` whose model runs at the traced attention rate ``hparams['attn_rate']``.

    The rate reaches ``logits`` (training loss and every evaluation) through a throwaway copy of
    the trainer made for each ``run``, so no traced value outlives the trace. A task read at one
    position goes through the fast readout path (``mechjax.models.fastpath``, with the same rate), as
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
