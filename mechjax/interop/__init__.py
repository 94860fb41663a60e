"""Weights, checkpoints and tokenizers in other libraries' formats.

* ``weights``   -- TransformerLens-layout state dicts as ``.npz`` files: save, load, validate
* ``tl_export`` -- one model as a TransformerLens model (``HookedTransformer`` on 3.x,
  ``TransformerBridge`` on 4.x; torch extra to load), and TransformerLens weights back
* ``gpt2``, ``gpt2_config``, ``files`` -- GPT-2 folders as ``transformers`` writes them, both ways
* ``tokenizer`` -- GPT-2-style tokenizers through ``tokenizers``
"""
from mechjax.interop import tl_export, weights
from mechjax.interop.files import CheckpointError
from mechjax.interop.gpt2 import GPT2FormatError, gpt2_model_config, load_gpt2, save_gpt2
from mechjax.interop.tokenizer import (Tokenizer, TokenizerError, build_word_level, load_tokenizer,
                                       single_token_id, train_byte_level_bpe)
from mechjax.interop.weights import WeightsError, load_npz, save_npz

__all__ = ["CheckpointError", "GPT2FormatError", "Tokenizer", "TokenizerError", "WeightsError",
           "build_word_level", "gpt2_model_config", "load_gpt2", "load_npz", "load_tokenizer",
           "save_gpt2", "save_npz", "single_token_id", "tl_export", "train_byte_level_bpe",
           "weights"]
