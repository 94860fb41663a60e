"""Flipping grammatical number during free generation (ACE paper), and judging the verbs produced.

Steering (``PushMargin``): at every generation step, at the current last position only, the layer
output moves along the core direction, ``h <- h + alpha q``, with ``alpha`` chosen for that step
and row so that the number margin there becomes ``-sign(m) * target`` (``target`` = 1: "pushed to
the opposite sign with magnitude 1"). The margin pushed is the copula margin
``logsumexp(are, were) - logsumexp(is, was)`` by default (the ACE authors' steering target), or
the paper's summed margin (``margin="summed"``), under which the pair of the tense the context
excludes absorbs part of the push. The margin is a nonlinear function of ``alpha`` (LayerNorm,
later layers), so ``alpha`` is found by a few Newton steps on ``m(alpha) - goal`` (forward-mode
derivative), starting from 0. ``ReflectCore`` is the validated flip (``x - 2 x q q^T``, centred) at
the current position, for comparison.

Judging (``judge``): the text after each prompt is split into sentences; a word is/are/was/were is
an agreement slot; its expected number is the number of the sentence's head noun (the first of
the grammar's head nouns in it; attractors are a different word list). A slot in a sentence with
no head noun is not counted. ``rule="first"`` scores only each text's first slot (the verb the
prompt asks for: the prompt ends right before it), ``rule="all"`` every slot of the text.

Shape legend: B prompts, T buffer positions, D d_model, V vocabulary.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Sequence

import jax
import jax.numpy as jnp

from mechjax.studies.agreement_cores import MARGINS, resid_names
from mechjax.analysis.ace.validate import centred_hook
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_hooks
from mechjax.tasks import agreement as ag

Array = jax.Array
VERB_NUMBER = {"is": 0, "was": 0, "are": 1, "were": 1}
HEAD_NUMBER = {**{s: 0 for s in ag.NOUNS}, **{p: 1 for p in ag.NOUNS.values()}}


def _logits_at(params, tokens, pos, cfg, hooks):
    logits, _ = run_with_hooks(params, tokens, cfg, hooks)
    return logits[jnp.arange(tokens.shape[0]), pos]


@dataclasses.dataclass(frozen=True)
class PushMargin:
    """``logits_fn`` for ``mechjax.models.generate.generate``; ``args = (params, q [L, D], layer [])``
    (the layer is traced, so models with different selected layers share one program)."""

    cfg: ModelConfig
    verb_ids: tuple[int, int, int, int]  # is, are, was, were
    target: float = 1.0
    newton_steps: int = 4
    margin: str = "copula"  # a key of agreement_cores.MARGINS

    def __post_init__(self):
        if self.margin not in MARGINS:
            raise ValueError(f"margin={self.margin!r}: allowed {tuple(MARGINS)}")

    def pushed(self, args, tokens: Array, pos: Array, alpha: Array) -> Array:
        """Logits ``[B, V]`` at ``pos`` with ``alpha [B] * q`` added at the layer."""
        params, q, layer = args
        rows = jnp.arange(tokens.shape[0])

        def hook(j):
            step = jnp.where(layer == j, alpha, 0.0)[:, None] * q[j]
            return lambda h: h.at[rows, pos].add(step.astype(h.dtype))

        return _logits_at(params, tokens, pos, self.cfg,
                          {n: hook(j) for j, n in enumerate(resid_names(self.cfg))})

    def alpha(self, args, tokens: Array, pos: Array) -> tuple[Array, Array]:
        """``(alpha [B], goal [B])``: the strength that moves each row's margin to ``goal``."""
        ids = jnp.asarray(self.verb_ids)
        measure = MARGINS[self.margin]
        m_of = lambda a: measure(self.pushed(args, tokens, pos, a), ids)  # noqa: E731
        zero = jnp.zeros(tokens.shape[0], jnp.float32)
        m0 = m_of(zero)
        goal = -jnp.where(m0 >= 0, 1.0, -1.0) * self.target

        def newton(a, _):
            m, dm = jax.jvp(m_of, (a,), (jnp.ones_like(a),))  # rows independent: dm is diagonal
            safe = jnp.where(jnp.abs(dm) > 1e-6, dm, 1e-6)
            return a - (m - goal) / safe, None

        a, _ = jax.lax.scan(newton, zero, None, length=self.newton_steps)
        return a, goal

    def __call__(self, args, tokens: Array, pos: Array) -> Array:
        return self.pushed(args, tokens, pos, self.alpha(args, tokens, pos)[0])


@dataclasses.dataclass(frozen=True)
class ReflectCore:
    """``logits_fn`` with the centred flip of the rank-1 core at the current position;
    ``args = (params, q [L, D], mu [L, D], layer [])``."""

    cfg: ModelConfig

    def __call__(self, args, tokens: Array, pos: Array) -> Array:
        params, q, mu, layer = args

        def hook(j):
            fn = centred_hook(q[j][:, None], mu[j], "flip", pos)
            return lambda h: jnp.where(layer == j, fn(h), h)

        return _logits_at(params, tokens, pos, self.cfg,
                          {n: hook(j) for j, n in enumerate(resid_names(self.cfg))})


_WORD = re.compile(r"[a-z]+")


def slots(text: str) -> list[tuple[int, int]]:
    """``(expected, produced)`` numbers (1 = plural) of every agreement slot in ``text``."""
    out = []
    for sentence in re.split(r"[.!?\n]|<\|endoftext\|>", text):
        head = None
        for word in _WORD.findall(sentence.lower()):
            if head is None and word in HEAD_NUMBER:
                head = HEAD_NUMBER[word]
            elif head is not None and word in VERB_NUMBER:
                out.append((head, VERB_NUMBER[word]))
    return out


def continuations(prompts: Sequence[ag.Prompt], tokens, lengths, n_new: int, tokenizer
                  ) -> list[str]:
    """The texts judged: each prompt's text followed by its ``n_new`` generated tokens, decoded
    (``tokens [B, T]`` as ``generate`` returns them, prompts of ``lengths [B]`` tokens; a BOS
    before the prompt is not in the prompt's text, so it never reaches the judge)."""
    return [p.text + tokenizer.decode([int(t) for t in row[ln:ln + n_new]])
            for p, row, ln in zip(prompts, tokens, lengths)]


JUDGE_RULES = ("first", "all")


def judge(texts: Sequence[str], rule: str = "all") -> dict[str, Any]:
    """Counts over the slots of ``texts`` (``rule``: each text's first slot, or all of them):
    ``n_texts``, ``n_slots``, ``agree`` (fraction whose verb agrees with the head noun),
    ``disagree`` (1 - agree; ``None`` without slots)."""
    if rule not in JUDGE_RULES:
        raise ValueError(f"rule={rule!r}: allowed {JUDGE_RULES}")
    pairs = [p for t in texts for p in (slots(t)[:1] if rule == "first" else slots(t))]
    agree = sum(e == v for e, v in pairs) / len(pairs) if pairs else None
    return {"n_texts": len(texts), "n_slots": len(pairs), "agree": agree,
            "disagree": None if agree is None else 1.0 - agree}


__all__ = ["HEAD_NUMBER", "JUDGE_RULES", "PushMargin", "ReflectCore", "VERB_NUMBER",
           "continuations", "judge", "slots"]
