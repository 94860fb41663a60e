"""The IMIR forward pass in manifold coordinates against the engine's forward on the enumerated
population: loss and coordinate gradient in float64, for 3 layers x 1 head (a middle layer mixes
paths both ways; the 2-layer model of ``dynamics.model`` is tests/test_imir_model.py's) and
2 x 2."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.forward import coordinates as cfw
from mechjax.analysis.imir.dynamics import reference as ode
from mechjax.analysis.imir.manifold import project as proj
from mechjax.tasks import blocklist as bl
from mechjax.tasks.blocklist import population as pop


# One item (T = 3) on 3 cycles and 2 rare tokens: the population leaves a cycle unused (a
# grouped output class of 2 tokens) and uses every rare token (an empty class, -inf).
TASK = bl.BlockListSpec(n_common=6, n_rare=2, n_blocks=2)


@pytest.mark.parametrize("layers, heads", [(3, 1), (2, 2)])
def test_coordinate_forward_equals_the_engine(layers: int, heads: int) -> None:
    with jax.enable_x64(True):
        frame = ib.make_frame(ib.TokenStructure.from_spec(TASK), TASK.seq_len, layers, heads)
        basis = ib.make_basis(frame)
        sup = pop.symmetric_support(TASK)
        tp = {"f_r": jnp.float64(0.4), "f_v": jnp.float64(0.3)}
        engine = ode.population_loss_fn(basis, sup, dtype=jnp.float64)
        feats = cfw.features(basis, np.asarray(sup.batch["tokens"]),
                             np.asarray(sup.batch["target"]))
        assert np.isinf(feats.log_mult).any() and (feats.log_mult > 0).any()

        def loss(th):
            w = sup.probs(tp).astype(jnp.float64)
            return jnp.sum(w * cfw.class_losses(basis, feats, th)) / jnp.sum(w)

        theta = 0.7 * jax.random.normal(jax.random.key(0), (basis.size,), jnp.float64)
        want, g_w = jax.jit(jax.value_and_grad(engine))(proj.weights(basis, theta), tp)
        got, g_got = jax.jit(jax.value_and_grad(loss))(theta)
        np.testing.assert_allclose(got, want, rtol=1e-7)
        g_want = proj.inner(basis, g_w)
        np.testing.assert_allclose(g_got, g_want, rtol=1e-9,
                                   atol=1e-12 * float(jnp.max(jnp.abs(g_want))))


def test_grouped_outputs_cover_the_vocabulary():
    """A softmax over the output representatives (log multiplicities added) is the model's over
    all outputs: the multiplicities count every output token once."""
    spec = bl.BlockListSpec(n_common=16, n_rare=16, n_blocks=3)
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len)
    basis = ib.make_basis(frame)
    tokens = np.array([[0, 1, 16, 17, 0]])
    feats = cfw.features(basis, tokens, np.array([1]))
    mult = np.where(np.isfinite(feats.log_mult), np.exp(feats.log_mult), 0.0)
    used = np.sum(feats.log_mult == 0)
    assert np.isclose(used + mult[feats.log_mult != 0].sum(), spec.n_tokens)
    assert feats.out.shape[-1] == len(feats.out_ids) < spec.n_tokens
