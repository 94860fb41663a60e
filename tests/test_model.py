import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.models.config import ModelConfig
from mechjax.models.transformer import apply, count_params, init_params, param_shapes


def numpy_reference(params, tokens, cfg):
    """A loop-per-head NumPy transformer written from the definitions, to check ``apply`` against."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}

    def ln(x, pre):
        x = x - x.mean(-1, keepdims=True)
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + cfg.ln_eps) * p[pre + "w"] + p[pre + "b"]

    def act(x):
        if cfg.act_fn == "relu":
            return np.maximum(x, 0)
        if cfg.act_fn == "gelu_new":
            return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
        from math import erf
        return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))

    b, n = tokens.shape
    x = p["embed.W_E"][tokens] + (p["pos_embed.W_pos"][:n] if cfg.positional_embedding else 0)
    for l in range(cfg.n_layers):
        pre = f"blocks.{l}."
        a_in = ln(x, pre + "ln1.") if cfg.normalization == "pre" else x
        out = np.zeros_like(x)
        for h in range(cfg.n_heads):
            bias = (lambda name: p[pre + "attn." + name][h]) if cfg.use_bias else (lambda name: 0)
            q = a_in @ p[pre + "attn.W_Q"][h] + bias("b_Q")
            k = a_in @ p[pre + "attn.W_K"][h] + bias("b_K")
            v = a_in @ p[pre + "attn.W_V"][h] + bias("b_V")
            s = q @ np.swapaxes(k, 1, 2) / np.sqrt(cfg.head_dim)
            if cfg.causal:
                s = np.where(np.tril(np.ones((n, n))) > 0, s, -np.inf)
            a = np.exp(s - s.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            out += (a @ v) @ p[pre + "attn.W_O"][h]
        if cfg.use_bias:
            out += p[pre + "attn.b_O"]
        x = x + out
        if cfg.normalization == "post":
            x = ln(x, pre + "ln1.")
        if cfg.has_mlp(l):
            m_in = ln(x, pre + "ln2.") if cfg.normalization == "pre" else x
            hid = m_in @ p[pre + "mlp.W_in"] + (p[pre + "mlp.b_in"] if cfg.use_bias else 0)
            x = x + act(hid) @ p[pre + "mlp.W_out"] + (p[pre + "mlp.b_out"] if cfg.use_bias else 0)
            if cfg.normalization == "post":
                x = ln(x, pre + "ln2.")
    if cfg.normalization == "pre":
        x = ln(x, "ln_final.")
    w_u = p["embed.W_E"].T if cfg.tied_unembed else p["unembed.W_U"]
    return x @ w_u + (p["unembed.b_U"] if cfg.has_unembed_bias else 0)


CONFIGS = {
    "assign_add": ModelConfig(n_layers=2, d_model=16, n_heads=1, d_mlp=32, d_vocab=12,
                              d_vocab_out=9, n_ctx=6, mlp_layers=(False, True)),
    "pre_ln_gelu_bias": ModelConfig(n_layers=2, d_model=16, n_heads=2, d_mlp=24, d_vocab=12,
                                    n_ctx=6, normalization="pre", use_bias=True,
                                    act_fn="gelu_new", init="pytorch"),
    "post_ln_encoder": ModelConfig(n_layers=2, d_model=16, n_heads=4, d_mlp=32, d_vocab=7,
                                   n_ctx=6, normalization="post", use_bias=True, causal=False,
                                   act_fn="gelu", init="pytorch"),
    "tied_no_pos": ModelConfig(n_layers=1, d_model=8, n_heads=2, d_mlp=16, d_vocab=10, n_ctx=6,
                               tied_unembed=True, positional_embedding=False),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_forward_matches_numpy_reference(name):
    cfg = CONFIGS[name]
    params = init_params(jax.random.PRNGKey(1), cfg, scale=2.0)
    # give biases and LN parameters non-trivial values so they are exercised
    params = {k: v + 0.1 * jax.random.normal(jax.random.PRNGKey(len(k)), v.shape)
              if (k.rsplit(".", 1)[-1].startswith("b") or k.endswith((".w", ".b"))) else v
              for k, v in params.items()}
    tokens = jax.random.randint(jax.random.PRNGKey(2), (3, cfg.n_ctx), 0, cfg.d_vocab)
    got = np.asarray(jax.jit(lambda p, t: apply(p, t, cfg))(params, tokens))
    want = numpy_reference(params, np.asarray(tokens), cfg)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_shapes_follow_transformer_lens_and_paper_size():
    cfg = CONFIGS["assign_add"]
    shapes = param_shapes(cfg)
    assert shapes["blocks.0.attn.W_Q"] == (1, 16, 16)
    assert shapes["blocks.0.attn.W_O"] == (1, 16, 16)
    assert shapes["unembed.W_U"] == (16, 9)
    assert "blocks.0.mlp.W_in" not in shapes and "blocks.1.mlp.W_in" in shapes
    assert not any(k.rsplit(".", 1)[-1].startswith("b_") for k in shapes)  # biases absent
    paper = ModelConfig(n_layers=2, d_model=128, n_heads=1, d_mlp=512, d_vocab=74, d_vocab_out=59,
                        n_ctx=16, mlp_layers=(False, True))
    assert count_params(init_params(jax.random.PRNGKey(0), paper)) == 281_216  # the Assign-and-Add paper's model


def test_transformer_lens_init_scale():
    cfg = ModelConfig(n_layers=2, d_model=128, n_heads=1, d_mlp=512, d_vocab=74, n_ctx=16)
    params = init_params(jax.random.PRNGKey(0), cfg)
    for name in ("embed.W_E", "blocks.0.attn.W_Q", "blocks.1.mlp.W_in", "unembed.W_U"):
        assert abs(float(params[name].std()) - 0.8 / 128 ** 0.5) < 0.004, name
    doubled = init_params(jax.random.PRNGKey(0), cfg, scale=2.0)
    np.testing.assert_allclose(doubled["blocks.0.attn.W_K"], 2 * params["blocks.0.attn.W_K"])


def test_pytorch_init_bounds():
    cfg = CONFIGS["post_ln_encoder"]
    params = init_params(jax.random.PRNGKey(0), cfg)
    assert float(jnp.abs(params["blocks.0.mlp.W_in"]).max()) <= 1 / 16 ** 0.5
    assert float(jnp.abs(params["blocks.0.mlp.W_out"]).max()) <= 1 / 32 ** 0.5
    assert float(jnp.abs(params["blocks.0.attn.W_Q"]).max()) <= (6 / 64) ** 0.5
    assert float(jnp.abs(params["blocks.0.attn.b_O"]).max()) == 0.0
    assert abs(float(params["embed.W_E"].std()) - 1.0) < 0.35
    np.testing.assert_array_equal(params["blocks.0.ln1.w"], 1.0)


def test_causal_mask_hides_the_future():
    cfg = CONFIGS["assign_add"]
    params = init_params(jax.random.PRNGKey(0), cfg)
    tokens = jnp.array([[1, 2, 3, 4, 5, 6]])
    changed = tokens.at[0, 4].set(0)
    a, b = apply(params, tokens, cfg), apply(params, changed, cfg)
    np.testing.assert_allclose(a[:, :4], b[:, :4], atol=1e-6)
    assert not np.allclose(a[:, 4:], b[:, 4:])


def test_merged_attention_only_model():
    cfg = ModelConfig(n_layers=2, d_model=8, n_heads=2, d_vocab=8, n_ctx=5, attn_only=True,
                      merged_kq=True, merged_ov=True, frozen=("attn.W_OV",))
    params = init_params(jax.random.PRNGKey(0), cfg, scale=3.0)
    ov = params["blocks.0.attn.W_OV"]
    assert ov.shape == (2, 8, 8)
    np.testing.assert_allclose(ov[0] @ ov[0].T, np.eye(8), atol=1e-5)  # orthogonal, not rescaled
    assert params["blocks.0.attn.W_KQ"].shape == (2, 8, 8)
    assert "blocks.0.mlp.W_in" not in params
    # merged W_KQ = W_Q W_K^T and W_OV = W_V W_O reproduce the separate-matrix model exactly
    sep = ModelConfig(n_layers=2, d_model=8, n_heads=2, d_head=8, d_vocab=8, n_ctx=5,
                      attn_only=True)
    sp = init_params(jax.random.PRNGKey(3), sep)
    merged = {k: v for k, v in sp.items() if ".attn." not in k}
    for l in range(2):
        a = f"blocks.{l}.attn."
        merged[a + "W_KQ"] = jnp.einsum("hde,hfe->hdf", sp[a + "W_Q"], sp[a + "W_K"])
        merged[a + "W_OV"] = jnp.einsum("hde,hef->hdf", sp[a + "W_V"], sp[a + "W_O"])
    cfg_m = ModelConfig(n_layers=2, d_model=8, n_heads=2, d_head=8, d_vocab=8, n_ctx=5,
                        attn_only=True, merged_kq=True, merged_ov=True)
    tokens = jnp.array([[1, 2, 3, 4, 5]])
    np.testing.assert_allclose(apply(merged, tokens, cfg_m), apply(sp, tokens, sep), atol=1e-5)


def test_dropout_only_with_key():
    cfg = ModelConfig(n_layers=1, d_model=8, n_heads=2, d_mlp=16, d_vocab=8, n_ctx=5,
                      dropout=0.5)
    params = init_params(jax.random.PRNGKey(0), cfg)
    tokens = jnp.array([[1, 2, 3, 4, 5]])
    np.testing.assert_array_equal(apply(params, tokens, cfg), apply(params, tokens, cfg))
    assert not np.allclose(apply(params, tokens, cfg, key=jax.random.PRNGKey(1)),
                           apply(params, tokens, cfg))


def test_bad_tokens_shape():
    cfg = CONFIGS["assign_add"]
    params = init_params(jax.random.PRNGKey(0), cfg)
    with pytest.raises(ValueError, match="exceeds n_ctx=6"):
        apply(params, jnp.zeros((1, 7), jnp.int32), cfg)
    with pytest.raises(ValueError, match="shape \\[batch, pos\\]"):
        apply(params, jnp.zeros((7,), jnp.int32), cfg)


class _ReadRecorder(dict):
    """A parameter dict that records which names the forward pass reads."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read: set[str] = set()

    def __getitem__(self, name):
        self.read.add(name)
        return super().__getitem__(name)


