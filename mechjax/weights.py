"""TransformerLens-layout state dicts as ``.npz`` files: save, load, validate.

A loaded file must match the config exactly, with one allowance: parameters the config does not
have (a file's all-zero biases, a dropped MLP) are ignored only when every entry is exactly zero,
so that loading never silently discards a trained weight.
"""
from __future__ import annotations

import os
from typing import Mapping

import jax.numpy as jnp
import numpy as np

from mechjax.config import ModelConfig
from mechjax.io import write_npz
from mechjax.model import Params, param_shapes


class WeightsError(ValueError):
    """A weights file is missing, unreadable or does not fit the model config."""


def save_npz(params: Mapping[str, object], path: str) -> None:
    """Write ``params`` (one model, no seed axis) as an ``.npz`` state dict."""
    write_npz(path, params)


def read_npz(path: str) -> dict[str, np.ndarray]:
    if not os.path.exists(path):
        raise WeightsError(f"weights file {path!r} does not exist")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: np.asarray(data[k]) for k in data.files}
    except Exception as err:  # zipfile / format errors: report the file, not a traceback riddle
        raise WeightsError(f"weights file {path!r} is not a readable .npz state dict: {err}") from err


def params_from_state_dict(state: Mapping[str, np.ndarray], cfg: ModelConfig,
                           source: str = "state dict") -> Params:
    """Check ``state`` against ``cfg`` and return the config's parameters as float32 arrays."""
    expected = param_shapes(cfg)
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
    return {k: jnp.asarray(state[k], jnp.float32) for k in expected}


def load_npz(path: str, cfg: ModelConfig) -> Params:
    """Load an ``.npz`` state dict as parameters of ``cfg`` (see module docstring)."""
    return params_from_state_dict(read_npz(path), cfg, source=f"weights file {path!r}")
