"""Shared fixtures: small models and tasks that compile in seconds on 2 CPU cores."""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(os.path.dirname(REPO), "shared", "reference", "assign_add")

# XLA's cheapest CPU code generation, in every worker and every subprocess: compiling, not running,
# dominates the suite's tiny programs, and these flags cut the suite's CPU time by ~40% (measured:
# four experiment test files, 359 s -> 205 s of user time, every test passing; numbers equal to
# float rounding). Set before anything imports jax. MECHJAX_TEST_FULL_OPT=1 keeps XLA's defaults.
# --xla_cpu_use_fusion_emitters=false: XLA's older loop emitters, ~3x less compile time on the
# suite's programs (measured: test_train's two programs 3.62 / 4.23 s -> 1.03 / 1.20 s of compile;
# four experiment files cold, 102.8 -> 66.3 s of user CPU, every test passing).
FAST_COMPILE = {"XLA_FLAGS": "--xla_backend_optimization_level=0 "
                             "--xla_llvm_disable_expensive_passes=true "
                             "--xla_cpu_use_fusion_emitters=false"}
if os.environ.get("MECHJAX_TEST_FULL_OPT") != "1":
    _flags = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE['XLA_FLAGS']}"
    os.environ["XLA_FLAGS"] = _flags.strip()

# Long training loops are the exception: at level 0 a step of the suite's small models costs ~3x
# more than at XLA's default level 2 (measured: the tiny grokking model, 37 -> 12 ms per step,
# +1.3 s of compile), so a trainer of at least TRAIN_STEPS_AT_LEVEL_2 steps has its programs
# (``compile_options.jit_train``, in this process) compiled at level 2; shorter ones compile
# faster than they would run (level 2 made the suite's short trainings 10-30 s slower each).
TRAIN_OPTIONS = {"xla_backend_optimization_level": 2}
TRAIN_STEPS_AT_LEVEL_2 = 150
if os.environ.get("MECHJAX_TEST_FULL_OPT") != "1":
    from mechjax.training import compile_options as _compile_options  # noqa: E402

    UNPATCHED_TRAIN_OPTIONS = _compile_options.train_compiler_options

    def _train_options(trainer):
        options = UNPATCHED_TRAIN_OPTIONS(trainer)
        if trainer.train_cfg.steps < TRAIN_STEPS_AT_LEVEL_2:
            return options
        return {**(options or {}), **TRAIN_OPTIONS}
    _compile_options.train_compiler_options = _train_options

# The suite's own persistent compilation cache, ``.jaxcache/`` in the checkout (ignored by git),
# never the user's ~/.cache/mechjax/jax: the suite's time then depends only on its own earlier
# runs, and it never fills or reads the experiments' cache. On in every worker before anything
# compiles, because JAX decides once per process whether to use it; subprocesses inherit both
# variables, so the experiments they start use the same folder.
from mechjax.sweeps.workdir import enable_compilation_cache  # noqa: E402

SUITE_CACHE = os.path.join(REPO, ".jaxcache")
os.environ["MECHJAX_CACHE_DIR"] = SUITE_CACHE
os.environ["JAX_COMPILATION_CACHE_DIR"] = enable_compilation_cache(SUITE_CACHE)

# An in-process experiment run that stops computing (a deadlocked XLA program uses no CPU) ends
# the worker after this many idle seconds with the watchdog's one line and every thread's stack,
# instead of waiting for the test's time limit.
STALL_SECONDS = 120.0


def load_example(name: str):
    """``docs/examples/<name>.py`` imported as a module (the examples are scripts, not a
    package)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "docs", "examples",
                                                                     f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_module_env(extra=None):
    """Environment for subprocesses that run the project's modules."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def fast_compile_env(xla_flags: str = "", extra=None):
    """``run_module_env`` with XLA's fast-compile flags, after ``xla_flags`` (such as a host
    device count)."""
    flags = f"{xla_flags} {FAST_COMPILE['XLA_FLAGS']}".strip()
    return run_module_env({**(extra or {}), "XLA_FLAGS": flags})


