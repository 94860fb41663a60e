"""Checkpoints and tokenizers in other libraries' formats: GPT-2 folders as ``transformers`` writes
them, GPT-2-style tokenizers through ``tokenizers``."""
from mechjax.loaders.files import CheckpointError
from mechjax.loaders.gpt2 import GPT2FormatError, gpt2_model_config, load_gpt2, save_gpt2
from mechjax.loaders.tokenizer import (Tokenizer, TokenizerError, build_word_level, load_tokenizer,
                                       single_token_id, train_byte_level_bpe)

__all__ = ["CheckpointError", "GPT2FormatError", "Tokenizer", "TokenizerError",
           "build_word_level", "gpt2_model_config", "load_gpt2", "load_tokenizer", "save_gpt2",
           "single_token_id", "train_byte_level_bpe"]
