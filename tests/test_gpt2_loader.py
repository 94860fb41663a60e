"""GPT-2-format checkpoints: parity of mechjax's forward pass with ``transformers``' own
``GPT2LMHeadModel`` on random-weight checkpoints made offline, export back to a folder that
``transformers`` opens, the older file layouts, and the errors of bad folders and configs.

The parity tests need the torch extra (torch + transformers) and skip without it; the error
tests write their folders with mechjax itself and need neither.
"""
import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.models import hooks
from mechjax.models.config import ModelConfig
from mechjax.interop import (CheckpointError, GPT2FormatError, gpt2_model_config, load_gpt2,
                             save_gpt2)
from mechjax.interop.gpt2 import read_hf_config
from mechjax.models.transformer import apply, param_shapes

TOL = 1e-4
EXTRA_REASON = "needs the torch extra (torch and transformers): pip install -e \".[torch]\""

# Three small architectures covering every conversion path: several heads, vocabulary > 1000 and
# 4 layers (the main case); an untied lm_head with exact gelu, its own d_mlp and LN eps;
# relu with unscaled attention scores.
CHECKPOINTS = {
    "4layer_4head": dict(n_layer=4, n_head=4, n_embd=64, vocab_size=1200, n_positions=24),
    "untied_gelu": dict(n_layer=2, n_head=2, n_embd=48, vocab_size=97, n_positions=16,
                        n_inner=80, activation_function="gelu", layer_norm_epsilon=1e-6,
                        tie_word_embeddings=False),
    "relu_unscaled": dict(n_layer=1, n_head=3, n_embd=24, vocab_size=50, n_positions=8,
                          activation_function="relu", scale_attn_weights=False),
}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason=EXTRA_REASON)


@pytest.fixture(scope="module")
def transformers(torch):
    return pytest.importorskip("transformers", reason=EXTRA_REASON)


def random_gpt2(torch, transformers, seed, **config):
    """A ``GPT2LMHeadModel`` (eval, float32) with every parameter random: biases and LayerNorm
    gains too, so that no conversion error hides behind a zero or a one."""
    hf_config = transformers.GPT2Config(bos_token_id=0, eos_token_id=0, **config)
    model = transformers.GPT2LMHeadModel(hf_config).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator)
            p.copy_(1.0 + 0.1 * noise if name.endswith(("ln_1.weight", "ln_2.weight",
                                                        "ln_f.weight")) else 0.15 * noise)
    return model


@pytest.fixture(scope="module")
def checkpoints(torch, transformers, tmp_path_factory):
    """{name: (folder, model)} saved with ``save_pretrained`` (safetensors)."""
    out = {}
    for seed, (name, config) in enumerate(CHECKPOINTS.items()):
        model = random_gpt2(torch, transformers, seed, **config)
        folder = str(tmp_path_factory.mktemp(name))
        model.save_pretrained(folder)
        out[name] = (folder, model)
    return out


def numpy_params(cfg, seed=0):
    """Random parameters without jax (no per-op compiles: fast on 2 cores)."""
    rng = np.random.default_rng(seed)
    return {k: rng.normal(size=shape).astype(np.float32) for k, shape in param_shapes(cfg).items()}


def tokens_for(cfg, seed=0, batch=3):
    return np.random.default_rng(seed).integers(0, cfg.d_vocab, (batch, cfg.n_ctx)).astype(np.int32)


def hf_forward(torch, model, tokens):
    """Logits, ``output_hidden_states`` and every block's output (forward hooks)."""
    block_outputs = []
    handles = [b.register_forward_hook(
        lambda mod, args, out: block_outputs.append((out[0] if isinstance(out, tuple) else out)
                                                    .detach().numpy()))
        for b in model.transformer.h]
    with torch.no_grad():
        out = model(torch.from_numpy(tokens).long(), output_hidden_states=True)
    for handle in handles:
        handle.remove()
    return (out.logits.numpy(), [h.numpy() for h in out.hidden_states], block_outputs)


