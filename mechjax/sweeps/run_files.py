"""The files of a sweep's workdir as ``mechjax.sweeps.runs`` reads them (``mechjax.sweeps.files`` writes
them): ``sweep.json``, ``model_config.json``, ``train_config.json``, ``metrics.npz`` and the
parameter snapshots. Each reader checks its file completely and raises ``RunError`` naming the
file and the key or tensor; a stored file's keys get no defaults."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from mechjax.models.config import ConfigError, ModelConfig
from mechjax.models.transformer import param_shapes
from mechjax.training.train import TrainConfig
from mechjax.filecheck.arrays import check_floating, check_keys, check_params, check_shapes
from mechjax.filecheck.documents import check_dataclass_fields, check_fields, read_json
from mechjax.filecheck.errors import RunError
from mechjax.filecheck.files import read_npz

if TYPE_CHECKING:  # imported where a Flax run is read: Flax takes a second to import
    from mechjax.models.flax_adapter import FlaxConfig

FLAX_KIND = "flax"  # model_config.json's "kind" of a Flax model (flax_adapter.CONFIG_KIND)

# The keys of sweep.json that mechjax.sweeps.runs reads, with their JSON types (run_sweep also writes
# chunk_evals, snapshot_steps and task, for people; they are checked when present).
SWEEP_FIELDS = {"seeds": list, "hparams": dict}
SWEEP_INFO_FIELDS = {"chunk_evals": int, "snapshot_steps": list, "task": str}


def read_sweep(path: str) -> dict[str, Any]:
    """``sweep.json``: seeds (integers), ``hparams`` ``{name: [n_grid] numbers}`` (one length)."""
    doc = read_json(path, "sweep file", RunError)
    check_fields(doc, SWEEP_FIELDS, path, RunError)
    check_fields(doc, {k: v for k, v in SWEEP_INFO_FIELDS.items() if k in doc}, path, RunError)
    seeds = doc["seeds"]
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise RunError(f"{path!r}: key 'seeds' is {seeds!r}; expected a non-empty list of "
                       "integers")
    grid = doc["hparams"]
    lengths = {k: len(v) if isinstance(v, list) else None for k, v in grid.items()}
    numbers = all(isinstance(v, list) and all(isinstance(x, (int, float)) and
                                              not isinstance(x, bool) for x in v)
                  for v in grid.values())
    if not grid or not numbers or len(set(lengths.values())) != 1 or 0 in lengths.values():
        raise RunError(f"{path!r}: key 'hparams' is not {{name: list of numbers}} with one "
                       f"non-zero length (lengths: {lengths})")
    return doc


def _config(path: str, cls: type, what: str, convert) -> Any:
    doc = read_json(path, what, RunError)
    check_dataclass_fields(doc, cls, path, RunError)
    try:
        return convert(doc)
    except (ConfigError, TypeError, ValueError) as err:
        raise RunError(f"{path!r}: {err}") from err


def read_model_config(path: str) -> "ModelConfig | FlaxConfig":
    """``model_config.json``: every ``ModelConfig`` field, no other, of the right type; or the
    ``FlaxConfig`` of a Flax model (``mechjax.models.flax_adapter``), marked ``"kind": "flax"``."""
    doc = read_json(path, "model config", RunError)
    if isinstance(doc, dict) and doc.get("kind") == FLAX_KIND:
        from mechjax.models.flax_adapter import FlaxConfig
        try:
            return FlaxConfig.from_dict(doc)
        except (TypeError, ValueError) as err:
            raise RunError(f"{path!r}: {err}") from err
    return _config(path, ModelConfig, "model config", ModelConfig.from_dict)


def train_config_from_dict(values: Mapping[str, Any]) -> TrainConfig:
    values = dict(values)
    if values.get("eval_pools") is not None:
        values["eval_pools"] = tuple(values["eval_pools"])
    return TrainConfig(**values)


def read_train_config(path: str) -> TrainConfig:
    """``train_config.json``: every ``TrainConfig`` field, no other, of the right type."""
    return _config(path, TrainConfig, "train config", train_config_from_dict)


def read_metrics(path: str, seeds: list[int], n_grid: int) -> dict[str, np.ndarray]:
    """``metrics.npz``: ``metrics/<name>`` floating ``[n_seeds, n_grid, n_evals]`` (one
    ``n_evals``, ``metrics/step`` among them), ``seeds`` equal to the sweep's. NaN entries are
    allowed: a metric not measured at an evaluation is NaN."""
    arrays = read_npz(path, "metrics file", RunError)
    check_keys(arrays, ("metrics/step", "seeds"), repr(path), RunError)
    if not np.array_equal(arrays["seeds"], seeds):
        raise RunError(f"{path!r}: seeds {arrays['seeds'].tolist()} differ from the sweep's "
                       f"{seeds}")
    names = [k for k in arrays if k.startswith("metrics/")]
    n_evals = arrays["metrics/step"].shape[-1] if arrays["metrics/step"].ndim == 3 else -1
    check_shapes(arrays, {k: (len(seeds), n_grid, n_evals) for k in names}, repr(path), RunError)
    check_floating(arrays, names, repr(path), RunError)
    return arrays


def read_snapshot(path: str, cfg: "ModelConfig | FlaxConfig", n_seeds: int, n_grid: int
                  ) -> dict[str, np.ndarray]:
    """A parameter snapshot ``{name: [n_seeds, n_grid, *shape]}``: every parameter of ``cfg``,
    floating and finite (a diverged run keeps its last finite parameters, so a non-finite
    entry means a broken file)."""
    arrays = read_npz(path, "parameter snapshot", RunError)
    check_params(arrays, snapshot_shapes(cfg, n_seeds, n_grid), repr(path), RunError)
    return arrays


@functools.lru_cache(maxsize=64)
def snapshot_shapes(cfg: "ModelConfig | FlaxConfig", n_seeds: int, n_grid: int
                    ) -> dict[str, tuple[int, ...]]:
    """``{name: (n_seeds, n_grid, *shape)}`` of a snapshot (the same for every step of a run;
    the value must not be mutated). A Flax model's config lists its own shapes."""
    shapes = param_shapes(cfg) if isinstance(cfg, ModelConfig) else cfg.shapes()
    return {k: (n_seeds, n_grid, *v) for k, v in shapes.items()}
