"""Subject-verb agreement prompts (ACE paper): seeded, ending right before the verb.

A prompt is a subject noun phrase whose head noun and attractor differ in number, e.g.
``"In the past, the keys to the cabinet"`` -> ``were``. Label 1 means a plural head noun (the
verb should be ``are`` / ``were``). Wording of the five templates (our choice; the paper names
them only):

  base        ``The key to the cabinet``
  front_pad   a leading clause: ``As everyone expected, the key to the cabinet``
  back_pad    words after the attractor that carry no number: ``The key to the cabinet, of
              course,`` / ``The key to the cabinet apparently``
  there       the ACE paper's ``There H C A`` as written there and in the ACE authors' code, with no
              article: ``There key to the cabinet`` (``Wording.there="spec"``, the default);
              ``There the key to the cabinet`` (``"article"``, earlier runs); or the fronted
              locative ``Over there, the key to the cabinet`` (``"over_there"``, earlier runs)
  relative    a subject relative clause between head noun and attractor, in place of the
              connector, as the authors build it (``The H that ... the A``), with their verbs in
              the past tense so that they carry no number for either head:
              ``The key that guarded the cabinets`` (``Wording.relative="spec"``, the default;
              the authors' fourth clause ``that the`` is left out: it opens an object relative
              whose next verb agrees with the attractor); or a clause after the attractor whose
              verb shows no number: ``The key to the cabinet that we found``
              (``"after_attractor"``, the runs before this change)

With the ``"In the past,"`` prefix the tense is past (``was`` / ``were``), otherwise present
(``is`` / ``are``); the prefix takes the sentence's capital letter.

Held-out combinations: ``split_combinations`` divides the 9 x 9 x 6 (noun, attractor,
connector) triples into a train and a test set so that a model trained on sentences of the
train triples is tested on triples it never saw (each word on its own still appears in both).
"""
from __future__ import annotations

import dataclasses
import random
from typing import Sequence

import numpy as np

from mechjax.interop.tokenizer import Tokenizer, single_token_id

NOUNS = {"key": "keys", "label": "labels", "author": "authors", "pilot": "pilots",
         "teacher": "teachers", "child": "children", "man": "men", "woman": "women",
         "mouse": "mice"}
ATTRACTORS = {"cabinet": "cabinets", "drawer": "drawers", "door": "doors", "folder": "folders",
              "box": "boxes", "room": "rooms", "student": "students", "guard": "guards",
              "desk": "desks"}
CONNECTORS = ("to the", "of the", "near the", "behind the", "next to the", "alongside the")
TEMPLATES = ("base", "front_pad", "back_pad", "there", "relative")
THERE_WORDINGS = {"spec": "There {noun} {connector} {attractor}",
                  "article": "There the {noun} {connector} {attractor}",
                  "over_there": "Over there, the {noun} {connector} {attractor}"}
TENSES = ("present", "past")
PAST_PREFIX = "In the past,"
FRONT_PADS = ("As everyone expected,", "According to the report,", "As we noted before,",
              "Without any doubt,")
BACK_PADS = (" apparently", " certainly", ", of course,", ", as it turns out,")
RELATIVE_CLAUSES = ("that we found", "that I mentioned", "that she described",
                    "that they saw")  # after the attractor (Wording.relative="after_attractor")
# between head and attractor (Wording.relative="spec"; the authors' guards/surrounds/hides)
INNER_RELATIVES = ("that guarded the", "that surrounded the", "that hid the")
RELATIVE_WORDINGS = ("spec", "after_attractor")
# verb by (tense, label): label 1 = plural
VERBS = {("present", 0): "is", ("present", 1): "are", ("past", 0): "was", ("past", 1): "were"}

Combination = tuple[str, str, str]  # (noun, attractor, connector), nouns in the singular


