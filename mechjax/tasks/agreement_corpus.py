"""A synthetic language-model corpus from the agreement grammar (docs/ace.md), its word-level
tokenizer and the next-token task that trains a small GPT-2 on it.

Sentences are of two kinds:
  agreement  a subject from the prompt grammar (``agreement.render``: five templates, present or
             past tense) completed by the agreeing verb and a continuation that carries no number:
             ``"In the past, the keys to the cabinet were on the shelf."``. Unlike the prompts,
             the attractor's number is drawn independently of the head noun's, so "the verb
             agrees with the attractor's opposite" is not a shortcut the corpus rewards.
  filler     sentences with no agreement slot and none of the grammar's nouns or verbs
             (``"We waited by the river."``), so the model learns a language, not a classifier.

Only the ``combinations`` given (``split_combinations(...).train``) appear in agreement sentences,
so test prompts on the held-out triples measure generalization. A row of the corpus is
``<|endoftext|> sentence <|endoftext|>`` right-padded with ``<|endoftext|>``, or, for a share
``1 - bos_fraction`` of the rows, the same without the leading ``<|endoftext|>``, so prompts with
and without a BOS token are both inputs the model has seen (GPT-2 checkpoints are read without
one, as the ACE authors do); the model reads ``row[:-1]`` and predicts ``row[1:]`` at every
position, padding weighted 0. The rows are a fixed
token array sampled by key inside the compiled step (``fixed_dataset_sampler``).
"""
from __future__ import annotations

import dataclasses
import random
from typing import Sequence

import jax.numpy as jnp
import numpy as np

from mechjax.interop.tokenizer import END_OF_TEXT, UNKNOWN, Tokenizer, build_word_level
from mechjax.tasks import agreement as ag
from mechjax.tasks.base import Task, fixed_dataset_sampler

# After the verb: words that carry no grammatical number.
CONTINUATIONS = ("here", "on the shelf", "in the hall", "very old", "quite small", "ready",
                 "still missing", "near the window")
FILLER_SUBJECTS = ("We", "They", "I", "She", "He", "Nobody", "Everyone")
FILLER_VERBS = ("walked", "waited", "looked around", "smiled", "talked", "slept", "stayed")
FILLER_TAILS = ("in the park", "for a while", "at home", "by the river", "after lunch", "today",
                "again")


def agreement_sentence(combination: ag.Combination, plural: bool, attractor_plural: bool,
                       template: str, tense: str, rng: random.Random,
                       wording: ag.Wording = ag.Wording()) -> str:
    """One grammatical sentence: subject (``agreement.render``), agreeing verb, continuation."""
    noun, attractor, connector = combination
    subject = ag.render(ag.NOUNS[noun] if plural else noun,
                        ag.ATTRACTORS[attractor] if attractor_plural else attractor,
                        connector, template, tense, rng, wording)
    return f"{subject} {ag.VERBS[(tense, int(plural))]} {rng.choice(CONTINUATIONS)}."


def filler_sentence(rng: random.Random) -> str:
    """A sentence with no agreement slot."""
    return f"{rng.choice(FILLER_SUBJECTS)} {rng.choice(FILLER_VERBS)} {rng.choice(FILLER_TAILS)}."


def corpus_texts(n: int, combinations: Sequence[ag.Combination], filler_fraction: float,
                 seed: int, wording: ag.Wording = ag.Wording()) -> list[str]:
    """``n`` sentences (with repeats): a ``filler_fraction`` share of fillers, the rest agreement
    sentences with every choice uniform over ``combinations``, both numbers and templates."""
    if not 0.0 <= filler_fraction < 1.0:
        raise ValueError(f"filler_fraction={filler_fraction!r}: must be in [0, 1)")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < filler_fraction:
            out.append(filler_sentence(rng))
        else:
            out.append(agreement_sentence(rng.choice(combinations), rng.random() < 0.5,
                                          rng.random() < 0.5, rng.choice(ag.TEMPLATES),
                                          rng.choice(ag.TENSES), rng, wording))
    return out


def vocabulary_texts() -> list[str]:
    """Texts holding every word the grammar can produce (each pad, clause, noun form, verb,
    continuation and filler word, in the casings and spacings they appear in), so the
    word-level tokenizer built from them encodes every prompt and sentence."""
    rng = random.Random(0)
    texts = []
    for template in ag.TEMPLATES:
        for tense in ag.TENSES:
            for wording in (ag.Wording(t, r) for t in ag.THERE_WORDINGS
                            for r in ag.RELATIVE_WORDINGS):
                for _ in range(40):  # enough draws to see every pad of the template
                    texts.append(ag.render("key", "cabinet", "to the", template, tense, rng,
                                           wording))
    words = [*ag.NOUNS.items(), *ag.ATTRACTORS.items()]
    texts.append(" ".join(f"the {s} {p}" for s, p in words))
    texts.append(" ".join(ag.CONNECTORS) + " " + " ".join(ag.VERBS.values()))
    texts += [f"x {c}." for c in CONTINUATIONS]
    texts += [f"{s} {v} {t}." for s in FILLER_SUBJECTS for v in FILLER_VERBS for t in FILLER_TAILS]
    return texts