def require_reference() -> str:
    """The reference checkpoint folder (``../shared/reference/assign_add`` beside the
    repository); skips the test, naming that path, when it is not there."""
    if not os.path.isdir(REFERENCE):
        pytest.skip(f"reference checkpoints not found at {REFERENCE} (../shared beside the "
                    "repository)")
    return REFERENCE


@pytest.fixture
def reference_dir():
    return require_reference()


PYTHON = sys.executable


def assert_refused_before_writing(run_fn, config, workdir, message):
    """``run_fn(config, workdir)`` raises a ConfigError containing ``message`` and leaves
    ``workdir`` unwritten (the check every experiment makes before compiling anything)."""
    import re

    from mechjax.models.config import ConfigError
    with pytest.raises(ConfigError, match=re.escape(message)):
        run_fn(config, str(workdir))
    assert not os.path.exists(workdir)


def run_watched(run_fn, config, workdir, **kwargs):
    """``run_fn(config, workdir, **kwargs)`` in process, under the stall watchdog."""
    from mechjax.sweeps import watchdog
    name = getattr(run_fn, "__module__", "an experiment")
    with watchdog.watch(f"in-process run of {name}", stall_seconds=STALL_SECONDS):
        return run_fn(config, str(workdir), **kwargs)


def run_and_read(run_fn, config, workdir, outputs=("checkpoints",), figures=()):
    """``run_fn(config, workdir)``, then check that the run wrote its config, summary, metrics,
    the other ``outputs`` (paths in the workdir) and non-empty ``figures``; returns
    ``(returned summary, summary.json as saved)``."""
    import json

    summary = run_watched(run_fn, config, workdir)
    for name in ("config.json", "summary.json", "metrics.npz", *outputs):
        assert os.path.exists(os.path.join(workdir, name)), name
    for name in figures:
        assert os.path.getsize(os.path.join(workdir, "figures", name)) > 1000, name
    with open(os.path.join(workdir, "summary.json")) as f:
        return summary, json.load(f)


def alone_tolerance(model_cfg, batch_tokens: int, steps: int, lr: float, params) -> float:
    """Absolute float32 tolerance between a model trained as one member of a sweep (seeds x
    grid) and the same model trained in another program (alone, or in another grid order): XLA
    compiles the two differently, which may round differently. Per step each parameter is
    rounded once when its update is added (eps |p|), and the update lr m / sqrt(v) moves by lr
    times the gradient's relative rounding: at most eps per rounding step of the backward pass's
    reductions, taken relative to the summands' own scale, which Adam's sqrt(v) divides out.
    First order over the ``steps`` (too few, at the suite's learning rates, for the two runs'
    difference to feed back): steps eps (max|p| + lr n)."""
    import numpy as np
    c = model_cfg
    # rounding steps along a gradient: the forward's and backward's reductions (d_model,
    # d_head, keys, d_mlp, the unembedding), then the sum over the batch's tokens
    per_pass = c.d_model + c.head_dim + c.n_ctx + c.d_mlp + c.d_model
    n = 2 * per_pass + batch_tokens
    max_p = max(float(np.abs(v).max()) for v in params.values())
    return steps * float(np.finfo(np.float32).eps) * (max_p + lr * n)


def assert_members_are_their_own_runs(run_a, run_b, setting: str, seed: int, batch_tokens: int):
    """Every grid member of saved run ``run_a`` (a ``runs.Run``) at ``seed`` is the member of
    ``run_b`` (the same experiment with its grid in another order, or a part of it) trained at
    the same value of hyperparameter ``setting``: final parameters equal to float32 rounding
    (``alone_tolerance``), and farther than 1,000 tolerances from the members at other values.
    Holds only if each member trained at the value its run records for it: a grid handed to
    the trainer in another order than the one saved, or one value for all, fails it."""
    import numpy as np
    values_a = np.asarray(run_a.hparams[setting]).tolist()
    values_b = np.asarray(run_b.hparams[setting]).tolist()
    final = lambda run, g: run.params(seed, None, g)
    for gb, value in enumerate(values_b):
        b = final(run_b, gb)
        atol = alone_tolerance(run_b.model_cfg, batch_tokens, run_b.train_cfg.steps,
                               float(np.max(run_b.hparams["lr"])), b)
        for ga, other in enumerate(values_a):
            a = final(run_a, ga)
            gap = max(float(np.abs(a[k] - b[k]).max()) for k in b)
            if other == value:
                assert gap <= atol, f"{setting}={value}, seed {seed}: {gap:.3g} > {atol:.3g}"
            else:
                assert gap > 1e3 * atol, f"{setting}={value} vs {other}: only {gap:.3g} apart"


