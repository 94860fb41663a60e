"""Agreement ACE on a small random GPT-2: every batched shortcut against the direct computation
(per-layer hooks, ``hook_jacobians``), and planted cases with known answers."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis import ace
from mechjax.studies import agreement_cores as ac
from mechjax.interop import gpt2_model_config
from mechjax.metrics import roc_auc
from mechjax.models.transformer import init_params

VERBS = jnp.array([3, 4, 5, 6])


@pytest.fixture(scope="module")
def model():
    cfg = gpt2_model_config(n_layers=2, d_model=16, n_heads=2, d_vocab=12, n_ctx=8)
    params = init_params(jax.random.PRNGKey(0), cfg)
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 9, 24)
    tokens = rng.integers(0, 12, (24, 8)).astype(np.int32)
    prompts = ac.Prompts(jnp.asarray(tokens), jnp.asarray(lengths - 1, jnp.int32),
                         jnp.asarray(np.arange(24) % 2, jnp.int32))
    return cfg, params, prompts


def test_margin_is_plural_minus_singular_logits():
    logits = jnp.zeros((1, 8)).at[0, 3:7].set(jnp.array([1.0, 10.0, 100.0, 1000.0]))
    assert float(ac.margin(logits, VERBS)[0]) == 10.0 + 1000.0 - 1.0 - 100.0


def test_read_layers_matches_hook_jacobians_and_cache(model):
    cfg, params, prompts = model
    h, grad, m = ac.read_layers(params, prompts, cfg, VERBS)
    assert h.shape == grad.shape == (cfg.n_layers, 24, cfg.d_model)
    m_direct = ac.margin(ac.last_logits(params, prompts, cfg), VERBS)
    np.testing.assert_allclose(m, m_direct, rtol=1e-5, atol=1e-5)
    for layer, name in enumerate(ac.resid_names(cfg)):
        # the padding after ``last`` does not matter: Jacobians of the margin read at ``last``
        jac = ace.hook_jacobians(params, prompts.tokens, cfg, name, prompts.last,
                                 out_fn=lambda lg: ac.margin(lg, VERBS))
        np.testing.assert_allclose(grad[layer], jac[:, 0], rtol=1e-4, atol=1e-5)
        acts = ace.activations(params, prompts.tokens, cfg, name)
        acts = acts.reshape(24, 8, -1)[np.arange(24), np.asarray(prompts.last)]
        np.testing.assert_allclose(h[layer], acts, rtol=1e-5, atol=1e-5)


def test_rank1_core_of_a_planted_gradient():
    # Obs sees one direction only (every gradient is a multiple of e_2), Cov is isotropic:
    # the balanced core is e_2, with weight var * mean(g^2).
    rng = np.random.default_rng(1)
    h = jnp.asarray(rng.normal(size=(1, 4000, 5)) * 2.0, jnp.float32)
    grad = jnp.zeros((1, 50, 5)).at[0, :, 2].set(jnp.asarray(rng.normal(size=50)))
    q, mu, weight = ac.rank1_cores(h, grad)
    assert abs(float(q[0, 2])) == pytest.approx(1.0, abs=1e-3)
    np.testing.assert_allclose(mu[0], h[0].mean(0), atol=1e-5)


def test_layer_vmapped_interventions_equal_one_hook_per_layer(model):
    cfg, params, prompts = model
    rng = np.random.default_rng(2)
    q = jnp.asarray(np.linalg.qr(rng.normal(size=(cfg.d_model, 2)))[0].T, jnp.float32)  # [L, D]
    mu = jnp.asarray(rng.normal(size=(2, cfg.d_model)), jnp.float32)
    for mode in ac.MODES:
        batched = ac.intervened_margins(params, prompts, cfg, VERBS, q, mu, mode)
        for layer, name in enumerate(ac.resid_names(cfg)):
            hook = ace.centred_hook(q[layer][:, None], mu[layer], mode, prompts.last)
            direct = ac.margin(ac.last_logits(params, prompts, cfg, {name: hook}), VERBS)
            np.testing.assert_allclose(batched[layer], direct, rtol=1e-4, atol=1e-4)


def test_analyse_model_is_consistent_and_vmaps_over_seeds(model):
    cfg, params, prompts = model
    out = ac.analyse_model(params, prompts, prompts, cfg, VERBS)
    assert float(out.auc_base) == pytest.approx(float(roc_auc(out.margin, prompts.labels)))
    assert int(out.selected) == int(np.argmin(out.auc["flip"]))
    np.testing.assert_allclose(np.linalg.norm(out.direction, axis=1), 1.0, atol=1e-5)
    h, _, _ = ac.read_layers(params, prompts, cfg, VERBS)
    z = np.einsum("lbd,ld->lb", h - out.mean[:, None], out.direction)
    np.testing.assert_allclose(out.coord, z, atol=1e-5)
    np.testing.assert_allclose(out.knob_r2, [np.corrcoef(zl, out.margin)[0, 1] ** 2 for zl in z],
                               atol=1e-5)
    stacked = jax.tree.map(lambda a, b: jnp.stack([a, b]), params,
                           init_params(jax.random.PRNGKey(1), cfg))
    both = jax.vmap(lambda p: ac.analyse_model(p, prompts, prompts, cfg, VERBS))(stacked)
    np.testing.assert_allclose(both.auc["flip"][0], out.auc["flip"], atol=1e-5)
    assert both.coord.shape == (2, cfg.n_layers, 24)


def test_r_squared_of_an_exact_affine_relation_is_one():
    x = jnp.linspace(-1, 1, 11)
    assert float(ac.r_squared(x, 3 * x - 2)) == pytest.approx(1.0, abs=1e-6)
    assert float(ac.r_squared(x, x ** 2)) == pytest.approx(0.0, abs=1e-6)


def test_selected_coords_align_signs_and_spearman():
    m = np.linspace(-1, 1, 20)
    coord = np.stack([np.stack([m, -m]), np.stack([-m ** 3, m])])  # [n=2, L=2, B]
    result = ac.ModelResult(margin=np.stack([m, m]), auc_base=None, auc=None, margins=None,
                            direction=None, mean=None, weight=None, coord=coord, knob_r2=None,
                            selected=np.array([1, 0]))
    z = ac.selected_coords(result)  # model 0 layer 1 (-m, flipped to m), model 1 layer 0
    np.testing.assert_allclose(z[0], m)
    np.testing.assert_allclose(z[1], m ** 3)
    np.testing.assert_allclose(ac.spearman_matrix(z), np.ones((2, 2)), atol=1e-12)
    ties = ac.spearman_matrix(np.array([[1.0, 1.0, 2.0], [0.0, 0.0, 5.0]]))
    assert ties[0, 1] == pytest.approx(1.0)


def test_per_layer_spearman_reads_every_model_at_the_same_depth():
    # layer 0: three models share the margin's order up to sign and a monotone map; layer 1:
    # model 2 is reversed in its second half, so the order agrees only partly
    m = np.linspace(-1, 1, 40)
    rng = np.random.default_rng(0)
    shuffled = m.copy()
    shuffled[20:] = shuffled[20:][::-1]
    coord = np.stack([np.stack([m, -m]), np.stack([-m ** 3, m]), np.stack([np.exp(m), shuffled])])
    result = ac.ModelResult(margin=np.stack([m, m, m]), auc_base=None, auc=None, margins=None,
                            direction=None, mean=None, weight=None, coord=coord, knob_r2=None,
                            selected=rng.integers(0, 2, 3))
    per_layer = ac.per_layer_spearman(result)
    assert per_layer[0] == pytest.approx(1.0)
    rho_1 = ac.spearman_matrix(ac.aligned_coords(result, np.array([1, 1, 1])))
    assert per_layer[1] == pytest.approx((rho_1[0, 1] + rho_1[0, 2] + rho_1[1, 2]) / 3)
    assert rho_1[0, 1] == pytest.approx(1.0) and rho_1[0, 2] < 0.9
    assert np.isnan(ac.per_layer_spearman(result._replace(coord=coord[:1], margin=m[None]))[0])
