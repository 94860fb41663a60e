import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.training import compile_options
from mechjax.models.config import ModelConfig
from mechjax.tasks import modular
from mechjax.tasks.assign_add import make_task, model_config
from mechjax.training.train import TrainConfig, make_train

TABLED = make_train(make_task(8), dataclasses.replace(model_config(), d_model=16, d_mlp=32),
                    TrainConfig(steps=2, eval_every=1, eval_pools=()))
ONE_LAYER = make_train(modular.make_task(p=7, train_fraction=0.5),
                       ModelConfig(n_layers=1, d_model=16, n_heads=2, d_mlp=32, d_vocab=7,
                                   n_ctx=2, causal=False), TrainConfig(steps=2, eval_every=1))


def _mlp(x, w_in, w_out):
    return jnp.maximum(x @ w_in, 0.0) @ w_out


def _args():
    rng = np.random.default_rng(0)
    return tuple(jnp.asarray(rng.normal(size=s), jnp.float32)
                 for s in ((64, 32), (32, 128), (128, 32)))


def test_the_tabled_fast_path_leaves_out_ynnpack_fusions_and_computes_the_same():
    # The option must reach XLA (XLA's default on this CPU fuses the dot with its ReLU into a
    # YNNPACK fusion; with the option no such fusion is left) and change nothing computed.
    assert jax.default_backend() == "cpu" and TABLED.use_fastpath
    args = _args()
    default = jax.jit(_mlp).lower(*args).compile()
    train = compile_options.jit_train(_mlp, TABLED).lower(*args).compile()
    assert "ynn_fusion" in default.as_text()
    assert "ynn_fusion" not in train.as_text()
    # equal to float32 rounding: another summation order, entries up to ~60 summed over 128 terms
    scale = float(jnp.abs(default(*args)).max())
    np.testing.assert_allclose(train(*args), default(*args), rtol=0, atol=1e-6 * scale)


def test_other_models_and_the_environment_keep_xla_defaults(monkeypatch):
    assert compile_options.train_compiler_options(TABLED) == compile_options.CPU_OPTIONS
    assert compile_options.train_compiler_options(ONE_LAYER) is None
    monkeypatch.setenv(compile_options.KEEP_DEFAULTS_ENV, "1")
    assert compile_options.train_compiler_options(TABLED) is None
    assert "ynn_fusion" in compile_options.jit_train(_mlp, TABLED).lower(*_args()).compile(
    ).as_text()


def test_an_option_this_xla_does_not_know_leaves_the_defaults(monkeypatch):
    monkeypatch.setattr(compile_options, "CPU_OPTIONS", {"xla_cpu_no_such_option": ""})
    assert compile_options.train_compiler_options(TABLED) is None


def test_the_sweep_program_carries_the_option_for_the_tabled_model_only():
    # The wiring: run_sweep's program (sweep.sweep_program) is compiled through jit_train.
    from mechjax.sweeps.sweep import seed_mesh, sweep_program

    def hlo(trainer):
        hp = trainer.default_hparams()
        state = jax.vmap(jax.vmap(trainer.init, (None, 0)), (0, None))(
            jnp.stack([jax.random.PRNGKey(0)]), {k: v[None] for k, v in hp.items()})
        program = sweep_program(trainer, 1, seed_mesh(), "vmap")
        return program.lower(state, {k: v[None] for k, v in hp.items()},
                             trainer.total_steps()).compile().as_text()

    assert "ynn_fusion" not in hlo(TABLED)
    assert "ynn_fusion" in hlo(ONE_LAYER)


def test_analyses_over_seeds_compile_without_ynnpack_fusions_in_both_forms(monkeypatch):
    # The option itself, and its wiring: timing.over_seeds compiles both the vmapped program
    # and the per-seed loop's program through jit_analysis (a plain jax.jit would keep XLA's
    # library fusions).
    from mechjax.sweeps import timing
    assert compile_options.analysis_compiler_options() == compile_options.CPU_OPTIONS
    assert "ynn_fusion" not in compile_options.jit_analysis(_mlp).lower(*_args()).compile(
    ).as_text()
    texts = []
    real_compile = timing.timed_compile

    def spy(fn, *args):
        compiled, seconds = real_compile(fn, *args)
        texts.append(compiled.as_text())
        return compiled, seconds

    monkeypatch.setattr(timing, "timed_compile", spy)
    x, w_in, w_out = _args()
    stacked = {"w_in": jnp.stack([w_in, 2 * w_in]), "w_out": jnp.stack([w_out, w_out])}
    fn = lambda p, x: _mlp(x, p["w_in"], p["w_out"])  # noqa: E731
    looped, _ = timing.over_seeds(fn, stacked, x, vectorize="loop")
    batched, _ = timing.over_seeds(fn, stacked, x, vectorize="vmap")
    assert len(texts) == 2 and not any("ynn_fusion" in t for t in texts)
    np.testing.assert_allclose(looped, batched, rtol=1e-6, atol=1e-4)
    monkeypatch.setenv(compile_options.KEEP_DEFAULTS_ENV, "1")
    assert compile_options.analysis_compiler_options() is None
