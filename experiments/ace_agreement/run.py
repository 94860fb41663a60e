"""The subject-verb agreement job (ACE paper): train GPT-2-architecture LMs on the agreement corpus
(every seed in one sweep), read any GPT-2-format checkpoint folders given, then on every model:
the number margin and its AUC, rank-1 ACE at every layer with centred keep / remove / flip, the
knob fit, the cross-model Spearman of the core coordinate, and flipping during generation.

Stages: build (config -> prompts, tokenizer, trainer, loaded folders; every check before anything
is written) -> train (run_sweep) -> analyse (``agreement_cores.analyse_model`` per family of
models, vmapped over seeds or looped, timed) -> generate (clean / pushed / reflected) -> summary
and figures.
"""
from __future__ import annotations

import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.cli import experiment
from mechjax.studies import agreement_cores as ac
from mechjax.analysis.ace.compare import offdiag_mean
from mechjax.analysis.seeds import seed_stats
from mechjax.models.config import ConfigError
from mechjax.io import write_json
from mechjax.interop import CheckpointError, gpt2_model_config, load_gpt2, load_tokenizer, save_gpt2
from mechjax.plots import ace as ace_plots
from mechjax.plots import agreement as plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log, run_sweep
from mechjax.tasks import agreement as ag
from mechjax.tasks import agreement_corpus as corpus
from mechjax.training.train import make_train
from mechjax.sweeps.vectorize import resolve_analysis_vectorize

from experiments.ace_agreement import stages
from experiments.ace_agreement.schema import SCHEMA

SUMMARY_KEYS = ("auc/base", "auc/keep", "auc/remove", "auc/flip", "layer/selected", "knob_r2",
                "spearman/mean_offdiag", "flip_generation/greedy/fraction_flipped",
                "flip_generation/sampled/fraction_flipped")
# also given seed statistics (not in the printed table)
MORE_SEED_KEYS = tuple(f"flip_generation/{d}{rule}/{k}" for d in stages.DECODINGS
                       for rule in ("", "/all_slots")
                       for k in ("fraction_flipped", "fraction_flipped_reflected",
                                 "clean_agreement")
                       if f"flip_generation/{d}{rule}/{k}" not in SUMMARY_KEYS) + tuple(
    f"flip_generation/{d}/fraction_of_prompts_flipped" for d in stages.DECODINGS)


def gpt2_paths(config) -> list[str]:
    return [p.strip() for p in config.gpt2_paths.split(",") if p.strip()]




def build(config):
    """``(trainer or None, hparams, seeds, prompts, families)`` from the checked ``config``."""
    seeds = experiment.seeds(config)
    p, c, m, g = config.prompts, config.corpus, config.model, config.generation
    paths = gpt2_paths(config)
    if not seeds and not paths:
        raise ConfigError("n_seeds=0 and gpt2_paths is empty: nothing to analyse")
    if c.batch_size > c.n_sentences:
        raise ConfigError(f"corpus.batch_size={c.batch_size} exceeds "
                          f"corpus.n_sentences={c.n_sentences}")
    if g.n_prompts > p.n_test:
        raise ConfigError(f"generation.n_prompts={g.n_prompts} exceeds prompts.n_test={p.n_test}")
    if m.d_model % m.n_heads:
        raise ConfigError(f"model.n_heads={m.n_heads} does not divide model.d_model={m.d_model}")
    split = ag.split_combinations(p.split_seed)
    wording = ag.Wording(p.there, p.relative)
    prompts = ag.make_prompts(p.seed, p.n_train, p.n_test, heldout=split, wording=wording)
    families, trainer, hparams = [], None, {}
    if seeds:
        tokenizer = corpus.build_tokenizer()
        cfg = gpt2_model_config(n_layers=m.n_layers, d_model=m.d_model, n_heads=m.n_heads,
                                d_vocab=tokenizer.vocab_size, n_ctx=m.n_ctx)
        try:
            inputs = stages.family_inputs(prompts, tokenizer, m.n_ctx, g.n_new, p.bos)
            task = corpus.make_task(tokenizer, split.train, split.test, c.n_sentences, c.n_eval,
                                    c.filler_fraction, c.batch_size, m.n_ctx, c.seed,
                                    c.bos_fraction, wording)
        except ValueError as err:  # a prompt or sentence longer than n_ctx
            raise ConfigError(f"model.n_ctx={m.n_ctx}: {err}") from err
        trainer = make_train(task, cfg, experiment.train_config(config.train))
        hparams = trainer.default_hparams(**experiment.as_dict(config.hparams))
        families.append(stages.Family([f"seed_{s}" for s in seeds], cfg, **inputs))
    for path in paths:  # the whole checkpoint is read now: a bad folder fails before training
        cfg, params = load_gpt2(path)
        tokenizer = load_tokenizer(path)
        try:
            inputs = stages.family_inputs(prompts, tokenizer, cfg.n_ctx, g.n_new, p.bos)
        except CheckpointError:
            raise
        except ValueError as err:  # a prompt longer than the checkpoint's n_ctx
            raise CheckpointError(f"checkpoint {path!r}: {err}") from err
        stacked = {k: jnp.asarray(v)[None] for k, v in params.items()}
        families.append(stages.Family([f"gpt2:{os.path.basename(os.path.normpath(path))}"], cfg,
                               params=stacked, **inputs))
    names = [n for f in families for n in f.names]
    if len(set(names)) != len(names):
        raise ConfigError(f"gpt2_paths: two folders share a name {names}; rename one")
    return trainer, hparams, seeds, prompts, families


