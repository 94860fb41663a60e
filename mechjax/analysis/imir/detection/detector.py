"""Automatic circuit detection on the IMIR manifold (arXiv 2607.11875; docs/imir.md, section 7).

``detect(params, basis, batch, tau)`` runs the three steps, each in its own module:

1. ``explain``: the model's effective ``W_KQ`` / ``W_U`` projected on the manifold coordinates
   (Gram least squares per layer, head and output) and the fraction of each matrix's norm the
   manifold explains; a model outside the theory's assumptions gets a warning naming each
   deviation and the explained fraction.
2. ``eliminate``: greedy backward elimination on the *projected* model (the IMIR model with
   weights ``W(theta)``): remove the coordinate whose ablation (``theta_i = 0``) raises the loss
   on ``batch`` least, until the cheapest removal would push it past ``loss(theta) + tau``.
3. ``circuits``: the surviving coordinates by name, grouped into units and circuits (what reads
   what), canonical units (shift / match / copy / iwl: alpha, beta, gamma, delta) vs helpers,
   each named by what it computes (``roles``).

``against_heads`` sets the result against head-level analysis (``heads``: mean ablation of
whole heads): which kept units live in heads whose ablation is harmless.

Accuracies are read on a separate ``eval_batch`` (selection and report on different data):
``full`` (the model's own effective weights), ``projected`` (all coordinates), ``circuit`` (the
kept ones) and ``canonical`` (the kept canonical units only: the circuit without its helpers);
``selection_full`` / ``selection_circuit`` are the full model's and the circuit's on ``batch``
(what a rule choosing the budget may look at: ``budget``). ``detect_curve`` detects at several
budgets on the same compiled programs.
"""
from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.detection import circuits as cc
from mechjax.analysis.imir.detection import explain as ex
from mechjax.analysis.imir.detection import heads as hd
from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.forward import ablation as ab
from mechjax.analysis.imir.forward import truncated as tr
from mechjax.analysis.imir.manifold.basis import Basis, fixed_params, imir_config
from mechjax.analysis.imir.detection.elimination import Elimination, Staged, eliminate
from mechjax.analysis.imir.forward.loss import readout_accuracy, readout_loss

Batch = Mapping[str, jax.Array]


class ManifoldWarning(UserWarning):
    """The model is not the theory's model: its coordinates explain only part of it."""


@dataclasses.dataclass(frozen=True)
class Detection:
    names: tuple[str, ...]            # every coordinate's name
    theta: np.ndarray                 # [n] coordinates of the model
    explained: dict[str, float | None]
    deviations: tuple[str, ...]       # assumption deviations (empty: the theory's model)
    elimination: Elimination
    units: tuple[cc.Unit, ...]        # the kept units
    kinds: dict[str, str]             # unit name -> shift | match | copy | iwl | helper
    circuits: tuple[cc.Circuit, ...]
    unread: tuple[str, ...]
    accuracy: dict[str, float]        # full, projected, circuit, canonical; selection_*
    curve: dict[str, np.ndarray]      # n_kept, loss, acc along the elimination path
    abgd: bool = False                # a 2-layer 1-head basis: alpha..delta names apply
    what: dict[str, str] = dataclasses.field(default_factory=dict)  # unit -> what it computes

    @property
    def kept_names(self) -> list[str]:
        return [self.names[i] for i in np.flatnonzero(self.elimination.kept)]

    def canonical(self) -> list[str]:
        return [u.name for u in self.units if self.kinds[u.name] != "helper"]

    def helpers(self) -> list[str]:
        return [u.name for u in self.units if self.kinds[u.name] == "helper"]


