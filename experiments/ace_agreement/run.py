"""The subject-verb agreement job (SPEC 2.7): train GPT-2-architecture LMs on the agreement corpus
(every seed in one sweep), read any GPT-2-format checkpoint folders given, then on every model:
the number margin and its AUC, rank-1 ACE at every layer with centred keep / remove / flip, the
knob fit, the cross-model Spearman of the core coordinate, and flipping during generation.

Stages: build (config -> prompts, tokenizer, trainer, loaded folders; every check before anything
is written) -> train (run_sweep) -> analyse (``agreement_cores.analyse_model`` per family of
models, vmapped over seeds or looped, timed) -> generate (clean / pushed / reflected) -> summary
and figures.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mechjax import experiment
from mechjax import generate as gen
from mechjax.analysis import agreement_cores as ac
from mechjax.analysis import agreement_generation as ag_gen
from mechjax.analysis.ace.compare import offdiag_mean
from mechjax.analysis.seeds import seed_stats
from mechjax.config import ConfigError, ModelConfig
from mechjax.io import write_json
from mechjax.loaders import CheckpointError, gpt2_model_config, load_gpt2, load_tokenizer, save_gpt2
from mechjax.loaders.tokenizer import END_OF_TEXT, Tokenizer
from mechjax.plots import ace as ace_plots
from mechjax.plots import agreement as plots
from mechjax.plots.save import save_figure
from mechjax.sweep import log, run_sweep
from mechjax.tasks import agreement as ag
from mechjax.tasks import agreement_corpus as corpus
from mechjax.timing import over_seeds
from mechjax.train import make_train
from mechjax.vectorize import resolve_analysis_vectorize

from experiments.ace_agreement.schema import SCHEMA

SUMMARY_KEYS = ("auc/base", "auc/keep", "auc/remove", "auc/flip", "layer/selected", "knob_r2",
                "spearman/mean_offdiag", "flip_generation/fraction_flipped")


@dataclasses.dataclass
class Family:
    """Models analysed together: the self-trained seeds (stacked), or one checkpoint folder."""

    names: list[str]
    cfg: ModelConfig
    tokenizer: Tokenizer
    train: ac.Prompts
    test: ac.Prompts
    test_lengths: np.ndarray  # [B]
    verb_ids: jax.Array       # [4] is, are, was, were
    params: dict | None = None  # {name: [n, ...]}; None until trained


# ------------------------------------------------------------------------------------------------
# Config -> objects (all checks before anything is compiled or written)
# ------------------------------------------------------------------------------------------------
def gpt2_paths(config) -> list[str]:
    return [p.strip() for p in config.gpt2_paths.split(",") if p.strip()]


def family_inputs(prompts: ag.AgreementPrompts, tokenizer: Tokenizer, n_ctx: int, n_new: int
                  ) -> dict[str, Any]:
    """Tokenized prompts (each after ``<|endoftext|>`` when the tokenizer has it) and the verb
    ids; a verb that is not one token, or a prompt (plus the generated tokens) longer than
    ``n_ctx``, raises naming it."""
    verbs = ag.verb_token_ids(tokenizer)
    eot = tokenizer.token_to_id(END_OF_TEXT)
    prefix = [eot] if eot is not None else []
    train = ag.tokenize(prompts.train, tokenizer, n_ctx, prefix_ids=prefix)
    test = ag.tokenize(prompts.test, tokenizer, n_ctx, prefix_ids=prefix)
    gen.check_room(test.lengths, n_new, n_ctx)
    as_prompts = lambda t: ac.Prompts(*(jnp.asarray(x) for x in  # noqa: E731
                                        (t.tokens, t.last, t.labels)))
    return dict(tokenizer=tokenizer, train=as_prompts(train), test=as_prompts(test),
                test_lengths=test.lengths,
                verb_ids=jnp.asarray([verbs[v] for v in ("is", "are", "was", "were")]))


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
    prompts = ag.make_prompts(p.seed, p.n_train, p.n_test, heldout=split)
    families, trainer, hparams = [], None, {}
    if seeds:
        tokenizer = corpus.build_tokenizer()
        cfg = gpt2_model_config(n_layers=m.n_layers, d_model=m.d_model, n_heads=m.n_heads,
                                d_vocab=tokenizer.vocab_size, n_ctx=m.n_ctx)
        try:
            inputs = family_inputs(prompts, tokenizer, m.n_ctx, g.n_new)
            task = corpus.make_task(tokenizer, split.train, split.test, c.n_sentences, c.n_eval,
                                    c.filler_fraction, c.batch_size, m.n_ctx, c.seed)
        except ValueError as err:  # a prompt or sentence longer than n_ctx
            raise ConfigError(f"model.n_ctx={m.n_ctx}: {err}") from err
        trainer = make_train(task, cfg, experiment.train_config(config.train))
        hparams = trainer.default_hparams(**experiment.as_dict(config.hparams))
        families.append(Family([f"seed_{s}" for s in seeds], cfg, **inputs))
    for path in paths:  # the whole checkpoint is read now: a bad folder fails before training
        cfg, params = load_gpt2(path)
        tokenizer = load_tokenizer(path)
        try:
            inputs = family_inputs(prompts, tokenizer, cfg.n_ctx, g.n_new)
        except CheckpointError:
            raise
        except ValueError as err:  # a prompt longer than the checkpoint's n_ctx
            raise CheckpointError(f"checkpoint {path!r}: {err}") from err
        stacked = {k: jnp.asarray(v)[None] for k, v in params.items()}
        families.append(Family([f"gpt2:{os.path.basename(os.path.normpath(path))}"], cfg,
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


def analyse(family: Family, vectorize: str, time_both: bool) -> tuple[ac.ModelResult, dict]:
    """``analyse_model`` on every model of ``family`` (fields ``[n, ...]``) and the timings: in
    the form ``timing.over_seeds`` picks (``ace/vectorize``), and with ``time_both`` also as one
    vmapped program and as a per-seed loop, checked to agree."""
    cfg = family.cfg
    one = lambda p, tr, te, v: ac.analyse_model(p, tr, te, cfg, v)  # noqa: E731
    args = (family.params, family.train, family.test, family.verb_ids)
    out, t = over_seeds(one, *args, vectorize=vectorize)
    timing = {"ace/vectorize": t["vectorize"], "ace/seconds": t["seconds"],
              "ace/compile_seconds": t["compile_seconds"]}
    if time_both:
        vmapped, t_vmap = over_seeds(one, *args, vectorize="vmap")
        looped, t_loop = over_seeds(one, *args, vectorize="loop")
        timing.update({"ace/vmap_seconds": t_vmap["seconds"],
                       "ace/vmap_compile_seconds": t_vmap["compile_seconds"],
                       "ace/loop_seconds": t_loop["seconds"],
                       "ace/loop_compile_seconds": t_loop["compile_seconds"],
                       "ace/loop_matches_vmap": bool(np.allclose(
                           np.asarray(looped.auc["flip"]), np.asarray(vmapped.auc["flip"]),
                           atol=1e-4))})
    log(f"ACE on {len(family.names)} model(s) x {cfg.n_layers} layers: "
        + ", ".join(f"{k.split('/')[1]} {v:.2f}s" for k, v in timing.items()
                    if isinstance(v, float)))
    return jax.tree.map(np.asarray, out), timing


def generations(family: Family, result: ac.ModelResult, prompts: list[ag.Prompt], g
                ) -> list[dict[str, Any]]:
    """Per model: continuations of the first ``g.n_prompts`` test prompts, clean, with the
    margin pushed to the other sign (``PushMargin``) and with the core reflected, judged on the
    grammar's verbs. The three runs draw the same random numbers."""
    n, lengths = g.n_prompts, family.test_lengths[:g.n_prompts]
    width = int(lengths.max()) + g.n_new
    tokens = jnp.asarray(np.asarray(family.test.tokens)[:n, :width] if
                         family.test.tokens.shape[1] >= width else
                         np.pad(np.asarray(family.test.tokens)[:n],
                                ((0, 0), (0, width - family.test.tokens.shape[1]))))
    verbs = tuple(int(v) for v in family.verb_ids)
    fns = {"clean": gen.PlainLogits(family.cfg),
           "pushed": ag_gen.PushMargin(family.cfg, verbs, g.target_margin, g.newton_steps),
           "reflected": ag_gen.ReflectCore(family.cfg)}
    key = jax.random.PRNGKey(g.seed)
    out = []
    for i in range(len(family.names)):
        params = jax.tree.map(lambda x: x[i], family.params)
        q, mu = jnp.asarray(result.direction[i]), jnp.asarray(result.mean[i])
        layer = jnp.asarray(result.selected[i])
        args = {"clean": params, "pushed": (params, q, layer), "reflected": (params, q, mu, layer)}
        texts = {}
        for name, fn in fns.items():
            toks = np.asarray(gen.generate(fn, args[name], tokens, jnp.asarray(lengths), key,
                                           g.n_new, g.temperature, g.top_k))
            texts[name] = [p.text + family.tokenizer.decode(row[ln:ln + g.n_new])
                           for p, row, ln in zip(prompts, toks, lengths)]
        judged = {name: ag_gen.judge(t) for name, t in texts.items()}
        out.append({"judged": judged, "example": {k: v[0] for k, v in texts.items()}})
    return out


