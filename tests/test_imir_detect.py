"""Circuit detection (mechjax.analysis.imir.detection.detector): planted coordinates are recovered
by the
projection with the planted explained fraction, elimination keeps exactly what matters, units /
circuits / canonical kinds follow the documented rules, and bad input fails in one line before
any compute."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.detection import circuits as cc
from mechjax.analysis.imir.detection import detector as dt
from mechjax.analysis.imir.detection import explain as ex
from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.detection import elimination as eliminate_mod
from mechjax.analysis.imir.detection.elimination import eliminate
from mechjax.tasks import blocklist as bl

TASK = bl.BlockListSpec(n_common=8, n_rare=8, n_blocks=4)
FRAME = ib.make_frame(ib.TokenStructure.from_spec(TASK), TASK.seq_len)
BASIS = ib.make_basis(FRAME)
T = TASK.seq_len
# the ideal induction head of tests/test_imir_basis.py, on rare tokens only: previous-token
# attention, match of the query against what layer 1 wrote, a helper that stops layer 2 from
# reading the position right after the query (whose previous token is the query itself), copy
INDUCTION = {"L0H0 I|M|I": 30.0, "L1H0 I|I_rare|O1": 30.0, f"L1H0 I|M^{T - 1}|I": -30.0,
             "U O2|I_rare": 10.0}


def planted_theta(plant, noise=0.0, seed=0):
    theta = noise * np.asarray(jax.random.normal(jax.random.key(seed), (BASIS.size,)))
    for name, value in plant.items():
        theta[BASIS.index(name)] = value
    return theta


def params_of(theta, off_manifold=None):
    w = proj.weights(BASIS, jnp.asarray(theta, jnp.float32))
    if off_manifold is not None:
        w = {k: v + off_manifold[k] for k, v in w.items()}
    return {**ib.fixed_params(FRAME), **w}


def off_manifold_noise(seed=1):
    """Random weights minus their projection: orthogonal to the manifold."""
    keys = jax.random.split(jax.random.key(seed), 3)
    raw = {k: jax.random.normal(kk, v.shape) for (k, v), kk in
           zip(ib.zero_trainables(FRAME).items(), keys)}
    return proj.residual(BASIS, raw)


def test_projection_recovers_planted_theta_and_explained_fraction():
    theta = planted_theta({}, noise=1.0, seed=3)
    w = proj.weights(BASIS, jnp.asarray(theta, jnp.float32))
    noise = off_manifold_noise()
    w_norm2 = sum(float(jnp.sum(v ** 2)) for v in w.values())
    n_norm2 = sum(float(jnp.sum(v ** 2)) for v in noise.values())
    scale = np.sqrt(0.5 * w_norm2 / n_norm2)          # off-manifold energy = half the planted
    params = {**ib.fixed_params(FRAME), **{k: w[k] + scale * noise[k] for k in w}}
    eff = ex.effective_weights(params)
    ex.check_shapes(eff, FRAME)
    assert ex.check_assumptions(eff, FRAME) == []
    got = np.asarray(proj.coords(BASIS, eff.trainables()))
    np.testing.assert_allclose(got, theta, atol=2e-4 * np.abs(theta).max())
    frac = ex.explained_fractions(BASIS, eff.trainables())
    assert frac["total"] == pytest.approx(1 / 1.5, abs=1e-4)
    # per matrix: each matrix's own planted / (planted + noise) energy
    for k in w:
        parts = [(w[k][h], noise[k][h]) for h in range(FRAME.n_heads)] if k.endswith("KQ") \
            else [(w[k], noise[k])]
        for h, (a, b) in enumerate(parts):
            a2, b2 = float(jnp.sum(a ** 2)), scale ** 2 * float(jnp.sum(b ** 2))
            key = f"{k}[{h}]" if k.endswith("KQ") else k
            assert frac[key] == pytest.approx(a2 / (a2 + b2), abs=1e-4)


def test_eliminate_keeps_exactly_what_matters_on_a_synthetic_loss():
    # theta = 1 everywhere; removing 2, 5 or 7 costs 1.0, any other 1e-3, except that 3 and 4
    # are redundant copies: removing one is free, removing both costs 1
    n = 10
    w = np.full(n, 1e-3)
    w[[2, 5, 7]] = 1.0
    w[[3, 4]] = 0.0

    def loss(theta):
        return jnp.sum(jnp.asarray(w) * (1 - theta) ** 2) + (1 - theta[3]) * (1 - theta[4])

    res = eliminate(loss, jnp.ones(n), tau=0.1)
    kept = set(np.flatnonzero(res.kept).tolist())
    assert {2, 5, 7} <= kept and len(kept & {3, 4}) == 1 and len(kept) == 4
    assert res.n_accepted == 6 and res.loss_after[-1] <= res.budget
    # the bulk pre-pass (sizes put 3 and 4 first: it may take 3 but not both) and lazy
    # screening reach the same circuit
    res2 = eliminate(loss, jnp.ones(n), tau=0.1, exact_max=4, screen=3, refresh=2,
                     size=np.asarray(w) + np.arange(n) * 1e-6)
    assert res2.order[0] == 3 and res2.n_accepted == 6
    assert set(np.flatnonzero(res2.kept).tolist()) == {2, 4, 5, 7}
    with pytest.raises(ValueError, match=r"tau=0"):
        eliminate(loss, jnp.ones(n), tau=0)


def test_lazy_screening_stops_only_on_a_current_table():
    """Removing 0 makes 1 cheap (1 costs 1 more while 0 is there). Screening one candidate from
    a table measured before 0 went, the next pick (2) is over the budget, yet 1 is now cheap:
    the stop is re-checked on a fresh table and 1 goes too, as in the exact greedy."""
    c = jnp.asarray([0.01, 0.02, 0.5, 0.6])

    def loss(theta):
        return jnp.sum(c * (1 - theta)) + (1 - theta[1]) * theta[0]

    exact = eliminate(loss, jnp.ones(4), tau=0.1)
    # sizes that make the bulk pre-pass try 2 and 3 first (too costly: it removes nothing)
    lazy = eliminate(loss, jnp.ones(4), tau=0.1, exact_max=1, screen=1, refresh=100,
                     size=np.asarray([1.0, 1.0, 0.0, 0.0]))
    for res in (exact, lazy):
        assert res.order[: res.n_accepted].tolist() == [0, 1]
        assert set(np.flatnonzero(res.kept).tolist()) == {2, 3}


def test_staged_candidates_cost_what_the_plain_loss_says():
    """The layer-staged ablations (each candidate re-runs only the layers it changes) equal
    the plain loss of every ablated model, for candidates of every layer and the readout."""
    theta = jnp.asarray(planted_theta(INDUCTION, noise=0.3, seed=7), jnp.float32)
    batch = bl.sample(TASK, jax.random.key(2), {"f_r": 0.5, "f_v": 0.2}, 64)
    staged = dt.staged_loss(BASIS)
    loss, _, _ = dt.model_fns(BASIS)
    mask = np.ones(BASIS.size, bool)
    mask[::3] = False                                  # some coordinates already removed
    idx = np.concatenate([np.flatnonzero((staged.stage_of == s) & mask)[:2]
                          for s in range(FRAME.n_layers + 1)])
    got = eliminate_mod._Evaluator(loss, theta, (batch,), 2, staged).ablations(mask, idx)
    ablated = jnp.asarray(mask, jnp.float32)[None] * (1 - jax.nn.one_hot(idx, BASIS.size))
    want = jax.jit(jax.vmap(loss, (0, None)))(theta * ablated, batch)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_detect_keeps_exactly_the_planted_induction_circuit():
    """A planted induction head plus small random coordinates, pure in-context data: the
    detector keeps exactly the four planted coordinates; alpha, beta and gamma are canonical,
    the M^(T-1) suppression is a helper; accuracy is kept."""
    theta = planted_theta(INDUCTION, noise=0.01, seed=5)
    tp = {"f_r": 1.0, "f_v": 0.0}
    batch = bl.sample(TASK, jax.random.key(0), tp, 256)
    eval_batch = bl.sample(TASK, jax.random.key(1), tp, 256)
    # exact_max=16: the bulk pre-pass takes the noise, the exact greedy decides the rest
    det = dt.detect(params_of(theta), BASIS, batch, tau=0.1, eval_batch=eval_batch,
                    exact_max=16)
    assert det.elimination.order.size > 50
    assert sorted(det.kept_names) == sorted(INDUCTION)
    assert det.kinds == {"L0H0 I|M|I": "shift", "L1H0 I|I_t|O1": "match",
                         f"L1H0 I|M^{T - 1}|I": "helper", "U O2|I_t": "copy"}
    rep = dt.report(det)
    assert rep["abgd_found"] == ["alpha", "beta", "gamma"]
    assert rep["manifold_explained_fraction"] == pytest.approx(1.0, abs=1e-5)
    assert det.accuracy["full"] == 1.0 and det.accuracy["circuit"] == 1.0
    assert det.accuracy["canonical"] < 0.9          # the helper matters
    (circ,) = det.circuits                          # one readout path: O2
    assert circ.readout == "O2" and set(circ.units) == set(det.kinds)
    assert det.unread == ()


def test_units_kinds_and_circuits_of_a_two_hop_circuit_in_five_layers():
    spec = bl.BlockListSpec(kind="khop", hops=2, n_common=6, n_rare=5, n_blocks=4)
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len, n_layers=5)
    basis = ib.make_basis(frame)
    names = ["L0H0 I|M|I",                   # prev (layer 1)
             "L1H0 I|I_common|O1", "L1H0 I|I_rare|O1",   # hop 1 (one unit)
             "L3H0 O2|I_rare|O1",            # hop 2 reads hop 1's copy
             "U O4|I_rare",                  # copy readout of hop 2
             "L2H0 I|M^2|I",                 # a helper nobody reads
             "L4H0 I|M|I",                   # previous-token score no match reads: helper
             "U I|C", "U I|J[common,common]"]
    us = cc.units(basis, [basis.index(n) for n in names])
    kinds = cc.classify(us)
    assert kinds == {"L0H0 I|M|I": "shift", "L1H0 I|I_t|O1": "match", "L3H0 O2|I_t|O1": "match",
                     "U O4|I_t": "copy", "L2H0 I|M^2|I": "helper", "L4H0 I|M|I": "helper",
                     "U I|C": "iwl",
                     "U I|J[common,common]": "helper"}
    circs, unread = cc.circuits(basis, us)
    by = {c.readout: c for c in circs}
    assert set(by) == {"I", "O4"}
    assert set(by["O4"].units) == {"U O4|I_t", "L3H0 O2|I_t|O1", "L1H0 I|I_t|O1", "L0H0 I|M|I"}
    assert ("L3H0 O2|I_t|O1", "L1H0 I|I_t|O1") in by["O4"].edges
    assert set(by["I"].units) == {"U I|C", "U I|J[common,common]"}
    assert unread == ["L2H0 I|M^2|I", "L4H0 I|M|I"]
    # a match whose key is not a previous-token head's output is a helper
    us2 = cc.units(basis, [basis.index(n) for n in ["L1H0 I|I_rare|O1", "U O2|I_rare"]])
    assert set(cc.classify(us2).values()) == {"helper"}


def test_standard_qkv_model_gets_a_warning_with_the_explained_fraction():
    theta = planted_theta(INDUCTION)
    p = params_of(theta)
    d = FRAME.d_model
    # the same model written with W_Q, W_K (d_head = d): W_Q = W_KQ sqrt(d), W_K = I
    std = {k: v for k, v in p.items() if not k.endswith("W_KQ")}
    for l in range(2):
        std[f"blocks.{l}.attn.W_Q"] = p[f"blocks.{l}.attn.W_KQ"] * np.sqrt(d)
        std[f"blocks.{l}.attn.W_K"] = jnp.broadcast_to(jnp.eye(d), (1, d, d))
    # learned (random) embeddings
    std["embed.W_E"] = jax.random.normal(jax.random.key(2), p["embed.W_E"].shape) * 0.1
    tp = {"f_r": 1.0, "f_v": 0.0}
    batch = bl.sample(TASK, jax.random.key(0), tp, 64)
    with pytest.warns(dt.ManifoldWarning, match=r"standard W_Q/W_K.*token embeddings.*manifold "
                      r"explains 1\.000"):
        det = dt.detect(std, BASIS, batch, tau=0.1, exact_max=16)
    assert any("token embeddings" in d for d in det.deviations)


@pytest.mark.parametrize("bad, match", [
    ("tau", r"^tau=-0\.5: the loss budget must be a number > 0$"),
    ("width", r"^weights have d_model=40; the IMIR frame of this task needs d_model=92"),
    ("mlp", r"^model has MLP weights \(blocks\.0\.mlp\.W_in, \.\.\.\); circuit detection needs "
            r"an attention-only model"),
    ("layers", r"^weights have n_layers=3; the IMIR frame of this task needs n_layers=2"),
])
def test_bad_input_fails_in_one_line_before_compute(bad, match, monkeypatch):
    called = []
    monkeypatch.setattr(dt, "eliminate", lambda *a, **k: called.append(1))
    monkeypatch.setattr(proj, "coords", lambda *a, **k: called.append(1))
    p = params_of(np.zeros(BASIS.size))
    tau = 0.1
    if bad == "tau":
        tau = -0.5
    elif bad == "width":
        p = {k: np.zeros([40 if s == FRAME.d_model else s for s in v.shape]) for k, v in p.items()}
    elif bad == "mlp":
        p = {**p, "blocks.0.mlp.W_in": np.ones((FRAME.d_model, 4))}
    elif bad == "layers":
        p = {**p, "blocks.2.attn.W_KQ": p["blocks.1.attn.W_KQ"],
             "blocks.2.attn.W_OV": p["blocks.1.attn.W_OV"]}
    with pytest.raises(ex.DetectError, match=match) as err:
        dt.detect(p, BASIS, {}, tau=tau)
    assert "\n" not in str(err.value) and not called


def test_cost_ordered_bulk_removes_the_cheap_at_once_and_keeps_what_matters():
    """Many small coordinates of smoothly decaying size (no gap) and three that matter: the
    cost-ordered bulk removes the cheap ones in a few bisections (far fewer loss evaluations
    than single steps) and keeps exactly the three."""
    n = 200
    w = np.geomspace(1e-3, 1e-6, n)
    w[[10, 50, 120]] = 1.0

    def loss(theta):
        return jnp.sum(jnp.asarray(w) * (1 - theta) ** 2)

    plain = eliminate(loss, jnp.ones(n), tau=0.1, exact_max=8, screen=4, refresh=4)
    fast = eliminate(loss, jnp.ones(n), tau=0.1, exact_max=8, screen=4, refresh=4, cost_bulk=0.5)
    for res in (plain, fast):
        assert set(np.flatnonzero(res.kept).tolist()) == {10, 50, 120}
    assert fast.n_evals < plain.n_evals / 3


def test_exact_mode_removes_in_the_naive_greedy_order_and_fast_does_not():
    """``mode="exact"`` (staged candidates, every active coordinate each step) follows the naive
    greedy (plain loss, full table) removal for removal; the fast mode's screening on the same
    model does not, so the comparison can tell a shortcut that changes the order."""
    theta = jnp.asarray(planted_theta(INDUCTION, noise=0.3, seed=7), jnp.float32)
    batch = bl.sample(TASK, jax.random.key(2), {"f_r": 0.5, "f_v": 0.2}, 64)
    loss, _, _ = dt.model_fns(BASIS)
    kw = dict(tau=0.5, args=(batch,), overshoot=BASIS.size)
    naive = eliminate(loss, theta, exact_max=BASIS.size, **kw)
    exact = eliminate(loss, theta, mode="exact", exact_max=4, screen=2, staged=dt.staged_loss(BASIS),
                      **kw)
    fast = eliminate(loss, theta, exact_max=4, screen=2, refresh=50, bulk_fraction=0.0, **kw)
    assert len(naive.order) == BASIS.size
    np.testing.assert_array_equal(exact.order, naive.order)
    assert exact.n_accepted == naive.n_accepted
    np.testing.assert_allclose(exact.loss_after, naive.loss_after, rtol=1e-5)
    assert not np.array_equal(fast.order, naive.order)
    with pytest.raises(ValueError, match="mode='greedy'"):
        eliminate(loss, theta, tau=0.5, args=(batch,), mode="greedy")


def test_exact_mode_is_the_same_path_with_and_without_the_last_layer_closed_form():
    """The whole exact greedy path (removal order, n_accepted, losses) on the planted circuit +
    noise with the last layer's closed form (``forward.ablation``) equals the one with a staged
    suffix per candidate."""
    theta = jnp.asarray(planted_theta(INDUCTION, noise=0.3, seed=7), jnp.float32)
    batch = bl.sample(TASK, jax.random.key(2), {"f_r": 0.5, "f_v": 0.2}, 64)
    loss, _, _ = dt.model_fns(BASIS)
    kw = dict(tau=0.5, args=(batch,), overshoot=BASIS.size, mode="exact")
    closed = eliminate(loss, theta, staged=dt.staged_loss(BASIS), **kw)
    plain = eliminate(loss, theta, staged=dt.staged_loss(BASIS, closed=False), **kw)
    assert dt.staged_loss(BASIS).closed and 0 < closed.n_accepted < BASIS.size
    np.testing.assert_array_equal(closed.order, plain.order)
    assert closed.n_accepted == plain.n_accepted
    np.testing.assert_allclose(closed.loss_after, plain.loss_after, rtol=1e-5)
