"""GPT-2-style tokenizers: both file layouts load and agree, every agreement prompt round-trips,
the word-level builder saves in a format the loader reads back, and bad folders are named."""
import json
import os

import numpy as np
import pytest

from mechjax.interop import (TokenizerError, build_word_level, gpt2_model_config, load_tokenizer,
                             save_gpt2, single_token_id, train_byte_level_bpe)
from mechjax.models.transformer import param_shapes
from mechjax.tasks import agreement


@pytest.fixture(scope="module")
def prompts():
    split = agreement.make_prompts(seed=0)
    return split.train + split.test


@pytest.fixture(scope="module")
def sentences(prompts):
    """The prompts completed with their verb: what a tokenizer for the task is trained on."""
    return [f"{p.text} {p.verb} here." for p in prompts]


@pytest.fixture(scope="module")
def bpe(sentences):
    return train_byte_level_bpe(sentences, vocab_size=400)


def test_bpe_from_tokenizer_json_and_from_vocab_merges_agree(bpe, prompts, tmp_path):
    bpe.save(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["merges.txt", "tokenizer.json", "vocab.json"]
    from_json = load_tokenizer(str(tmp_path))
    os.remove(tmp_path / "tokenizer.json")
    from_files = load_tokenizer(str(tmp_path))  # GPT-2's own layout
    texts = [p.text for p in prompts] + ["<|endoftext|>The keys near the desk are"]
    for text in texts:
        ids = bpe.encode(text)
        assert from_json.encode(text) == ids
        assert from_files.encode(text) == ids
        assert from_files.decode(ids) == text
    # <|endoftext|> is one special token on both paths, not "<|" "endoftext" "|>"
    assert from_files.encode("<|endoftext|>") == [bpe.token_to_id("<|endoftext|>")]
    assert from_files.vocab_size == bpe.vocab_size


def test_every_prompt_round_trips(bpe, prompts):
    for text in [p.text for p in prompts]:
        assert bpe.decode(bpe.encode(text)) == text


def test_the_four_verbs_are_single_tokens_of_the_trained_bpe(bpe):
    ids = agreement.verb_token_ids(bpe)
    assert sorted(ids) == ["are", "is", "was", "were"] and len(set(ids.values())) == 4
    assert all(bpe.decode([i]) == " " + verb for verb, i in ids.items())


def test_word_level_builder_round_trip_and_reload(sentences, prompts, tmp_path):
    words = build_word_level(sentences)
    for p in prompts:
        ids = words.encode(p.text)
        assert words.decode(ids) == p.text
        # one id per word: the space travels with the word, punctuation is its own token
        assert len(ids) == len(p.text.replace(",", " ,").split())
    words.save(str(tmp_path))
    assert os.listdir(tmp_path) == ["tokenizer.json"]
    again = load_tokenizer(str(tmp_path))
    assert all(again.encode(p.text) == words.encode(p.text) for p in prompts[:50])
    assert again.encode(" is") == words.encode(" is") and len(again.encode(" is")) == 1
    assert words.encode(" zebra") == [words.token_to_id("<unk>")]
    assert words.token_to_id("<|endoftext|>") == 0


def test_word_level_ids_are_deterministic(sentences):
    first, second = build_word_level(sentences), build_word_level(list(sentences))
    assert first.backend.get_vocab() == second.backend.get_vocab()


def test_tokenizer_saved_beside_a_checkpoint(sentences, tmp_path):
    words = build_word_level(sentences)
    cfg = gpt2_model_config(n_layers=1, d_model=16, n_heads=2, d_vocab=words.vocab_size, n_ctx=8)
    params = {k: np.zeros(shape, np.float32) for k, shape in param_shapes(cfg).items()}
    save_gpt2(str(tmp_path), cfg, params, tokenizer=words)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["eos_token_id"] == config["bos_token_id"] == 0
    assert load_tokenizer(str(tmp_path)).encode("The keys are") == words.encode("The keys are")


def test_transformers_reads_the_saved_tokenizer(bpe, prompts, tmp_path):
    transformers = pytest.importorskip(
        "transformers", reason="needs the torch extra (transformers): pip install -e \".[torch]\"")
    bpe.save(str(tmp_path))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"))
    assert all(fast.encode(p.text) == bpe.encode(p.text) for p in prompts[:100])


def test_errors_name_the_folder_or_the_word(tmp_path, bpe):
    with pytest.raises(TokenizerError, match="does not exist"):
        load_tokenizer(str(tmp_path / "nowhere"))
    with pytest.raises(TokenizerError, match="has neither tokenizer.json nor vocab.json"):
        load_tokenizer(str(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{\"not\": \"a tokenizer\"}")
    with pytest.raises(TokenizerError, match="is not a readable tokenizers file"):
        load_tokenizer(str(tmp_path))
    (tmp_path / "tokenizer.json").unlink()
    (tmp_path / "vocab.json").write_text("[]")
    (tmp_path / "merges.txt").write_text("")
    with pytest.raises(TokenizerError, match="are not a readable BPE vocabulary"):
        load_tokenizer(str(tmp_path))
    with pytest.raises(TokenizerError, match="tokenizer 'byte-level BPE' encodes ' hippopotamus' "
                                             "as [0-9]+ token"):
        single_token_id(bpe, " hippopotamus")
    with pytest.raises(TokenizerError, match="must include '<unk>'"):
        build_word_level(["a b"], special_tokens=("<|endoftext|>",))
