"""The one plain-SGD loop of the IMIR analyses: the exact iterates of a quadratic, the records'
layout, and a fresh key per step."""
import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.cells import sgd


def test_full_batch_iterates_of_a_quadratic():
    """``loss = 0.5 ||w||^2``: ``w_k = (1 - lr)^k w_0``; records at the start and every 3 steps,
    with the loss of each chunk's last step (taken before that step's update)."""
    w0 = {"a": jnp.asarray([1.0, -2.0]), "b": jnp.asarray(3.0)}
    loss = lambda w: 0.5 * (jnp.sum(w["a"] ** 2) + w["b"] ** 2)
    ws, last = sgd.descend(loss, w0, 0.1, 4, 3, lambda w, l: (w, l))
    k = np.arange(5) * 3
    np.testing.assert_allclose(ws["a"], np.outer(0.9 ** k, [1.0, -2.0]), rtol=1e-5)
    np.testing.assert_allclose(ws["b"], 3.0 * 0.9 ** k, rtol=1e-5)
    full = 0.5 * (1 + 4 + 9)
    np.testing.assert_allclose(last, [full] + [full * 0.81 ** (kk - 1) for kk in k[1:]],
                               rtol=1e-5)


def test_keyed_steps_draw_a_fresh_target_each_step():
    """``loss(w, k) = 0.5 (w - z_k)^2``: after many steps ``w`` averages the draws (mean 0), and
    the same key gives the same path."""
    loss = lambda w, k: 0.5 * jnp.sum((w["w"] - jax.random.normal(k)) ** 2)
    run = lambda key: sgd.descend(loss, {"w": jnp.asarray(5.0)}, 0.05, 4, 200,
                                  lambda w, l: w["w"], key)
    a, b = run(jax.random.key(0)), run(jax.random.key(0))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (5,) and float(a[0]) == 5.0
    assert abs(float(a[-1])) < 1.0 and not np.array_equal(a, run(jax.random.key(1)))
