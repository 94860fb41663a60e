"""Gradient confinement (Theorem 1 in the derived form of docs/imir.md): at weights on the manifold
the exact population gradient of the real model lies on the manifold to rounding error; Monte
Carlo estimates approach it as 1/sqrt(batch); breaking a symmetry makes it leak."""
import jax
import jax.numpy as jnp
import pytest

from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.manifold import confinement as cf
from mechjax.analysis.imir.manifold import project as proj
from mechjax.tasks import blocklist as bl

TINY = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2)
SMALL = bl.BlockListSpec(n_common=4, n_rare=2, n_blocks=2, f_r=0.4, f_v=0.2)


def _setup(spec, layers=2, heads=1, key=None, centred=True, scale=0.7):
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len, layers, heads, key,
                          centred)
    basis = ib.make_basis(frame)
    theta = scale * jax.random.normal(jax.random.key(1), (basis.size,))
    return frame, basis, proj.weights(basis, theta)


@pytest.fixture(scope="module")
def tiny_gradient():
    frame, basis, w = _setup(TINY)
    _, g = cf.population_gradient(TINY, frame, w)
    return frame, basis, w, g


def test_exact_gradient_is_confined_and_the_literal_span_leaks(tiny_gradient):
    frame, basis, _, g = tiny_gradient
    assert cf.grad_residual(basis, g)["rel_residual"] < 1e-5          # float32 rounding
    literal = ib.make_basis(frame, "literal", "literal")
    split = ib.make_basis(frame, "split", "all")
    assert cf.grad_residual(literal, g)["rel_residual"] > 0.2           # ~0.3 measured
    assert cf.grad_residual(split, g)["rel_residual"] > 0.05            # J[c,c] is needed


def test_exact_gradient_float64_is_confined_to_1e_12():
    with jax.enable_x64(True):
        frame = ib.make_frame(ib.TokenStructure.from_spec(SMALL), SMALL.seq_len)
        basis = ib.make_basis(frame)
        theta = 0.7 * jax.random.normal(jax.random.key(1), (basis.size,), jnp.float64)
        _, g = cf.population_gradient(SMALL, frame, proj.weights(basis, theta))
        assert g["unembed.W_U"].dtype == jnp.float64
        assert cf.grad_residual(basis, g)["rel_residual"] < 1e-12


@pytest.mark.parametrize("layers,heads,rotate", [(3, 1, True), (2, 2, True)])
def test_confined_for_more_layers_heads_and_any_rotation(layers, heads, rotate):
    frame, basis, w = _setup(SMALL, layers, heads, jax.random.key(5) if rotate else None)
    _, g = cf.population_gradient(SMALL, frame, w)
    assert cf.grad_residual(basis, g)["rel_residual"] < 1e-5


@pytest.mark.parametrize("spec", [
    bl.BlockListSpec(kind="ioi", n_common=4, n_rare=2, n_blocks=2, f_r=0.4, f_v=0.2),
    bl.BlockListSpec(kind="ngram", block_len=3, n_common=6, n_rare=3, n_blocks=2, f_r=0.4,
                     f_v=0.2),
])
def test_confined_on_other_block_list_tasks(spec):
    frame, basis, w = _setup(spec)
    _, g = cf.population_gradient(spec, frame, w)
    assert cf.grad_residual(basis, g)["rel_residual"] < 1e-5


@pytest.mark.parametrize("case", ["fixed_offsets", "key_bias", "uncentred"])
def test_breaking_a_symmetry_or_assumption_leaks(case):
    spec, params, centred = TINY, None, True
    if case == "fixed_offsets":
        spec = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2,
                                offsets="fixed")
    elif case == "key_bias":
        spec = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2, biased=True)
        params = {"key_bias": 0.5}
    else:
        centred = False
    frame, basis, w = _setup(spec, centred=centred)
    _, g = cf.population_gradient(spec, frame, w, params)
    assert cf.grad_residual(basis, g)["rel_residual"] > 0.1             # 0.25-0.47 measured


def test_monte_carlo_residual_falls_as_inverse_sqrt_batch(tiny_gradient):
    _, basis, w, _ = tiny_gradient
    rows = cf.mc_confinement(TINY, basis, w, [512, 4096, 32768], jax.random.key(0))
    res = [r["rel_residual"] for r in rows]
    slope = cf.loglog_slope([r["batch"] for r in rows], res)
    assert -0.7 < slope < -0.3, rows
    for r in rows:  # the residual is the noise floor: no excess beyond its own fluctuation
        assert r["rel_residual"] < 1.5 * r["noise_floor"], rows
