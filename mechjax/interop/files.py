"""A ``transformers``-layout checkpoint folder read as numpy: ``config.json`` and the state dict.

The weights come from, in this order of preference: ``model.safetensors``, a sharded
``model.safetensors.index.json`` (large checkpoints), or ``pytorch_model.bin`` (older
checkpoints; needs torch). Safetensors are read through ``safetensors.numpy``, so loading a
safetensors checkpoint never imports torch.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from mechjax import filecheck
from mechjax.filecheck import CheckpointError

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX_FILE = "model.safetensors.index.json"
TORCH_FILE = "pytorch_model.bin"
WEIGHT_FILES = (SAFETENSORS_FILE, SAFETENSORS_INDEX_FILE, TORCH_FILE)




def check_folder(folder: str) -> str:
    """``folder`` as given, after checking that it is an existing directory."""
    if not os.path.isdir(folder):
        what = "is a file, not a folder" if os.path.exists(folder) else "does not exist"
        raise CheckpointError(f"checkpoint folder {folder!r} {what}; expected a folder holding "
                              f"{CONFIG_FILE} and one of {WEIGHT_FILES}")
    return folder


def read_config(folder: str) -> dict[str, Any]:
    """``folder/config.json`` as a dict."""
    path = os.path.join(check_folder(folder), CONFIG_FILE)
    if not os.path.isfile(path):
        raise CheckpointError(f"{path!r} does not exist; a transformers checkpoint folder holds "
                              f"{CONFIG_FILE} beside its weights")
    return filecheck.read_json(path, "checkpoint config", CheckpointError)


def weights_path(folder: str) -> str:
    """The weights file the checkpoint in ``folder`` is read from (``WEIGHT_FILES`` order)."""
    check_folder(folder)
    for name in WEIGHT_FILES:
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise CheckpointError(f"checkpoint folder {folder!r} has no weights file; expected one of "
                          f"{WEIGHT_FILES}")


def read_state_dict(folder: str) -> dict[str, np.ndarray]:
    """Every tensor of the checkpoint in ``folder``, by its ``transformers`` name, as numpy."""
    path = weights_path(folder)
    reader = {SAFETENSORS_FILE: _read_safetensors, SAFETENSORS_INDEX_FILE: _read_sharded,
              TORCH_FILE: _read_torch}[os.path.basename(path)]
    return reader(path)


def _read_safetensors(path: str) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file
    try:
        return load_file(path)
    except Exception as err:  # safetensors raises its own error types; report the file
        raise CheckpointError(f"{path!r} is not a readable safetensors file: {err}") from err


def _read_sharded(index_path: str) -> dict[str, np.ndarray]:
    index = filecheck.read_json(index_path, "safetensors index", CheckpointError)
    what = "an object of tensor name -> shard file"
    weight_map = filecheck.require(index, "weight_map", dict, index_path, CheckpointError, what)
    if not all(isinstance(v, str) for v in weight_map.values()):
        raise CheckpointError(f"{index_path!r}: key 'weight_map' is not {what}")
    shards = sorted(set(weight_map.values()))
    state: dict[str, np.ndarray] = {}
    for shard in shards:
        state.update(_read_safetensors(os.path.join(os.path.dirname(index_path), shard)))
    missing = sorted(set(weight_map) - set(state))
    if missing:
        raise CheckpointError(f"{index_path!r} lists tensors that no shard holds: {missing[:5]}")
    return state


def _read_torch(path: str) -> dict[str, np.ndarray]:
    try:
        import torch
    except ImportError as err:
        raise CheckpointError(f"{path!r} is a torch pickle and torch is not installed; install "
                              "the torch extra (pip install -e \".[torch]\") or convert the "
                              f"checkpoint to {SAFETENSORS_FILE}") from err
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # unpickling errors come in many types; report the file
        raise CheckpointError(f"{path!r} is not a readable torch state dict: {err}") from err
    if not isinstance(state, dict):
        raise CheckpointError(f"{path!r} holds a {type(state).__name__}, not a state dict")
    # float() first: numpy has no bfloat16, and analysis runs in float32 anyway.
    return {k: v.detach().float().numpy() if v.is_floating_point() else v.numpy()
            for k, v in state.items() if isinstance(v, torch.Tensor)}
