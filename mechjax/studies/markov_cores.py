"""The acceptance numbers of the Markov-chain cores experiment (ACE paper) from one batched ACE pass
over seeds: accuracies under the core interventions, core ranks and energies, seeds x seeds
comparisons (projector overlap, CCA, whole-weight cosine) and the operator's eigenvalues against the
chain's. Host side (numpy) apart from the comparison matrices, which run as batched programs.
``analyse_tails`` runs that pass for each tail (timed, optionally against a per-seed loop).

Shapes: n seeds, D activation width, k compared core coordinates.
"""
from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis import ace
from mechjax.analysis.seeds import seed_stats
from mechjax.models.config import ModelConfig
from mechjax.sweeps.sweep import log
from mechjax.tasks import markov
from mechjax.sweeps.timing import batched_over_seeds, loop_over_seeds, over_seeds

ACCURACIES = ("full", "core_only", "core_removed")


def loop_matches_batched(batched: ace.Result, loop: Sequence[ace.Result],
                         atol: float = 1e-4) -> bool:
    """Whether a per-seed loop gave the batched call's ranks exactly and accuracies within
    ``atol``."""
    ranks = [int(r.core.rank) for r in loop]
    accs = [[float(r.accuracy[k]) for k in ACCURACIES] for r in loop]
    batched_acc = np.stack([np.asarray(batched.accuracy[k]) for k in ACCURACIES], 1)
    return bool(np.array_equal(ranks, np.asarray(batched.core.rank))
                and np.allclose(accs, batched_acc, atol=atol))


def summarize_cores(result: ace.Result, params: Mapping[str, jax.Array], compare_dims: int,
                    d_model: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Acceptance numbers of one ACE pass over all seeds, plus the seeds x seeds matrices.

    ``result``: ``ace.analyse_seeds`` output (fields ``[n, ...]``, ``coords [n, N, k]`` with
    ``k = compare_dims``); ``params``: the stacked parameters ``{name: [n, ...]}``.
    Returns ``(summary, matrices)``: the numbers for summary.json and the arrays for figures.
    """
    t1 = time.perf_counter()
    ranks = result.core.rank
    overlap = np.asarray(ace.overlap_matrix(result.core.basis, ranks))
    cca_r = np.asarray(ace.cca_matrix(result.coords, jnp.minimum(ranks, compare_dims)))
    top3 = min(3, compare_dims)
    cca_3 = np.asarray(ace.cca_matrix(result.coords[..., :top3], None, top3))
    cosine = np.asarray(ace.weight_cosine_matrix(params))
    compare_seconds = time.perf_counter() - t1

    core, fit = jax.tree.map(np.asarray, result.core), jax.tree.map(np.asarray, result.fit)
    ranks = core.rank.astype(int)
    acc = {k: np.asarray(v, float) for k, v in result.accuracy.items()}
    lam = fit.eigenvalues                                                     # [n, D] complex
    eig_err = ace.eigenvalue_errors(lam, markov.true_eigenvalues()[1:])       # drop the 1
    energy = core.weights / np.maximum(core.weights.sum(-1, keepdims=True), 1e-300)
    summary = {
        "acc/full": seed_stats(acc["full"]),
        "acc/core_only": seed_stats(acc["core_only"]),
        "acc/core_removed": seed_stats(acc["core_removed"]),
        "core/rank": ranks,
        "core/rank3_fraction": float(np.mean(ranks == 3)),
        "core/energy_top8": energy[:, :8],
        "overlap/mean_offdiag": ace.offdiag_mean(overlap),
        "overlap/chance": float(np.mean(ranks)) / d_model,
        "cca/mean_offdiag": ace.offdiag_mean(cca_r),
        "cca/top3_mean_offdiag": ace.offdiag_mean(cca_3),
        "weight_cosine/mean_offdiag": ace.offdiag_mean(cosine),
        "eig/fitted": [[[float(z.real), float(z.imag)] for z in row[:r]]
                       for row, r in zip(lam, ranks)],
        "eig/max_abs_error": eig_err,
        "eig/within_0.03_fraction": float(np.mean(eig_err <= 0.03)),
        "r2": seed_stats(fit.r2),
        "r2_over_oracle": seed_stats(fit.r2_ratio),
        "compare/seconds": compare_seconds,
    }
    matrices = {"overlap": overlap, "cca": cca_r, "cosine": cosine,
                "eigenvalues": [row[:r] for row, r in zip(lam, ranks)], "acc": acc}
    return summary, matrices


def analyse_tails(params: Mapping[str, jax.Array], inputs: ace.Inputs, cfg: ModelConfig,
                  tails: Sequence[str], hook_name: str, tau: float, float64: bool,
                  compare_dims: int, time_per_seed_loop: bool = False,
                  vectorize: str = "auto",
                  ) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """``{tail: summarize_cores(...)}`` with the ACE timings added to each summary: ACE on every
    seed (``params [n, ...]``) per tail, in the form ``timing.over_seeds`` picks for the backend
    (``ace/vectorize``; its time ``ace/batched_seconds``).

    With ``time_per_seed_loop`` the first tail also runs as a per-seed loop and as one vmapped
    program (``ace.ACE_SEED_BLOCK`` seeds vmapped at a time, as the vmapped form always runs
    here), for the speed comparison (``ace/loop_over_batched``: loop time over the time of the
    form used; ``ace/loop_over_vmap``), and whether they agree (``ace/loop_matches_batched``).
    """
    by_tail = {}
    with ace.precision(float64):
        for i, tail in enumerate(tails):
            log(f"ACE ({tail} tail): {inputs.tokens.shape[0]} sequences x "
                f"{inputs.tokens.shape[1]} positions, S={len(inputs.jac_pos)}")
            pipe = ace.Pipeline(hook_name=hook_name, tail=tail, validation="hooks",
                                identify="markov", tau=tau, float64=float64,
                                keep_coords=compare_dims)
            one = lambda p, x, pipe=pipe: ace.analyse(p, x, cfg, pipe)  # noqa: E731
            out, t = over_seeds(one, params, inputs, vectorize=vectorize,
                                seed_block=ace.ACE_SEED_BLOCK)
            timing = {"ace/vectorize": t["vectorize"],
                      "ace/batched_compile_seconds": t["compile_seconds"],
                      "ace/batched_seconds": t["seconds"]}
            log(f"ACE over seeds ({t['vectorize']}): {t['seconds']:.1f}s "
                f"(+{t['compile_seconds']:.1f}s compile)")
            if i == 0 and time_per_seed_loop:
                loop, t_loop = loop_over_seeds(one, params, inputs)
                vmapped, t_vmap = batched_over_seeds(one, params, inputs,
                                                     seed_block=ace.ACE_SEED_BLOCK)
                timing.update({
                    "ace/per_seed_compile_seconds": t_loop["compile_seconds"],
                    "ace/per_seed_loop_seconds": t_loop["seconds"],
                    "ace/vmap_seconds": t_vmap["seconds"],
                    "ace/loop_over_batched": t_loop["seconds"] / t["seconds"],
                    "ace/loop_over_vmap": t_loop["seconds"] / t_vmap["seconds"],
                    # the two forms, each really run (``out`` is one of them already)
                    "ace/loop_matches_batched": loop_matches_batched(vmapped, loop)})
                log(f"ACE per-seed loop: {t_loop['seconds']:.1f}s, one vmapped program: "
                    f"{t_vmap['seconds']:.1f}s")
            stats, mats = summarize_cores(out, params, compare_dims, cfg.d_model)
            by_tail[tail] = ({**stats, **timing}, mats)
    return by_tail
