"""Clock / pizza diagnostics recover planted algorithms: closed-form clock and pizza logits with
known values, a sum + distance mixture with a known distance irrelevance, and a hand-built
transformer whose logits read only E_a + E_b under uniform attention."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.studies import clock_pizza as cp
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import forward, init_params

P, W = 31, 2 * np.pi * 3 / 31  # one key frequency k = 3


def unit_circle(x):
    return jnp.stack([jnp.cos(W * x), jnp.sin(W * x)], -1)


def as_complex(e):
    return e[0] + 1j * e[1]


def clock(e_a, e_b):
    """Nanda's clock: Q_c = Re(z_a z_b conj u_c), the two rotations multiplied."""
    u = unit_circle(jnp.arange(P))
    prod = as_complex(e_a) * as_complex(e_b)
    return jnp.real(prod) * u[:, 0] + jnp.imag(prod) * u[:, 1]


def pizza(e_a, e_b):
    """Zhong's pizza: a function of the midpoint h = E_a + E_b only, Q_c = Re(h^2 conj u_c),
    whose correct logit |h|^2 = 4 cos^2(w (a - b) / 2) depends on the distance alone."""
    u = unit_circle(jnp.arange(P))
    h = as_complex(e_a + e_b) ** 2
    return jnp.real(h) * u[:, 0] + jnp.imag(h) * u[:, 1]


def symmetricity(logit_fn, embed):
    return float(jax.jit(lambda e: cp.gradient_symmetricity(logit_fn, e, ABC))(embed))


def irrelevance(logit_fn, embed):
    return float(jax.jit(lambda e: cp.distance_irrelevance(correct_table(logit_fn, e)))(embed))


def correct_table(logit_fn, embed):
    a, b = np.meshgrid(np.arange(P), np.arange(P), indexing="ij")
    logits = jax.vmap(logit_fn)(embed[a.ravel()], embed[b.ravel()])  # [p^2, p]
    return logits[np.arange(P * P), (a.ravel() + b.ravel()) % P].reshape(P, P)


ABC = cp.triples(P, 100, seed=0)


def test_triples_are_distinct_and_in_range():
    assert ABC.shape == (100, 3) and ABC.min() >= 0 and ABC.max() < P
    assert len({tuple(t) for t in ABC}) == 100


def test_clock_gradient_symmetricity_is_mean_cos_of_the_input_distance():
    # radii vary per input, which changes neither gradient's direction
    radii = 0.5 + jax.random.uniform(jax.random.PRNGKey(0), (P, 1))
    embed = radii * unit_circle(jnp.arange(P))
    expected = np.mean(np.cos(W * (ABC[:, 0] - ABC[:, 1])))
    assert symmetricity(clock, embed) == pytest.approx(expected, abs=1e-5)
    assert abs(expected) < 0.3  # the clock side: far from symmetric
    # its correct logit r_a r_b ignores the distance
    assert irrelevance(clock, embed) > 0.8


def test_pizza_is_symmetric_and_distance_dependent():
    embed = unit_circle(jnp.arange(P))
    assert symmetricity(pizza, embed) == pytest.approx(1.0, abs=1e-5)
    # std along the wrong axis (over distances at a fixed sum) would give about 1 here
    assert irrelevance(pizza, embed) == pytest.approx(0, abs=1e-4)


def test_asymmetric_logits_control():
    """Q_c = cos(w (a - c)) + cos(2 w (b - c)): gradients through different frequencies."""
    u1, u2 = unit_circle(jnp.arange(P)), unit_circle(2 * jnp.arange(P))

    def asym(e_a, e_b):
        e_b2 = jnp.stack([e_b[0] ** 2 - e_b[1] ** 2, 2 * e_b[0] * e_b[1]])  # doubled angle
        return u1 @ e_a + u2 @ e_b2
    assert abs(symmetricity(asym, unit_circle(jnp.arange(P)))) < 0.3


