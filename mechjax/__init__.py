"""mechjax: mechanistic interpretability at sweep scale in JAX.

The names a notebook types first, loaded on first use::

    import mechjax as mj
    trainer = mj.make_train(task, mj.ModelConfig(...), mj.TrainConfig(...))
    result = mj.run_sweep(trainer, seeds=range(8), workdir="runs/x")
    run = mj.runs.open("runs/x")
    core = mj.ace.extract(...)

Packages, from the bottom layer up (each imports only from the ones before it; a test of the
import graph holds this): ``filecheck``, ``models``, ``interop``, ``tasks``, ``training``,
``sweeps``, ``analysis``, ``studies``, ``plots``, ``cli``.
"""
from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "ModelConfig": ("mechjax.models.config", "ModelConfig"),
    "Model": ("mechjax.models.protocol", "Model"),
    "TrainConfig": ("mechjax.training.train", "TrainConfig"),
    "Task": ("mechjax.tasks.base", "Task"),
    "make_train": ("mechjax.training.train", "make_train"),
    "run_sweep": ("mechjax.sweeps.sweep", "run_sweep"),
    "grid_product": ("mechjax.sweeps.sweep", "grid_product"),
    "SnapshotPolicy": ("mechjax.sweeps.snapshots", "SnapshotPolicy"),
    "runs": ("mechjax.sweeps.runs", None),
    "run_with_cache": ("mechjax.models.hooks", "run_with_cache"),
    "run_with_hooks": ("mechjax.models.hooks", "run_with_hooks"),
    "init_params": ("mechjax.models.transformer", "init_params"),
    "forward": ("mechjax.models.transformer", "forward"),
    "ace": ("mechjax.analysis.ace", None),
}
_PACKAGES = ("analysis", "cli", "filecheck", "interop", "models", "plots", "studies", "sweeps",
             "tasks", "training")
__all__ = sorted(_NAMES) + list(_PACKAGES)


def __getattr__(name: str) -> Any:
    # Lazy: ``import mechjax.io`` should not import jax, orbax and every package.
    if name in _NAMES:
        module, attr = _NAMES[name]
        mod = importlib.import_module(module)
        value = mod if attr is None else getattr(mod, attr)
    elif name in _PACKAGES:
        value = importlib.import_module(f"mechjax.{name}")
    else:
        raise AttributeError(f"module 'mechjax' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