@pytest.mark.parametrize("cfg", [
    ModelConfig(n_layers=2, d_model=8, n_heads=2, d_vocab=8, n_ctx=5, attn_only=True,
                normalization="pre", use_bias=True),
    ModelConfig(n_layers=2, d_model=8, n_heads=2, d_mlp=16, d_vocab=8, n_ctx=5,
                mlp_layers=(False, True), normalization="pre"),
    ModelConfig(n_layers=2, d_model=8, n_heads=2, d_mlp=16, d_vocab=8, n_ctx=5,
                mlp_layers=(True, False), normalization="post", use_bias=True),
    *CONFIGS.values(),
], ids=lambda cfg: f"{cfg.normalization}-{cfg.mlp_layers}-{cfg.attn_only}")
def test_every_parameter_is_read_by_the_forward_pass(cfg):
    # A parameter no computation reads only drifts under weight decay (and breaks exports).
    params = _ReadRecorder(init_params(jax.random.PRNGKey(0), cfg))
    apply(params, jnp.zeros((1, cfg.n_ctx), jnp.int32), cfg)
    assert set(param_shapes(cfg)) == params.read


def test_attention_only_pre_ln_model_exports_to_transformer_lens():
    from mechjax.interop.tl_export import tl_state_dict
    cfg = ModelConfig(n_layers=2, d_model=8, n_heads=2, d_vocab=8, n_ctx=5, attn_only=True,
                      normalization="pre")
    params = init_params(jax.random.PRNGKey(0), cfg)
    state = tl_state_dict(params, cfg)
    assert not any(".ln2." in k for k in state)
    np.testing.assert_array_equal(state["blocks.1.ln1.w"], params["blocks.1.ln1.w"])
