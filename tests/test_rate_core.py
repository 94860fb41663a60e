"""ACE cores at an attention rate: at rate 1 they are ``ace.analyse``'s (the plain forward), and
at rate 0 the activations read are the uniform-attention model's."""
import jax
import jax.numpy as jnp
import numpy as np

from mechjax.models import attention_rate
from mechjax.analysis import ace
from mechjax.studies import grokking_core
from mechjax.studies import rate_core
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import init_params
from mechjax.tasks import modular

CFG = ModelConfig(n_layers=1, d_model=16, n_heads=4, d_head=4, d_mlp=32, d_vocab=11,
                  d_vocab_out=11, n_ctx=2, causal=False)


def test_rate_one_is_ace_analyse_and_rate_zero_reads_uniform_attention():
    inputs = grokking_core.heldout_pair_inputs(modular.make_task(p=11, train_fraction=0.5))
    stacked = jax.vmap(lambda k: init_params(k, CFG, scale=3.0))(
        jax.random.split(jax.random.PRNGKey(0), 2))
    ours = rate_core.core_stats_at_rate(stacked, inputs, CFG, 1.0)
    pipe = grokking_core.core_pipeline(hook_name="blocks.0.hook_resid_post")
    for seed in range(2):
        params = {k: v[seed] for k, v in stacked.items()}
        theirs = grokking_core.core_stats(ace.analyse(params, inputs, CFG, pipe))
        for field in ("core_dim", "r_energy", "n_rotational", "acc_full"):
            assert ours[field][seed] == np.asarray(getattr(theirs, field)), field
        np.testing.assert_allclose(ours["weights"][seed], theirs.weights, rtol=1e-4, atol=1e-6)
    params = {k: v[0] for k, v in stacked.items()}
    h0 = rate_core.resid_at(params, inputs.tokens, CFG, 0.0, "blocks.0.hook_resid_post")
    logits = attention_rate.forward(params, inputs.tokens, CFG, 0.0)[:, -1]
    np.testing.assert_allclose(h0 @ params["unembed.W_U"], logits, rtol=1e-4, atol=1e-4)
    assert not np.allclose(h0, rate_core.resid_at(params, inputs.tokens, CFG, 1.0,
                                                  "blocks.0.hook_resid_post"), atol=1e-3)
    assert jnp.asarray(h0).shape == (len(inputs.labels), 16)