@dataclasses.dataclass(frozen=True)
class Wording:
    """How the 'there' and 'relative' templates are worded (see the module docstring)."""

    there: str = "spec"      # a key of THERE_WORDINGS
    relative: str = "spec"   # one of RELATIVE_WORDINGS

    def __post_init__(self):
        if self.there not in THERE_WORDINGS:
            raise ValueError(f"there={self.there!r}: allowed {tuple(THERE_WORDINGS)}")
        if self.relative not in RELATIVE_WORDINGS:
            raise ValueError(f"relative={self.relative!r}: allowed {RELATIVE_WORDINGS}")


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One agreement prompt. ``noun`` / ``attractor`` as they appear (inflected)."""

    text: str
    label: int  # 1: plural head noun
    tense: str  # "present" | "past"
    noun: str
    attractor: str
    connector: str
    template: str

    @property
    def verb(self) -> str:
        """The agreeing verb (without its leading space)."""
        return VERBS[(self.tense, self.label)]

    @property
    def combination(self) -> Combination:
        return (_singular(self.noun, NOUNS), _singular(self.attractor, ATTRACTORS),
                self.connector)


@dataclasses.dataclass(frozen=True)
class AgreementPrompts:
    train: tuple[Prompt, ...]
    test: tuple[Prompt, ...]


@dataclasses.dataclass(frozen=True)
class CombinationSplit:
    train: tuple[Combination, ...]
    test: tuple[Combination, ...]


def _singular(word: str, table: dict[str, str]) -> str:
    return word if word in table else next(s for s, p in table.items() if p == word)


def all_combinations() -> tuple[Combination, ...]:
    """Every (noun, attractor, connector) triple, in a fixed order."""
    return tuple((n, a, c) for n in NOUNS for a in ATTRACTORS for c in CONNECTORS)


def split_combinations(seed: int = 0, test_fraction: float = 0.5) -> CombinationSplit:
    """A seeded split of ``all_combinations()``; the first ``round(test_fraction * 486)`` of a
    shuffle are the test triples."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction={test_fraction!r}: must be in (0, 1)")
    combos = list(all_combinations())
    random.Random(seed).shuffle(combos)
    n_test = round(test_fraction * len(combos))
    return CombinationSplit(train=tuple(sorted(combos[n_test:])),
                            test=tuple(sorted(combos[:n_test])))


def render(noun: str, attractor: str, connector: str, template: str, tense: str,
           rng: random.Random, wording: Wording = Wording()) -> str:
    """The text of one prompt (``noun``/``attractor`` inflected); ``rng`` picks the padding."""
    phrase = f"the {noun} {connector} {attractor}"
    if template == "base":
        text = phrase
    elif template == "front_pad":
        text = f"{rng.choice(FRONT_PADS)} {phrase}"
    elif template == "back_pad":
        text = phrase + rng.choice(BACK_PADS)
    elif template == "there":
        text = THERE_WORDINGS[wording.there].format(noun=noun, connector=connector,
                                                    attractor=attractor)
    elif template == "relative" and wording.relative == "spec":
        text = f"the {noun} {rng.choice(INNER_RELATIVES)} {attractor}"
    elif template == "relative":
        text = f"{phrase} {rng.choice(RELATIVE_CLAUSES)}"
    else:
        raise ValueError(f"template={template!r}: allowed {TEMPLATES}")
    if tense == "past":
        return f"{PAST_PREFIX} {text[0].lower()}{text[1:]}"
    if tense != "present":
        raise ValueError(f"tense={tense!r}: allowed {TENSES}")
    return text[0].upper() + text[1:]


