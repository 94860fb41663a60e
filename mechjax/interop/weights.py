"""TransformerLens-layout state dicts as ``.npz`` files: save, load, validate.

A loaded file must match the config exactly, with one allowance: parameters the config does not
have (a file's all-zero biases, a dropped MLP) are ignored only when every entry is exactly zero,
so that loading never silently discards a trained weight. Every tensor must be floating and
finite (``mechjax.filecheck``): a NaN in one weight is refused, naming the tensor, instead of
evaluating to a plausible but wrong accuracy.
"""
from __future__ import annotations

from typing import Mapping

import jax.numpy as jnp
import numpy as np

from mechjax import filecheck
from mechjax.models.config import ModelConfig
from mechjax.io import write_npz
from mechjax.models.transformer import Params, param_shapes
from mechjax.filecheck import WeightsError

__all__ = ["WeightsError", "load_npz", "params_from_state_dict", "read_npz", "save_npz"]


def save_npz(params: Mapping[str, object], path: str) -> None:
    """Write ``params`` (one model, no seed axis) as an ``.npz`` state dict."""
    write_npz(path, params)


def read_npz(path: str) -> dict[str, np.ndarray]:
    """Every tensor of the state dict at ``path``, after checking that the file opens completely
    and that its tensors are floating and finite."""
    state = filecheck.read_npz(path, "weights file", WeightsError)
    source = f"weights file {path!r}"
    filecheck.check_floating(state, state, source, WeightsError)
    filecheck.check_finite(state, source, WeightsError)
    return state


def params_from_state_dict(state: Mapping[str, np.ndarray], cfg: ModelConfig,
                           source: str = "state dict") -> Params:
    """Check ``state`` against ``cfg`` and return the config's parameters as float32 arrays."""
    expected = param_shapes(cfg)
    filecheck.check_finite(state, source, WeightsError)  # before the shapes: a NaN is named as one
    missing = sorted(set(expected) - set(state))
    mismatched = [f"{k}: file {tuple(state[k].shape)} vs config {expected[k]}"
                  for k in sorted(expected) if k in state and tuple(state[k].shape) != expected[k]]
    extra_nonzero = sorted(k for k in set(state) - set(expected) if np.any(state[k] != 0))
    problems = []
    if missing:
        problems.append(f"missing keys {missing}")
    if mismatched:
        problems.append("shape mismatches [" + "; ".join(mismatched) + "]")
    if extra_nonzero:
        problems.append(f"non-zero parameters the config does not have {extra_nonzero}")
    if problems:
        raise WeightsError(f"{source} does not fit the model config: " + ", ".join(problems))
    filecheck.check_floating(state, expected, source, WeightsError)
    return {k: jnp.asarray(state[k], jnp.float32) for k in expected}


def load_npz(path: str, cfg: ModelConfig) -> Params:
    """Load an ``.npz`` state dict as parameters of ``cfg`` (see module docstring)."""
    # params_from_state_dict checks the config's tensors; any other must be all zeros there
    return params_from_state_dict(filecheck.read_npz(path, "weights file", WeightsError), cfg,
                                  source=f"weights file {path!r}")
