import os

import jax
import numpy as np
import pytest

from mechjax.models.config import ModelConfig
from mechjax.models.transformer import init_params
from mechjax.interop.weights import WeightsError, load_npz, read_npz, save_npz

ASSIGN_ADD = ModelConfig(n_layers=2, d_model=128, n_heads=1, d_mlp=512, d_vocab=74,
                         d_vocab_out=59, n_ctx=16, mlp_layers=(False, True))
SMALL = ModelConfig(n_layers=1, d_model=8, n_heads=2, d_mlp=16, d_vocab=10, n_ctx=4,
                    use_bias=True, normalization="pre")


def test_round_trip(tmp_path):
    params = init_params(jax.random.PRNGKey(0), SMALL)
    path = str(tmp_path / "w.npz")
    save_npz(params, path)
    loaded = load_npz(path, SMALL)
    assert set(loaded) == set(params)
    for k in params:
        np.testing.assert_array_equal(loaded[k], params[k])


def test_reference_checkpoint_loads_exactly(reference_dir):
    path = os.path.join(reference_dir, "final.npz")
    raw = read_npz(path)
    params = load_npz(path, ASSIGN_ADD)
    for k, v in params.items():
        np.testing.assert_array_equal(np.asarray(v), raw[k])
    dropped = set(raw) - set(params)
    assert "blocks.0.mlp.W_in" in dropped and "blocks.1.attn.b_Q" in dropped
    assert all(not np.any(raw[k]) for k in dropped)  # only all-zero arrays were dropped


def test_nonzero_extra_parameter_is_named(tmp_path):
    params = dict(init_params(jax.random.PRNGKey(0), SMALL))
    params["blocks.0.attn.b_X"] = np.ones(3)
    params["extra.zero"] = np.zeros(3)
    path = str(tmp_path / "w.npz")
    save_npz(params, path)
    with pytest.raises(WeightsError, match=r"non-zero parameters .*\['blocks.0.attn.b_X'\]"):
        load_npz(path, SMALL)


def test_missing_keys_and_shape_mismatches_are_named(tmp_path):
    params = dict(init_params(jax.random.PRNGKey(0), SMALL))
    del params["unembed.W_U"]
    params["embed.W_E"] = np.zeros((11, 8))
    path = str(tmp_path / "w.npz")
    save_npz(params, path)
    with pytest.raises(WeightsError) as err:
        load_npz(path, SMALL)
    assert "missing keys ['unembed.W_U']" in str(err.value)
    assert "embed.W_E: file (11, 8) vs config (10, 8)" in str(err.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(WeightsError, match="does not exist"):
        load_npz(str(tmp_path / "nope.npz"), SMALL)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(WeightsError, match="not a readable .npz"):
        load_npz(str(bad), SMALL)
