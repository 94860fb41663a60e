"""GPT-2-style tokenizers through the ``tokenizers`` library: load from a checkpoint folder, build
or train one for a self-trained model, save it where ``load_tokenizer`` (and ``transformers``)
read it back.

Every tokenizer here uses GPT-2's byte-level pre-tokenization: text is split into words that
carry their leading space (``" is"``) and mapped to printable byte characters, and the decoder
inverts that exactly. So ``decode(encode(text)) == text`` for any text whose words are in the
vocabulary, and a verb after a space is one token when ``" is"`` is in the vocabulary. The
word-level variant keeps that pre-tokenization and gives each whole pre-token one id.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Iterable, Sequence

import tokenizers
from tokenizers import decoders, models, pre_tokenizers, trainers

from mechjax.interop.files import CheckpointError

TOKENIZER_FILE = "tokenizer.json"
VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
END_OF_TEXT = "<|endoftext|>"
UNKNOWN = "<unk>"


class TokenizerError(CheckpointError):
    """A tokenizer that is missing, unreadable, or does not encode what a task needs."""


@dataclasses.dataclass(frozen=True, eq=False)
class Tokenizer:
    """A ``tokenizers.Tokenizer`` with a name (its folder, or how it was built) for messages."""

    backend: tokenizers.Tokenizer
    name: str

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; nothing is added (no BOS/EOS)."""
        return self.backend.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.backend.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``; special tokens are kept, so decoding inverts ``encode``."""
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=False)

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def save(self, folder: str) -> str:
        """Write ``folder/tokenizer.json`` (and, for a BPE model, GPT-2's ``vocab.json`` +
        ``merges.txt``); returns ``folder``."""
        os.makedirs(folder, exist_ok=True)
        self.backend.save(os.path.join(folder, TOKENIZER_FILE))
        if isinstance(self.backend.model, models.BPE):
            self.backend.model.save(folder)
        return folder


def _byte_level(backend: tokenizers.Tokenizer) -> tokenizers.Tokenizer:
    # add_prefix_space=False as in GPT-2: a prompt's first word has no space before it.
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    return backend


def load_tokenizer(folder: str) -> Tokenizer:
    """The tokenizer in ``folder``: ``tokenizer.json``, else GPT-2's ``vocab.json`` +
    ``merges.txt`` (byte-level BPE, with ``<|endoftext|>`` as a special token when present)."""
    if not os.path.isdir(folder):
        raise TokenizerError(f"tokenizer folder {folder!r} does not exist")
    path = os.path.join(folder, TOKENIZER_FILE)
    vocab, merges = os.path.join(folder, VOCAB_FILE), os.path.join(folder, MERGES_FILE)
    if os.path.isfile(path):
        try:
            return Tokenizer(tokenizers.Tokenizer.from_file(path), name=path)
        except Exception as err:  # the Rust side raises plain Exceptions
            raise TokenizerError(f"{path!r} is not a readable tokenizers file: {err}") from err
    if os.path.isfile(vocab) and os.path.isfile(merges):
        try:
            backend = _byte_level(tokenizers.Tokenizer(models.BPE.from_file(vocab, merges)))
        except Exception as err:
            raise TokenizerError(f"{vocab!r} + {merges!r} are not a readable BPE vocabulary: "
                                 f"{err}") from err
        if backend.token_to_id(END_OF_TEXT) is not None:
            # GPT-2 lists it in vocab.json as an ordinary entry; without this it would be split
            # into "<|", "endoftext", "|>".
            backend.add_special_tokens([tokenizers.AddedToken(END_OF_TEXT, special=True)])
        return Tokenizer(backend, name=folder)
    raise TokenizerError(f"tokenizer folder {folder!r} has neither {TOKENIZER_FILE} nor "
                         f"{VOCAB_FILE} + {MERGES_FILE}")


def pre_tokens(texts: Iterable[str]) -> list[str]:
    """GPT-2's byte-level pre-tokens (words with their leading space) of ``texts``, each once,
    in order of first appearance."""
    split = pre_tokenizers.ByteLevel(add_prefix_space=False)
    seen: dict[str, None] = {}
    for text in texts:
        for piece, _ in split.pre_tokenize_str(text):
            seen.setdefault(piece)
    return list(seen)


def build_word_level(texts: Iterable[str], special_tokens: Sequence[str] = (END_OF_TEXT, UNKNOWN),
                     name: str = "word-level") -> Tokenizer:
    """One id per distinct GPT-2 pre-token of ``texts`` (special tokens first, then in order of
    first appearance: deterministic, no training). Unseen words encode as ``<unk>``."""
    if UNKNOWN not in special_tokens:
        raise TokenizerError(f"special_tokens={tuple(special_tokens)!r} must include {UNKNOWN!r}")
    vocab = {token: i for i, token in enumerate(special_tokens)}
    for piece in pre_tokens(texts):
        vocab.setdefault(piece, len(vocab))
    backend = _byte_level(tokenizers.Tokenizer(models.WordLevel(vocab, unk_token=UNKNOWN)))
    backend.add_special_tokens([tokenizers.AddedToken(t, special=True) for t in special_tokens])
    return Tokenizer(backend, name=name)


def train_byte_level_bpe(texts: Iterable[str], vocab_size: int,
                         special_tokens: Sequence[str] = (END_OF_TEXT,),
                         name: str = "byte-level BPE") -> Tokenizer:
    """A GPT-2-style byte-level BPE trained on ``texts`` (every byte is in the alphabet, so any
    text encodes and round-trips)."""
    backend = _byte_level(tokenizers.Tokenizer(models.BPE()))
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    backend.train_from_iterator(list(texts), trainer=trainer)
    return Tokenizer(backend, name=name)


def single_token_id(tokenizer: Tokenizer, text: str) -> int:
    """The id of ``text`` when it encodes as exactly one token, else a ``TokenizerError`` naming
    the tokenizer, the text and its pieces."""
    ids = tokenizer.encode(text)
    unknown = tokenizer.token_to_id(UNKNOWN)
    if len(ids) != 1 or (unknown is not None and ids[0] == unknown):
        pieces = [tokenizer.backend.id_to_token(i) for i in ids]
        raise TokenizerError(f"tokenizer {tokenizer.name!r} encodes {text!r} as {len(ids)} "
                             f"token(s) {pieces}; it must be a single known token")
    return ids[0]