@pytest.fixture(scope="session")
def quickstart_run(tmp_path_factory):
    """A finished tiny quickstart run of 5 seeds (so seeds 3 and 4 exist), made in a tmp dir."""
    from experiments.quickstart import run
    from experiments.quickstart.configs import tiny
    config = tiny.get_config()
    config.n_seeds = 5
    workdir = str(tmp_path_factory.mktemp("quickstart") / "run")
    run_watched(run.run, config, workdir)
    return workdir


@pytest.fixture
def pyplot():
    """matplotlib.pyplot, with every figure the test opened closed afterwards."""
    import matplotlib.pyplot as plt
    yield plt
    plt.close("all")


# ---- scheduling for ``-n 2`` -------------------------------------------------------------------
# Cold seconds per test module on 2 shared cores (``--durations=0`` of a cold ``-n 2`` run, fixture
# setups included; only the order matters, so stale numbers cost speed, never correctness). The
# modules run heaviest first, each whole on one worker (xdist's ``loadscope``: a module's fixtures
# are built once), so the light ones fill the end and both workers finish together; with
# xdist's default ``load``, a long module last leaves the other worker idle for its length.
MODULE_SECONDS = {  # a 625 s cold run
    "test_imir_phase.py": 71, "test_assign_add_experiment.py": 57, "test_ace_grokking.py": 39,
    "test_ace_agreement.py": 37, "test_imir_detect_recall.py": 35,
    "test_imir_detect_experiment.py": 34, "test_flax_adapter.py": 31,
    "test_grokking_law_experiment.py": 30, "test_sweep.py": 28, "test_multiprocess.py": 27,
    "test_agreement_cores.py": 27, "test_seed_atlas_assign_add.py": 26, "test_imir_detect.py": 26,
    "test_attention_rate.py": 23, "test_quickstart.py": 21, "test_fastpath.py": 20,
    "test_imir_confinement.py": 20, "test_model.py": 20, "test_ace_pipeline.py": 19,
    "test_imir_init_experiment.py": 17, "test_imir_truncated.py": 17, "test_blocklist.py": 17,
    "test_config_schema.py": 16, "test_ace_markov.py": 15, "test_imir_reference.py": 15,
    "test_train.py": 14, "test_validate_cli.py": 14, "test_tl_export.py": 14,
    "test_clock_pizza.py": 14, "test_imir_solver.py": 13, "test_clock_pizza_experiment.py": 13,
    "test_benchmark_bench.py": 12, "test_assign_add_mech.py": 12, "test_sweep_seeds.py": 12,
    "test_seed_atlas_experiment.py": 12, "test_sweep_guards.py": 12, "test_gpt2_loader.py": 11,
    "test_notebook.py": 11, "test_imir_iwl_readoff.py": 11, "test_icl_minimal_experiment.py": 10,
    "test_assign_add.py": 10, "test_sweep_curves.py": 10,
}


def _module_cost(item) -> float:
    return MODULE_SECONDS.get(os.path.basename(str(item.path)), 0.0)


def pytest_collection_modifyitems(config, items):
    """Modules by ``MODULE_SECONDS``, heaviest first; the order within a module and between
    modules of equal cost stays pytest's (a stable sort: deterministic, the same in every
    worker, as xdist requires)."""
    items.sort(key=lambda item: -_module_cost(item))


def pytest_configure(config):
    """Under ``-n N`` without an explicit ``--dist``: whole modules per worker, in the collection
    order above (not xdist's reorder by test count)."""
    if hasattr(config, "workerinput") or getattr(config.option, "dist", "no") != "load":
        return
    given = config.invocation_params.args
    if any(a == "-d" or a.startswith("--dist") for a in given):
        return
    config.option.dist = "loadscope"
    config.option.loadscopereorder = False
