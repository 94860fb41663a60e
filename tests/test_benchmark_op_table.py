"""The op table on a program whose dots are known: the trace's per-op seconds joined to the
HLO's FLOPs, ops split into forward and backward."""
import jax
import jax.numpy as jnp
import numpy as np

from experiments.benchmark import op_table


def test_value_and_grad_dots_are_split_by_pass_and_timed():
    m, k, n = 64, 48, 32
    rng = np.random.default_rng(0)
    x, w = (jnp.asarray(rng.normal(size=s), jnp.float32) for s in ((m, k), (k, n)))
    fn = jax.value_and_grad(lambda w, x: jnp.sum(jnp.tanh(x @ w)))
    result = op_table.profile_ops(fn, (w, x), calls=3)
    dots = [r for r in result["rows"] if r["dot_flops"]]
    # the forward x @ w and the backward x^T @ g: both m k n products, nothing else contracts
    assert sorted((r["pass_"], r["dot_flops"]) for r in dots) == [
        ("backward", 2 * m * k * n), ("forward", 2 * m * k * n)]
    assert all(r["calls_seen"] == 3 and r["seconds"] > 0 for r in dots)
    totals = op_table.pass_totals(result["rows"])
    assert totals["backward"]["flops"] >= 2 * m * k * n
    text = op_table.format_table(result, top=2)
    assert "top 2 ops of the backward pass" in text and f"f32[{m},{k}]" in text
