"""The algorithmic core of a modular-addition model over training (SPEC 2.1-2.3, 2.6).

One function, ``analyse_activations``, turns one checkpoint's activations at the layer whose tail is
the (linear) unembedding into every per-checkpoint number of the grokking experiment: ACE energy
rank, the causal rank scans (core-only / core-removed accuracy at every rank), r_nec, r_suf, the
core dimension max(r_energy, r_nec), and the cyclic-shift fit of the class means inside that core
(eigenvalues, held-out R^2, rotational modes). ``analyse_params`` runs it on a model, and
``analyse_stack`` on a stack of checkpoints x seeds as one compiled program.

Why a special causal scan: when the hooked activation feeds the logits through ``h W_U + b``
(the last block's output of a post-LN model, which has no final LayerNorm), intervening on h at
rank r changes the logits by a rank-r term, so all D + 1 ranks come from one running sum of
outer products, without D + 1 forward passes. ``linear_tail_scan`` does that; it agrees with
``ace.causal_scan`` through hooks (tested).

Also here, for anything that trains SPEC 2.6's model: ``spec_model_config`` (the 2-layer post-LN
encoder) and the epoch/checkpoint bookkeeping (``steps_per_epoch``, ``checkpoint_epochs``,
``first_at_least``).

Shapes: N test inputs, D activation width, V = P answers (classes), C checkpoints, n seeds.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.curves import first_crossing

from mechjax.analysis import ace
from mechjax.config import ModelConfig
from mechjax.metrics import accuracy
from mechjax.model import Params

Array = jax.Array
HOOK = "blocks.1.hook_resid_post"  # SPEC 2.6: the layer-2 output, read at the last position


# ------------------------------------------------------------------------------------------------
# The model and the training clock of SPEC 2.6
# ------------------------------------------------------------------------------------------------
def spec_model_config(p: int, n_layers: int = 2, d_model: int = 128, n_heads: int = 4,
                      d_mlp: int = 512, dropout: float = 0.1, n_ctx: int = 2,
                      causal: bool = False) -> ModelConfig:
    """SPEC 2.6's model for ``a + b mod p`` from ``[a, b]``: post-LN encoder blocks (PyTorch
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
    """SPEC 2.6's schedule: epoch 0, every ``dense_every`` up to ``dense_until``, then every
    ``sparse_every`` up to ``total`` (the last epoch is always included)."""
    out = list(range(0, min(dense_until, total) + 1, dense_every))
    out += list(range(dense_until + sparse_every, total + 1, sparse_every))
    if out[-1] != total:
        out.append(total)
    return out


def first_at_least(values: np.ndarray, xs: Sequence[float], threshold: float) -> list:
    """Per row of ``values [n, C]``: the first ``xs[c]`` with ``values >= threshold``, else None
    (a run that never gets there is reported as None, not dropped)."""
    first = first_crossing(np.asarray(xs), values, threshold)
    return [None if np.isnan(v) else type(xs[0])(v) for v in first]


# ------------------------------------------------------------------------------------------------
# Causal scan through a linear tail
# ------------------------------------------------------------------------------------------------
@jax.jit
def linear_tail_scan(h: Array, basis: Array, w_u: Array, b_u: Array, labels: Array,
                     ) -> tuple[Array, Array, Array]:
    """Core-only and core-removed accuracy at every rank r = 0..D for ``logits = h W_U + b``.

    ``h [N, D]``, ``basis [D, D]`` (orthonormal columns in core order), ``w_u [D, V]``,
    ``b_u [V]``, ``labels [N]``. Core-only at rank r: ``h Q_r Q_r^T W_U + b``; core-removed:
    ``(h - h Q_r Q_r^T) W_U + b`` (SPEC 2.2, uncentred). Returns ``(core_only [D+1],
    core_removed [D+1], full [])``. Memory O(N V): the rank-r logits are a running sum.
    """
    z = h @ basis                     # [N, D] core coordinates
    g = basis.T @ w_u                 # [D, V] each direction's effect on the logits
    full_logits = h @ w_u + b_u
    acc = lambda logits: accuracy(logits, labels, dtype=logits.dtype)  # float64 under x64

    def step(partial, i):
        out = (acc(partial + b_u), acc(full_logits - partial))
        return partial + z[:, i, None] * g[i][None, :], out

    last, (only, removed) = jax.lax.scan(step, jnp.zeros_like(full_logits),
                                         jnp.arange(h.shape[1]))
    only = jnp.append(only, acc(last + b_u))
    removed = jnp.append(removed, acc(full_logits - last))
    return only, removed, acc(full_logits)


# ------------------------------------------------------------------------------------------------
# One checkpoint
# ------------------------------------------------------------------------------------------------
class CoreStats(NamedTuple):
    """Everything measured on one checkpoint (vmapped: every field gains leading axes)."""

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


