"""The stages of ``experiments.ace_agreement.run`` that work on a family of models (the
self-trained seeds, or the GPT-2-format folders given): their inputs, the batched analysis, the
generations and the per-model summary."""
from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.models import generate as gen
from mechjax.studies import agreement_cores as ac
from mechjax.studies import agreement_generation as ag_gen
from mechjax.models.config import ModelConfig
from mechjax.interop.tokenizer import END_OF_TEXT, Tokenizer
from mechjax.sweeps.sweep import log
from mechjax.tasks import agreement as ag
from mechjax.sweeps.timing import over_seeds


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


def family_inputs(prompts: ag.AgreementPrompts, tokenizer: Tokenizer, n_ctx: int, n_new: int,
                  bos: bool = False) -> dict[str, Any]:
    """Tokenized prompts (with ``bos``, each after ``<|endoftext|>`` when the tokenizer has it)
    and the verb ids; a verb that is not one token, or a prompt (plus the generated tokens)
    longer than ``n_ctx``, raises naming it."""
    verbs = ag.verb_token_ids(tokenizer)
    eot = tokenizer.token_to_id(END_OF_TEXT)
    prefix = [eot] if bos and eot is not None else []
    train = ag.tokenize(prompts.train, tokenizer, n_ctx, prefix_ids=prefix)
    test = ag.tokenize(prompts.test, tokenizer, n_ctx, prefix_ids=prefix)
    gen.check_room(test.lengths, n_new, n_ctx)
    as_prompts = lambda t: ac.Prompts(*(jnp.asarray(x) for x in  # noqa: E731
                                        (t.tokens, t.last, t.labels)))
    return dict(tokenizer=tokenizer, train=as_prompts(train), test=as_prompts(test),
                test_lengths=test.lengths,
                verb_ids=jnp.asarray([verbs[v] for v in ("is", "are", "was", "were")]))


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


DECODINGS = {"greedy": True, "sampled": False}  # name -> greedy flag of ``generate``


def generations(family: Family, result: ac.ModelResult, prompts: list[ag.Prompt], g
                ) -> list[dict[str, Any]]:
    """Per model and decoding (greedy; sampled at ``g.temperature`` among ``g.top_k``):
    continuations of the first ``g.n_prompts`` test prompts, clean, with the margin pushed to
    the other sign (``PushMargin``) and with the core reflected, judged on the grammar's verbs
    by both rules (each prompt's first slot; every slot). Sampled runs draw the same random
    numbers."""
    n, lengths = g.n_prompts, family.test_lengths[:g.n_prompts]
    width = int(lengths.max()) + g.n_new
    tokens = jnp.asarray(np.asarray(family.test.tokens)[:n, :width] if
                         family.test.tokens.shape[1] >= width else
                         np.pad(np.asarray(family.test.tokens)[:n],
                                ((0, 0), (0, width - family.test.tokens.shape[1]))))
    verbs = tuple(int(v) for v in family.verb_ids)
    fns = {"clean": gen.PlainLogits(family.cfg),
           "pushed": ag_gen.PushMargin(family.cfg, verbs, g.target_margin, g.newton_steps,
                                       g.margin),
           "reflected": ag_gen.ReflectCore(family.cfg)}
    key = jax.random.PRNGKey(g.seed)
    out = []
    for i in range(len(family.names)):
        params = jax.tree.map(lambda x: x[i], family.params)
        q, mu = jnp.asarray(result.direction[i]), jnp.asarray(result.mean[i])
        layer = jnp.asarray(result.selected[i])
        args = {"clean": params, "pushed": (params, q, layer), "reflected": (params, q, mu, layer)}
        judged, example = {}, {}
        for decoding, greedy in DECODINGS.items():
            texts = {}
            for name, fn in fns.items():
                toks = np.asarray(gen.generate(fn, args[name], tokens, jnp.asarray(lengths), key,
                                               g.n_new, g.temperature, g.top_k,
                                               jnp.asarray(greedy)))
                texts[name] = ag_gen.continuations(prompts, toks, lengths, g.n_new,
                                                   family.tokenizer)
            judged[decoding] = {rule: {name: ag_gen.judge(t, rule) for name, t in texts.items()}
                                for rule in ag_gen.JUDGE_RULES}
            example[decoding] = {k: v[0] for k, v in texts.items()}
        out.append({"judged": judged, "example": example})
    return out


def generation_block(judged: dict) -> dict[str, Any]:
    """Summary keys of one model's judged generations: ``flip_generation/<decoding>/...`` by the
    first-slot rule (``fraction_flipped`` over the continuations that hold a verb,
    ``fraction_of_prompts_flipped`` over all of them), and the same under ``.../all_slots/...``."""
    block = {}
    for decoding, by_rule in judged.items():
        for rule, prefix in (("first", f"flip_generation/{decoding}"),
                             ("all", f"flip_generation/{decoding}/all_slots")):
            j = by_rule[rule]
            block.update({f"{prefix}/fraction_flipped": j["pushed"]["disagree"],
                          f"{prefix}/fraction_flipped_reflected": j["reflected"]["disagree"],
                          f"{prefix}/clean_agreement": j["clean"]["agree"],
                          f"{prefix}/n_slots": {k: v["n_slots"] for k, v in j.items()}})
            if rule == "first":  # a continuation with no verb counts as not flipped here
                pushed = j["pushed"]
                block[f"{prefix}/fraction_of_prompts_flipped"] = (
                    None if pushed["disagree"] is None else
                    pushed["disagree"] * pushed["n_slots"] / pushed["n_texts"])
    return block


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
        **generation_block(judged),
        "flip_generation/example": gen_out["example"],
        "per_layer": {**{f"auc/{m}": result.auc[m][i].tolist() for m in ac.MODES},
                      "knob_r2": result.knob_r2[i].tolist(),
                      "core_weight": result.weight[i].tolist()},
    }
