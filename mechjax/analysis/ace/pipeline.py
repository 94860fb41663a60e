"""The ACE pipeline on one model as one pure function -- read the activations and the tail,
extract the core, validate it, identify its operator (docs/ace.md) -- and the same batched over
seeds, or over checkpoints x seeds, as one compiled program.

``Pipeline`` says what to run (hook, tail, validation, identification and their options);
``Inputs`` holds the data; ``analyse`` returns a ``Result``. ``analyse_seeds`` vmaps it over
stacked parameters ``[n, ...]``; ``analyse_stack`` runs ``[C, n, ...]`` (checkpoints x seeds).
``analyse_linear`` is the same pipeline from activations whose tail is a known linear readout
(no model needed; used for planted activations and by ``analyse`` for the ``unembed`` tail).

Float64 (as the paper computes): ``Pipeline(float64=True)`` casts the activations and Jacobians to float64;
the whole call must run inside ``precision(True)`` (``jax.enable_x64``), see ``extract``.

Shape legend: B sequences, T positions, N activations (B x T, or B at one position), D width,
S Jacobian samples, V vocabulary (= P classes), n seeds, C checkpoints.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.ace.basis import mask_basis
from mechjax.analysis.ace.extract import (Core, Gramians, covariance, extract_from_gramians,
                                          linear_observability, observability)
from mechjax.analysis.ace.identify import MarkovFit, ShiftFit, class_means, cyclic_shift, \
    markov_operator
from mechjax.analysis.ace.reads import ACE_CHUNK, JACOBIAN_CHUNK, activations, hook_jacobians
from mechjax.analysis.ace.validate import (causal_scan, causal_scan_last_block,
                                           intervened_metric, linear_tail_scan, r_nec, r_suf,
                                           reads_last_block, validate, validate_last_block)
from mechjax.chunks import check_chunk_size
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import Params

Array = jax.Array

# The tail f from the hooked activation to what Obs differentiates. ``unembed``: the activation
# feeds the logits through ``h W_U + b`` (the last block's output without a final LayerNorm), so
# Obs = W_U W_U^T exactly and every rank's intervention comes from one running sum. ``logits`` /
# ``log_probs``: Jacobians of the rest of the model through hooks at sampled (sequence, position)
# pairs; log-softmax drops the one direction the output distribution ignores (adding the same
# amount to every logit).
TAIL_OUTPUTS = {"logits": None, "log_probs": jax.nn.log_softmax}
TAILS = ("unembed",) + tuple(TAIL_OUTPUTS)
# ``hooks``: full / core-only / core-removed metric at the energy rank, intervening at every
# position (uncentred, toy models). ``rank_scan``: both interventions at every rank, then r_nec,
# r_suf and the core dimension max(r_energy, r_nec): from one running sum with the ``unembed``
# tail, else through hooks and the model's real tail (``causal_scan``; a final LayerNorm too).
VALIDATIONS = ("hooks", "rank_scan")
# ``markov``: a linear operator across consecutive positions; ``cyclic_shift``: a shift operator
# across the class means of the answers.
IDENTIFICATIONS = ("markov", "cyclic_shift")


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """What ACE runs on one model (hashable: a static argument of the compiled pipeline).

    hook_name:  where the activation ``H`` is read (``analyse`` only).
    position:   None reads every position (``H [B*T, D]``, labels ``[B, T]``); an int reads that
                position (``H [B, D]``, labels ``[B]``).
    tail, validation, identify: one of ``TAILS``, ``VALIDATIONS``, ``IDENTIFICATIONS``.
    tau:        the energy threshold of the rank.
    float64:    cast activations and Jacobians to float64 (run inside ``precision(True)``).
    keep_coords: the core coordinates of every activation kept for CCA (``Result.coords``).
                None: the whole core, i.e. its rank (all D columns, those past the rank zero:
                the rank is traced, the shape is not); 0: none; K: the first K, which
                ``cca_matrix`` refuses to compare for cores of rank above K unless asked.
    rel_tol, holdout_start, holdout_frac: options of ``cyclic_shift``.
    suf_tol:    the tolerance of ``r_suf``.
    scan_batch: ranks vmapped at a time by the rank scan through hooks (None: one by one);
                memory grows with it times ``chunk_size``.
    chunk_size: sequences per forward pass of the activation read and the interventions (which
                need no pass at the last block's output: ``validate_last_block``), and
    jac_chunk:  Jacobian samples differentiated at a time (``mechjax.chunks``; None: all at once):
                memory follows the chunk, not the number of sequences (times seeds under vmap).
    """

    hook_name: str = ""
    position: int | None = None
    tail: str = "logits"
    validation: str = "hooks"
    identify: str = "markov"
    tau: float = 0.999
    float64: bool = False
    keep_coords: int | None = None
    rel_tol: float = 1e-3
    holdout_start: int = 0
    holdout_frac: float = 0.075
    suf_tol: float = 1e-3
    scan_batch: int | None = 8
    chunk_size: int | None = ACE_CHUNK
    jac_chunk: int | None = JACOBIAN_CHUNK

    def __post_init__(self):
        for name, value, allowed in (("tail", self.tail, TAILS),
                                     ("validation", self.validation, VALIDATIONS),
                                     ("identify", self.identify, IDENTIFICATIONS)):
            if value not in allowed:
                raise ValueError(f"Pipeline.{name}={value!r}: allowed {allowed}")
        if self.identify == "markov" and self.position is not None:
            raise ValueError(f"Pipeline.identify='markov' with position={self.position!r}: the "
                             "operator across positions needs every position (position=None)")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"Pipeline.tau={self.tau!r}: must be in (0, 1]")
        if self.keep_coords is not None and (isinstance(self.keep_coords, bool) or not
                                             isinstance(self.keep_coords, int)
                                             or self.keep_coords < 0):
            raise ValueError(f"Pipeline.keep_coords={self.keep_coords!r}: a non-negative int, "
                             "or None for the core's rank")
        check_chunk_size(self.chunk_size, "Pipeline.chunk_size")
        check_chunk_size(self.jac_chunk, "Pipeline.jac_chunk")
        check_chunk_size(self.scan_batch, "Pipeline.scan_batch")

    @property
    def dtype(self):
        return jnp.float64 if self.float64 else jnp.float32


def precision(float64: bool):
    """The context an ACE call runs in: ``jax.enable_x64(True)`` for float64, else nothing."""
    return jax.enable_x64(True) if float64 else contextlib.nullcontext()


class Inputs(NamedTuple):
    """The data of one analysis (shared by every seed and checkpoint)."""

    tokens: Array                    # [B, T]
    labels: Array                    # [B, T] (position None) or [B]
    jac_tokens: Array | None = None  # [S, T] the sequence of each Jacobian sample (hook tails)
    jac_pos: Array | None = None     # [S] the position of each Jacobian sample


class Result(NamedTuple):
    """One model's analysis; batched calls add leading axes to every field."""

    core: Core                     # the extracted core; ``core.rank`` is the energy rank
    core_dim: Array                # [] the rank validated and identified
    accuracy: dict[str, Array]     # {'full', 'core_only', 'core_removed'} at ``core_dim``
    fit: MarkovFit | ShiftFit      # the identified operator
    scan: tuple[Array, Array] | None  # (core_only [D+1], core_removed [D+1]) with 'rank_scan'
    r_nec: Array | None            # [] with 'rank_scan'
    r_suf: Array | None            # [] with 'rank_scan'
    coords: Array | None           # [N, D] (or [N, keep_coords]) core coordinates; None if 0


def unembed(params: Params, cfg: ModelConfig, dtype) -> tuple[Array, Array]:
    """The linear readout ``(W_U [D, V], b_U [V])`` (zeros without a bias) in ``dtype``."""
    b_u = params["unembed.b_U"] if cfg.has_unembed_bias else jnp.zeros(cfg.vocab_out)
    return params["unembed.W_U"].astype(dtype), b_u.astype(dtype)


def check_linear_tail(cfg: ModelConfig, hook_name: str) -> None:
    """Raise unless the activation at ``hook_name`` reaches the logits through ``h W_U + b``."""
    if cfg.normalization == "pre" or hook_name != f"blocks.{cfg.n_layers - 1}.hook_resid_post":
        raise ValueError(f"hook {hook_name!r} with normalization={cfg.normalization!r}: the tail "
                         "is linear only for the last block's output without ln_final")


def _identify_and_keep(h: Array, core: Core, core_dim: Array, labels: Array, seq_shape,
                       pipe: Pipeline, n_classes: int) -> tuple[Any, Array | None]:
    z = h @ mask_basis(core.basis, core_dim)                                  # [N, D]
    if pipe.identify == "markov":
        fit = markov_operator(z.reshape(*seq_shape, -1), core_dim)
    else:
        fit = cyclic_shift(class_means(z, labels, n_classes), pipe.rel_tol, pipe.holdout_start,
                           pipe.holdout_frac)
    if pipe.keep_coords is None:
        return fit, z  # columns past the rank are already zero
    return fit, (z[:, :pipe.keep_coords] if pipe.keep_coords else None)


def _rank_scan(h: Array, core: Core, w_u: Array, b_u: Array, labels: Array, pipe: Pipeline):
    only, removed, full = linear_tail_scan(h, core.basis, w_u, b_u, labels)
    return _ranks_from_scan(only, removed, full, core, w_u.shape[-1], pipe)


def _ranks_from_scan(only: Array, removed: Array, full: Array, core: Core, n_classes: int,
                     pipe: Pipeline):
    """r_nec, r_suf, the core dimension and the metrics there, from both scans ``[D+1]``."""
    nec = r_nec(removed, core.rank, n_classes)
    suf = r_suf(only, full, pipe.suf_tol)
    core_dim = jnp.maximum(core.rank, nec)
    acc = {"full": full, "core_only": only[core_dim], "core_removed": removed[core_dim]}
    return core_dim, acc, (only, removed), nec, suf


@functools.partial(jax.jit, static_argnames=("pipe",))
def analyse_linear(h: Array, labels: Array, w_u: Array, b_u: Array, pipe: Pipeline) -> Result:
    """The pipeline on activations ``h [N, D]`` whose tail is ``logits = h W_U + b``.

    ``w_u [D, V]``, ``b_u [V]``, ``labels [N]`` (or ``[B, T]`` flattened to N with
    ``identify='markov'``). Obs = W_U W_U^T exactly; validation is the rank scan.
    """
    h = h.astype(pipe.dtype)
    w_u, b_u = w_u.astype(pipe.dtype), b_u.astype(pipe.dtype)
    cov, mean = covariance(h)
    core = extract_from_gramians(Gramians(cov, linear_observability(w_u), mean), pipe.tau)
    flat_labels = labels.reshape(-1)
    core_dim, acc, scan, nec, suf = _rank_scan(h, core, w_u, b_u, flat_labels, pipe)
    fit, coords = _identify_and_keep(h, core, core_dim, flat_labels, labels.shape, pipe,
                                     w_u.shape[-1])
    return Result(core, core_dim, acc, fit, scan, nec, suf, coords)


def _validate(params: Params, h: Array, inputs: Inputs, cfg: ModelConfig, pipe: Pipeline,
              basis: Array) -> dict[str, Array]:
    """``validate``'s three metrics; at the last block's output from ``h`` (no more passes)."""
    if reads_last_block(cfg, pipe.hook_name):
        rows = inputs.tokens.shape if pipe.position is None else inputs.tokens.shape[:1]
        return validate_last_block(params, h.reshape(*rows, -1), inputs.labels, cfg, basis)
    return validate(params, inputs.tokens, inputs.labels, cfg, pipe.hook_name, basis,
                    readout=pipe.position, chunk_size=pipe.chunk_size)


def _hook_rank_scan(params: Params, h: Array, inputs: Inputs, cfg: ModelConfig, pipe: Pipeline,
                    core: Core):
    """``_rank_scan`` through hooks: each rank intervenes at the hook and runs the real tail (at
    the last block's output, from ``h``: the tail is then only ``ln_final`` and the unembedding).
    """
    basis = core.basis.astype(h.dtype)
    if reads_last_block(cfg, pipe.hook_name):
        rows = inputs.tokens.shape if pipe.position is None else inputs.tokens.shape[:1]
        h = h.reshape(*rows, -1)
        only, removed = causal_scan_last_block(params, h, inputs.labels, cfg, basis,
                                               batch_size=pipe.scan_batch)
        full = validate_last_block(params, h, inputs.labels, cfg, basis)["full"]
    else:
        only, removed = causal_scan(params, inputs.tokens, inputs.labels, cfg, pipe.hook_name,
                                    basis, readout=pipe.position, batch_size=pipe.scan_batch,
                                    chunk_size=pipe.chunk_size)
        full = intervened_metric(params, inputs.tokens, inputs.labels, cfg, pipe.hook_name, None,
                                 readout=pipe.position, chunk_size=pipe.chunk_size)
    return _ranks_from_scan(only, removed, full, core, cfg.vocab_out, pipe)


@functools.partial(jax.jit, static_argnames=("cfg", "pipe"))
def analyse(params: Params, inputs: Inputs, cfg: ModelConfig, pipe: Pipeline) -> Result:
    """ACE on one model: activations at ``pipe.hook_name``, the tail's Gramian, extraction,
    validation and identification. Pure; vmap/jit/lax.map freely (see ``analyse_seeds``)."""
    if not pipe.hook_name:
        raise ValueError("Pipeline.hook_name is empty: analyse needs the hook to read")
    h_model = activations(params, inputs.tokens, cfg, pipe.hook_name, pipe.position,
                          pipe.chunk_size)
    if pipe.tail == "unembed":
        check_linear_tail(cfg, pipe.hook_name)
        w_u, b_u = unembed(params, cfg, pipe.dtype)
        if pipe.validation == "rank_scan":
            return analyse_linear(h_model, inputs.labels, w_u, b_u, pipe)
        obs = linear_observability(w_u)
    else:
        if inputs.jac_tokens is None or inputs.jac_pos is None:
            raise ValueError(f"Pipeline.tail={pipe.tail!r} samples Jacobians: Inputs.jac_tokens "
                             "and Inputs.jac_pos are required")
        jac = hook_jacobians(params, inputs.jac_tokens, cfg, pipe.hook_name, inputs.jac_pos,
                             out_fn=TAIL_OUTPUTS[pipe.tail],
                             chunk_size=pipe.jac_chunk)                       # [S, K, D]
        obs = observability(jac.astype(pipe.dtype))
    h = h_model.astype(pipe.dtype)
    cov, mean = covariance(h)
    core = extract_from_gramians(Gramians(cov, obs, mean), pipe.tau)
    if pipe.validation == "rank_scan":
        core_dim, acc, scan, nec, suf = _hook_rank_scan(params, h_model, inputs, cfg, pipe, core)
    else:
        acc = _validate(params, h_model, inputs, cfg, pipe,
                        core.core_basis.astype(h_model.dtype))
        core_dim, scan, nec, suf = core.rank, None, None, None
    fit, coords = _identify_and_keep(h, core, core_dim, inputs.labels.reshape(-1),
                                     inputs.tokens.shape, pipe, cfg.vocab_out)
    return Result(core, core_dim, acc, fit, scan, nec, suf, coords)


@functools.partial(jax.jit, static_argnames=("cfg", "pipe"))
def analyse_seeds(params: Params, inputs: Inputs, cfg: ModelConfig, pipe: Pipeline) -> Result:
    """``analyse`` on stacked parameters ``[n, ...]`` as one vmapped program: fields ``[n, ...]``."""
    return jax.vmap(lambda p: analyse(p, inputs, cfg, pipe))(params)


@functools.partial(jax.jit, static_argnames=("cfg", "pipe"))
def _analyse_block(params: Params, inputs: Inputs, cfg: ModelConfig, pipe: Pipeline) -> Result:
    """``analyse`` on one block ``[b, n, ...]`` (checkpoints x seeds): fields ``[b, n, ...]``."""
    return jax.vmap(jax.vmap(lambda p: analyse(p, inputs, cfg, pipe)))(params)


def analyse_stack(params: Params, inputs: Inputs, cfg: ModelConfig, pipe: Pipeline,
                  checkpoint_batch: int | None = None) -> Result:
    """``analyse`` on parameters stacked ``[C, n, ...]`` (checkpoints x seeds): seeds vmapped,
    ``checkpoint_batch`` checkpoints vmapped at a time (None: all at once). Every field gains
    leading axes ``[C, n]``.

    Blocks always hold exactly ``checkpoint_batch`` checkpoints (the last padded with copies of
    the last checkpoint, whose outputs are dropped), run one after another: every stack analysed
    with the same block size, whatever its ``C``, is then one compiled program (a run's two
    branches, 4 and 2 checkpoints, compiled twice before). Memory follows the block, as with the
    ``lax.map`` over blocks this replaces."""
    if checkpoint_batch is not None and (not isinstance(checkpoint_batch, int)
                                         or checkpoint_batch < 1):
        raise ValueError(f"checkpoint_batch={checkpoint_batch!r}: a positive int or None")
    n_ckpt = jax.tree.leaves(params)[0].shape[0]
    batch = n_ckpt if checkpoint_batch is None else checkpoint_batch
    if n_ckpt == batch:
        return _analyse_block(params, inputs, cfg, pipe)
    # Padding, slicing and joining on the host: as eager jax ops each would be a compilation.
    rows = np.minimum(np.arange(-(-n_ckpt // batch) * batch), n_ckpt - 1)
    padded = jax.tree.map(lambda x: np.asarray(x)[rows], params)
    blocks = [_analyse_block(jax.tree.map(lambda x: x[i:i + batch], padded), inputs, cfg, pipe)
              for i in range(0, len(rows), batch)]
    return jax.tree.map(lambda *xs: jnp.asarray(np.concatenate([np.asarray(x) for x in xs])
                                                [:n_ckpt]), *blocks)