def test_distance_irrelevance_of_a_sum_plus_distance_table():
    """L[a, b] = f(a - b) + g(a + b): within a distance only g varies, so q = std g /
    sqrt(var f + var g) exactly (p odd: the (sum, distance) grid is every pair once)."""
    rng = np.random.default_rng(1)
    f, g = rng.normal(size=P) * 2.0, rng.normal(size=P)
    a, b = np.meshgrid(np.arange(P), np.arange(P), indexing="ij")
    table = f[(a - b) % P] + g[(a + b) % P]
    expected = g.std() / np.sqrt(f.var() + g.var())
    assert float(cp.distance_irrelevance(jnp.asarray(table))) == pytest.approx(expected, rel=1e-5)


def sum_reading_transformer():
    """d_model = 8: W_E writes dims 0-3, attention copies them (W_V W_O, 100x larger) into dims
    4-7, the MLP reads and writes dims 4-7 only and W_U reads dims 4-7 only. Under uniform
    attention the logits are a function of E_a + E_b except for the direct path of E_b's own
    dims 4-7 (the residual stream: no transformer is exactly symmetric), 100x weaker."""
    cfg = ModelConfig(n_layers=1, d_model=8, n_heads=1, d_head=4, d_mlp=16, d_vocab=P,
                      n_ctx=2, causal=False, positional_embedding=False)
    params = init_params(jax.random.PRNGKey(3), cfg)
    lo, hi = jnp.arange(8) < 4, jnp.arange(8) >= 4
    params["embed.W_E"] = params["embed.W_E"] * lo
    params["blocks.0.attn.W_V"] = params["blocks.0.attn.W_V"] * lo[None, :, None]
    params["blocks.0.attn.W_O"] = params["blocks.0.attn.W_O"] * hi[None, None, :] * 100.0
    params["blocks.0.mlp.W_in"] = params["blocks.0.mlp.W_in"] * hi[:, None] * 3.0
    params["blocks.0.mlp.W_out"] = params["blocks.0.mlp.W_out"] * hi[None, :]
    params["unembed.W_U"] = params["unembed.W_U"] * hi[:, None]
    # strong query-key scores so that the rate-1 pattern is far from uniform
    params["blocks.0.attn.W_Q"] = params["blocks.0.attn.W_Q"] * 40.0
    return params, cfg


def test_transformer_measures_at_rate_zero_and_one():
    params, cfg = sum_reading_transformer()
    sym = cp.gradient_symmetricity_measure
    assert float(jax.jit(sym(rate=0.0), static_argnums=1)(params, cfg)) > 0.99
    assert float(jax.jit(sym(rate=1.0), static_argnums=1)(params, cfg)) < 0.95  # softmax attention breaks the symmetry
    # the model's correct-logit table is the forward pass's, read at the answers
    table = cp.correct_logits(params, cfg)
    logits = forward(params, jnp.asarray([[5, 9], [30, 2]]), cfg)[:, -1]
    assert float(table[5, 9]) == pytest.approx(float(logits[0, 14]), rel=1e-6)
    assert float(table[30, 2]) == pytest.approx(float(logits[1, 1]), rel=1e-6)
    assert set(cp.measures(0.5)) == {"clock_pizza/grad_sym", "clock_pizza/dist_irr"}


def test_measures_vmap_over_seeds():
    """measure_table vmaps a measure over seeds: the vmapped values equal the one-seed ones."""
    cfg = ModelConfig(n_layers=1, d_model=8, n_heads=2, d_head=4, d_mlp=16, d_vocab=P,
                      n_ctx=2, causal=False)
    stacked = jax.vmap(lambda k: init_params(k, cfg))(jax.random.split(jax.random.PRNGKey(0), 2))
    for fn in cp.measures(0.7).values():
        many = jax.jit(jax.vmap(fn, in_axes=(0, None)), static_argnums=1)(stacked, cfg)
        one = jax.jit(fn, static_argnums=1)({k: v[1] for k, v in stacked.items()}, cfg)
        assert float(many[1]) == pytest.approx(float(one), rel=1e-5)


def test_classify():
    out = cp.classify(np.array([0.99, 0.3, 0.99, 0.3]), np.array([0.2, 0.8, 0.8, 0.2]))
    assert out.tolist() == ["pizza", "clock", "mixed", "mixed"]
