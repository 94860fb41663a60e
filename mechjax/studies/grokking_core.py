"""The algorithmic core of a modular-addition model over training (ACE paper, grokking).

``core_pipeline`` is the paper's ACE analysis of one checkpoint, run by ``ace.analyse`` (one model)
or ``ace.analyse_stack`` (checkpoints x seeds as one compiled program): the energy rank, the
causal rank scans through the linear tail (core-only / core-removed accuracy at every rank),
r_nec, r_suf, the core dimension max(r_energy, r_nec), and the cyclic-shift fit of the class
means inside that core (eigenvalues, held-out R^2, rotational modes). ``core_stats`` turns the
result into the experiment's per-checkpoint record ``CoreStats``.

Also here, for anything that trains the paper's model: ``spec_model_config`` (the 2-layer post-LN
encoder) and the epoch/checkpoint bookkeeping (``steps_per_epoch``, ``checkpoint_epochs``,
``checked_schedule``: the schedule of a run with a branch, its relations checked).

Shapes: N test inputs, D activation width, V = P answers (classes), C checkpoints, n seeds.
"""
from __future__ import annotations

import math
from typing import Mapping, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis import ace
from mechjax.models.config import ConfigError, ModelConfig

Array = jax.Array
HOOK = "blocks.1.hook_resid_post"  # the layer-2 output, read at the last position


# ------------------------------------------------------------------------------------------------
# The model and the training clock of the ACE paper's grokking experiment
# ------------------------------------------------------------------------------------------------
def spec_model_config(p: int, n_layers: int = 2, d_model: int = 128, n_heads: int = 4,
                      d_mlp: int = 512, dropout: float = 0.1, n_ctx: int = 2,
                      causal: bool = False) -> ModelConfig:
    """The ACE paper's model for ``a + b mod p`` from ``[a, b]``: post-LN encoder blocks (PyTorch
    ``TransformerEncoderLayer`` layout, ReLU, dropout), learned positions, untied head with bias,
    PyTorch default initialization. ``causal=False``: an encoder without a mask (the paper's
    blocks are encoder layers; at the read-out position the two choices see the same tokens)."""
    return ModelConfig(n_layers=n_layers, d_model=d_model, n_heads=n_heads, d_mlp=d_mlp,
                       d_vocab=p, d_vocab_out=p, n_ctx=n_ctx, act_fn="relu", use_bias=True,
                       normalization="post", dropout=dropout, causal=causal, init="pytorch")