def max_dev(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


@pytest.mark.parametrize("name", list(CHECKPOINTS))
def test_logits_and_every_hidden_state_match_transformers(name, checkpoints, torch):
    folder, model = checkpoints[name]
    cfg, params = load_gpt2(folder)
    tokens = tokens_for(cfg)
    hf_logits, hf_hidden, hf_blocks = hf_forward(torch, model, tokens)
    logits, cache = hooks.run_with_cache(params, jnp.asarray(tokens), cfg)
    deviations = {"logits": max_dev(logits, hf_logits),
                  "apply": max_dev(apply(params, jnp.asarray(tokens), cfg), hf_logits)}
    # hidden_states[l] is block l's input for l < n_layers; the last one is after ln_f.
    for layer in range(cfg.n_layers):
        deviations[f"resid_pre.{layer}"] = max_dev(cache[f"blocks.{layer}.hook_resid_pre"],
                                                   hf_hidden[layer])
        deviations[f"resid_post.{layer}"] = max_dev(cache[f"blocks.{layer}.hook_resid_post"],
                                                    hf_blocks[layer])
    ln_final = cache["ln_final.hook_normalized"] * params["ln_final.w"] + params["ln_final.b"]
    deviations["ln_final"] = max_dev(ln_final, hf_hidden[cfg.n_layers])
    print(f"{name}: max |mechjax - transformers| {deviations}")
    assert len(hf_hidden) == cfg.n_layers + 1
    assert max(deviations.values()) < TOL, deviations
    assert float(np.abs(hf_logits).max()) > 0.1  # the comparison is not between two near-zeros


def test_config_of_the_main_checkpoint(checkpoints):
    cfg = read_hf_config(checkpoints["4layer_4head"][0])
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_mlp, cfg.d_vocab, cfg.n_ctx) == \
        (4, 4, 64, 256, 1200, 24)
    assert (cfg.normalization, cfg.act_fn, cfg.use_bias, cfg.tied_unembed, cfg.causal,
            cfg.has_unembed_bias) == ("pre", "gelu_new", True, True, True, False)
    untied = read_hf_config(checkpoints["untied_gelu"][0])
    assert (untied.tied_unembed, untied.act_fn, untied.d_mlp, untied.ln_eps) == \
        (False, "gelu", 80, 1e-6)
    assert read_hf_config(checkpoints["relu_unscaled"][0]).scale == 1.0


@pytest.mark.parametrize("name", list(CHECKPOINTS))
def test_exported_folder_reopened_by_transformers(name, checkpoints, torch, transformers,
                                                  tmp_path):
    folder, model = checkpoints[name]
    cfg, params = load_gpt2(folder)
    save_gpt2(str(tmp_path / "export"), cfg, params)
    reopened = transformers.GPT2LMHeadModel.from_pretrained(str(tmp_path / "export")).eval()
    tokens = tokens_for(cfg, seed=1)
    with torch.no_grad():
        original = model(torch.from_numpy(tokens).long()).logits.numpy()
        again = reopened(torch.from_numpy(tokens).long()).logits.numpy()
    deviation = max_dev(original, again)
    print(f"{name}: exported and reopened, max logit deviation {deviation}")
    assert deviation < TOL
    # and mechjax reads its own export back exactly
    cfg2, params2 = load_gpt2(str(tmp_path / "export"))
    assert cfg2 == cfg
    assert all(np.array_equal(params[k], params2[k]) for k in params)


@pytest.mark.parametrize("use_bias", [True, False])
def test_mechjax_initialised_model_exported_to_transformers(use_bias, torch, transformers,
                                                            tmp_path):
    """A model in mechjax's own layout (as mechjax trains it) opens in transformers; a bias-free
    model is written with zero biases, the same function."""
    cfg = gpt2_model_config(n_layers=2, d_model=32, n_heads=4, d_vocab=40, n_ctx=10)
    if not use_bias:
        cfg = ModelConfig(**{**cfg.to_dict(), "use_bias": False})
    params = {k: 0.3 * v for k, v in numpy_params(cfg, seed=3).items()}
    save_gpt2(str(tmp_path), cfg, params)
    model = transformers.GPT2LMHeadModel.from_pretrained(str(tmp_path)).eval()
    tokens = tokens_for(cfg)
    with torch.no_grad():
        hf_logits = model(torch.from_numpy(tokens).long()).logits.numpy()
    deviation = max_dev(apply(params, jnp.asarray(tokens), cfg), hf_logits)
    print(f"use_bias={use_bias}: mechjax-initialised export, max logit deviation {deviation}")
    assert deviation < TOL


def test_pytorch_model_bin_in_the_original_hub_layout(checkpoints, torch, tmp_path):
    """Older checkpoints: ``pytorch_model.bin`` with unprefixed keys (``h.0.attn...``) and the
    causal-mask buffers ``attn.bias`` / ``attn.masked_bias``."""
    folder, model = checkpoints["4layer_4head"]
    state = {k.removeprefix("transformer."): v for k, v in model.state_dict().items()
             if k != "lm_head.weight"}
    n_pos = CHECKPOINTS["4layer_4head"]["n_positions"]
    for layer in range(CHECKPOINTS["4layer_4head"]["n_layer"]):
        mask = torch.tril(torch.ones(n_pos, n_pos)).view(1, 1, n_pos, n_pos)
        state[f"h.{layer}.attn.bias"] = mask
        state[f"h.{layer}.attn.masked_bias"] = torch.tensor(-1e4)
    torch.save(state, str(tmp_path / "pytorch_model.bin"))
    (tmp_path / "config.json").write_text(open(os.path.join(folder, "config.json")).read())
    cfg, params = load_gpt2(str(tmp_path))
    _, expected = load_gpt2(folder)
    assert all(np.array_equal(params[k], expected[k]) for k in expected)


