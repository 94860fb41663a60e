"""Export to TransformerLens: the model built from the exported files by the installed
TransformerLens (a ``HookedTransformer`` on 3.x, a ``TransformerBridge`` on 4.x) computes the
same logits and activations as mechjax, and edits at its hook points act as mechjax's; its
weights load back into mechjax (loading needs the torch extra, writing does not)."""
import dataclasses
import importlib.metadata
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import require_reference
from mechjax.models import hooks
from mechjax.sweeps import runs
from mechjax.interop import tl_export
from mechjax.interop.weights import WeightsError
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import apply, init_params
from mechjax.tasks import assign_add as aa

try:
    import torch
    import transformer_lens  # noqa: F401
    TL_MAJOR = int(importlib.metadata.version("transformer-lens").split(".")[0])
except ImportError:
    TL_MAJOR = 0
needs_tl = pytest.mark.skipif(not TL_MAJOR, reason="torch / transformer_lens not installed "
                                                   "(pip install -e \".[torch]\")")
needs_tl3 = pytest.mark.skipif(TL_MAJOR != 3, reason="HookedTransformer is TransformerLens 3.x "
                               f"(installed: {TL_MAJOR or 'none'}); 4.x removed it")
needs_tl4 = pytest.mark.skipif(TL_MAJOR < 4, reason="TransformerBridge.boot_native is "
                               f"TransformerLens 4.x (installed: {TL_MAJOR or 'none'})")

# hook points compared; mechjax and TransformerLens share the names
HOOKS = ("hook_embed", "blocks.0.hook_resid_pre", "blocks.0.attn.hook_q",
         "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z", "blocks.0.hook_attn_out",
         "blocks.0.hook_resid_mid", "blocks.0.hook_resid_post")


