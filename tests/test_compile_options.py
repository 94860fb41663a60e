import jax
import jax.numpy as jnp
import numpy as np

from mechjax import compile_options


def _mlp(x, w_in, w_out):
    return jnp.maximum(x @ w_in, 0.0) @ w_out


def _args():
    rng = np.random.default_rng(0)
    return tuple(jnp.asarray(rng.normal(size=s), jnp.float32)
                 for s in ((64, 32), (32, 128), (128, 32)))


def test_train_programs_on_cpu_leave_out_ynnpack_fusions_and_compute_the_same():
    # The option must reach XLA (XLA's default on this CPU fuses the dot with its ReLU into a
    # YNNPACK fusion; with the option no such fusion is left) and change nothing computed.
    assert jax.default_backend() == "cpu"
    args = _args()
    default = jax.jit(_mlp).lower(*args).compile()
    train = compile_options.jit_train(_mlp).lower(*args).compile()
    assert "ynn_fusion" in default.as_text()
    assert "ynn_fusion" not in train.as_text()
    # equal to float32 rounding: another summation order, entries up to ~60 summed over 128 terms
    scale = float(jnp.abs(default(*args)).max())
    np.testing.assert_allclose(train(*args), default(*args), rtol=0, atol=1e-6 * scale)


def test_the_environment_keeps_xla_defaults(monkeypatch):
    assert compile_options.train_compiler_options() == compile_options.CPU_TRAIN_OPTIONS
    monkeypatch.setenv(compile_options.KEEP_DEFAULTS_ENV, "1")
    assert compile_options.train_compiler_options() is None
    assert "ynn_fusion" in compile_options.jit_train(_mlp).lower(*_args()).compile().as_text()
