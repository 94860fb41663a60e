"""The reduced ODE on the manifold tracks full gradient descent of the real model started on it."""
import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import submanifold as subm
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.dynamics import solver as solve
from mechjax.analysis.imir.dynamics import reference as ode
from mechjax.analysis.imir.manifold import project as proj
from mechjax.tasks import blocklist as bl

TASK = bl.BlockListSpec(n_common=4, n_rare=2, n_blocks=2, f_r=0.5, f_v=0.2)


def test_reduced_ode_tracks_full_gradient_descent():
    tp = {k: jnp.float32(v) for k, v in TASK.default_params().items()}
    support = bl.enumerate_support(TASK).prune(tp)
    frame = ib.make_frame(ib.TokenStructure.from_spec(TASK), TASK.seq_len)
    basis = ib.make_basis(frame)
    loss = ode.population_loss_fn(basis, support)
    # one sequence per symmetry orbit gives the same coordinate gradient on the manifold
    rot, orb = support.rotation_quotient(), support.orbit_quotient(TASK)
    assert orb.size < rot.size < support.size
    theta0 = 0.1 * jax.random.normal(jax.random.key(0), (2, basis.size))
    want = jax.jit(ode.enumerated_field(basis, loss))(theta0[0], tp)
    for quotient in (rot, orb):
        np.testing.assert_allclose(float(quotient.probs(tp).sum()), 1.0, rtol=1e-6)
        got = jax.jit(ode.enumerated_field(basis, ode.population_loss_fn(basis, quotient)))(
            theta0[0], tp)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    field_q = ode.enumerated_field(basis, ode.population_loss_fn(basis, orb))
    t1, n_save = 150.0, 20
    traj = jax.jit(jax.vmap(lambda th: solve.solve(field_q, th, tp, t1, n_save)))(theta0)
    assert traj.shape == (2, n_save + 1, basis.size)
    gd = jax.jit(jax.vmap(lambda th: ode.gradient_descent(basis, loss, th, tp, 0.1, 1500,
                                                          n_save)))(theta0)
    for i in range(2):
        losses = np.asarray(gd["loss"][i])
        done = int(np.argmax(losses <= 0.1 * losses[0]))
        assert done > 0, losses                                   # the loss drops by 90%
        dev = ode.max_rel_deviation(gd["theta"][i], traj[i], upto=done + 1)
        assert dev["norm"] < 0.05 and dev["coord"] < 0.05, dev    # ~0.004 / 0.015 measured
        assert float(gd["off_span"][i].max()) < 1e-5              # training stays on the span


def test_four_coordinate_submanifold_is_not_closed():
    tp = {k: jnp.float32(v) for k, v in TASK.default_params().items()}
    support = bl.enumerate_support(TASK).prune(tp).rotation_quotient()
    frame = ib.make_frame(ib.TokenStructure.from_spec(TASK), TASK.seq_len)
    basis = ib.make_basis(frame)
    names, phi = subm.abgd_coordinates(basis)
    assert names == ("alpha", "beta", "gamma", "delta")
    loss = ode.population_loss_fn(basis, support)
    theta = jnp.asarray([1.0, 1.0, 1.0, 1.0])
    # the sub-manifold field is the Gram-weighted projection of the full coordinate gradient
    full = jnp.asarray(phi.T) @ theta
    grad = proj.inner(basis, jax.grad(loss)(proj.weights(basis, full), tp))
    g_sub = phi @ proj.gram(basis) @ phi.T
    want = -np.linalg.solve(g_sub, phi @ np.asarray(grad))
    np.testing.assert_allclose(ode.enumerated_field(basis, loss, phi)(theta, tp), want, rtol=1e-4)
    # ... and most of the full flow direction lies outside the four coordinates
    flow = -proj.solve_gram(basis, grad)
    w_flow = proj.weights(basis, flow)
    sub = phi.T @ np.linalg.solve(g_sub, phi @ np.asarray(grad))
    w_sub = proj.weights(basis, -jnp.asarray(sub, jnp.float32))
    num = sum(float(jnp.sum((w_flow[k] - w_sub[k]) ** 2)) for k in w_flow)
    den = sum(float(jnp.sum(w_flow[k] ** 2)) for k in w_flow)
    assert np.sqrt(num / den) > 0.5                              # 0.96 measured