def test_sharded_safetensors(checkpoints, tmp_path):
    _, model = checkpoints["4layer_4head"]
    model.save_pretrained(str(tmp_path), max_shard_size="100KB")
    assert os.path.exists(tmp_path / "model.safetensors.index.json")
    _, params = load_gpt2(str(tmp_path))
    _, expected = load_gpt2(checkpoints["4layer_4head"][0])
    assert all(np.array_equal(params[k], expected[k]) for k in expected)


# ---- errors (no torch needed) -------------------------------------------------------------------
@pytest.fixture
def small_folder(tmp_path):
    """A valid GPT-2 folder written by mechjax alone."""
    cfg = gpt2_model_config(n_layers=1, d_model=16, n_heads=2, d_vocab=20, n_ctx=6)
    save_gpt2(str(tmp_path / "ckpt"), cfg, numpy_params(cfg))
    return tmp_path / "ckpt"


def edit_config(folder, **changes):
    values = json.loads((folder / "config.json").read_text())
    values.update(changes)
    (folder / "config.json").write_text(json.dumps(values))


def test_missing_folder_and_missing_weights(tmp_path, small_folder):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_gpt2(str(tmp_path / "nowhere"))
    os.remove(small_folder / "model.safetensors")
    with pytest.raises(CheckpointError, match="has no weights file; expected one of"):
        load_gpt2(str(small_folder))
    os.remove(small_folder / "config.json")
    with pytest.raises(CheckpointError, match="config.json' does not exist"):
        load_gpt2(str(small_folder))


def test_malformed_config_json(small_folder):
    (small_folder / "config.json").write_text("{\"model_type\": \"gpt2\",")
    with pytest.raises(CheckpointError, match="is not valid JSON"):
        load_gpt2(str(small_folder))
    (small_folder / "config.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="holds a JSON list"):
        load_gpt2(str(small_folder))


@pytest.mark.parametrize("changes, message", [
    ({"model_type": "llama"}, "model_type='llama'; only 'gpt2'"),
    ({"activation_function": "swish"}, "activation_function='swish'; supported: \\['gelu'"),
    ({"n_embd": "16"}, "n_embd='16'; must be a positive integer"),
    ({"n_head": 3}, "n_embd=16 is not divisible by n_head=3"),
    ({"layer_norm_epsilon": -1}, "layer_norm_epsilon=-1"),
    ({"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx=True"),
])
def test_config_json_that_mechjax_cannot_load(small_folder, changes, message):
    edit_config(small_folder, **changes)
    with pytest.raises(GPT2FormatError, match=message):
        load_gpt2(str(small_folder))


def test_weights_that_do_not_fit_the_config(small_folder):
    edit_config(small_folder, n_inner=32)  # the file's MLP is 4 * 16 = 64 wide
    with pytest.raises(GPT2FormatError, match=r"h.0.mlp.c_fc.weight: \(16, 64\), config.json "
                                              r"implies \(16, 32\)"):
        load_gpt2(str(small_folder))
    edit_config(small_folder, n_inner=None, n_layer=2)
    with pytest.raises(GPT2FormatError, match=r"missing tensors \['h.1.attn.c_attn.bias'"):
        load_gpt2(str(small_folder))


def test_corrupt_safetensors(small_folder):
    (small_folder / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="is not a readable safetensors file"):
        load_gpt2(str(small_folder))


@pytest.mark.parametrize("changes, message", [
    ({"normalization": "post"}, "normalization='post' \\(GPT-2 needs 'pre'\\)"),
    ({"causal": False}, "causal=False"),
    ({"mlp_layers": (False,)}, "GPT-2 has an MLP in every layer"),
    ({"unembed_bias": True}, "unembedding bias"),
    ({"d_head": 4}, "d_head \\* n_heads == d_model"),
    ({"attn_scale": 3.0}, "attn_scale=3.0"),
])
def test_save_refuses_models_gpt2_cannot_express(tmp_path, changes, message):
    cfg = gpt2_model_config(n_layers=1, d_model=16, n_heads=2, d_vocab=20, n_ctx=6)
    cfg = ModelConfig(**{**cfg.to_dict(), **changes})
    params = numpy_params(cfg)
    with pytest.raises(GPT2FormatError, match="not GPT-2-compatible: .*" + message):
        save_gpt2(str(tmp_path / "out"), cfg, params)
    assert not os.path.exists(tmp_path / "out")
