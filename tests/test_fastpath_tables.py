import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.models import fastpath_tables
from mechjax.models.config import ModelConfig
from mechjax.models.hooks import run_with_cache
from mechjax.models.transformer import init_params


@pytest.mark.parametrize("cfg", [
    ModelConfig(n_layers=2, d_model=16, n_heads=1, d_mlp=32, d_vocab=12, n_ctx=7,
                mlp_layers=(False, True)),
    ModelConfig(n_layers=2, d_model=16, n_heads=2, d_vocab=12, n_ctx=7, attn_only=True,
                use_bias=True, causal=False, init="pytorch"),
])
def test_tables_read_the_full_models_layer_1_input(cfg):
    # Layer 0's pattern and everything the last layer reads of its input (a row, u . x for
    # every key, pattern-weighted sums of keys) against the hooked full forward, in float64.
    with jax.enable_x64(True):
        params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64),
                              init_params(jax.random.PRNGKey(0), cfg, scale=3.0))
        tokens = jax.random.randint(jax.random.PRNGKey(1), (5, cfg.n_ctx), 0, cfg.d_vocab)
        u = jax.random.normal(jax.random.PRNGKey(2), (5, 3, cfg.d_model), jnp.float64)
        weights = jax.random.uniform(jax.random.PRNGKey(3), (5, 3, 4), jnp.float64)
        _, cache = run_with_cache(params, tokens, cfg)
        x1 = np.asarray(cache["blocks.0.hook_resid_post"])
        tables = fastpath_tables.first_layer(params, tokens, cfg)
        np.testing.assert_allclose(tables.pattern, cache["blocks.0.attn.hook_pattern"],
                                   rtol=1e-10, atol=1e-12)
        for position in (0, 4, cfg.n_ctx - 1):
            np.testing.assert_allclose(tables.row(position), x1[:, position], rtol=1e-10,
                                       atol=1e-12)
        np.testing.assert_allclose(tables.dot(u), np.einsum("bhd,bkd->bhk", u, x1),
                                   rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(tables.keys(4).mix(weights),
                                   np.einsum("bhk,bkd->bhd", weights, x1[:, :4]),
                                   rtol=1e-10, atol=1e-10)
        assert tables.keys(4).dot(u).shape == (5, 3, 4)