# ------------------------------------------------------------------------------------------------
# Summary
# ------------------------------------------------------------------------------------------------
def per_model(result: ac.ModelResult, i: int, gen_out: dict, spearman_row: float | None
              ) -> dict[str, Any]:
    """The summary block of model ``i`` of a family."""
    sel = int(result.selected[i])
    judged = gen_out["judged"]
    return {
        "auc/base": float(result.auc_base[i]),
        **{f"auc/{m}": float(result.auc[m][i, sel]) for m in ac.MODES},
        "layer/selected": sel,
        "knob_r2": float(result.knob_r2[i, sel]),
        "spearman/mean_offdiag": spearman_row,
        "flip_generation/fraction_flipped": judged["pushed"]["disagree"],
        "flip_generation/fraction_flipped_reflected": judged["reflected"]["disagree"],
        "flip_generation/clean_agreement": judged["clean"]["agree"],
        "flip_generation/n_slots": {k: v["n_slots"] for k, v in judged.items()},
        "flip_generation/example": gen_out["example"],
        "per_layer": {**{f"auc/{m}": result.auc[m][i].tolist() for m in ac.MODES},
                      "knob_r2": result.knob_r2[i].tolist(),
                      "core_weight": result.weight[i].tolist()},
    }


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
        out, t = analyse(family, vectorize, config.ace.time_both and k == 0 and trainer is not None)
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

    gens = [generations(f, r, prompts.test[:config.generation.n_prompts], config.generation)
            for f, r in zip(families, results)]
    models, j = {}, 0
    for family, result, gen_out in zip(families, results, gens):
        for i, name in enumerate(family.names):
            models[name] = per_model(result, i, gen_out[i], row_mean(j))
            j += 1
    for key in SUMMARY_KEYS + ("flip_generation/fraction_flipped_reflected",
                               "flip_generation/clean_agreement"):
        summary[key] = seed_stats([models[n][key] for n in families[0].names]) if n_own else None
    summary.update({
        "spearman/offdiag_seeds": offdiag_mean(rho[:n_own, :n_own]) if n_own > 1 else None,
        "spearman/models": names, "spearman/matrix": rho.tolist(),
        "spearman/sign_alignment": "each model's z is signed so that corr(z, margin) > 0",
        "models": models, "n_test_prompts": int(families[0].test.tokens.shape[0]),
    })

    fig_dir = os.path.join(workdir, "figures")
    lead, res0 = families[0], results[0]
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
    save_figure(plots.generation_text(models[lead.names[0]]["flip_generation/example"],
                                      title=f"{lead.names[0]}: one continuation"),
                os.path.join(fig_dir, "generation_example.png"))
    if n_own > 1:
        save_figure(ace_plots.seed_matrix(rho, "Spearman of the core coordinate\n"
                                                f"seeds off-diag {summary['spearman/offdiag_seeds']:.3f}",
                                                names, -1.0, 1.0), os.path.join(fig_dir, "spearman.png"))
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
    for k in ("ace/seconds", "ace/vmap_seconds", "ace/loop_seconds", "train/seconds"):
        if k in summary:
            lines.append(f"{k}: {summary[k]:.1f}")
    return "\n".join(lines)
