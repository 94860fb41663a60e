"""The exact reduced dynamics (orbit classes + coordinate forward) against the engine: the
vector field equals ``dynamics.reference.enumerated_field`` on the enumerated population, and the
read-offs equal
the engine's forward on the same weights."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.dynamics import reference as ode
from mechjax.analysis.imir.manifold import project as proj
from mechjax.models.transformer import forward
from mechjax.tasks import blocklist as bl
from mechjax.tasks.blocklist import population as pop

TASK = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3)


def test_exact_field_and_readouts_equal_the_engine() -> None:
    """The engine runs on the orbit quotient of the enumerated population, which gives the same
    manifold field as the whole enumeration (tests/test_imir_reference.py)."""
    model = exact.make(TASK)
    basis = model.basis
    q = pop.symmetric_support(TASK)
    field_eng = jax.jit(ode.enumerated_field(basis, ode.population_loss_fn(basis, q)))
    field, readouts = jax.jit(model.field), jax.jit(model.readouts)
    theta = 0.8 * jax.random.normal(jax.random.key(1), (basis.size,))
    cfg, fixed = exact.ib.imir_config(basis.frame), exact.ib.fixed_params(basis.frame)
    lg = forward({**fixed, **proj.weights(basis, theta)}, q.batch["tokens"], cfg)[:, -1]
    p = jax.nn.softmax(lg, -1)[jnp.arange(q.size), q.batch["target"]]
    for f_r, f_v in ((0.3, 0.2), (0.0, 0.5)):
        tp = {"f_r": jnp.float32(f_r), "f_v": jnp.float32(f_v)}
        want = field_eng(theta, tp)
        np.testing.assert_allclose(field(theta, tp), want, rtol=2e-4,
                                   atol=2e-5 * float(jnp.max(jnp.abs(want))))
        ro = readouts(theta, tp)
        # the engine on the orbit quotient, weighted by the enumerated reference's given_rare
        w = ode.given_rare(q, tp)
        np.testing.assert_allclose(ro["p_rare"], jnp.sum(w * p) / jnp.sum(w), rtol=1e-5)


def test_random_start_is_the_projection_of_its_draw() -> None:
    """``random_start``: the least-squares coordinates of the draw ``basis.random_weights`` makes
    from the same key. What the projection leaves out is orthogonal to every basis direction
    (float32 rounding of the inner products); what it keeps is a nonzero point."""
    model = exact.make(TASK)
    key = jax.random.key(3)
    theta = exact.random_start(model, key, 0.1)
    draw = {k: v[0] for k, v in exact.ib.random_weights(model.basis.frame, key, 0.1, 1).items()}
    kept = proj.weights(model.basis, jnp.asarray(theta, jnp.float32))
    left = {k: draw[k] - kept[k] for k in draw}
    full = np.abs(np.asarray(proj.inner(model.basis, draw))).max()
    rest = np.abs(np.asarray(proj.inner(model.basis, left))).max()
    n = max(v.size for v in draw.values())   # the longest sum in an inner product
    assert rest <= 4 * n * np.finfo(np.float32).eps * full, (rest, full)
    assert np.abs(theta).max() > 1e-3
    np.testing.assert_array_equal(theta, exact.random_start(model, key, 0.1))


def test_straddling_cells_sit_on_the_boundary():
    """On a grid split at column 3 every chosen cell has a neighbour with another winner."""
    from experiments.imir_phase.cell_stages import straddling_cells
    w = np.zeros((8, 8), int)
    w[:, 3:] = 1
    pick = straddling_cells(w, 10, seed=0)
    cols = np.unravel_index(pick, w.shape)[1]
    assert len(pick) == 10 and set(cols) <= {2, 3}
