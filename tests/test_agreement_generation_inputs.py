"""What the generation-flipping measurement reads and judges: prompts without BOS by
default, and the first-slot judge on hand-made generated token rows decoded as the run decodes
them. No model is run: seconds."""
import numpy as np
import pytest

from experiments.ace_agreement import stages
from mechjax.studies import agreement_generation as ag_gen
from mechjax.interop.tokenizer import END_OF_TEXT
from mechjax.tasks import agreement as ag
from mechjax.tasks import agreement_corpus as corpus


@pytest.fixture(scope="module")
def setup():
    return corpus.build_tokenizer(), ag.make_prompts(seed=0, n_train=8, n_test=8)


def test_prompts_carry_no_bos_unless_asked(setup):
    tok, prompts = setup
    eot = tok.token_to_id(END_OF_TEXT)
    plain = stages.family_inputs(prompts, tok, 24, 4)
    with_bos = stages.family_inputs(prompts, tok, 24, 4, bos=True)
    for p, row, ln in zip(prompts.test, np.asarray(plain["test"].tokens), plain["test_lengths"]):
        ids = tok.encode(p.text)
        assert ln == len(ids) and list(row[:ln]) == ids
        assert eot not in row[:ln]  # no <|endoftext|> anywhere in the prompt
    assert (np.asarray(with_bos["test"].tokens)[:, 0] == eot).all()
    np.testing.assert_array_equal(with_bos["test_lengths"], plain["test_lengths"] + 1)
    np.testing.assert_array_equal(np.asarray(with_bos["test"].last),
                                  np.asarray(plain["test"].last) + 1)


def _rows(tok, prompts, tails, bos):
    """Token rows as ``generate`` leaves them: [BOS] prompt, generated tail, padding."""
    eot = tok.token_to_id(END_OF_TEXT)
    heads = [([eot] if bos else []) + tok.encode(p.text) for p in prompts]
    rows = [h + tok.encode(t) for h, t in zip(heads, tails)]
    out = np.full((len(rows), max(map(len, rows)) + 2), eot, np.int32)
    for r, row in zip(out, rows):
        r[:len(row)] = row
    return out, np.array([len(h) for h in heads])


@pytest.mark.parametrize("bos", [False, True])
def test_first_slot_judge_on_generated_token_rows(setup, bos):
    tok, _ = setup
    sing = ag.Prompt("The key near the cabinets", 0, "present", "key", "cabinets", "near the",
                     "base")
    plur = ag.Prompt("In the past, the keys to the cabinet", 1, "past", "keys", "cabinet",
                     "to the", "base")
    prompts = [sing, plur, sing, plur]
    # the verb right after the prompt flipped in rows 0 and 1, kept in row 2; row 3 has no verb
    # until a second sentence whose own head agrees
    tails = [" are here. The man is", " was ready.", " is here. The keys is",
             " ready. The men are"]
    tokens, lengths = _rows(tok, prompts, tails, bos)
    n_new = max(len(tok.encode(t)) for t in tails)
    texts = ag_gen.continuations(prompts, tokens, lengths, n_new, tok)
    assert texts[0].startswith("The key near the cabinets are here.")
    # the BOS is not in the judged text; the padding after a short tail decodes as <|endoftext|>
    assert texts[1].startswith("In the past, the keys to the cabinet was ready.<|endoftext|>")
    first = ag_gen.judge(texts, "first")
    assert first == {"n_texts": 4, "n_slots": 4, "agree": 0.5, "disagree": 0.5}  # 2, 3 agree
    # a continuation without any verb: no slot; over all prompts 2 of 5 flipped
    from experiments.ace_agreement.stages import generation_block
    judged = {"greedy": {rule: {k: ag_gen.judge(texts + ["The key near the cabinets ready."],
                                                rule) for k in ("clean", "pushed", "reflected")}
                         for rule in ag_gen.JUDGE_RULES}}
    block = generation_block(judged)
    assert block["flip_generation/greedy/fraction_flipped"] == 0.5
    assert block["flip_generation/greedy/fraction_of_prompts_flipped"] == pytest.approx(2 / 5)
    every = ag_gen.judge(texts, "all")
    assert every["n_slots"] == 6 and every["agree"] == pytest.approx(3 / 6)