def generate(n: int, rng: random.Random, combinations: Sequence[Combination],
             exclude: set[str] = frozenset(), wording: Wording = Wording()) -> list[Prompt]:
    """``n`` distinct prompts, labels alternating (exactly half plural when ``n`` is even), every
    other choice uniform; texts in ``exclude`` are redrawn."""
    prompts, seen = [], set(exclude)
    attempts = 0
    while len(prompts) < n and attempts < 100 * n + 1000:  # bounded: too few combinations
        attempts += 1
        label = len(prompts) % 2
        noun, attractor, connector = rng.choice(combinations)
        # the attractor always has the opposite number of the head noun
        noun_form = NOUNS[noun] if label else noun
        attractor_form = attractor if label else ATTRACTORS[attractor]
        template, tense = rng.choice(TEMPLATES), rng.choice(TENSES)
        text = render(noun_form, attractor_form, connector, template, tense, rng, wording)
        if text in seen:
            continue
        seen.add(text)
        prompts.append(Prompt(text, label, tense, noun_form, attractor_form, connector, template))
    if len(prompts) < n:
        raise ValueError(f"could not draw {n} distinct prompts from {len(combinations)} "
                         f"combinations (got {len(prompts)}); use more combinations or fewer "
                         "prompts")
    rng.shuffle(prompts)
    return prompts


def make_prompts(seed: int = 0, n_train: int = 600, n_test: int = 600,
                 heldout: CombinationSplit | None = None, wording: Wording = Wording()
                 ) -> AgreementPrompts:
    """The ACE paper's prompts: ``n_train`` + ``n_test`` distinct texts (no text in both halves).

    With ``heldout`` the training prompts use only ``heldout.train`` triples and the test prompts
    only ``heldout.test`` triples; without it both draw from every triple.
    """
    rng = random.Random(seed)
    train_combos = heldout.train if heldout is not None else all_combinations()
    test_combos = heldout.test if heldout is not None else all_combinations()
    train = generate(n_train, rng, train_combos, wording=wording)
    test = generate(n_test, rng, test_combos, exclude={p.text for p in train},
                    wording=wording)
    return AgreementPrompts(train=tuple(train), test=tuple(test))


# ---- tokens ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TokenizedPrompts:
    """Prompts as right-padded token ids. A causal model's output at ``last`` never sees the
    padding after it, so the verb is read there."""

    tokens: np.ndarray  # [n, max_len] int32
    lengths: np.ndarray  # [n] int32
    last: np.ndarray  # [n] int32, lengths - 1
    labels: np.ndarray  # [n] int32, 1 = plural


def tokenize(prompts: Sequence[Prompt], tokenizer: Tokenizer, n_ctx: int | None = None,
             pad_id: int | None = None, prefix_ids: Sequence[int] = ()) -> TokenizedPrompts:
    """Token ids of ``prompts``, each after ``prefix_ids`` (e.g. GPT-2's ``<|endoftext|>``).

    ``pad_id`` defaults to ``<|endoftext|>``'s id, else 0. With ``n_ctx`` a prompt longer than the
    model's context is refused (naming it) before anything is computed.
    """
    ids = [list(prefix_ids) + row for row in tokenizer.encode_batch([p.text for p in prompts])]
    lengths = np.array([len(row) for row in ids], np.int32)
    if n_ctx is not None and lengths.max(initial=0) > n_ctx:
        worst = int(lengths.argmax())
        raise ValueError(f"prompt {prompts[worst].text!r} is {lengths[worst]} tokens with "
                         f"tokenizer {tokenizer.name!r}; the model's n_ctx is {n_ctx}")
    if pad_id is None:
        pad_id = tokenizer.token_to_id("<|endoftext|>") or 0
    tokens = np.full((len(ids), lengths.max(initial=1)), pad_id, np.int32)
    for row, seq in zip(tokens, ids):
        row[:len(seq)] = seq
    return TokenizedPrompts(tokens=tokens, lengths=lengths, last=lengths - 1,
                            labels=np.array([p.label for p in prompts], np.int32))


def verb_token_ids(tokenizer: Tokenizer) -> dict[str, int]:
    """Ids of ``" is"``, ``" are"``, ``" was"``, ``" were"`` (keys without the space); a
    ``TokenizerError`` naming the tokenizer and the word when one is not a single token."""
    return {verb: single_token_id(tokenizer, " " + verb) for verb in ("is", "are", "was", "were")}
