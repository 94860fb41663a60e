"""Assign-and-Add vocabulary, sequence layout, sequence kinds and the authors' architecture."""
from __future__ import annotations

from mechjax.models.config import ModelConfig

# ---- vocabulary ---------------------------------------------------------------------------------
P = 59
PLUS, EQ, PAD = 59, 60, 61
VAR0 = 62
N_VARS = 12
VAR_NAMES = "abcdefghijkl"
D_VOCAB = VAR0 + N_VARS  # 74
SEQ_LEN, PREFIX_LEN, MAX_ASSIGN = 16, 12, 6
N_PAIRS = P * P  # 3481
POS_PLUS, POS_X, POS_Y, POS_EQ = 12, 13, 14, 15

# ---- sequence kinds -----------------------------------------------------------------------------
ZERO_VAR, LHS, RHS, TWO_VAR = 0, 1, 2, 3
KIND_NAMES = ("0var", "1var_lhs", "1var_rhs", "2var")
TRAIN_ROWS = (12.0, 10.0, 10.0, 10.0)  # rows per training pair: 0-var, LHS, RHS, 2-var


def model_config() -> ModelConfig:
    """The authors' architecture: 2 layers, 1 head, no layer-0 MLP, no biases/LN."""
    return ModelConfig(n_layers=2, d_model=128, n_heads=1, d_mlp=512, d_vocab=D_VOCAB,
                       d_vocab_out=P, n_ctx=SEQ_LEN, mlp_layers=(False, True))


def var_token(name: str) -> int:
    """Token id of variable ``name`` (``'a'`` -> 62)."""
    return VAR0 + VAR_NAMES.index(name)
