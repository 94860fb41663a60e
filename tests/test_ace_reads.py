"""Tail Jacobians against finite differences and through the model's own forward pass."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ace_cases import tiny_model
from mechjax.analysis import ace
from mechjax.models.hooks import run_with_hooks

@pytest.mark.parametrize("k", [3, 9])  # K < D uses jacrev, K >= D jacfwd
def test_tail_jacobians_match_finite_differences(k):
    d = 6
    rng = np.random.default_rng(k)
    with jax.enable_x64(True):
        w1, b = jnp.asarray(rng.normal(size=(d, 7))), jnp.asarray(rng.normal(size=7))
        w2 = jnp.asarray(rng.normal(size=(7, k)))
        f = lambda h: jnp.tanh(h @ w1 + b) @ w2
        hs = jnp.asarray(rng.normal(size=(4, d)))
        jac = ace.tail_jacobians(f, hs)
        assert jac.shape == (4, k, d)
        eps = 1e-6
        eye = jnp.eye(d)
        fd = jnp.stack([(jax.vmap(f)(hs + eps * e) - jax.vmap(f)(hs - eps * e)) / (2 * eps)
                        for e in eye], axis=-1)
        np.testing.assert_allclose(jac, fd, atol=1e-7)
        # A scalar tail gives one gradient row per sample.
        assert ace.tail_jacobians(lambda h: f(h)[0], hs).shape == (4, 1, d)


def test_hook_jacobians_through_the_model():
    # Final block output: the tail is the unembedding, so every J_s is W_U^T.
    cfg, params, tokens = tiny_model(1)
    jac = ace.hook_jacobians(params, tokens[:5], cfg, "blocks.0.hook_resid_post",
                             jnp.arange(5) % 6)
    np.testing.assert_allclose(jac, jnp.broadcast_to(params["unembed.W_U"].T, jac.shape),
                               atol=1e-5)
    np.testing.assert_allclose(ace.observability(jac),
                               ace.linear_observability(params["unembed.W_U"]), atol=1e-4)
    # An earlier layer, a later read position and a scalar margin: finite differences in float64.
    cfg2, params2, tokens2 = tiny_model(2)
    with jax.enable_x64(True):
        p64 = {k: v.astype(jnp.float64) for k, v in params2.items()}
        name, pos = "blocks.0.hook_resid_post", 2
        margin = lambda logits: logits[1] - logits[3]
        jac = ace.hook_jacobians(p64, tokens2[:2], cfg2, name, pos, margin, read_position=-1)
        assert jac.shape == (2, 1, 16)

        def out(delta):
            logits, _ = run_with_hooks(p64, tokens2[:2], cfg2,
                                       {name: lambda x: x.at[:, pos].add(delta)})
            return jax.vmap(margin)(logits[:, -1])

        eps = 1e-6
        steps = eps * jnp.eye(16)
        fd = jax.jit(jax.vmap(lambda e: (out(e) - out(-e)) / (2 * eps), out_axes=-1))(steps)
        np.testing.assert_allclose(jac[:, 0], fd, atol=1e-6)


def test_activations_at_a_misspelt_hook_name_raise_one_line_with_near_matches():
    cfg, params, tokens = tiny_model(1)
    with pytest.raises(KeyError) as err:
        ace.activations(params, tokens[:4], cfg, "blocks.0.hook_resid_pots")
    message = str(err.value)
    assert "\n" not in message and "'blocks.0.hook_resid_pots'" in message
    assert "near matches: blocks.0.hook_resid_post" in message
    with pytest.raises(KeyError, match="near matches: blocks.0.hook_resid_post"):
        ace.hook_jacobians(params, tokens[:2], cfg, "blocks.0.hook_resid_pots", 0)