def steps_per_epoch(n_train: int, batch_size: int | None) -> int:
    """One epoch = ``ceil(n_train / batch_size)`` optimizer steps (1 for full batch)."""
    if batch_size is None or batch_size >= n_train:
        return 1
    return -(-n_train // batch_size)


def checkpoint_epochs(total: int, dense_every: int = 100, dense_until: int = 2000,
                      sparse_every: int = 500) -> list[int]:
    """The ACE paper's schedule: epoch 0, every ``dense_every`` up to ``dense_until``, then every
    ``sparse_every`` up to ``total`` (the last epoch is always included)."""
    out = list(range(0, min(dense_until, total) + 1, dense_every))
    out += list(range(dense_until + sparse_every, total + 1, sparse_every))
    if out[-1] != total:
        out.append(total)
    return out


def _multiple(name: str, value: int, of_name: str, of: int) -> None:
    if value % of:
        raise ConfigError(f"{name}={value} must be a multiple of {of_name}={of} (checkpoints "
                          "fall on evaluation/chunk boundaries)")


def checked_schedule(epochs: int, eval_every: int, dense_every: int, dense_until: int,
                     sparse_every: int, branch_epoch: int, clock_epochs: Sequence[int]
                     ) -> list[int]:
    """``checkpoint_epochs(epochs, dense_every, dense_until, sparse_every)`` after checking that
    checkpoints fall on evaluation boundaries, that the branch epoch is a checkpoint strictly
    inside the run and that every clock epoch is a checkpoint (``ConfigError`` naming the config
    key, ``train.*`` / ``checkpoints.*`` / ``branch.epoch`` / ``ace.clock_epochs``, otherwise)."""
    _multiple("checkpoints.dense_every", dense_every, "train.eval_every_epochs", eval_every)
    _multiple("checkpoints.dense_until", dense_until, "checkpoints.dense_every", dense_every)
    _multiple("checkpoints.sparse_every", sparse_every, "checkpoints.dense_every", dense_every)
    _multiple("train.epochs", epochs, "checkpoints.dense_every", dense_every)
    schedule = checkpoint_epochs(epochs, dense_every, dense_until, sparse_every)
    if branch_epoch not in schedule or branch_epoch in (0, epochs):
        raise ConfigError(f"branch.epoch={branch_epoch!r}: must be a checkpoint epoch strictly "
                          f"between 0 and train.epochs={epochs}; checkpoints: {schedule}")
    if any(e not in schedule for e in clock_epochs):
        raise ConfigError(f"ace.clock_epochs={clock_epochs!r}: each must be a checkpoint epoch; "
                          f"checkpoints: {schedule}")
    return schedule


# ------------------------------------------------------------------------------------------------
# One checkpoint: the paper's ACE pipeline and its per-checkpoint record
# ------------------------------------------------------------------------------------------------
def core_pipeline(tau: float = 0.99, rel_tol: float = 1e-3, holdout_start: int = 0,
                  holdout_frac: float = 0.075, float64: bool = False,
                  hook_name: str = HOOK, keep_coords: int | None = 0) -> ace.Pipeline:
    """The ACE paper's analysis: the last-position activation of the last block (linear tail, so
    Obs is exact and the causal scan covers every rank), core dimension max(r_energy, r_nec), and
    the cyclic-shift fit of the class means inside that core. ``keep_coords``: the core
    coordinates kept for comparing seeds (0, the default: none, as ``CoreStats`` reads none;
    None: the whole core)."""
    return ace.Pipeline(hook_name=hook_name, position=-1, tail="unembed", validation="rank_scan",
                        identify="cyclic_shift", tau=tau, float64=float64, rel_tol=rel_tol,
                        holdout_start=holdout_start, holdout_frac=holdout_frac,
                        keep_coords=keep_coords)


class CoreStats(NamedTuple):
    """Everything measured on one checkpoint (batched: every field gains leading axes)."""

    weights: Array           # [D] balanced-truncation weights, descending
    r_energy: Array          # [] smallest r with energy >= tau
    r_nec: Array             # [] smallest r >= r_energy with core-removed accuracy <= 2/V
    r_suf: Array             # [] smallest r with core-only accuracy >= full - 0.001
    core_dim: Array          # [] max(r_energy, r_nec)
    acc_full: Array          # [] accuracy on the given inputs
    acc_core_only: Array     # [] at core_dim
    acc_core_removed: Array  # [] at core_dim
    scan_core_only: Array    # [D+1] core-only accuracy at every rank
    scan_core_removed: Array  # [D+1] core-removed accuracy at every rank
    eigenvalues: Array       # [D] complex, shift operator on class means, by decreasing modulus
    on_circle: Array         # [D] bool, ||lambda| - 1| <= sin(pi / P)
    n_rotational: Array      # [] distinct folded frequencies on the circle (<= floor(P/2) + 1)
    shift_r2: Array          # [] in-sample R^2 of the shift fit
    heldout_r2: Array        # [] R^2 on the held-out block of answers
    n_directions: Array      # [] principal directions of the class means kept in the fit


def core_stats(result: ace.Result) -> CoreStats:
    """The per-checkpoint record of a ``core_pipeline`` result (any leading axes)."""
    fit, acc = result.fit, result.accuracy
    return CoreStats(result.core.weights, result.core.rank, result.r_nec, result.r_suf,
                     result.core_dim, acc["full"], acc["core_only"], acc["core_removed"],
                     result.scan[0], result.scan[1], fit.eigenvalues, fit.on_circle,
                     fit.n_rotational, fit.r2, fit.heldout_r2, fit.n_directions)


def max_rotational_modes(p: int) -> int:
    """``floor(P / 2) + 1``: the folded frequencies 0..floor(P/2)."""
    return p // 2 + 1


def sin_pi_over(p: int) -> float:
    """The unit-circle tolerance of the ACE paper's operator fit."""
    return math.sin(math.pi / p)


def heldout_pair_inputs(task) -> ace.Inputs:
    """The test pairs of a ``tasks.modular`` task (its ``test`` pool's rows of positive weight)
    as ACE inputs."""
    test = task.eval_pools["test"](None, task.params_with_defaults())
    rows = np.asarray(test["weights"]) > 0
    return ace.Inputs(jnp.asarray(np.asarray(test["tokens"])[rows]),
                      jnp.asarray(np.asarray(test["labels"])[rows]))


def stacked_core_stats(snapshots: Sequence[Mapping[str, np.ndarray]], inputs: ace.Inputs,
                       cfg: ModelConfig, pipe: ace.Pipeline, checkpoint_batch: int
                       ) -> dict[str, np.ndarray]:
    """``CoreStats`` of every checkpoint x seed as numpy ``{field: [C, n, ...]}``:
    ``snapshots`` holds one ``{name: [n, ...]}`` parameter dict per checkpoint, analysed as one
    ``ace.analyse_stack`` call (in ``pipe``'s precision)."""
    params = {k: jnp.asarray(np.stack([s[k] for s in snapshots])) for k in snapshots[0]}
    with ace.precision(pipe.float64):
        out = ace.analyse_stack(params, inputs, cfg, pipe, checkpoint_batch)
        stats = core_stats(jax.block_until_ready(out))
    return {k: np.asarray(v) for k, v in stats._asdict().items()}
