"""The Markov-chain cores job (SPEC 2.5): train many seeds in one program, run ACE on every seed as
one batched call, compare the cores across seeds, write figures and summary.json.

Data flow: config -> (task, trainer) -> run_sweep -> stacked params [n_seeds, ...] ->
``analyse`` vmapped over seeds (activations, tail Jacobians, extraction, validation, operator
fit) -> seeds x seeds comparisons -> figures and summary.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from mechjax import experiment
from mechjax.analysis import ace
from mechjax.config import ConfigError, ModelConfig
from mechjax.plots import ace as ace_plots
from mechjax.plots import curves
from mechjax.sweep import log, run_sweep, save_metrics
from mechjax.tasks import markov
from mechjax.train import make_train
from mechjax.io import write_json

HOOK = "blocks.0.hook_resid_post"  # the block output, every position
CHANCE = 1.0 / markov.N_STATES
TOP_KEYS = {"n_seeds", "seed_offset", "chunk_evals", "task", "model", "train", "hparams", "ace"}
TASK_KEYS = {"data_seed", "n_train", "n_test", "batch_size"}
ACE_KEYS = {"tau", "tails", "jac_samples", "jac_seed", "compare_dims", "float64",
            "time_per_seed_loop"}
# The tail f from the block output to what the Jacobians differentiate. ``logits``: the linear
# head, so every J_s = W_U^T and Obs = W_U W_U^T (SPEC 2.1's toy-model case). ``log_probs``:
# log-softmax of the logits, J_s = (I - 1 p_s^T) W_U^T, which drops the one direction the output
# distribution ignores (adding the same amount to every logit).
TAILS = {"logits": None, "log_probs": jax.nn.log_softmax}


# ------------------------------------------------------------------------------------------------
# Config -> objects (all checks before anything is compiled or written)
# ------------------------------------------------------------------------------------------------


def build(config):
    """Everything derived from the config, checked before any compilation or file write."""
    experiment.check_keys("", config, TOP_KEYS)
    task_cfg = experiment.check_keys("task", config.task, TASK_KEYS)
    ace_cfg = experiment.check_keys("ace", config.ace, ACE_KEYS)
    seeds = experiment.seeds(config)
    for key in ("n_train", "n_test", "batch_size"):
        experiment.positive_int(f"task.{key}", task_cfg[key])
    if task_cfg["batch_size"] > task_cfg["n_train"]:
        raise ConfigError(f"task.batch_size={task_cfg['batch_size']} exceeds "
                          f"task.n_train={task_cfg['n_train']}")
    tails = ace_cfg["tails"]
    if (isinstance(tails, str) or not tails or len(set(tails)) != len(tails)
            or not set(tails) <= set(TAILS)):
        raise ConfigError(f"ace.tails={tails!r}: a non-empty sequence of distinct names from "
                          f"{sorted(TAILS)} (the first is the primary analysis)")
    ace_cfg["tails"] = tuple(tails)
    if not 0.0 < ace_cfg["tau"] <= 1.0:
        raise ConfigError(f"ace.tau={ace_cfg['tau']!r}: must be in (0, 1]")
    n_acts = task_cfg["n_test"] * (markov.SEQ_LEN - 1)
    if experiment.positive_int("ace.jac_samples", ace_cfg["jac_samples"]) > n_acts:
        raise ConfigError(f"ace.jac_samples={ace_cfg['jac_samples']} exceeds the {n_acts} test "
                          "activations")
    experiment.positive_int("chunk_evals", config.chunk_evals)

    model_values = experiment.as_dict(config.model)
    model_values.update(d_vocab=markov.N_STATES, d_vocab_out=markov.N_STATES,
                        n_ctx=markov.SEQ_LEN - 1)
    model_cfg = experiment.model_config(model_values)
    if experiment.positive_int("ace.compare_dims", ace_cfg["compare_dims"]) > model_cfg.d_model:
        raise ConfigError(f"ace.compare_dims={ace_cfg['compare_dims']} exceeds "
                          f"model.d_model={model_cfg.d_model}")
    task = markov.make_task(data_seed=task_cfg["data_seed"], n_train=task_cfg["n_train"],
                            n_test=task_cfg["n_test"], batch_size=task_cfg["batch_size"])
    trainer = make_train(task, model_cfg, experiment.train_config(config.train))
    hparams = trainer.default_hparams(**experiment.as_dict(config.hparams))
    return trainer, hparams, seeds, ace_cfg


# ------------------------------------------------------------------------------------------------
# ACE on one seed (pure; vmapped over seeds)
# ------------------------------------------------------------------------------------------------
def make_analysis(cfg: ModelConfig, tau: float, compare_dims: int, float64: bool,
                  tail: str = "logits") -> Callable[..., dict[str, Any]]:
    """``analyse(params, tokens, labels, jac_tokens, jac_pos)`` for one seed's ``params``.

    ``tokens, labels [B, T]`` the test set; ``jac_tokens [S, T]`` and ``jac_pos [S]`` the
    (sequence, position) pairs where the tail Jacobian is sampled. Returns the core, the three
    accuracies (full, core only, core removed), the operator fit across positions and the first
    ``compare_dims`` core coordinates of every activation (for CCA). ``tail``: a key of ``TAILS``.
    """
    out_fn = TAILS[tail]

    def analyse(params, tokens, labels, jac_tokens, jac_pos):
        dtype = jnp.float64 if float64 else jnp.float32
        h = ace.activations(params, tokens, cfg, HOOK)                        # [B*T, D]
        jac = ace.hook_jacobians(params, jac_tokens, cfg, HOOK, jac_pos,      # [S, K, D]
                                 out_fn=out_fn)
        core = ace.extract(h.astype(dtype), jac.astype(dtype), tau)
        basis = core.core_basis                                               # [D, D] masked
        acc = ace.validate(params, tokens, labels, cfg, HOOK, basis.astype(h.dtype))
        z = (h.astype(dtype) @ basis).reshape(tokens.shape[0], tokens.shape[1], -1)
        fit = ace.markov_operator(z, core.rank)
        return {"core": core, "acc": acc, "fit": fit,
                "z": z[..., :compare_dims].reshape(-1, compare_dims)}

    return analyse


def jacobian_samples(tokens: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` distinct (sequence, position) pairs of ``tokens [B, T]``.

    Returns ``(tokens [n, T], pos [n])``: the sequence of each pair and the position in it.
    """
    b, t = tokens.shape
    flat = np.random.default_rng(seed).choice(b * t, size=n, replace=False)
    return tokens[flat // t], (flat % t).astype(np.int32)


def _timed_compile(fn, *args):
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - t0


def _timed_call(compiled, *args):
    t0 = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - t0


def eigenvalue_errors(fitted: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Max |fitted - true| under the best matching, per seed. ``fitted [n, R]`` complex sorted by
    decreasing modulus (the first ``len(true)`` are matched), ``true [k]``."""
    k = len(true)
    out = []
    for row in fitted:
        lead = row[:k]
        out.append(min(np.max(np.abs(lead[list(p)] - true))
                       for p in itertools.permutations(range(k))))
    return np.asarray(out)


def _offdiag_mean(m: np.ndarray) -> float:
    n = m.shape[0]
    return float(m[~np.eye(n, dtype=bool)].mean()) if n > 1 else float("nan")


def _stats(v: np.ndarray) -> dict[str, Any]:
    v = np.asarray(v, float)
    return {"mean": float(np.mean(v)), "std": float(np.std(v)), "per_seed": v}


# ------------------------------------------------------------------------------------------------
# The job
# ------------------------------------------------------------------------------------------------
def ace_all_seeds(analyse: Callable, params, data: tuple, time_loop: bool) -> tuple[dict, dict]:
    """Run ``analyse`` on every seed as one compiled, vmapped call (timed, compile separately).

    With ``time_loop`` the same computation also runs as a Python loop over seeds (one compiled
    program called once per seed), for the speed comparison; the two must agree.
    """
    timing = {}
    batched, timing["ace/batched_compile_seconds"] = _timed_compile(
        jax.vmap(analyse, (0, None, None, None, None)), params, *data)
    out, timing["ace/batched_seconds"] = _timed_call(batched, params, *data)
    log(f"ACE batched: {timing['ace/batched_seconds']:.1f}s "
        f"(+{timing['ace/batched_compile_seconds']:.1f}s compile)")
    if time_loop:
        n = jax.tree.leaves(params)[0].shape[0]
        one = jax.tree.map(lambda x: x[0], params)
        single, timing["ace/per_seed_compile_seconds"] = _timed_compile(analyse, one, *data)
        ranks, accs, total = [], [], 0.0
        for i in range(n):
            res, dt = _timed_call(single, jax.tree.map(lambda x: x[i], params), *data)
            total += dt
            ranks.append(int(res["core"].rank))
            accs.append([float(res["acc"][k]) for k in ("full", "core_only", "core_removed")])
        timing["ace/per_seed_loop_seconds"] = total
        timing["ace/loop_over_batched"] = total / timing["ace/batched_seconds"]
        batched_acc = np.stack([np.asarray(out["acc"][k]) for k in ("full", "core_only",
                                                                    "core_removed")], 1)
        timing["ace/loop_matches_batched"] = bool(
            np.array_equal(ranks, np.asarray(out["core"].rank))
            and np.allclose(accs, batched_acc, atol=1e-4))
        log(f"ACE per-seed loop: {total:.1f}s "
            f"(+{timing['ace/per_seed_compile_seconds']:.1f}s compile)")
    return out, timing


def summarize_cores(out: dict, params, compare_dims: int, d_model: int) -> dict[str, Any]:
    """Acceptance numbers of one ACE pass over all seeds, plus the seeds x seeds matrices."""
    t1 = time.perf_counter()
    ranks = out["core"].rank
    overlap = np.asarray(ace.overlap_matrix(out["core"].basis, ranks))
    cca_r = np.asarray(ace.cca_matrix(out["z"], jnp.minimum(ranks, compare_dims)))
    cca_3 = np.asarray(ace.cca_matrix(out["z"][..., :min(3, compare_dims)], None,
                                      min(3, compare_dims)))
    cosine = np.asarray(ace.weight_cosine_matrix(params))
    compare_seconds = time.perf_counter() - t1
    out = jax.tree.map(np.asarray, {k: v for k, v in out.items() if k != "z"})

    ranks = out["core"].rank.astype(int)
    acc = {k: np.asarray(v, float) for k, v in out["acc"].items()}
    lam = out["fit"].eigenvalues                                              # [n, D] complex
    eig_err = eigenvalue_errors(lam, markov.true_eigenvalues()[1:])           # drop the 1
    weights = out["core"].weights
    energy = weights / np.maximum(weights.sum(-1, keepdims=True), 1e-300)
    summary = {
        "acc/full": _stats(acc["full"]),
        "acc/core_only": _stats(acc["core_only"]),
        "acc/core_removed": _stats(acc["core_removed"]),
        "core/rank": ranks,
        "core/rank3_fraction": float(np.mean(ranks == 3)),
        "core/energy_top8": energy[:, :8],
        "overlap/mean_offdiag": _offdiag_mean(overlap),
        "overlap/chance": float(np.mean(ranks)) / d_model,
        "cca/mean_offdiag": _offdiag_mean(cca_r),
        "cca/top3_mean_offdiag": _offdiag_mean(cca_3),
        "weight_cosine/mean_offdiag": _offdiag_mean(cosine),
        "eig/fitted": [[[float(z.real), float(z.imag)] for z in row[:r]]
                       for row, r in zip(lam, ranks)],
        "eig/max_abs_error": eig_err,
        "eig/within_0.03_fraction": float(np.mean(eig_err <= 0.03)),
        "r2": _stats(out["fit"].r2),
        "r2_over_oracle": _stats(out["fit"].r2_ratio),
        "compare/seconds": compare_seconds,
    }
    matrices = {"overlap": overlap, "cca": cca_r, "cosine": cosine,
                "eigenvalues": [row[:r] for row, r in zip(lam, ranks)], "acc": acc}
    return summary, matrices


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    trainer, hparams, seeds, ace_cfg = build(config)
    experiment.start(workdir, config, overwrite)
    cfg = trainer.model_cfg
    log(f"ace_markov: {len(seeds)} seeds of {trainer.task.name} on {jax.device_count()} "
        f"device(s), {trainer.train_cfg.steps} steps")
    t0 = time.perf_counter()
    result = run_sweep(trainer, seeds, {k: [v] for k, v in hparams.items()}, workdir,
                       chunk_evals=config.chunk_evals)
    train_seconds = time.perf_counter() - t0
    save_metrics(os.path.join(workdir, "metrics.npz"), result)
    m = {k: v[:, 0] for k, v in result.metrics.items()}  # one grid point: [n_seeds, n_evals]
    params = {k: jnp.asarray(v[:, 0]) for k, v in result.state.params.items()}  # [n_seeds, ...]

    # ---- ACE on every seed: one batched (vmapped) call per tail --------------------------------
    test = trainer.task.eval_pools["test"](None, {})
    tokens, labels = np.asarray(test["tokens"]), np.asarray(test["labels"])
    jac_tokens, jac_pos = jacobian_samples(tokens, ace_cfg["jac_samples"], ace_cfg["jac_seed"])
    data = tuple(jnp.asarray(x) for x in (tokens, labels, jac_tokens, jac_pos))
    precision = jax.enable_x64(True) if ace_cfg["float64"] else contextlib.nullcontext()
    by_tail = {}
    with precision:
        for i, tail in enumerate(ace_cfg["tails"]):
            log(f"ACE ({tail} tail): {len(seeds)} seeds x {tokens.size} activations, "
                f"S={len(jac_pos)}, one batched call")
            analyse = make_analysis(cfg, float(ace_cfg["tau"]), ace_cfg["compare_dims"],
                                    bool(ace_cfg["float64"]), tail)
            out, timing = ace_all_seeds(analyse, params, data,
                                        i == 0 and bool(ace_cfg["time_per_seed_loop"]))
            stats, mats = summarize_cores(out, params, ace_cfg["compare_dims"], cfg.d_model)
            by_tail[tail] = ({**stats, **timing}, mats)

    primary, mats = by_tail[ace_cfg["tails"][0]]
    bayes = float(markov.bayes_accuracy(test["tokens"], test["labels"]))
    summary = {
        "n_seeds": len(seeds),
        "seeds": seeds,
        "ace/tail": ace_cfg["tails"][0],
        "acc/optimal": bayes,
        "acc/chance": CHANCE,
        "acc/train_final": _stats(m["acc/train"][:, -1]),
        "eig/true": [[float(z.real), float(z.imag)] for z in markov.true_eigenvalues()[1:]],
        **primary,
        "tails": {name: {k: v for k, v in stats.items() if k not in _PER_SEED_DETAIL}
                  for name, (stats, _) in by_tail.items()},
        "activations_per_seed": int(tokens.size),
        "jacobian_samples": int(len(jac_pos)),
        "train/seconds": train_seconds,
        "diverged_seeds": [s for s, ok in zip(seeds, m["finite"][:, -1]) if not ok],
    }

    # ---- figures (primary tail) ----------------------------------------------------------------
    fig_dir = os.path.join(workdir, "figures")
    steps = m["step"][0]
    curves.metric_curves(os.path.join(fig_dir, "accuracy.png"), steps,
                         {"train": m["acc/train"], "test": m["acc/test"]},
                         title=f"Markov chain: accuracy over {len(seeds)} seeds",
                         ylabel="accuracy", marks=())
    ace_plots.seed_matrix(os.path.join(fig_dir, "weight_cosine.png"), mats["cosine"],
                          "weight cosine\n"
                          f"off-diag {summary['weight_cosine/mean_offdiag']:.3f}",
                          seeds, -1.0, 1.0)
    acc = mats["acc"]
    ace_plots.bars_with_dots(
        os.path.join(fig_dir, "necessity_sufficiency.png"),
        {"optimal": bayes, "full": acc["full"], "core only": acc["core_only"],
         "core removed": acc["core_removed"], "chance": CHANCE},
        title=f"core interventions at the block output ({len(seeds)} seeds)")
    ace_plots.seed_matrix(os.path.join(fig_dir, "projector_overlap.png"), mats["overlap"],
                          "projector overlap\n"
                          f"off-diag {summary['overlap/mean_offdiag']:.3f}, "
                          f"chance {summary['overlap/chance']:.3f}", seeds, 0.0, 1.0)
    ace_plots.seed_matrix(os.path.join(fig_dir, "cca.png"), mats["cca"],
                          "mean top-r CCA\n"
                          f"off-diag {summary['cca/mean_offdiag']:.3f}",
                          seeds, 0.0, 1.0)
    ace_plots.unit_circle(os.path.join(fig_dir, "eigenvalues.png"), mats["eigenvalues"],
                          markov.true_eigenvalues()[1:],
                          title="operator across positions: eigenvalues")

    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and figures/")
    return summary


_PER_SEED_DETAIL = ("core/energy_top8", "eig/fitted")


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"{'n_seeds':>28s}: {summary['n_seeds']}",
             f"{'acc/optimal':>28s}: {summary['acc/optimal']:.4f}"]
    primary = summary["ace/tail"]
    for tail in [primary] + sorted(set(summary["tails"]) - {primary}):
        block = summary["tails"][tail]
        lines.append(f"--- ACE with the {tail} tail"
                     + (" (primary)" if tail == primary else ""))
        for k in ("acc/full", "acc/core_only", "acc/core_removed", "r2_over_oracle"):
            lines.append(f"{k:>28s}: {block[k]['mean']:.4f} +- {block[k]['std']:.4f}")
        for k in ("core/rank3_fraction", "overlap/mean_offdiag", "overlap/chance",
                  "cca/mean_offdiag", "cca/top3_mean_offdiag", "weight_cosine/mean_offdiag",
                  "eig/within_0.03_fraction", "ace/batched_seconds", "ace/per_seed_loop_seconds"):
            if k in block:
                lines.append(f"{k:>28s}: {block[k]:.4f}")
        lines.append(f"{'core/rank':>28s}: {list(map(int, block['core/rank']))}")
    lines.append(f"{'train/seconds':>28s}: {summary['train/seconds']:.1f}")
    return "\n".join(lines)
