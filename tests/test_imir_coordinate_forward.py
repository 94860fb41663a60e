"""The IMIR forward pass in manifold coordinates against the engine's forward on the enumerated
population: loss and coordinate gradient in float64, for 2 layers x 1 head, 3 x 1 and 2 x 2."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis.imir import basis as ib
from mechjax.analysis.imir import coordinate_forward as cfw
from mechjax.analysis.imir import ode
from mechjax.analysis.imir import project as proj
from mechjax.tasks import blocklist as bl
from mechjax.tasks.blocklist import population as pop


@pytest.mark.parametrize("spec, layers, heads", [
    (bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3), 2, 1),
    (bl.BlockListSpec(n_common=8, n_rare=8, n_blocks=3), 2, 1),   # unused outputs grouped
    (bl.BlockListSpec(n_common=4, n_rare=2, n_blocks=2), 3, 1),
    (bl.BlockListSpec(n_common=4, n_rare=2, n_blocks=2), 2, 2),
])
def test_coordinate_forward_equals_the_engine(spec, layers, heads):
    with jax.enable_x64(True):
        frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len, layers, heads)
        basis = ib.make_basis(frame)
        sup = pop.symmetric_support(spec)
        tp = {"f_r": jnp.float64(0.4), "f_v": jnp.float64(0.3)}
        engine = ode.population_loss_fn(basis, sup, dtype=jnp.float64)
        feats = cfw.features(basis, np.asarray(sup.batch["tokens"]),
                             np.asarray(sup.batch["target"]))

        def loss(th):
            w = sup.probs(tp).astype(jnp.float64)
            return jnp.sum(w * cfw.class_losses(basis, feats, th)) / jnp.sum(w)

        theta = 0.7 * jax.random.normal(jax.random.key(0), (basis.size,), jnp.float64)
        want = engine(proj.weights(basis, theta), tp)
        np.testing.assert_allclose(loss(theta), want, rtol=1e-7)
        g_want = proj.inner(basis, jax.grad(engine)(proj.weights(basis, theta), tp))
        np.testing.assert_allclose(jax.grad(loss)(theta), g_want, rtol=1e-9,
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
