"""Analyses of the final parameters of an Assign-and-Add sweep (docs/assign_add.md): the exhaustive
held-out accuracies and ``mechanism_summary`` of every seed as one batched program, and the views
of one example model that its figures show (QK maps, attention patterns of one example, the
Fourier fit of its best layer-2 MLP neuron); ``per_seed_numbers`` gathers the per-seed numbers
of a run's summary from its training metrics and the final analysis.

Shapes: S seeds, p = 16 positions, V operand values, H neurons.
"""
from __future__ import annotations

from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.studies import assign_add_mech as mech
from mechjax.analysis import exhaustive
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_cache
from mechjax.models.transformer import Params
from mechjax.tasks import assign_add as aa

ATTENTION_HOOKS = ("blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern")


def final_analysis(params: Mapping[str, np.ndarray], cfg: ModelConfig, split: aa.PairSplit,
                   f: float, final_size: int, union_sample: int, data_seed: int,
                   ) -> dict[str, Any]:
    """Exhaustive accuracies, ``mechanism_summary`` and figure inputs for every seed.

    ``params``: stacked ``[S, ...]``. ``final_size`` probe examples per measure; the 2-var union
    set subsampled to ``union_sample`` rows (0: all); data drawn from ``data_seed + 1``. Returns
    per-seed arrays ``[S]`` (``scalars``) and arrays for the figures.
    """
    params = {k: jnp.asarray(v) for k, v in params.items()}
    k_probe, k_paired, k_ex0, k_ex2 = jax.random.split(jax.random.PRNGKey(data_seed + 1), 4)
    held = split.heldout_pairs(f)
    predict = exhaustive.predict_stacked(cfg)
    ex0 = aa.exhaustive_0var_heldout(k_ex0, held)
    union = exhaustive.subsample(aa.exhaustive_2var_union(k_ex2, held), union_sample, data_seed)
    scalars = {
        "acc/exact_0var_heldout": exhaustive.exhaustive_accuracy(params, ex0, cfg, 2048, predict),
        "acc/exact_2var_union": exhaustive.exhaustive_accuracy(params, union, cfg, 2048, predict)}

    data = mech.probe_data(k_probe, final_size, split, f)
    paired = mech.paired_data(k_paired, final_size, split=split, f=f)

    def per_seed(p):
        out = mech.mechanism_summary(p, data, paired, cfg)
        cos = mech.mlp_input_cosines(p, paired, cfg)
        fit = mech.mlp_fourier_fit(p, cfg)
        return out, cos, fit.best_evr, fit.best_k

    summary, cos, best_evr, best_k = jax.jit(lambda ps: jax.lax.map(per_seed, ps))(params)
    scalars.update({k: np.asarray(v) for k, v in summary.items()})
    return {"scalars": scalars,
            "cos_matched": np.asarray(cos["matched"]),
            "cos_mismatched": np.asarray(cos["mismatched"]),
            "neuron_best_evr": np.asarray(best_evr), "neuron_best_k": np.asarray(best_k),
            "qk1": np.asarray(jax.vmap(lambda p: mech.positional_qk1(p, cfg))(params)),
            "qk2": np.asarray(jax.vmap(lambda p: mech.variable_qk2(p, cfg))(params)),
            "example_tokens": np.asarray(data.tokens[0])}