@functools.partial(jax.jit, static_argnames=("n_classes", "holdout_frac"))
def analyse_activations(h: Array, labels: Array, w_u: Array, b_u: Array, n_classes: int,
                        tau: float = 0.99, rel_tol: float = 1e-3, holdout_start: int = 0,
                        holdout_frac: float = 0.075, suf_tol: float = 1e-3) -> CoreStats:
    """ACE extract + causal scan + shift identification for one checkpoint.

    ``h [N, D]`` activations whose tail is ``logits = h W_U + b`` (``w_u [D, V]``, ``b_u [V]``),
    ``labels [N]`` the answers. Obs = W_U W_U^T exactly (linear tail, SPEC 2.1). Pure and
    jittable; pass float64 arrays under ``jax.enable_x64`` for SPEC's float64 Gramians.
    """
    cov, mean = ace.covariance(h)
    core = ace.extract_from_gramians(ace.Gramians(cov, ace.linear_observability(w_u), mean), tau)
    basis = core.basis.astype(h.dtype)
    only, removed, full = linear_tail_scan(h, basis, w_u.astype(h.dtype), b_u.astype(h.dtype),
                                           labels)
    r_nec = ace.r_nec(removed, core.rank, n_classes)
    r_suf = ace.r_suf(only, full, suf_tol)
    core_dim = jnp.maximum(core.rank, r_nec)
    reps = ace.class_means(h @ ace.mask_basis(basis, core_dim), labels, n_classes)  # [P, D]
    fit = ace.cyclic_shift(reps, rel_tol, holdout_start, holdout_frac)
    return CoreStats(core.weights, core.rank, r_nec, r_suf, core_dim, full, only[core_dim],
                     removed[core_dim], only, removed, fit.eigenvalues, fit.on_circle,
                     fit.n_rotational, fit.r2, fit.heldout_r2, fit.n_directions)


def analyse_params(params: Params, tokens: Array, labels: Array, cfg: ModelConfig,
                   hook_name: str = HOOK, dtype=jnp.float32, **kwargs) -> CoreStats:
    """``analyse_activations`` on the last-position activation at ``hook_name`` of a model.

    ``hook_name`` must be the last block's output of a model without a final LayerNorm (so the
    tail is the unembedding); ``tokens [N, p]``, ``labels [N]``.
    """
    if cfg.normalization == "pre" or hook_name != f"blocks.{cfg.n_layers - 1}.hook_resid_post":
        raise ValueError(f"hook {hook_name!r} with normalization={cfg.normalization!r}: the tail "
                         "is linear only for the last block's output without ln_final")
    h = ace.activations(params, tokens, cfg, hook_name, position=-1).astype(dtype)
    b_u = params["unembed.b_U"] if cfg.has_unembed_bias else jnp.zeros(cfg.vocab_out)
    return analyse_activations(h, labels, params["unembed.W_U"].astype(dtype),
                               b_u.astype(dtype), cfg.vocab_out, **kwargs)


def analyse_stack(params: Params, tokens: Array, labels: Array, cfg: ModelConfig,
                  hook_name: str = HOOK, dtype=jnp.float32, checkpoint_batch: int | None = None,
                  **kwargs) -> CoreStats:
    """``analyse_params`` on ``params`` stacked ``[C, n, ...]`` (checkpoints x seeds) as one
    compiled program: seeds vmapped, checkpoints through ``lax.map`` with ``checkpoint_batch`` of
    them vmapped at a time (None: all at once). Every field gains leading axes ``[C, n]``."""
    one = lambda p: analyse_params(p, tokens, labels, cfg, hook_name, dtype, **kwargs)
    seeds = jax.vmap(one)
    n_ckpt = jax.tree.leaves(params)[0].shape[0]
    batch = n_ckpt if checkpoint_batch is None else min(checkpoint_batch, n_ckpt)
    # Pad to a multiple of the batch with copies of the last checkpoint: lax.map's own remainder
    # path (a second, differently batched body) was measured to stall for minutes on CPU.
    n_pad = -(-n_ckpt // batch) * batch
    padded = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], n_pad - n_ckpt, 0)]),
                          params)
    out = jax.jit(lambda ps: jax.lax.map(seeds, ps, batch_size=batch))(padded)
    return jax.tree.map(lambda x: x[:n_ckpt], out)


def max_rotational_modes(p: int) -> int:
    """``floor(P / 2) + 1``: the folded frequencies 0..floor(P/2)."""
    return p // 2 + 1


def sin_pi_over(p: int) -> float:
    """The unit-circle tolerance of SPEC 2.3."""
    return math.sin(math.pi / p)
