"""Export to TransformerLens: a real ``HookedTransformer`` built from the exported files
computes the same logits and activations as mechjax (needs the torch extra)."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import require_reference
from mechjax.models import hooks
from mechjax.sweeps import runs
from mechjax.interop import tl_export
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import apply, init_params
from mechjax.tasks import assign_add as aa

try:
    import torch
    import transformer_lens  # noqa: F401
    HAVE_TL = True
except ImportError:
    HAVE_TL = False
needs_tl = pytest.mark.skipif(not HAVE_TL, reason="torch / transformer_lens not installed "
                                                    "(pip install -e \".[torch]\")")

# hook points compared; mechjax and TransformerLens share the names
HOOKS = ("hook_embed", "blocks.0.hook_resid_pre", "blocks.0.attn.hook_q",
         "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z", "blocks.0.hook_attn_out",
         "blocks.0.hook_resid_mid", "blocks.0.hook_resid_post")


def assert_same_model(params, cfg, tokens, folder, extra_hooks=()):
    """Logits and cached activations of the exported TransformerLens model vs mechjax."""
    model = tl_export.load(folder)
    with torch.no_grad():
        tl_logits, cache = model.run_with_cache(torch.from_numpy(np.asarray(tokens)))
    logits, ours = hooks.run_with_cache(params, jnp.asarray(tokens), cfg)
    np.testing.assert_allclose(tl_logits.numpy(), np.asarray(logits), atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.asarray(apply(params, jnp.asarray(tokens), cfg)),
                               tl_logits.numpy(), atol=1e-4, rtol=0)
    for name in HOOKS + tuple(extra_hooks):
        assert name in ours and name in cache, name
        np.testing.assert_allclose(cache[name].numpy(), np.asarray(ours[name]), atol=1e-4,
                                   rtol=0, err_msg=name)


@needs_tl
def test_trained_quickstart_seed_matches_transformer_lens(quickstart_run, tmp_path):
    run = runs.open(quickstart_run)
    step = run.steps_saved[-1]
    folder = run.export_tl(seed=3, step=step, path=str(tmp_path / "tl"))
    assert sorted(os.listdir(folder)) == ["hooked_transformer_config.json", "state_dict.pt"]
    p = run.model_cfg.d_vocab
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    tokens = np.stack([a.ravel(), b.ravel()], 1).astype(np.int64)  # every pair
    params = {k: jnp.asarray(v) for k, v in run.params(seed=3, step=step).items()}
    assert_same_model(params, run.model_cfg, tokens, folder,
                      ("blocks.0.mlp.hook_pre", "blocks.0.mlp.hook_post", "blocks.0.hook_mlp_out"))
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
