import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.models import fastpath
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import apply, init_params

CONFIGS = {
    "assign_add": ModelConfig(n_layers=2, d_model=16, n_heads=1, d_mlp=32, d_vocab=12,
                              d_vocab_out=9, n_ctx=7, mlp_layers=(False, True)),
    "one_layer_bidirectional": ModelConfig(n_layers=1, d_model=16, n_heads=4, d_mlp=32,
                                           d_vocab=12, n_ctx=7, causal=False),
    "three_layers_bias": ModelConfig(n_layers=3, d_model=16, n_heads=2, d_mlp=32, d_vocab=12,
                                     n_ctx=7, use_bias=True, init="pytorch"),
    # layer 0 attention only, no LayerNorm: the last layer reads layer 0 factored
    "two_layers_bias_bidirectional": ModelConfig(n_layers=2, d_model=16, n_heads=2, d_mlp=32,
                                                 d_vocab=12, n_ctx=7, use_bias=True,
                                                 causal=False, mlp_layers=(False, True),
                                                 init="pytorch"),
    "attn_only_no_pos": ModelConfig(n_layers=2, d_model=16, n_heads=2, d_vocab=12, n_ctx=7,
                                    attn_only=True, positional_embedding=False),
}
# Normalized models with dropout, checked with a dropout key (training): the ACE paper's
# grokking encoder (post-LN, biases, no mask) and a pre-LN causal model.
DROPOUT_CONFIGS = {
    "grokking_post_ln": ModelConfig(n_layers=2, d_model=16, n_heads=4, d_mlp=32, d_vocab=12,
                                    n_ctx=7, use_bias=True, normalization="post", dropout=0.1,
                                    causal=False, init="pytorch"),
    "pre_ln_three_layers": ModelConfig(n_layers=3, d_model=16, n_heads=2, d_mlp=32, d_vocab=12,
                                       n_ctx=7, use_bias=True, normalization="pre",
                                       dropout=0.2),
}


@pytest.mark.parametrize("name, position, dropout_key",
                         [(name, -1, None) for name in sorted(CONFIGS)]
                         + [("three_layers_bias", 3, None), ("one_layer_bidirectional", 2, None),
                            ("assign_add", 3, None), ("two_layers_bias_bidirectional", 2, None),
                            ("grokking_post_ln", -1, 7), ("pre_ln_three_layers", 4, 9)])
@pytest.mark.timeout(600)  # a whole tiny experiment: 30-75 s cold on 2 cores
def test_readout_loss_and_gradients_equal_full_forward(name, position, dropout_key):
    # In float64 the two computations agree to rounding, so any algebra slip shows at once; with
    # a dropout key both draw the same masks, so a wrong slice of a mask shows as well.
    cfg = {**CONFIGS, **DROPOUT_CONFIGS}[name]
    key = None if dropout_key is None else jax.random.PRNGKey(dropout_key)
    assert fastpath.applies(cfg)
    # layer 0 as tables (mechjax.models.fastpath_tables) is taken by exactly these
    assert fastpath.tabled(cfg, dropout_drawn=key is not None) == (
        name in ("assign_add", "attn_only_no_pos", "two_layers_bias_bidirectional"))
    with jax.enable_x64(True):
        params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64),
                              init_params(jax.random.PRNGKey(0), cfg, scale=3.0))
        tokens = jax.random.randint(jax.random.PRNGKey(1), (5, cfg.n_ctx), 0, cfg.d_vocab)
        labels = jax.random.randint(jax.random.PRNGKey(2), (5,), 0, cfg.vocab_out)

        def nll(logits):
            return -jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], 1).mean()

        full = lambda p: nll(apply(p, tokens, cfg, key)[:, position])
        fast = lambda p: nll(fastpath.readout_logits(p, tokens, cfg, position, key))

        @jax.jit  # one program per case: every comparison's values at once, none op by op
        def compare(p):
            return (fastpath.readout_logits(p, tokens, cfg, position, key),
                    apply(p, tokens, cfg, key)[:, position], apply(p, tokens, cfg)[:, position],
                    jax.value_and_grad(full)(p), jax.value_and_grad(fast)(p))

        fast_logits, full_logits, no_key_logits, (l_full, g_full), (l_fast, g_fast) = compare(
            params)
        np.testing.assert_allclose(fast_logits, full_logits, rtol=1e-10, atol=1e-10)
        if key is not None:  # dropout is on: without the key the logits must differ
            assert not np.allclose(no_key_logits, full_logits)
        np.testing.assert_allclose(l_fast, l_full, rtol=1e-10)
        scale = max(float(np.abs(np.asarray(g)).max()) for g in g_full.values())
        for k in params:  # saturated softmaxes leave some gradients at rounding level: atol
            np.testing.assert_allclose(g_fast[k], g_full[k], rtol=1e-7, atol=1e-9 * scale,
                                       err_msg=k)


def test_does_not_apply_with_merged_maps():
    assert fastpath.applies(ModelConfig(normalization="pre", dropout=0.1), dropout_active=True)
    assert not fastpath.applies(ModelConfig(attn_only=True, merged_kq=True))
    with pytest.raises(ValueError, match="merged_kq"):
        cfg = ModelConfig(n_layers=1, d_model=8, n_heads=1, d_vocab=4, n_ctx=3, attn_only=True,
                          merged_kq=True)
        fastpath.readout_logits(init_params(jax.random.PRNGKey(0), cfg),
                                jnp.zeros((1, 3), jnp.int32), cfg, -1)