# ------------------------------------------------------------------------------------------------
# Stages
# ------------------------------------------------------------------------------------------------
def train(trainer, hparams, seeds, workdir: str, chunk_evals: int):
    """All seeds as one sweep: ``(metrics {name: [n_seeds, n_evals]}, params [n_seeds, ...],
    seconds)``."""
    t0 = time.perf_counter()
    result = run_sweep(trainer, seeds, hparams, workdir, chunk_evals=chunk_evals)
    params = {k: jnp.asarray(v) for k, v in result.params_at(grid=0).items()}
    return result.metrics_at(grid=0), params, time.perf_counter() - t0




def figures(fig_dir: str, lead: stages.Family, res0: ac.ModelResult, models: dict, rho,
            names: list[str], summary: dict[str, Any]) -> None:
    """The figures of the lead family's first model, and the Spearman matrix across models."""
    save_figure(plots.auc_vs_depth({m: res0.auc[m] for m in ac.MODES}, res0.auc_base,
                                   title=f"{lead.names[0].split('_')[0]}: {len(lead.names)} "
                                   "model(s)"), os.path.join(fig_dir, "auc_vs_depth.png"))
    sel = int(res0.selected[0])
    save_figure(plots.core_vs_margin(res0.coord[0, sel], res0.margin[0],
                                     np.asarray(lead.test.labels),
                                     title=f"{lead.names[0]}, layer {sel}: R^2 "
                                     f"{res0.knob_r2[0, sel]:.3f}"),
                os.path.join(fig_dir, "core_vs_margin.png"))
    save_figure(plots.margin_boxplots(
        {"base": res0.margin[0], "removed": res0.margins["remove"][0, sel],
         "flipped": res0.margins["flip"][0, sel]}, np.asarray(lead.test.labels),
        title=f"{lead.names[0]}, layer {sel}"), os.path.join(fig_dir, "margin_boxplots.png"))
    examples = models[lead.names[0]]["flip_generation/example"]
    save_figure(plots.generation_text({f"{d} {k}": text for d, by_run in examples.items()
                                       for k, text in by_run.items()},
                                      title=f"{lead.names[0]}: one continuation"),
                os.path.join(fig_dir, "generation_example.png"))
    if summary["n_seeds"] > 1:
        title = ("Spearman of the core coordinate\n"
                 f"seeds off-diag {summary['spearman/offdiag_seeds']:.3f}")
        save_figure(ace_plots.seed_matrix(rho, title, names, -1.0, 1.0),
                    os.path.join(fig_dir, "spearman.png"))


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    trainer, hparams, seeds, prompts, families = build(config)
    experiment.start(workdir, config, overwrite)
    summary: dict[str, Any] = {"n_seeds": len(seeds), "seeds": seeds}
    if trainer is not None:
        own = families[0]
        own.tokenizer.save(os.path.join(workdir, "tokenizer"))
        log(f"ace_agreement: {len(seeds)} seeds of a {own.cfg.n_layers}-layer GPT-2 "
            f"(d_model {own.cfg.d_model}, vocabulary {own.cfg.d_vocab}) on "
            f"{jax.device_count()} device(s), {trainer.train_cfg.steps} steps")
        metrics, own.params, summary["train/seconds"] = train(trainer, hparams, seeds, workdir,
                                                              config.chunk_evals)
        summary["loss/test_final"] = seed_stats(metrics["loss/test"][:, -1])
        for i, name in enumerate(own.names):  # what transformers (and gpt2_paths) can open
            save_gpt2(os.path.join(workdir, "gpt2", name), own.cfg,
                      jax.tree.map(lambda x: np.asarray(x[i]), own.params), own.tokenizer)

    vectorize = resolve_analysis_vectorize(config.ace.vectorize)
    results, timings = [], {}
    for k, family in enumerate(families):
        time_both = config.ace.time_both and k == 0 and trainer is not None
        out, t = stages.analyse(family, vectorize, time_both)
        results.append(out)
        timings.update(t if k == 0 else {})
    summary.update(timings, **{"ace/vectorize": vectorize})

    # cross-model Spearman of the sign-aligned core coordinate on the same test prompts
    names = [n for f in families for n in f.names]
    z = np.concatenate([ac.selected_coords(r) for r in results])
    rho = ac.spearman_matrix(z) if len(names) > 1 else np.ones((1, 1))
    n_own = len(seeds)

    def row_mean(j):  # against the self-trained seeds other than itself
        others = [i for i in range(n_own) if i != j]
        return float(np.mean(rho[j, others])) if others else None

    gens = [stages.generations(f, r, prompts.test[:config.generation.n_prompts], config.generation)
            for f, r in zip(families, results)]
    models, j = {}, 0
    for family, result, gen_out in zip(families, results, gens):
        for i, name in enumerate(family.names):
            models[name] = stages.per_model(result, i, gen_out[i], row_mean(j))
            j += 1
    for key in SUMMARY_KEYS + MORE_SEED_KEYS:
        summary[key] = seed_stats([models[n][key] for n in families[0].names]) if n_own else None
    summary.update({
        "spearman/offdiag_seeds": offdiag_mean(rho[:n_own, :n_own]) if n_own > 1 else None,
        # every seed read at the same depth (not each at its own selected layer): how the
        # agreement across seeds changes with depth
        "spearman/per_layer_offdiag_seeds": (ac.per_layer_spearman(results[0])
                                             if trainer is not None and n_own > 1 else None),
        "spearman/models": names, "spearman/matrix": rho.tolist(),
        "spearman/sign_alignment": "each model's z is signed so that corr(z, margin) > 0",
        "models": models, "n_test_prompts": int(families[0].test.tokens.shape[0]),
    })

    figures(os.path.join(workdir, "figures"), families[0], results[0], models, rho, names,
            summary)
    write_json(os.path.join(workdir, "summary.json"), summary)
    log(f"wrote {workdir}/summary.json and figures/")
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"{'model':>16s} " + " ".join(f"{k.split('/')[-1][:10]:>10s}" for k in SUMMARY_KEYS)]
    for name, block in summary["models"].items():
        cells = [("-" if block[k] is None else f"{block[k]:.3f}" if isinstance(block[k], float)
                  else str(block[k])) for k in SUMMARY_KEYS]
        lines.append(f"{name[:16]:>16s} " + " ".join(f"{c:>10s}" for c in cells))
    if summary["n_seeds"]:
        lines.append(f"{'seeds mean':>16s} " + " ".join(
            f"{summary[k]['mean']:>10.3f}" if summary[k]["mean"] is not None else f"{'-':>10s}"
            for k in SUMMARY_KEYS))
        lines.append(f"{'seeds std':>16s} " + " ".join(
            f"{summary[k]['std']:>10.3f}" if summary[k]["std"] is not None else f"{'-':>10s}"
            for k in SUMMARY_KEYS))
    if summary.get("spearman/per_layer_offdiag_seeds"):
        lines.append("seeds' Spearman at each layer: " + ", ".join(
            f"L{i} {r:.3f}" for i, r in enumerate(summary["spearman/per_layer_offdiag_seeds"])))
    for k in ("ace/seconds", "ace/vmap_seconds", "ace/loop_seconds", "train/seconds"):
        if k in summary:
            lines.append(f"{k}: {summary[k]:.1f}")
    return "\n".join(lines)
