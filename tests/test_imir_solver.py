"""The one IMIR ODE solver (diffrax, adaptive): accuracy against closed-form solutions, saved
times, vmapping over cells, and the step-count report."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis.imir.dynamics import solver as solve


def decay(theta, k):
    """``d theta / dt = -k * theta``: ``theta(t) = theta0 exp(-k t)``."""
    return -k * theta


def test_matches_the_closed_form_at_the_saved_times():
    ks = jnp.asarray([0.1, 1.0, 3.0])
    th0 = jnp.asarray([1.0, -2.0])
    got = jax.jit(jax.vmap(lambda k: solve.solve(decay, th0, k, 5.0, 10)))(ks)
    t = np.linspace(0.0, 5.0, 11)
    want = np.asarray(th0)[None, None] * np.exp(-np.asarray(ks)[:, None, None] * t[None, :, None])
    assert got.shape == (3, 11, 2)
    np.testing.assert_allclose(got[:, 0], np.broadcast_to(th0, (3, 2)))   # first save = start
    np.testing.assert_allclose(got, want, atol=2e-5)


def test_tighter_tolerance_is_more_accurate_and_takes_more_steps():
    """A rotation (``theta`` on the unit circle): error and step count against ``rtol``."""
    rot = lambda th, w: w * jnp.stack([-th[1], th[0]])
    th0 = jnp.asarray([1.0, 0.0])
    with jax.enable_x64(True):
        th0 = th0.astype(jnp.float64)
        errs, steps = [], []
        for rtol in (1e-3, 1e-6):
            ys, st = solve.solve_with_stats(rot, th0, 2.0, 10.0, 5, rtol=rtol, atol=rtol * 1e-2)
            t = np.linspace(0.0, 10.0, 6)
            want = np.stack([np.cos(2 * t), np.sin(2 * t)], -1)
            errs.append(float(np.max(np.abs(np.asarray(ys) - want))))
            steps.append(int(st["num_steps"]))
    assert errs[1] < errs[0] / 100, errs
    assert steps[1] > steps[0], steps


def test_bad_n_save_is_refused():
    with pytest.raises(ValueError, match="n_save=0"):
        solve.solve(decay, jnp.ones(2), 1.0, 1.0, 0)


@pytest.mark.parametrize("solver", sorted(solve.SOLVERS))
def test_every_solver_matches_the_closed_form(solver):
    ys = solve.solve(decay, jnp.asarray([1.0, -2.0]), 0.5, 4.0, 4, rtol=1e-4, atol=1e-6,
                     solver=solver)
    want = np.asarray([1.0, -2.0])[None] * np.exp(-0.5 * np.linspace(0.0, 4.0, 5))[:, None]
    np.testing.assert_allclose(ys, want, atol=2e-3)


def test_capped_solve_stops_the_stiff_cell_only():
    """Under vmap a step cap stops the stiff cell (``done`` False) and not the easy one, whose
    states equal the uncapped solve's."""
    ks = jnp.asarray([0.5, 200.0])
    th0 = jnp.asarray([1.0])
    # Heun at rtol 1e-2: 38 steps for k = 0.5, 1243 for k = 200 (stability-bound)
    capped = jax.jit(jax.vmap(lambda k: solve.solve_capped(decay, th0, k, 10.0, 5, 1e-2, 1e-4,
                                                           None, 100, "heun")))
    ys, done, steps = capped(ks)
    assert np.asarray(done).tolist() == [True, False]
    assert int(steps[0]) < 100 and int(steps[1]) == 100
    np.testing.assert_allclose(ys[0], solve.solve(decay, th0, ks[0], 10.0, 5, 1e-2, 1e-4,
                                                  solver="heun"), rtol=1e-6)
    _, done, _ = jax.jit(jax.vmap(lambda k: solve.solve_capped(decay, th0, k, 10.0, 5, 1e-2, 1e-4,
                                                            None, 4096, "heun")))(ks)
    assert np.asarray(done).all()


def test_unknown_solver_is_refused():
    with pytest.raises(ValueError, match="solver='rk4'"):
        solve.solve(decay, jnp.ones(2), 1.0, 1.0, 1, solver="rk4")
