import pytest

from mechjax.models.config import ConfigError, ModelConfig


@pytest.mark.parametrize("kwargs, fragment", [
    ({"d_model": 0}, "model.d_model=0"),
    ({"n_heads": -1}, "model.n_heads=-1"),
    ({"d_model": 130, "n_heads": 4}, "not divisible"),
    ({"act_fn": "tanh"}, "model.act_fn='tanh'"),
    ({"normalization": "rms"}, "model.normalization='rms'"),
    ({"dropout": 1.0}, "model.dropout=1.0"),
    ({"n_layers": 2, "mlp_layers": (True,)}, "one entry per layer"),
    ({"tied_unembed": True, "d_vocab": 10, "d_vocab_out": 5}, "tied_unembed"),
    ({"init": "xavier"}, "model.init='xavier'"),
])
def test_bad_values_are_named(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        ModelConfig(**kwargs)


def test_explicit_d_head_allows_any_head_count():
    cfg = ModelConfig(d_model=130, n_heads=4, d_head=32)
    assert cfg.head_dim == 32


def test_dict_round_trip_and_unknown_keys():
    cfg = ModelConfig(n_layers=3, mlp_layers=(False, True, True), frozen=("attn.W_OV",))
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="unknown model config keys \\['d_modle'\\]"):
        ModelConfig.from_dict({"d_modle": 3})


def test_frozen_matches_suffixes():
    cfg = ModelConfig(frozen=("attn.W_OV", "embed.W_E"))
    assert cfg.is_frozen("blocks.1.attn.W_OV") and cfg.is_frozen("embed.W_E")
    assert not cfg.is_frozen("blocks.1.attn.W_KQ")