def max_diff(a, b):
    """Largest |a - b|, with equal infinities (masked scores) counting as equal."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape and np.array_equal(np.isinf(a), np.isinf(b))
    finite = np.isfinite(a)
    return float(np.abs(a[finite] - b[finite]).max(initial=0.0))


def assert_same_model(params, cfg, tokens, folder, extra_hooks=()):
    """Logits and cached activations of the exported TransformerLens model vs mechjax; prints
    the largest differences (``pytest -s``)."""
    model = tl_export.load(folder)
    assert type(model).__name__ == ("TransformerBridge" if TL_MAJOR >= 4 else "HookedTransformer")
    with torch.no_grad():
        tl_logits, cache = model.run_with_cache(torch.from_numpy(np.asarray(tokens)))
    logits, ours = hooks.run_with_cache(params, jnp.asarray(tokens), cfg)
    diffs = {"logits": max_diff(tl_logits.numpy(), logits),
             "apply": max_diff(tl_logits.numpy(), apply(params, jnp.asarray(tokens), cfg))}
    for name in HOOKS + tuple(extra_hooks):
        assert name in ours and name in cache, name
        diffs[name] = max_diff(cache[name].numpy(), ours[name])
    print(f"\nTransformerLens {importlib.metadata.version('transformer-lens')} vs mechjax, "
          f"max |diff| over {len(tokens)} sequences: " +
          ", ".join(f"{k} {v:.2e}" for k, v in diffs.items()))
    bad = {k: v for k, v in diffs.items() if v > 1e-4}
    assert not bad, bad


@needs_tl
def test_trained_quickstart_seed_matches_transformer_lens(quickstart_run, tmp_path):
    run = runs.open(quickstart_run)
    step = run.steps_saved[-1]
    folder = run.export_tl(seed=3, step=step, path=str(tmp_path / "tl"))
    assert sorted(os.listdir(folder)) == ["hooked_transformer_config.json",
                                          "state_dict.safetensors"]
    p = run.model_cfg.d_vocab
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    tokens = np.stack([a.ravel(), b.ravel()], 1).astype(np.int64)  # every pair
    params = {k: jnp.asarray(v) for k, v in run.params(seed=3, step=step).items()}
    assert_same_model(params, run.model_cfg, tokens, folder,
                      ("blocks.0.mlp.hook_pre", "blocks.0.mlp.hook_post", "blocks.0.hook_mlp_out",
                       "blocks.0.attn.hook_attn_scores", "blocks.0.attn.hook_k",
                       "blocks.0.attn.hook_v"))
    # the exported seed is seed 3's own model, not another seed's
    other = {k: jnp.asarray(v) for k, v in run.params(seed=4, step=step).items()}
    with torch.no_grad():
        tl_logits = tl_export.load(folder)(torch.from_numpy(tokens)).numpy()
    assert np.abs(tl_logits - np.asarray(apply(other, jnp.asarray(tokens), run.model_cfg))).max() > 1e-2


@needs_tl
def test_assign_add_reference_weights_match_transformer_lens(tmp_path):
    path = os.path.join(require_reference(), "final.npz")
    from mechjax.interop.weights import load_npz
    cfg = aa.model_config()  # 2 layers, no layer-0 MLP, no biases: exported as exact zeros
    params = load_npz(path, cfg)
    folder = tl_export.write(params, cfg, str(tmp_path / "tl"))
    task = aa.make_task(1)
    batch = task.eval_pools["2var_heldout"](jax.random.PRNGKey(0), task.params_with_defaults())
    tokens = np.asarray(batch["tokens"])[:64]
    assert_same_model(params, cfg, tokens.astype(np.int64), folder,
                      ("blocks.1.attn.hook_pattern", "blocks.1.mlp.hook_post",
                       "blocks.1.hook_resid_post"))


def test_configs_transformer_lens_cannot_express_are_refused():
    with pytest.raises(tl_export.ExportError, match="normalization='post'"):
        tl_export.hooked_transformer_config(ModelConfig(normalization="post"))
    with pytest.raises(tl_export.ExportError, match="merged_kq"):
        tl_export.hooked_transformer_config(ModelConfig(merged_kq=True))


def test_state_dict_fills_what_the_config_lacks_with_zeros():
    """No bias, no positions, tied unembedding, a layer without MLP: every TransformerLens
    parameter is present; the absent ones are zero and W_U is W_E transposed."""
    cfg = ModelConfig(n_layers=2, d_model=8, n_heads=2, d_mlp=16, d_vocab=5, n_ctx=3,
                      positional_embedding=False, tied_unembed=True, mlp_layers=(False, True))
    params = init_params(jax.random.PRNGKey(0), cfg)
    sd = tl_export.tl_state_dict(params, cfg)
    assert not np.any(sd["pos_embed.W_pos"]) and not np.any(sd["blocks.0.mlp.W_in"])
    assert not np.any(sd["blocks.1.attn.b_Q"]) and sd["blocks.1.mlp.W_in"].shape == (8, 16)
    np.testing.assert_array_equal(sd["unembed.W_U"], np.asarray(params["embed.W_E"]).T)
    np.testing.assert_array_equal(sd["blocks.1.mlp.W_in"], np.asarray(params["blocks.1.mlp.W_in"]))
    assert tl_export.hooked_transformer_config(cfg)["attention_dir"] == "causal"


def perturbed_model(cfg):
    """A model of ``cfg`` with every parameter (LayerNorm weights and zero biases included)
    moved off its initial value, so that no hook point sees a degenerate activation."""
    params = init_params(jax.random.PRNGKey(0), cfg)
    return {k: v + 0.1 * jax.random.normal(jax.random.PRNGKey(i), v.shape)
            for i, (k, v) in enumerate(sorted(params.items()))}


# LayerNorm, biases, causal, one layer without MLP, attention not scaled by sqrt(d_head)
EDIT_CFG = ModelConfig(n_layers=2, d_model=16, n_heads=2, d_mlp=32, d_vocab=7, n_ctx=4,
                       normalization="pre", use_bias=True, mlp_layers=(False, True),
                       attn_scale=1.0)


@needs_tl
def test_edits_at_every_hook_point_act_as_in_mechjax(tmp_path):
    """The same edit at each hook point both models have gives the same logits: an edit of
    the scores re-weights the pattern, an edit of resid_mid moves the residual stream."""
    params = perturbed_model(EDIT_CFG)
    model = tl_export.load(tl_export.write(params, EDIT_CFG, str(tmp_path / "tl")))
    tokens = np.random.RandomState(0).randint(0, 7, (6, 4))
    with torch.no_grad():
        base, cache = model.run_with_cache(torch.from_numpy(tokens))
    _, ours = hooks.run_with_cache(params, jnp.asarray(tokens), EDIT_CFG)
    # hook_pos_embed is [p, d] in mechjax, [b, p, d] in TransformerLens: compared as edits only
    shared = sorted(set(ours) & set(cache))
    assert shared == sorted(ours)  # every mechjax hook point exists in TransformerLens
    worst = {}
    for name in shared:
        if name != "hook_pos_embed":
            worst[name + " (read)"] = max_diff(cache[name].numpy(), ours[name])
        with torch.no_grad():
            theirs = model.run_with_hooks(torch.from_numpy(tokens),
                                          fwd_hooks=[(name, lambda x, hook: x * 0.5 + 0.25)])
        edited, _ = hooks.run_with_hooks(params, jnp.asarray(tokens), EDIT_CFG,
                                         {name: lambda x: x * 0.5 + 0.25})
        assert max_diff(edited, base.numpy()) > 1e-5, name  # the edit changes the output
        worst[name] = max_diff(theirs.numpy(), edited)
    print(f"\nTransformerLens {importlib.metadata.version('transformer-lens')}: {len(shared)} "
          f"hook points, largest read difference {max(v for k, v in worst.items() if 'read' in k):.2e}, "
          f"largest edited-logit difference {max(v for k, v in worst.items() if 'read' not in k):.2e}")
    bad = {k: v for k, v in worst.items() if v > 1e-4}
    assert not bad, bad


@needs_tl
def test_weights_round_trip_through_transformer_lens(tmp_path):
    params = perturbed_model(EDIT_CFG)
    model = tl_export.load(tl_export.write(params, EDIT_CFG, str(tmp_path / "tl")))
    back = tl_export.params_from_tl(model, EDIT_CFG)
    assert sorted(back) == sorted(params)
    for k in params:
        np.testing.assert_array_equal(np.asarray(back[k]), np.asarray(params[k]), err_msg=k)
    # the layer-0 MLP that TransformerLens holds as zeros loads as zeros; a deeper model is refused
    zero_mlp = tl_export.params_from_tl(model, dataclasses.replace(EDIT_CFG, mlp_layers=None))
    assert not np.any(np.asarray(zero_mlp["blocks.0.mlp.W_in"]))
    with pytest.raises(WeightsError, match="missing keys"):
        tl_export.params_from_tl(model, dataclasses.replace(EDIT_CFG, n_layers=3,
                                                            mlp_layers=None))


def tl_native_config():
    """A small TransformerLens config, as a user would write it for either version."""
    return dict(n_layers=2, d_model=16, n_heads=4, d_head=4, d_mlp=32, d_vocab=11, n_ctx=5,
                act_fn="gelu", normalization_type="LN", attention_dir="causal",
                default_prepend_bos=False)


def assert_mechjax_computes(model, tokens):
    cfg = tl_export.model_config_from_tl(model.cfg)
    params = tl_export.params_from_tl(model)
    with torch.no_grad():
        theirs = model(torch.from_numpy(tokens)).numpy()
    diff = max_diff(theirs, apply(params, jnp.asarray(tokens), cfg))
    print(f"\n{type(model).__name__} weights in mechjax: max |logit diff| {diff:.2e}")
    assert diff < 1e-4


@needs_tl4
def test_a_transformer_lens_4_bridge_loads_into_mechjax():
    from transformer_lens import TransformerBridge
    from transformer_lens.config import TransformerBridgeConfig
    bridge = TransformerBridge.boot_native(
        TransformerBridgeConfig.from_dict({**tl_native_config(), "seed": 1, "device": "cpu"}),
        device="cpu")
    with torch.no_grad():  # the native init leaves biases at zero; make them count
        for p in bridge.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    assert_mechjax_computes(bridge.eval(), np.random.RandomState(1).randint(0, 11, (4, 5)))


@needs_tl3
def test_a_transformer_lens_3_hooked_transformer_loads_into_mechjax():
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    torch.manual_seed(1)
    model = HookedTransformer(HookedTransformerConfig(**tl_native_config(), seed=1, device="cpu"))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape))
    assert_mechjax_computes(model.eval(), np.random.RandomState(1).randint(0, 11, (4, 5)))


def test_write_needs_no_torch(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # as if not installed
    params = perturbed_model(EDIT_CFG)
    folder = tl_export.write(params, EDIT_CFG, str(tmp_path / "tl"))
    assert sorted(os.listdir(folder)) == ["hooked_transformer_config.json",
                                          "state_dict.safetensors"]
    state = tl_export.read_state(folder)
    expected = tl_export.tl_state_dict(params, EDIT_CFG)
    assert sorted(state) == sorted(expected)
    for k, v in expected.items():
        np.testing.assert_array_equal(state[k], v, err_msg=k)


@needs_tl
def test_a_folder_from_torch_save_still_loads(tmp_path):
    """Earlier exports wrote state_dict.pt with torch.save; they load as before, and a new
    export into the same folder replaces it."""
    params = perturbed_model(EDIT_CFG)
    folder = str(tmp_path / "tl")
    tl_export.write(params, EDIT_CFG, folder)
    state = tl_export.read_state(folder)
    os.remove(os.path.join(folder, tl_export.STATE_FILE))
    torch.save({k: torch.from_numpy(v) for k, v in state.items()},
               os.path.join(folder, tl_export.LEGACY_STATE_FILE))
    tokens = np.random.RandomState(2).randint(0, 7, (3, 4))
    assert_same_model(params, EDIT_CFG, tokens, folder, ("blocks.1.ln2.hook_normalized",))
    tl_export.write(params, EDIT_CFG, folder)
    assert tl_export.LEGACY_STATE_FILE not in os.listdir(folder)
