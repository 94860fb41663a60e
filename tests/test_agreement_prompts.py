"""Agreement prompts (ACE paper): counts, balance, grammar of each template, determinism, held-out
combinations, tokenization and the verb ids."""
import random
import re

import numpy as np
import pytest

from mechjax.interop import TokenizerError, build_word_level, train_byte_level_bpe
from mechjax.tasks import agreement as ag


@pytest.fixture(scope="module")
def split():
    return ag.make_prompts(seed=0)


def test_counts_balance_and_no_text_in_both_halves(split):
    assert len(split.train) == len(split.test) == 600
    for half in (split.train, split.test):
        assert sum(p.label for p in half) == 300  # exactly half plural heads
        assert {p.template for p in half} == set(ag.TEMPLATES)
        assert {p.tense for p in half} == set(ag.TENSES)
        assert {p.connector for p in half} == set(ag.CONNECTORS)
    texts = [p.text for p in split.train + split.test]
    assert len(set(texts)) == 1200


def test_head_and_attractor_have_opposite_number(split):
    for p in split.train + split.test:
        noun, attractor, _ = p.combination
        if p.label:
            assert (p.noun, p.attractor) == (ag.NOUNS[noun], attractor)
        else:
            assert (p.noun, p.attractor) == (noun, ag.ATTRACTORS[attractor])
        middle = {"there": p.connector, "relative": "that [a-z]+ the"}.get(p.template,
                                                                        p.connector)
        assert re.search(f"{p.noun} {middle} {p.attractor}", p.text)  # the head comes first
        assert p.verb == {("present", 0): "is", ("present", 1): "are", ("past", 0): "was",
                          ("past", 1): "were"}[(p.tense, p.label)]


# every prompt matches its template exactly; the verb slot follows the last character
_PHRASE = r"[Tt]he (\w+) (?:{}) (\w+)".format("|".join(ag.CONNECTORS))
_PATTERNS = {
    "base": "{}",
    "front_pad": r"(?:{}) {{}}".format("|".join(map(re.escape, ag.FRONT_PADS))),
    "back_pad": r"{{}}(?:{})".format("|".join(map(re.escape, ag.BACK_PADS))),
    "there": r"There (\w+) (?:{}) (\w+)".format("|".join(ag.CONNECTORS)),
    "relative": r"[Tt]he (\w+) (?:{}) (\w+)".format("|".join(ag.INNER_RELATIVES)),
}


def test_each_template_wording_and_the_past_prefix(split):
    for p in split.train + split.test:
        text = p.text
        if p.tense == "past":  # the prefix takes the capital letter
            assert text.startswith(ag.PAST_PREFIX + " ") and text[len(ag.PAST_PREFIX) + 1].islower()
            text = text[len(ag.PAST_PREFIX) + 1:]
            text = text[0].upper() + text[1:]
        else:
            assert "past" not in text
        assert re.fullmatch(_PATTERNS[p.template].format(_PHRASE), text), (p.template, p.text)
        assert p.text[0].isupper() and not p.text.endswith(" ")


def test_render_exact_cases():
    rng = random.Random(0)
    assert ag.render("keys", "cabinet", "to the", "base", "present", rng) == \
        "The keys to the cabinet"
    # the ACE paper's "There H C A" and the authors' inner relative clause, and the older wordings
    assert ag.render("man", "desks", "next to the", "there", "past", rng) == \
        "In the past, there man next to the desks"
    assert ag.render("man", "desks", "next to the", "there", "present", rng,
                     ag.Wording(there="article")) == "There the man next to the desks"
    assert ag.render("man", "desks", "next to the", "there", "present", rng,
                     ag.Wording(there="over_there")) == "Over there, the man next to the desks"
    assert re.fullmatch("The keys that (guarded|surrounded|hid) the box", ag.render(
        "keys", "box", "of the", "relative", "present", rng))
    assert re.fullmatch("The keys of the box that [a-z ]+", ag.render(
        "keys", "box", "of the", "relative", "present", rng, ag.Wording(relative="after_attractor")))
    with pytest.raises(ValueError, match="there='here': allowed"):
        ag.Wording(there="here")
    with pytest.raises(ValueError, match="relative='inner': allowed"):
        ag.Wording(relative="inner")
    text = ag.render("mice", "box", "of the", "front_pad", "past", rng)
    assert text.startswith("In the past, ") and text.endswith(", the mice of the box")
    with pytest.raises(ValueError, match="template='question': allowed"):
        ag.render("key", "box", "of the", "question", "present", rng)


