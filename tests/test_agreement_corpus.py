"""The agreement corpus: grammatical sentences on the given triples only, fillers without slots,
a tokenizer that covers every prompt, rows and weights of the next-token task."""
import re

import numpy as np
import pytest

from mechjax.studies.agreement_generation import slots
from mechjax.interop import load_tokenizer
from mechjax.tasks import agreement as ag
from mechjax.tasks import agreement_corpus as corpus


@pytest.fixture(scope="module")
def split():
    return ag.split_combinations(0)


_SINGULAR = {**{w: w for w in (*ag.NOUNS, *ag.ATTRACTORS)},
             **{p: s for s, p in (*ag.NOUNS.items(), *ag.ATTRACTORS.items())}}
_HEADS = set(ag.NOUNS) | set(ag.NOUNS.values())


def _subject(text):
    """(head noun, the words between it and the attractor, attractor), nouns in the singular."""
    words = re.findall("[a-z]+", text.lower())
    i = next(k for k, w in enumerate(words) if w in _HEADS)
    j = next(k for k in range(i + 1, len(words)) if words[k] in _SINGULAR)
    return _SINGULAR[words[i]], " ".join(words[i + 1:j]), _SINGULAR[words[j]]


def test_agreement_sentences_agree_and_use_only_the_given_triples(split):
    texts = corpus.corpus_texts(3000, split.train, 0.25, seed=1)
    held_out = {(n, a, c) for n, a, c in split.test}
    n_filler = n_inner = 0
    for text in texts:
        found = slots(text)
        if not found:  # a filler: none of the grammar's nouns or verbs
            n_filler += 1
            assert not any(w in text.split() for w in ("is", "are", "was", "were"))
            continue
        assert len(found) == 1 and found[0][0] == found[0][1], text
        noun, middle, attractor = _subject(text)
        if middle not in ag.CONNECTORS:  # the inner relative clause replaces the connector
            assert re.fullmatch("that [a-z]+ the", middle), text
            assert any(c[:2] == (noun, attractor) for c in split.train), text
            n_inner += 1
            continue
        combo = (noun, attractor, middle)
        assert combo not in held_out, text
    assert n_inner > 0
    assert 0.2 < n_filler / len(texts) < 0.3
    # the attractor's number is independent of the head's: both pairings occur
    same = sum(("the keys" in t.lower() and " cabinets " in t) for t in texts)
    assert same > 0


def test_tokenizer_covers_every_prompt_and_roundtrips(tmp_path):
    tok = corpus.build_tokenizer()
    prompts = ag.make_prompts(0, 600, 600)
    unk = tok.token_to_id("<unk>")
    for p in prompts.train + prompts.test:
        ids = tok.encode(p.text)
        assert unk not in ids and tok.decode(ids) == p.text
    assert set(ag.verb_token_ids(tok)) == {"is", "are", "was", "were"}
    again = load_tokenizer(tok.save(str(tmp_path / "tok")))  # the GPT-2 tokenizer format
    assert again.encode(prompts.test[0].text) == tok.encode(prompts.test[0].text)


def test_rows_weights_and_the_task(split):
    tok = corpus.build_tokenizer()
    arrays = corpus.encode_corpus(["We waited today."], tok, n_ctx=8)
    eot = tok.token_to_id("<|endoftext|>")
    ids = tok.encode("We waited today.")
    assert arrays.tokens[0, 0] == eot and list(arrays.tokens[0, 1:len(ids) + 1]) == ids
    assert arrays.labels[0, len(ids)] == eot  # the closing token is predicted ...
    np.testing.assert_array_equal(arrays.weights[0], [1] * (len(ids) + 1)
                                  + [0] * (8 - len(ids) - 1))  # ... padding is not
    # without BOS the sentence starts the row; its first word is read, not predicted
    bare = corpus.encode_corpus(["We waited today."], tok, n_ctx=8, bos=[False])
    assert list(bare.tokens[0, :len(ids)]) == ids and bare.labels[0, len(ids) - 1] == eot
    np.testing.assert_array_equal(bare.weights[0], [1] * len(ids) + [0] * (8 - len(ids)))
    flags = corpus.bos_flags(4000, 0.5, seed=3)
    assert 0.45 < flags.mean() < 0.55 and (corpus.bos_flags(4000, 0.5, seed=3) == flags).all()
    assert corpus.bos_flags(10, 1.0, 0).all() and not corpus.bos_flags(10, 0.0, 0).any()
    with pytest.raises(ValueError, match="bos_fraction=1.5"):
        corpus.bos_flags(10, 1.5, 0)
    with pytest.raises(ValueError, match="needs n_ctx >= "):
        corpus.encode_corpus(["We waited today."], tok, n_ctx=3)
    with pytest.raises(ValueError, match="unknown"):
        corpus.encode_corpus(["Zebras waited."], tok, n_ctx=8)
    task = corpus.make_task(tok, split.train, split.test, 64, 16, 0.25, 8, 24, seed=0)
    assert task.readout is None and set(task.eval_pools) == {"train", "test"}
    import jax
    batch = task.sample(jax.random.PRNGKey(0), {})
    assert batch["tokens"].shape == batch["weights"].shape == (8, 24)
