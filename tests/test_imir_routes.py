"""Route naming and winner classification (mechjax.analysis.imir.routes.route_units) on planted
circuits."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis.imir.manifold import submanifold as subm
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.routes import init_map as im
from mechjax.analysis.imir.routes import route_units as rt
from mechjax.tasks import blocklist as bl

TASK = bl.BlockListSpec(kind="recall", n_common=6, n_rare=6, n_blocks=4)
PLANT = 30.0   # attention scores large enough to make each head's pattern hard
COPY = 10.0


@pytest.fixture(scope="module")
def problem():
    return im.route_problem(TASK, 3, 1, {"f_r": 1.0, "f_v": 0.0})


def test_three_layer_routes_and_shared_units(problem):
    d = problem.dirs
    assert d.route_names == ("L1>L2", "L1>L3", "L2>L3")
    assert [r.units for r in d.routes] == [
        ("L0H0 I|M|I", "L1H0 I|I_t|O1", "U O2|I_t"),
        ("L0H0 I|M|I", "L2H0 I|I_t|O1", "U O3|I_t"),
        ("L1H0 I|M|I", "L2H0 I|I_t|O2", "U O3|I_t")]
    # L1>L2 and L1>L3 share the previous-token head, L1>L3 and L2>L3 the readout
    assert len(d.names) == 7
    assert d.route_units[0, 0] == d.route_units[1, 0]
    assert d.route_units[1, 2] == d.route_units[2, 2]
    assert len(set(d.match_units())) == 3
    # every direction sums the coordinates of its unit: one for I|M|I, one per token class
    # for I_t
    names = problem.basis.names()
    for u, row in zip(d.names, d.phi):
        members = [names[i] for i in np.flatnonzero(row)]
        expected = 1 if "|M|" in u else 2
        assert len(members) == expected and all(m.split(" ")[0] == u.split(" ")[0]
                                                for m in members)


def test_two_layer_route_is_alpha_beta_gamma():
    spec = bl.BlockListSpec(kind="recall", n_common=4, n_rare=4, n_blocks=3)
    basis = ib.make_basis(ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len))
    d = rt.route_directions(basis, rt.induction_routes(basis))
    assert d.route_names == ("L1>L2",)
    _, phi = subm.abgd_coordinates(basis)
    np.testing.assert_array_equal(d.phi, phi[:3])  # alpha, beta, gamma (delta is not a route)


def test_unknown_unit_and_too_shallow_frame_are_refused():
    spec = bl.BlockListSpec(kind="recall", n_common=4, n_rare=4, n_blocks=3)
    basis = ib.make_basis(ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len, 1))
    with pytest.raises(ValueError, match="at least 2 layers"):
        rt.induction_routes(basis)
    basis2 = ib.make_basis(ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len))
    bad = rt.Route("x", (0, 0), (1, 0), ("L0H0 I|M|I", "L1H0 I|I_t|O9", "U O2|I_t"))
    with pytest.raises(KeyError, match="O9"):
        rt.route_directions(basis2, [bad])


def _planted(problem, route: rt.Route) -> np.ndarray:
    """An induction circuit on ``route`` alone: hard previous-token attention, hard match
    (away from the query's own next position), copy readout."""
    b, t = problem.basis, TASK.seq_len
    (p, _), (m, _) = route.prev_head, route.match_head
    theta = np.zeros(b.size, np.float32)
    theta[b.index(f"L{p}H0 I|M|I")] = PLANT
    for cls in ("rare", "common"):
        theta[b.index(route.units[1].replace("I_t", f"I_{cls}"))] = PLANT
        theta[b.index(route.units[2].replace("I_t", f"I_{cls}"))] = COPY
    theta[b.index(f"L{m}H0 I|M^{t - 1}|I")] = -PLANT
    return theta


def test_planted_circuits_are_classified_by_their_layers(problem):
    loss = problem.loss()
    masks = rt.layer_masks(problem.basis)
    # the three planted routes and the untrained model (zero weights), in one program
    thetas = jnp.asarray(np.stack([_planted(problem, r) for r in problem.dirs.routes]
                                  + [np.zeros(problem.basis.size, np.float32)]))
    rises, losses = (np.asarray(x) for x in jax.jit(jax.vmap(
        lambda th: (rt.ablation_rises(loss, th, masks), loss(th))))(thetas))
    assert np.all(losses[:3] < 0.1 * np.log(TASK.n_tokens))  # each planted circuit works
    # each is charged to its own route, and the untrained model to none
    np.testing.assert_array_equal(rt.winners(rises, problem.dirs, 0.01), [0, 1, 2, -1])
    # the unused layer is idle: its ablation costs nothing, the other two cost much
    assert np.all(rt.winner_margin(rises[:3]) > 0.9)


def test_winners_read_the_two_largest_rises(problem):
    d = problem.dirs
    rises = np.array([[1.0, 0.8, 0.0], [0.9, 0.0, 0.7], [0.0, 0.5, 0.6], [0.5, 0.005, 0.001]])
    np.testing.assert_array_equal(rt.winners(rises, d, 0.01), [0, 1, 2, -1])
    np.testing.assert_allclose(rt.winner_margin(rises)[:3], 1.0)


def test_route_weights_and_largest_initial(problem):
    d = problem.dirs
    v = np.arange(1.0, 8.0)
    w = np.asarray(rt.route_weights(jnp.asarray(v), d))
    np.testing.assert_allclose(w, [np.prod(v[d.route_units[r]]) for r in range(3)])
    assert rt.largest_initial(w) == int(np.argmax(w))


def test_settled_reads_the_last_quarter_of_the_horizon():
    w = np.array([[0, 1, 2, 2, 2, 2, 2, 2, 2],     # changes early: settled
                  [0, 0, 0, 0, 0, 0, 0, 1, 1],     # changes in the last quarter: not settled
                  [1, 1, 1, 1, 1, 1, 1, 1, 2]])    # changes at the last save: not settled
    assert rt.settled(w).tolist() == [True, False, False]
    assert rt.settled(w, last=0.0).tolist() == [True, True, False]   # the last two saves
