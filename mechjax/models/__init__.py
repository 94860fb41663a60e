"""Models: parameters as pytrees and pure forward passes with named hook points.

* ``config``        -- ``ModelConfig``, the frozen description every built-in transformer is an instance of
* ``transformer``   -- the transformer: TransformerLens-named parameters, ``forward``/``apply``
* ``hooks``         -- caches and interventions at the transformer's hook points
* ``generate``      -- sampling continuations as one compiled loop
* ``fastpath``, ``fastpath_tables`` -- the transformer's exact shortcuts for a one-position read-out
  (chosen at trace time by the trainer; tested against ``transformer.forward``)
* ``attention_mix``, ``attention_rate`` -- attention patterns mixed towards a constant (Zhong et al. 2023)
* ``icl_minimal``   -- Reddy's (ICLR 2024) minimal in-context classification network

The theory's attention-only network of the IMIR paper lives with its analysis
(``mechjax.analysis.imir.forward``), where its coordinates are defined.
"""
from mechjax.models import attention_rate, fastpath, generate, hooks, icl_minimal, transformer
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.models.hooks import (hook_names, mean_ablate, patch, project_onto, run_with_cache,
                                  run_with_hooks, zero_ablate)
from mechjax.models.transformer import (Params, apply, count_params, forward, init_params,
                                        param_shapes)

__all__ = ["ConfigError", "ModelConfig", "Params", "apply", "attention_rate", "count_params",
           "fastpath", "forward", "generate", "hook_names", "hooks", "icl_minimal",
           "init_params", "mean_ablate", "param_shapes", "patch", "project_onto",
           "run_with_cache", "run_with_hooks", "transformer", "zero_ablate"]