def coord_norms(basis: Basis) -> np.ndarray:
    """``||B_i||_F`` per coordinate (the Gram diagonal, without building the Gram matrix)."""
    g_s, g_r = proj.selection_grams(basis)
    parts = [np.tile(np.diag(g_r if g.head is None else g_s), g.size // g.n_sel)
             for g in basis.groups]
    return np.sqrt(np.concatenate(parts))


@functools.lru_cache(maxsize=16)
def model_fns(basis: Basis, causal: bool = False):
    """``loss(theta, batch)``, ``accuracy(theta, batch)`` of the projected IMIR model and
    ``path(theta, masks [m, n], batch) -> (loss [m], acc [m])``; one set per basis, so their
    compilations serve every model of that basis. An unrotated frame runs the exact
    ``truncated`` forward on the populated path blocks (15-20x less work at 5 layers).
    ``causal``: the model's attention mask (the paper's model is causal)."""
    cfg = imir_config(basis.frame, causal)
    fixed = fixed_params(basis.frame)

    if basis.frame.rotation is None:
        def both(theta, batch):
            return tr.query_loss_and_accuracy({**fixed, **tr.theta_weights(basis, theta)},
                                              batch, basis.frame, cfg)
    else:
        def both(theta, batch):
            params = {**fixed, **proj.weights(basis, theta)}
            return readout_loss(params, cfg, batch), readout_accuracy(params, cfg, batch)

    def loss(theta, batch):
        return both(theta, batch)[0]

    def acc(theta, batch):
        return both(theta, batch)[1]

    path = jax.jit(lambda th, ms, b: jax.lax.map(lambda m: both(th * m, b), ms))
    return loss, acc, path


@functools.lru_cache(maxsize=16)
def staged_loss(basis: Basis, causal: bool = False, closed: bool = True) -> Staged | None:
    """The projected model's loss split at layers (``eliminate.Staged``): a coordinate of layer
    ``l``'s ``W_KQ`` re-runs layers ``>= l``, one of ``W_U`` only the readout. ``closed``: the
    last layer's candidates all at once by ``ablation.last_kq_ablations`` (exact; False: one
    suffix per candidate). None for a rotated frame (no truncated forward)."""
    f = basis.frame
    if f.rotation is not None:
        return None
    cfg, fixed = imir_config(f, causal), fixed_params(f)
    stage_of = np.concatenate([np.full(g.size, f.n_layers if g.head is None
                                       else int(g.param.split(".")[1])) for g in basis.groups])

    def params(theta):
        return {**fixed, **tr.theta_weights(basis, theta)}

    last = f.n_layers - 1
    coords = np.zeros((basis.size, 4), np.int32)   # (head, a, b, s) of each last-layer coordinate
    for g in basis.groups:
        if g.head is not None and int(g.param.split(".")[1]) == last:
            local = np.stack(np.unravel_index(np.arange(g.size), g.shape), axis=1)
            coords[g.offset: g.offset + g.size] = np.column_stack(
                [np.full(g.size, g.head), local])
    sel_kq, coords = jnp.asarray(basis.sel_kq, jnp.float32), jnp.asarray(coords)

    def last_layer(theta, cache, idx, batch):
        kq = tr.theta_weights(basis, theta, layers=(last,))
        return ab.last_kq_ablations({**fixed, **kq}, cache, batch, f, cfg, sel_kq, coords[idx],
                                    theta[idx])

    return Staged(stage_of,
                  lambda theta, stage, batch: tr.stage_input(params(theta), batch, f, cfg, stage),
                  lambda theta, cache, stage, batch: tr.stage_loss(params(theta), cache, batch,
                                                                   f, cfg, stage)[0],
                  {last: last_layer} if closed else {})


def merged_params(eff: ex.Effective, frame) -> dict[str, jax.Array]:
    """The model as a merged attention-only mechjax model of ``imir_config(frame)``: its
    effective ``W_KQ`` / ``W_OV`` / embeddings (exact for a bias-free attention-only model)."""
    params = {"embed.W_E": eff.w_e, "pos_embed.W_pos": eff.w_pos[: frame.n_pos],
              "unembed.W_U": eff.w_u}
    for l in range(eff.n_layers):
        params[f"blocks.{l}.attn.W_KQ"] = eff.kq[l]
        params[f"blocks.{l}.attn.W_OV"] = eff.ov[l]
    return {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}


def effective_accuracy(eff: ex.Effective, basis: Basis, batch: Batch,
                       causal: bool = False) -> float:
    """Accuracy of the model itself (``merged_params``)."""
    return float(readout_accuracy(merged_params(eff, basis.frame),
                                  imir_config(basis.frame, causal), batch))


def against_heads(params: Mapping[str, np.ndarray], det: Detection, basis: Basis, batch: Batch,
                  tau: float, attn_scale: float | None = None, causal: bool = False) -> dict:
    """Head-level analysis of the same model (``heads``: every head mean-ablated on ``batch``,
    important above ``tau``) and the detected units it cannot see; ``heads.report``'s dict."""
    eff = ex.effective_weights(params, attn_scale)
    ablation = hd.head_ablation(merged_params(eff, basis.frame),
                                imir_config(basis.frame, causal), batch, tau)
    return hd.report(det.units, det.kinds, ablation)


def check_tau(tau: float) -> None:
    if not (isinstance(tau, (int, float, np.floating)) and tau > 0):
        raise ex.DetectError(f"tau={tau!r}: the loss budget must be a number > 0")


def detect(params: Mapping[str, np.ndarray], basis: Basis, batch: Batch, tau: float,
           **kwargs) -> Detection:
    """Detect the circuit of ``params`` (one attention-only model, TransformerLens names) in the
    manifold ``basis`` of its task at the loss budget ``tau``; ``detect_curve``'s arguments."""
    return detect_curve(params, basis, batch, (tau,), **kwargs)[0]


def detect_curve(params: Mapping[str, np.ndarray], basis: Basis, batch: Batch,
                 taus: Sequence[float], *, eval_batch: Batch | None = None,
                 exact_max: int = 512, screen: int = 32, refresh: int = 16,
                 bulk_fraction: float = 0.25, chunk: int = 16, overshoot: int = 0,
                 curve_points: int = 48, attn_scale: float | None = None,
                 cost_bulk: float = 0.0, causal: bool = False,
                 mode: str = "fast") -> list[Detection]:
    """One ``Detection`` per budget in ``taus``; ``batch`` drives the elimination, ``eval_batch``
    (default ``batch``) the reported accuracies (``accuracy['selection_*']``: the same on
    ``batch``). ``causal``: the model's attention mask; other keyword arguments: ``eliminate``'s.

    Exact greedy (``basis.size <= exact_max``): one elimination at the loosest budget, stopped
    at each tighter one (``Elimination.at_budget``: the greedy removals do not depend on the
    budget, only where they stop; the same kept sets as one run per budget). Above
    ``exact_max`` the bulk passes spend fractions of the budget, so the path depends on it: one
    elimination per budget, every one on the same compiled programs. ``mode="exact"``: the exact
    greedy at any size (``eliminate``), one elimination for every budget."""
    for tau in taus:
        check_tau(tau)
    eff = ex.effective_weights(params, attn_scale)
    ex.check_shapes(eff, basis.frame)
    deviations = ex.check_assumptions(eff, basis.frame)
    theta = proj.coords(basis, eff.trainables())
    explained = ex.explained_fractions(basis, eff.trainables())
    if deviations:
        warnings.warn(f"model is outside the IMIR assumptions ({'; '.join(deviations)}): the "
                      f"manifold explains {explained['total']:.3f} of its KQ/unembedding "
                      "weights' squared norm; the circuit found is that of its projection",
                      ManifoldWarning, stacklevel=3)
    loss, _, path_fn = model_fns(basis, causal)
    kw = dict(args=(batch,), size=np.abs(np.asarray(theta)) * coord_norms(basis),
              exact_max=exact_max, screen=screen, refresh=refresh, bulk_fraction=bulk_fraction,
              chunk=chunk, overshoot=overshoot, staged=staged_loss(basis, causal),
              cost_bulk=cost_bulk, mode=mode)
    if basis.size <= exact_max or mode == "exact":
        top = eliminate(loss, theta, max(taus), **kw)
        elims = [top.at_budget(top.loss_start + tau) for tau in taus]
    else:
        elims = [eliminate(loss, theta, tau, **kw) for tau in taus]
    eval_batch = batch if eval_batch is None else eval_batch
    full = {"full": effective_accuracy(eff, basis, eval_batch, causal),
            "selection_full": effective_accuracy(eff, basis, batch, causal)}
    base = dict(names=tuple(basis.names()), theta=np.asarray(theta), explained=explained,
                deviations=tuple(deviations),
                abgd=(basis.frame.n_layers, basis.frame.n_heads) == (2, 1))
    return [_named(basis, elim, base, full, path_fn, (batch, eval_batch), curve_points, causal)
            for elim in elims]


def _named(basis: Basis, elim: Elimination, base: dict, full: dict, path_fn, batches: tuple,
           curve_points: int, causal: bool) -> Detection:
    """The kept set's units, kinds, circuits and accuracies (``detect_curve``)."""
    batch, eval_batch = batches
    kept_units = cc.units(basis, np.flatnonzero(elim.kept))
    kinds = cc.classify(kept_units, basis.frame.n_pos, causal)
    circs, unread = cc.circuits(basis, kept_units, causal)
    n = basis.size
    canon = cc.mask_of(kept_units, n, [u for u, k in kinds.items() if k != "helper"])
    masks = jnp.asarray(np.stack([np.ones(n, bool), elim.kept, canon]), jnp.float32)
    # the path: every removal when short, else evenly spaced points (and the stopping point)
    steps = np.unique(np.concatenate([
        np.linspace(0, len(elim.order), min(curve_points, len(elim.order) + 1)).round(),
        [elim.n_accepted]]).astype(int))
    path = np.stack([elim.mask_after(int(k)) for k in steps])
    th = jnp.asarray(base["theta"])
    _, accs = path_fn(th, masks, eval_batch)
    _, sel = path_fn(th, masks[1:2], batch)
    p_loss, p_acc = path_fn(th, jnp.asarray(path, jnp.float32), eval_batch)
    accuracy = {**full, "projected": float(accs[0]), "circuit": float(accs[1]),
                "canonical": float(accs[2]), "selection_circuit": float(sel[0])}
    curve = {"n_kept": n - steps, "loss": np.asarray(p_loss), "acc": np.asarray(p_acc),
             "accepted": steps <= elim.n_accepted}
    return Detection(elimination=elim, units=tuple(kept_units), kinds=kinds,
                     circuits=tuple(circs), unread=tuple(unread), accuracy=accuracy,
                     curve=curve, what=cc.describe(kept_units, basis.frame.n_pos, causal),
                     **base)


def report(det: Detection) -> dict:
    """The JSON-ready per-model summary (the experiment's ``summary.json`` entries)."""
    per_kind = {k: sum(1 for v in det.kinds.values() if v == k) for k in (*cc.KINDS, "helper")}
    return {
        "n_coordinates_total": len(det.names),
        "manifold_explained_fraction": det.explained["total"],
        "explained_per_matrix": {k: v for k, v in det.explained.items() if k != "total"},
        "deviations": list(det.deviations),
        "n_kept": int(det.elimination.kept.sum()),
        "kept": det.kept_names,
        "units": {u.name: det.kinds[u.name] for u in det.units},
        "what": {u.name: det.what.get(u.name, "") for u in det.units},
        "n_units": len(det.units), "n_canonical": len(det.canonical()),
        "n_helpers": len(det.helpers()), "units_per_kind": per_kind,
        "abgd_found": (sorted(cc.ABGD[u] for u in det.canonical() if u in cc.ABGD)
                       if det.abgd else None),
        "circuits": cc.circuit_rows(det.circuits, det.kinds),
        "unread": list(det.unread),
        "acc/full": det.accuracy["full"], "acc/projected": det.accuracy["projected"],
        "acc/circuit": det.accuracy["circuit"],
        "acc/circuit_without_helpers": det.accuracy["canonical"],
        "acc_selection/full": det.accuracy["selection_full"],
        "acc_selection/circuit": det.accuracy["selection_circuit"],
        "loss/projected": det.elimination.loss_start, "loss/budget": det.elimination.budget,
        "n_loss_evals": det.elimination.n_evals,
    }
