"""Models: parameters as pytrees and pure forward passes with named hook points.

* ``protocol``      -- ``Model``: what training, sweeps, saved runs and analyses need from a model,
  and the built-in transformer as one (``transformer_model``)
* ``config``        -- ``ModelConfig``, the frozen description every built-in transformer is an instance of
* ``transformer``   -- the transformer: TransformerLens-named parameters, ``forward``/``apply``
* ``hooks``         -- caches and interventions at the transformer's hook points
* ``generate``      -- sampling continuations as one compiled loop
* ``fastpath``, ``fastpath_tables`` -- the transformer's exact shortcuts for a one-position read-out
  (chosen at trace time by the trainer; tested against ``transformer.forward``)
* ``attention_mix``, ``attention_rate`` -- attention patterns mixed towards a constant (Zhong et al.
  2023); ``rate_model``: the transformer at a traced rate
* ``icl_minimal``   -- Reddy's (ICLR 2024) minimal in-context classification network (``icl_model``)
* ``flax_adapter``  -- a Flax NNX or Linen module as a ``Model`` (``nnx_model``, ``linen_model``), hooks
  by module path (imported on first use: Flax takes a second to import)

The IMIR paper's attention-only network is the transformer with ``imir_config(frame)``; its
truncated forward (``mechjax.analysis.imir.forward.truncated_model``) lives with the frame it is
defined on.
"""
from mechjax.models import attention_rate, fastpath, generate, hooks, icl_minimal, transformer
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.models.protocol import Model, as_model, transformer_model
from mechjax.models.hooks import (HookNameError, check_hook_names, hook_names, mean_ablate, patch,
                                  project_onto, run_with_cache, run_with_hooks, zero_ablate)
from mechjax.models.transformer import (Params, apply, count_params, forward, init_params,
                                        param_shapes)

__all__ = ["ConfigError", "HookNameError", "Model", "ModelConfig", "Params", "as_model", "transformer_model", "apply", "attention_rate", "check_hook_names", "count_params",
           "fastpath", "forward", "generate", "hook_names", "hooks", "icl_minimal",
           "init_params", "mean_ablate", "param_shapes", "patch", "project_onto",
           "run_with_cache", "run_with_hooks", "transformer", "zero_ablate",
           "flax_adapter", "nnx_model", "linen_model", "FlaxConfig"]

_FLAX_EXPORTS = ("flax_adapter", "nnx_model", "linen_model", "FlaxConfig")


def __getattr__(name: str):
    """The Flax adapter's names, imported on first use."""
    if name in _FLAX_EXPORTS:
        import importlib
        module = importlib.import_module("mechjax.models.flax_adapter")
        return module if name == "flax_adapter" else getattr(module, name)
    raise AttributeError(f"module 'mechjax.models' has no attribute {name!r}")