def test_seeded(split):
    again = ag.make_prompts(seed=0)
    assert again == split
    assert ag.make_prompts(seed=1).train != split.train


def test_heldout_combinations():
    combos = ag.split_combinations(seed=0)
    assert len(combos.train) + len(combos.test) == 9 * 9 * 6
    assert not set(combos.train) & set(combos.test)
    assert ag.split_combinations(seed=0) == combos
    assert ag.split_combinations(seed=1) != combos
    for position, words in enumerate((ag.NOUNS, ag.ATTRACTORS, ag.CONNECTORS)):
        # every word alone is seen in training and tested
        assert {c[position] for c in combos.train} == set(words)
        assert {c[position] for c in combos.test} == set(words)
    prompts = ag.make_prompts(seed=0, heldout=combos)
    assert all(p.combination in set(combos.train) for p in prompts.train)
    assert all(p.combination in set(combos.test) for p in prompts.test)
    assert sum(p.label for p in prompts.test) == 300
    small = ag.split_combinations(seed=0, test_fraction=0.1)
    assert len(small.test) == round(0.1 * 486)
    with pytest.raises(ValueError, match="test_fraction=1.0"):
        ag.split_combinations(test_fraction=1.0)


def test_too_few_combinations_is_an_error():
    with pytest.raises(ValueError, match="could not draw 600 distinct prompts from 1 "):
        ag.generate(600, random.Random(0), [("key", "box", "of the")])


@pytest.fixture(scope="module")
def words(split):
    return build_word_level([f"{p.text} {p.verb}" for p in split.train + split.test])


def test_tokenize_pads_right_and_points_at_the_last_token(split, words):
    prompts = split.test[:20]
    batch = ag.tokenize(prompts, words, prefix_ids=[0])
    assert batch.tokens.dtype == np.int32 and batch.tokens.shape == (20, batch.lengths.max())
    for row, p, length, last in zip(batch.tokens, prompts, batch.lengths, batch.last):
        ids = words.encode(p.text)
        assert length == len(ids) + 1 and last == length - 1
        assert list(row[:length]) == [0] + ids
        assert (row[length:] == 0).all()  # padded with <|endoftext|> (id 0)
        assert row[last] == ids[-1]
    assert list(batch.labels) == [p.label for p in prompts]


def test_prompt_longer_than_n_ctx_is_refused(split, words):
    longest = max(split.train, key=lambda p: len(words.encode(p.text)))
    n = len(words.encode(longest.text))
    ag.tokenize(split.train, words, n_ctx=n)
    with pytest.raises(ValueError, match=f"is {n} tokens with tokenizer 'word-level'; the "
                                         f"model's n_ctx is {n - 1}"):
        ag.tokenize(split.train, words, n_ctx=n - 1)


def test_verb_token_ids(words):
    ids = ag.verb_token_ids(words)
    assert {words.decode([i]) for i in ids.values()} == {" is", " are", " was", " were"}
    # a tokenizer trained without the verbs cannot encode them as one token each
    tiny = train_byte_level_bpe(["The key to the cabinet"] * 5, vocab_size=270, name="tiny-bpe")
    with pytest.raises(TokenizerError, match="tokenizer 'tiny-bpe' encodes ' is' as [0-9]+ "
                                             "token"):
        ag.verb_token_ids(tiny)
    no_were = build_word_level(["a is are was"], name="no-were")
    with pytest.raises(TokenizerError, match="tokenizer 'no-were' encodes ' were' as 1 token.*"
                                             "<unk>.*single known token"):
        ag.verb_token_ids(no_were)