def build_tokenizer() -> Tokenizer:
    """The word-level tokenizer of the grammar (GPT-2 pre-tokenization, ``<|endoftext|>`` first);
    deterministic, saved with ``Tokenizer.save`` in the GPT-2 tokenizer format."""
    return build_word_level(vocabulary_texts(), name="agreement word-level")


@dataclasses.dataclass(frozen=True)
class CorpusArrays:
    tokens: np.ndarray   # [n, n_ctx] int32, row[:-1]
    labels: np.ndarray   # [n, n_ctx] int32, row[1:]
    weights: np.ndarray  # [n, n_ctx] float32, 1 up to and including the closing <|endoftext|>


def encode_corpus(texts: Sequence[str], tokenizer: Tokenizer, n_ctx: int,
                  bos: Sequence[bool] | None = None) -> CorpusArrays:
    """Rows ``<|endoftext|> ids <|endoftext|>`` padded to ``n_ctx + 1`` (``ids <|endoftext|>``
    where ``bos[i]`` is False; all with BOS when ``bos`` is None); a sentence that does not
    fit, or a word the tokenizer does not know, raises naming it."""
    eot, unk = tokenizer.token_to_id(END_OF_TEXT), tokenizer.token_to_id(UNKNOWN)
    rows = np.full((len(texts), n_ctx + 1), eot, np.int32)
    weights = np.zeros((len(texts), n_ctx), np.float32)
    starts = np.ones(len(texts), np.int32) if bos is None else np.asarray(bos, np.int32)
    for i, (text, ids) in enumerate(zip(texts, tokenizer.encode_batch(texts))):
        if unk is not None and unk in ids:
            raise ValueError(f"sentence {text!r} has words unknown to {tokenizer.name!r}")
        if len(ids) + 2 > n_ctx + 1:
            raise ValueError(f"sentence {text!r} is {len(ids)} tokens; with <|endoftext|> on both "
                             f"sides it needs n_ctx >= {len(ids) + 1}, got {n_ctx}")
        start = int(starts[i])
        rows[i, start:start + len(ids)] = ids
        weights[i, :start + len(ids)] = 1.0  # every next token up to the closing <|endoftext|>
    return CorpusArrays(rows[:, :-1], rows[:, 1:], weights)


def bos_flags(n: int, bos_fraction: float, seed: int) -> np.ndarray:
    """``[n]`` bool, seeded: which corpus rows start with ``<|endoftext|>`` (a ``bos_fraction``
    share, each row independently)."""
    if not 0.0 <= bos_fraction <= 1.0:
        raise ValueError(f"bos_fraction={bos_fraction!r}: must be in [0, 1]")
    return np.random.default_rng(seed).random(n) < bos_fraction


def make_task(tokenizer: Tokenizer, train_combinations: Sequence[ag.Combination],
              test_combinations: Sequence[ag.Combination], n_sentences: int, n_eval: int,
              filler_fraction: float, batch_size: int, n_ctx: int, seed: int,
              bos_fraction: float = 1.0, wording: ag.Wording = ag.Wording()) -> Task:
    """Next-token prediction on ``n_sentences`` corpus rows (minibatches of ``batch_size`` drawn
    by key in the step), a ``bos_fraction`` share of them after ``<|endoftext|>``. Eval pools:
    ``train`` (the first ``n_eval`` rows) and ``test`` (``n_eval`` agreement sentences on the
    held-out ``test_combinations``, no fillers)."""
    train = encode_corpus(corpus_texts(n_sentences, train_combinations, filler_fraction, seed,
                                       wording), tokenizer, n_ctx,
                          bos_flags(n_sentences, bos_fraction, seed))
    test = encode_corpus(corpus_texts(n_eval, test_combinations, 0.0, seed + 1, wording),
                         tokenizer, n_ctx, bos_flags(n_eval, bos_fraction, seed + 1))
    as_j = lambda a: {k: jnp.asarray(v) for k, v in dataclasses.asdict(a).items()}  # noqa: E731
    tr, te = as_j(train), as_j(test)
    pool = lambda d, n: fixed_dataset_sampler(d["tokens"][:n], d["labels"][:n],  # noqa: E731
                                              weights=d["weights"][:n])
    sample = fixed_dataset_sampler(tr["tokens"], tr["labels"], batch_size, tr["weights"],
                                   replace=True)
    return Task(name="agreement_lm", sample=sample,
                eval_pools={"train": pool(tr, n_eval), "test": pool(te, n_eval)},
                readout=None, seq_len=n_ctx, vocab_size=tokenizer.vocab_size,
                vocab_out=tokenizer.vocab_size)


__all__ = ["CONTINUATIONS", "CorpusArrays", "bos_flags", "FILLER_SUBJECTS", "FILLER_TAILS", "FILLER_VERBS",
           "agreement_sentence", "build_tokenizer", "corpus_texts", "encode_corpus",
           "filler_sentence", "make_task", "vocabulary_texts"]
