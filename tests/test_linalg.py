"""mechjax.linalg: jnp.linalg's results, bit for bit, with one matrix per LAPACK call on CPU."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax import linalg


@pytest.fixture(autouse=True, scope="module")
def float64():
    """float64 (what the analyses use) for this module only: x64 is process-wide, and other test
    modules in the same worker must keep float32."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


def _matrices(shape, seed=0):
    return jax.random.normal(jax.random.PRNGKey(seed), shape, jnp.float64)


def _spd(shape):
    x = _matrices(shape)
    return x @ jnp.swapaxes(x, -1, -2) + shape[-1] * jnp.eye(shape[-1])


CASES = {
    "svd": (linalg.svd, jnp.linalg.svd, lambda: _matrices((3, 4, 6, 5))),
    "svd_values": (lambda a: linalg.svd(a, compute_uv=False),
                   lambda a: jnp.linalg.svd(a, compute_uv=False), lambda: _matrices((3, 4, 6, 6))),
    "eigh": (linalg.eigh, jnp.linalg.eigh, lambda: _spd((3, 4, 6, 6))),
    "eig": (linalg.eig, jnp.linalg.eig, lambda: _matrices((3, 4, 5, 5))),
    "qr": (linalg.qr, jnp.linalg.qr, lambda: _matrices((3, 4, 7, 5))),
    "cholesky": (linalg.cholesky, jnp.linalg.cholesky, lambda: _spd((3, 4, 6, 6))),
}


def _equal(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(np.array_equal(np.asarray(x), np.asarray(y))
                                      for x, y in zip(la, lb))


@pytest.mark.parametrize("name", sorted(CASES))
def test_bitwise_equal_to_the_batched_call_under_leading_axes_and_nested_vmap(name):
    ours, reference, make = CASES[name]
    a = make()
    expected = jax.jit(reference)(a)  # one batched LAPACK call over [3, 4]
    assert _equal(jax.jit(ours)(a), expected)
    assert _equal(jax.jit(jax.vmap(jax.vmap(ours)))(a), expected)
    assert _equal(jax.jit(jax.vmap(ours))(a), expected)  # vmap outside, leading axis inside


def _lapack_operand_shapes(fn, *args):
    text = jax.jit(fn).lower(*args).as_text()
    return re.findall(r"custom_call @lapack_\w+.*: \((tensor<[^>,]*>)", text)


def test_every_lapack_call_sees_one_matrix_under_vmap():
    a = _matrices((8, 5, 6, 6))
    batched = _lapack_operand_shapes(jax.vmap(jax.vmap(jnp.linalg.svd)), a)
    looped = _lapack_operand_shapes(jax.vmap(jax.vmap(linalg.svd)), a)
    assert batched == ["tensor<8x5x6x6xf64>"]  # what deadlocks: a batch fanned out in the pool
    assert looped == ["tensor<6x6xf64>"]


def test_solvers_match_jnp():
    a, b = _spd((4, 5, 5)), _matrices((4, 5, 3), seed=1)
    assert _equal(jax.vmap(linalg.solve)(a, b), jax.vmap(jnp.linalg.solve)(a, b))
    assert _equal(jax.vmap(linalg.solve)(a, b[..., 0]), jax.vmap(jnp.linalg.solve)(a, b[..., 0]))
    chol = jnp.linalg.cholesky(a)
    ref = jax.vmap(lambda l, z: jax.scipy.linalg.solve_triangular(l, z, lower=True))(chol, b)
    assert _equal(jax.vmap(lambda l, z: linalg.solve_triangular(l, z, lower=True))(chol, b), ref)
    tall = _matrices((4, 9, 3), seed=2)
    assert _equal(jax.vmap(lambda x, y: linalg.lstsq(x, y)[0])(tall, tall[..., 0]),
                  jax.vmap(lambda x, y: jnp.linalg.lstsq(x, y)[0])(tall, tall[..., 0]))


def test_too_few_dimensions_is_a_clear_error():
    with pytest.raises(ValueError, match="at least"):
        linalg.svd(jnp.ones(3))


def test_no_module_calls_a_batched_lapack_decomposition_directly():
    """Every decomposition in mechjax and experiments goes through mechjax.linalg."""
    import pathlib
    root = pathlib.Path(__file__).resolve().parent.parent
    pattern = re.compile(r"\b(jnp|jax\.numpy)\.linalg\.(svd|eigh|eigvalsh|eig|eigvals|qr|lstsq|"
                         r"cholesky|solve|inv|pinv|det|slogdet|matrix_rank)\b|jax\.scipy\.linalg\.|"
                         r"jax\.lax\.linalg\.")
    offenders = [f"{path.relative_to(root)}:{n}"
                 for folder in ("mechjax", "experiments", "docs/examples")
                 for path in sorted((root / folder).rglob("*.py")) if path.name != "linalg.py"
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if pattern.search(line.split("#")[0])]
    assert not offenders, f"use mechjax.linalg instead of jnp.linalg at {offenders}"
