"""Where a model for circuit detection comes from: a weights file or a mechjax run's workdir.

``from_file(path)``: an ``.npz`` state dict as mechjax writes one (``mechjax.interop.weights.save_npz``,
TransformerLens names, one model, no seed axis). ``from_run(workdir, seed, step, sweep)``: one
seed of a finished or crashed sweep, through ``mechjax.sweeps.runs`` (its latest saved step by default);
a workdir holding several sweeps (``imir_detect`` has one per setting) needs ``sweep``, or takes
the only one. Both return a ``Source``: the parameters, a one-line description and, for a run,
its model config and the experiment config it was trained with (so the caller can read the task
off it). Every problem (a missing file or folder, a seed or step the run does not have, a model
with MLPs or LayerNorm, a seed-stacked snapshot passed as a single model) raises ``DetectError``
with one line naming the value and what is allowed, before anything is computed.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Mapping

import numpy as np

from mechjax.sweeps import runs
from mechjax.analysis.imir.detection.explain import DetectError
from mechjax.analysis.imir.forward.truncated import COORDINATE_KIND
from mechjax.models.config import ModelConfig
from mechjax.interop.weights import WeightsError, read_npz


@dataclasses.dataclass(frozen=True)
class Source:
    params: dict[str, np.ndarray]
    description: str                       # "file X" / "workdir X, sweep S, seed N, step K"
    model_cfg: ModelConfig | None = None   # a run's model config
    run_config: Mapping[str, Any] | None = None  # the experiment config of a run


def _check_single_model(params: Mapping[str, np.ndarray], what: str) -> None:
    """A per-seed snapshot (``[n_seeds, n_grid, ...]``) is not one model."""
    w_e = params.get("embed.W_E")
    if w_e is not None and w_e.ndim != 2:
        raise DetectError(f"{what}: embed.W_E has shape {tuple(w_e.shape)}, not [d_vocab, "
                          "d_model]: a sweep snapshot holds every seed; give "
                          "--from_workdir=DIR --seed=N instead")


def from_file(path: str) -> Source:
    """One model from an ``.npz`` state dict."""
    try:
        params = read_npz(path)
    except WeightsError as err:
        raise DetectError(f"--weights={path}: {err}") from None
    _check_single_model(params, f"--weights={path}")
    return Source(params, f"file {path}")


def check_model_config(cfg: ModelConfig, what: str) -> None:
    """Refuse a run whose model is not attention-only without normalization."""
    if not cfg.attn_only:
        raise DetectError(f"{what}: model has attn_only=False (MLP layers); circuit detection "
                          "needs an attention-only model (attn_only=True)")
    if cfg.normalization != "none":
        raise DetectError(f"{what}: model has normalization={cfg.normalization!r}; circuit "
                          "detection needs normalization='none'")


def pick_sweep(workdir: str, sweep: str | None) -> str | None:
    """The sweep folder to open: ``sweep`` when the workdir has it, else the only one."""
    found = runs.sweeps(workdir) if os.path.isdir(workdir) else []
    if sweep is not None and sweep in found:
        return sweep
    if len(found) > 1:
        raise DetectError(f"--from_workdir={workdir} holds sweeps {found}; name one with "
                          "--config.weights_setting")
    return None


def from_run(workdir: str, seed: int, step: int | None = None,
             sweep: str | None = None) -> Source:
    """Seed ``seed`` of the sweep in ``workdir`` at ``step`` (default: the latest saved)."""
    what = f"--from_workdir={workdir}"
    found = coordinate_run(workdir, seed, step, sweep)
    if found is not None:
        return found
    try:
        run = runs.open(workdir, pick_sweep(workdir, sweep))
        check_model_config(run.model_cfg, what)
        params = run.params(seed, step)
        step = run.steps_saved[-1] if step is None and run.steps_saved else step  # for desc
    except runs.RunError as err:
        raise DetectError(f"{what}: {err}") from None
    desc = f"workdir {workdir}, sweep {os.path.relpath(run.path, run.root)}, seed {seed}, " \
           f"step {step}"
    return Source(params, desc, run.model_cfg, run.config)


def coordinate_run(workdir: str, seed: int, step: int | None = None,
                   sweep: str | None = None) -> Source | None:
    """Seed ``seed`` of a sweep trained in manifold coordinates (``imir_detect`` with
    ``train_in=manifold``; None for any other run): its checkpoints hold ``theta``, and the run
    wrote each seed's final ``W(theta)`` as ``weights_seed<N>.npz`` beside them."""
    what = f"--from_workdir={workdir}"
    name = pick_sweep(workdir, sweep)
    if name is None:  # the only sweep, or none (runs.open then says what is missing)
        found = runs.sweeps(workdir) if os.path.isdir(workdir) else []
        if not found:
            return None
        name = found[0]
    folder = os.path.join(workdir, name)
    try:
        with open(os.path.join(folder, "model_config.json")) as f:
            kind = json.load(f).get("kind")
    except (OSError, ValueError, AttributeError):
        return None
    if kind != COORDINATE_KIND:
        return None
    if step is not None:
        raise DetectError(f"{what}: a run trained in manifold coordinates keeps W(theta) of its "
                          f"last step only (weights_seed<N>.npz); drop --step={step}")
    path = os.path.join(folder, f"weights_seed{seed}.npz")
    if not os.path.exists(path):
        raise DetectError(f"{what}: {path} is missing (seed {seed} was not trained in this "
                          "run, or the run did not finish)")
    try:
        with open(os.path.join(workdir, "config.json")) as f:
            run_config = json.load(f)
    except (OSError, ValueError):
        run_config = None
    desc = f"workdir {workdir}, sweep {os.path.relpath(folder, workdir)}, seed {seed}, last step"
    return Source(from_file(path).params, desc, None, run_config)