def per_seed_numbers(steps: np.ndarray, m: Mapping[str, np.ndarray], phase2_at: np.ndarray,
                     final: Mapping[str, Any], window: int) -> dict[str, np.ndarray]:
    """``{name: [S]}``: the last evaluation of every ``acc/``, ``progress/`` and ``qk2grad/``
    metric of ``m`` (``[S, n_evals]`` at ``steps``), the final analysis's numbers (``final``:
    ``final_analysis``), the QK2-gradient identity cosine at the first evaluation, its maximum and
    its mean over the ``window`` steps before each seed's phase-2 step ``phase2_at [S]`` (the
    paper's theory: the descent direction's identity share before binding; NaN where phase 2 was
    never reached), and whether the run ended finite."""
    s = final["scalars"]
    out = {k: v[:, -1] for k, v in m.items() if k.startswith(("acc/", "progress/", "qk2grad/"))}
    out.update({
        "acc/exact_0var_heldout": s["acc/exact_0var_heldout"],
        "acc/exact_2var_union": s["acc/exact_2var_union"],
        "cosine/mlp_in_matched": s["mlp_in_cos_matched"],
        "cosine/mlp_in_mismatched": s["mlp_in_cos_mismatched"],
        "cosine/attn_out_literal": s["attn_out_cos_literal"],
        "cosine/attn_out_variable": s["attn_out_cos_variable"],
        "fourier/best_evr": s["fourier_max_evr"], "fourier/best_k": s["fourier_max_k"],
        "fourier/top_evr": s["fourier_top_evr"], "fourier/top_k": s["fourier_top_k"],
        "fourier/neurons_evr_above_0.9": (final["neuron_best_evr"] >= 0.9).sum(-1),
        "qk2/diag_fraction": s["qk2_diagonal"], "qk2/diag_count": s["qk2_diagonal_count"],
        "qk1/prev_token": s["qk1_prev_token"], "probe/final": s["probe_accuracy"],
        "ov_mlp/accuracy": s["ov_mlp_accuracy"],
    })
    cos = m["qk2grad/identity_cos"]
    before = np.full(cos.shape[0], np.nan)
    for i, t in enumerate(phase2_at):
        sel = (steps < t) & (steps >= t - window)
        if np.isfinite(t) and sel.any():
            before[i] = np.nanmean(cos[i, sel])
    out["qk2grad/identity_cos_first_eval"] = cos[:, 0]
    out["qk2grad/identity_cos_max"] = np.nanmax(cos, -1)
    out["qk2grad/identity_cos_5evals_before_phase2"] = before
    out["finite"] = m["finite"][:, -1]
    return out


def example_seed(completed_phase3: np.ndarray, last_phase3_metric: np.ndarray) -> int:
    """The seed index the single-model figures show: the first that completed phase 3, else the
    one closest to it (the best final value of the phase-3 metric)."""
    if completed_phase3.any():
        return int(np.argmax(completed_phase3))
    return int(np.argmax(np.nan_to_num(last_phase3_metric, nan=-1.0)))


def example_views(params: Params, tokens: jax.Array, cfg: ModelConfig) -> dict[str, Any]:
    """One model's figure inputs: the layer-1/2 attention patterns of ``tokens [p]`` (mean over
    heads, ``[p, p]`` each), and its best layer-2 MLP neuron (highest Fourier EVR): its
    ``[V, V]`` pre-activation map, the fitted frequency ``k``, its EVR and EVR per frequency, and
    the map's projection on frequency ``k`` (``fourier_component``)."""
    @jax.jit
    def compute(p, t):
        _, cache = run_with_cache(p, t, cfg, ATTENTION_HOOKS)
        maps = mech.mlp_preactivation_maps(p, cfg)
        return cache, maps, mech.fourier_fit(maps)

    cache, maps, fit = compute(params, jnp.asarray(tokens)[None])
    best = int(jnp.argmax(fit.best_evr))
    k = int(fit.best_k[best])
    neuron = np.asarray(maps[:, :, best])
    return {"attention": [np.asarray(cache[name][0].mean(0)) for name in ATTENTION_HOOKS],
            "neuron": best, "neuron_map": neuron, "k": k,
            "neuron_fit": fourier_component(neuron, k), "evr": float(fit.best_evr[best]),
            "evr_per_k": np.asarray(fit.evr[best])}


def fourier_component(neuron_map: np.ndarray, k: int) -> np.ndarray:
    """Projection of the centred ``[p, p]`` map on {cos kn, sin kn, cos km, sin km}."""
    p = neuron_map.shape[0]
    x = neuron_map - neuron_map.mean()
    ang = 2 * np.pi * k * np.arange(p) / p
    out = np.zeros_like(x)
    for b in (np.cos(ang), np.sin(ang)):
        b = b / np.linalg.norm(b)
        row = x.mean(1) * np.sqrt(p)  # coefficient along n of b(n) x 1_m / sqrt(p)
        col = x.mean(0) * np.sqrt(p)
        out += np.outer(b * (b @ row), np.ones(p)) / np.sqrt(p) + \
            np.outer(np.ones(p), b * (b @ col)) / np.sqrt(p)
    return out
