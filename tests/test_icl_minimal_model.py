"""The minimal network: shapes, causal attention, and the label read off a planted copy head.
(Training direction of the burstiness effect: tests/test_icl_minimal_experiment.py.)"""
import jax
import jax.numpy as jnp
import numpy as np

from mechjax.models import icl_minimal as m

CFG = m.IclModelConfig(d=8, n_pos=9, n_labels=6, mlp_width=16)


def test_shapes_and_causal_attention():
    params = m.init_params(jax.random.PRNGKey(0), CFG)
    x = jax.random.normal(jax.random.PRNGKey(1), (3, 9, 8))
    assert m.forward(params, x, CFG).shape == (3, 6)
    for att in m.attention_patterns(params, x, CFG):
        np.testing.assert_allclose(np.triu(np.asarray(att), 1), 0.0)
        np.testing.assert_allclose(np.asarray(att).sum(-1), 1.0, rtol=1e-5)


def test_earlier_tokens_only_affect_later_positions():
    # The query reads every position; changing only the last token leaves layer-0 patterns of
    # earlier rows unchanged (causality), while the query's logits change.
    params = m.init_params(jax.random.PRNGKey(0), CFG)
    x = jax.random.normal(jax.random.PRNGKey(1), (1, 9, 8))
    y = x.at[:, -1].add(1.0)
    a0x, a0y = m.attention_patterns(params, x, CFG)[0], m.attention_patterns(params, y, CFG)[0]
    np.testing.assert_allclose(a0x[:, :-1], a0y[:, :-1], rtol=1e-6)
    assert not jnp.allclose(m.forward(params, x, CFG), m.forward(params, y, CFG))
