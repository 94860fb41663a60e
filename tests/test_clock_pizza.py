"""Clock / pizza diagnostics recover planted algorithms: closed-form clock and pizza logits with
known values, a sum + distance mixture with a known distance irrelevance, and a hand-built
transformer whose logits read only E_a + E_b under uniform attention."""
import functools

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


@functools.partial(jax.jit, static_argnums=1)
def _logit_grad(params, cfg, deltas, tokens, i):
    """The gradient of the correct logit of row ``i`` of ``tokens`` with respect to a shift of
    each hook point named in ``deltas`` (all zeros)."""
    def logit(deltas):
        logits = forward(params, tokens, cfg, lambda name, x: x + deltas.get(name, 0.0))
        return logits[i, -1, (tokens[i, 0] + tokens[i, 1]) % P]
    return jax.grad(logit)(deltas)


def rounding_bound(params, cfg, tokens, i):
    """First-order bound on the float32 rounding error of the correct logit on ``tokens[i]``
    in ``sum_reading_transformer`` (no LayerNorm, no biases), however its sums are ordered:
    over every intermediate, eps times its rounding steps (a reduction of n terms: n) times the
    sum of its summands' magnitudes (not its value's: a logit near zero is a sum of larger
    terms), times how much it moves the logit (the gradient)."""
    eps = float(jnp.finfo(jnp.float32).eps)
    c, pre = int(tokens[i, 0] + tokens[i, 1]) % P, "blocks.0."
    acts = {}

    def record(name, x):
        acts[name] = jnp.abs(x)
        return x
    forward(params, tokens, cfg, record)
    w = {k: jnp.abs(v) for k, v in params.items()}
    x0, q, k, v = (acts[n] for n in ("hook_embed", pre + "attn.hook_q", pre + "attn.hook_k",
                                      pre + "attn.hook_v"))
    pattern, z, attn_out, x1, h, mlp_out, x2 = (acts[pre + n] for n in (
        "attn.hook_pattern", "attn.hook_z", "hook_attn_out", "hook_resid_mid", "mlp.hook_post",
        "hook_mlp_out", "hook_resid_post"))

    def project(x, name):  # |x| @ |W| per head: [b, p, h, e]
        return jnp.moveaxis(x @ w[pre + "attn." + name][:, None], 0, 2)
    n_keys = cfg.n_ctx
    # hook point -> (rounding steps of one element, sum of its summands' magnitudes)
    local = {
        pre + "attn.hook_q": (cfg.d_model, project(x0, "W_Q")),
        pre + "attn.hook_k": (cfg.d_model, project(x0, "W_K")),
        pre + "attn.hook_v": (cfg.d_model, project(x0, "W_V")),
        # q . k over d_head, then the softmax's subtraction of the max
        pre + "attn.hook_attn_scores": (cfg.head_dim + 1,
                                        jnp.einsum("bqhe,bkhe->bhqk", q, k) / cfg.scale),
        # exp (float32 exp: within 2 ulp), the sum over the keys, the division
        pre + "attn.hook_pattern": (2 + n_keys + 1, pattern),
        pre + "attn.hook_z": (n_keys, jnp.einsum("bhqk,bkhe->bqhe", pattern, v)),
        pre + "hook_attn_out": (cfg.n_heads * cfg.head_dim,
                                jnp.einsum("bqhe,hed->bqd", z, w[pre + "attn.W_O"])),
        pre + "hook_resid_mid": (1, x0 + attn_out),
        pre + "mlp.hook_pre": (cfg.d_model, x1 @ w[pre + "mlp.W_in"]),
        pre + "hook_mlp_out": (cfg.d_mlp, h @ w[pre + "mlp.W_out"]),
        pre + "hook_resid_post": (1, x1 + mlp_out),
    }
    zeros = {name: jnp.zeros_like(m) for name, (_, m) in local.items()}
    grads = _logit_grad(params, cfg, zeros, tokens, i)
    inner = sum(n * jnp.sum(jnp.abs(grads[name]) * m) for name, (n, m) in local.items())
    unembed = cfg.d_model * (x2[i, -1] @ w["unembed.W_U"][:, c])  # the logit's own reduction
    return eps * float(inner + unembed)


def test_transformer_measures_at_rate_zero_and_one():
    params, cfg = sum_reading_transformer()
    sym = cp.gradient_symmetricity_measure
    assert float(jax.jit(sym(rate=0.0), static_argnums=1)(params, cfg)) > 0.99
    assert float(jax.jit(sym(rate=1.0), static_argnums=1)(params, cfg)) < 0.95  # softmax attention breaks the symmetry
    # the model's correct-logit table is the forward pass's, read at the answers: two float32
    # computations of one value (batched differently), each within its rounding bound of it
    table = cp.correct_logits(params, cfg)
    slightly_off = cp.correct_logits(params, cfg, rate=0.999)
    pairs = jnp.asarray([[5, 9], [30, 2]])
    logits = forward(params, pairs, cfg)[:, -1]
    for i, (a, b) in enumerate(pairs.tolist()):
        tol = 2 * rounding_bound(params, cfg, pairs, i)
        assert float(table[a, b]) == pytest.approx(float(logits[i, (a + b) % P]), abs=tol)
        # the bound is tight enough to tell a rate of 0.999 from 1
        assert abs(float(slightly_off[a, b]) - float(logits[i, (a + b) % P])) > tol
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
