"""Initial points, read-offs and the route Jacobian of mechjax.analysis.imir.routes.init_map."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.dynamics import reference as ode
from mechjax.analysis.imir.routes import init_map as im
from mechjax.tasks.blocklist.population import symmetric_support
from mechjax.tasks import blocklist as bl

TASK = bl.BlockListSpec(kind="recall", n_common=6, n_rare=6, n_blocks=4)


@pytest.fixture(scope="module")
def problem():
    return im.route_problem(TASK, 3, 1, {"f_r": 1.0, "f_v": 0.0})


def test_route_field_is_the_exact_model_and_equals_the_enumerated_field(problem):
    """The route maps integrate the exact model (pruned to the classes of positive probability
    at the task parameters); at random points of the 3-layer manifold its field equals the
    enumerated reference's (the engine on ``symmetric_support``, pruned alike)."""
    tp = problem.tp()
    assert 0 < problem.model.classes.size < exact.make(TASK, 3, 1).classes.size
    sup = symmetric_support(TASK).prune(tp)
    pop = ode.population_loss_fn(problem.basis, sup)
    ref = ode.enumerated_field(problem.basis, pop)
    theta = 0.3 * jax.random.normal(jax.random.key(0), (problem.basis.size,))
    got = np.asarray(jax.jit(problem.field())(theta))
    want = np.asarray(jax.jit(lambda th: ref(th, tp))(theta))
    assert np.linalg.norm(got - want) < 1e-5 * np.linalg.norm(want)


def test_map_inits_put_the_asked_values_on_the_route_units(problem):
    scales, factors = [0.1, 0.3], np.array([0.0, 0.5, 2.0])
    th = im.map_inits(problem, scales, (0, 2), factors)
    assert th.shape == (2, 3, 3, problem.basis.size)
    v = np.asarray(problem.values(jnp.asarray(th)))
    mx, my = problem.dirs.match_units()[[0, 2]]
    others = [u for u in range(len(problem.dirs.names)) if u not in (mx, my)]
    np.testing.assert_allclose(v[1, 2, 1, mx], 0.3 * 2.0, rtol=1e-5)
    np.testing.assert_allclose(v[1, 2, 1, my], 0.3 * 0.5, rtol=1e-5)
    np.testing.assert_allclose(v[0][..., others], 0.1, rtol=1e-5)


def test_boundary_cells_and_win_fractions(problem):
    w = np.zeros((4, 4), int)
    w[2:, :] = 1          # one straight boundary between rows 1 and 2
    assert im.boundary_cells(w) == 8
    assert im.boundary_cells(np.zeros((4, 4), int)) == 0
    f = im.win_fractions(np.array([0, 0, 1, -1]), problem.dirs)
    assert f == {"L1>L2": 0.5, "L1>L3": 0.25, "L2>L3": 0.0, "none": 0.25}


def test_route_drive_sums_each_routes_units(problem):
    d = problem.dirs
    n = len(d.names)
    jac = np.arange(n * n, dtype=float).reshape(n, n)
    v = np.linspace(1.0, 2.0, n)
    drive = im.route_drive(jac, v, d)
    q, r = 2, 0
    mq = d.match_units()[q]
    assert drive[q, r] == pytest.approx(sum(jac[mq, u] * v[u] for u in d.route_units[r]))


def test_route_jacobian_sees_the_trilinear_coupling(problem):
    """At a point with only route L1>L2's units on, its match grows with its previous-token and
    copy units (stimulation, positive), and the idle route L2>L3's match does not feel them."""
    d = problem.dirs
    v = np.zeros(len(d.names))
    v[d.route_units[0]] = 0.5
    jac = im.route_jacobians(problem, jnp.asarray((v @ d.phi)[None], jnp.float32))[0]
    prev, match, copy = d.route_units[0]
    assert jac[match, prev] > 0 and jac[match, copy] > 0
    assert abs(jac[d.match_units()[2], prev]) < 0.1 * jac[match, prev]
