"""Where the Assign-and-Add training step's time goes on this machine, and how close it comes to the
machine's float32 matmul rate.

``python -m experiments.benchmark.step_profile [--tiny] [--steps=20] [--rounds=5] [--out=FILE]
[--ops=5]``
prints, from one process:

- the step's FLOPs (XLA's own count, ``compiled.cost_analysis()['flops']``) and its effective
  GFLOP/s, beside the GFLOP/s of one large float32 matmul measured in the same run;
- the step split into its pieces, each compiled as its own program at the same shapes and timed
  as a ``lax.scan`` of ``steps`` iterations (so no host dispatch inside): data generation (the
  task's sampler), forward (loss), forward + backward (``value_and_grad``), optimizer update
  (AdamW on fixed gradients), the whole step (``Trainer.run`` without evaluation), and the host
  overhead of dispatching one step per call. Backward = (forward + backward) - forward; the rest
  of the step (finiteness checks, the masked state update) = whole - data - fwd/bwd - update;
- with ``--ops=N``, the N most expensive ops of the forward and of the backward from a profiler
  trace (``experiments.benchmark.op_table``).

The pieces are timed interleaved, round after round, and the best round of each is kept, so a
load spike on shared cores hits every piece alike. Model: the Assign-and-Add CPU config (the paper's
architecture, d_model 128, one head, d_mlp 512, batch 512, fast path), its real sampler.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mechjax.training.compile_options import jit_train, train_compiler_options
from mechjax.sweeps.timing import load_average

MATMUL_N = 2048          # the reference matmul [N, N] @ [N, N] (float32)
TINY_MATMUL_N = 256


PIECES = ("data", "forward", "backward", "update", "rest of the step", "step",
          "host overhead per call")


@dataclasses.dataclass(frozen=True)
class Settings:
    steps: int     # iterations of each timed scan
    rounds: int    # interleaved rounds (best kept)
    batch: int
    tiny: bool


FULL = Settings(steps=20, rounds=5, batch=512, tiny=False)
TINY = Settings(steps=2, rounds=1, batch=16, tiny=True)


def build(settings: Settings):
    """The Assign-and-Add trainer (no evaluation pools), its hyperparameters and a start state."""
    from experiments.benchmark.bench import TINY_MODEL
    from mechjax.tasks import assign_add as aa
    from mechjax.training.train import TrainConfig, make_train

    cfg = aa.model_config()
    if settings.tiny:
        cfg = dataclasses.replace(cfg, **TINY_MODEL)
    else:
        cfg = dataclasses.replace(cfg, d_model=128, n_heads=1, d_mlp=512)
    task = aa.make_task(settings.batch)
    # steps large enough that no timed call reaches the end (steps past it are masked no-ops)
    train_cfg = TrainConfig(steps=10 ** 9, eval_every=settings.steps, eval_pools=())
    trainer = make_train(task, cfg, train_cfg)
    if not trainer.use_fastpath:
        raise RuntimeError("the Assign-and-Add model should take the fast path")
    hparams = trainer.default_hparams(lr=3e-3, weight_decay=0.02)
    state = jax.jit(trainer.init)(jax.random.PRNGKey(0), hparams)
    return trainer, hparams, state


def compiled_flops(compiled) -> float:
    """XLA's FLOP count of a compiled program (0 where the backend gives none)."""
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):  # older jax: one dict per device program
        cost = cost[0] if cost else {}
    return float((cost or {}).get("flops", 0.0))


def pieces(trainer, hparams, state, steps: int) -> dict[str, tuple[Callable, tuple]]:
    """``{name: (jitted fn, args)}``: each piece of one step as ``steps`` scan iterations."""
    _, task_params = _split(hparams)
    keys = jax.random.split(jax.random.PRNGKey(1), steps)
    params, opt_state = state.params, state.opt_state
    tx = trainer.optimizer(hparams)
    grads = jax.tree.map(jnp.zeros_like, params)  # the update's cost does not depend on values

    def data(keys):  # the batches come out: the other pieces train on them
        return jax.lax.scan(lambda c, k: (c, trainer.task.sample(k, task_params)), None,
                            keys)[1]

    data_program = jit_train(data, trainer)
    batches = data_program(keys)

    def forward(params, batches):
        body = lambda c, b: (c + trainer.loss(params, b)[0], None)  # noqa: E731
        return jax.lax.scan(body, jnp.zeros(()), batches)[0]

    def forward_backward(params, batches):
        vg = jax.value_and_grad(lambda p, b: trainer.loss(p, b)[0])

        def body(c, b):
            loss, g = vg(params, b)
            return (c[0] + loss, jax.tree.map(jnp.add, c[1], g)), None
        zero = jax.tree.map(jnp.zeros_like, params)
        return jax.lax.scan(body, (jnp.zeros(()), zero), batches)[0]

    def update(params, opt_state, grads):
        def body(c, _):
            p, s = c
            u, s = tx.update(grads, s, p)
            return (optax.apply_updates(p, u), s), None
        return jax.lax.scan(body, (params, opt_state), None, length=steps)[0]

    def whole(state):
        return trainer.run(state, hparams, 1)[0]

    return {"data": (data_program, (keys,)),
            "forward": (jit_train(forward, trainer), (params, batches)),
            "forward+backward": (jit_train(forward_backward, trainer), (params, batches)),
            "update": (jit_train(update, trainer), (params, opt_state, grads)),
            "step": (jit_train(whole, trainer), (state,))}


def _split(hparams):
    from mechjax.training.train import split_hparams
    return split_hparams(hparams)


def _one_step_trainer(trainer):
    """The same trainer with one step per evaluation interval: one step per call."""
    from mechjax.training.train import make_train
    cfg = dataclasses.replace(trainer.train_cfg, eval_every=1)
    return make_train(trainer.task, trainer.model_cfg, cfg, trainer.eval_fn)


def matmul(n: int) -> tuple[Callable, tuple]:
    """The reference program: ``[n, n] @ [n, n]`` in float32 (``2 n^3`` FLOPs)."""
    rng = np.random.default_rng(3)
    a, b = (jnp.asarray(rng.normal(size=(n, n)), jnp.float32) for _ in range(2))
    return jax.jit(jnp.matmul), (a, b)


def interleaved_best(fns: dict[str, tuple[Callable, tuple]], rounds: int
                     ) -> tuple[dict[str, float], dict[str, float]]:
    """Best seconds of each ``fn(*args)`` over ``rounds`` rounds, every fn once per round
    (compiled and warmed up first), and each program's FLOPs. XLA's cost analysis counts a
    loop's body once, so the FLOPs of a scanned piece are those of one iteration."""
    compiled = {k: f.lower(*a).compile() for k, (f, a) in fns.items()}
    for k, (_, a) in fns.items():
        jax.block_until_ready(compiled[k](*a))
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, (_, a) in fns.items():
            t0 = time.perf_counter()
            jax.block_until_ready(compiled[k](*a))
            best[k] = min(best[k], time.perf_counter() - t0)
    return best, {k: compiled_flops(c) for k, c in compiled.items()}


def profile(settings: Settings, split: bool = True) -> dict[str, Any]:
    """The step's rate beside the matmul's, and (``split``) the step's pieces."""
    trainer, hparams, state = build(settings)
    fns = pieces(trainer, hparams, state, settings.steps)
    options = {"compiler_options": train_compiler_options(trainer)}
    if not split:
        return {**_rates(settings, {"step": fns["step"], "matmul": matmul(_matmul_n(settings))}),
                **options}
    fns["matmul"] = matmul(_matmul_n(settings))
    # one step per call: what a host loop dispatching every step would pay
    single = _one_step_trainer(trainer)
    fns["step, one per call"] = (jit_train(lambda s: single.run(s, hparams, 1)[0], single),
                                 (state,))
    result = {**_rates(settings, fns), **options}
    per_step = result["seconds_per_step"]
    per_step["backward"] = per_step["forward+backward"] - per_step["forward"]
    per_step["rest of the step"] = (per_step["step"] - per_step["data"]
                                    - per_step["forward+backward"] - per_step["update"])
    per_step["host overhead per call"] = (result["seconds"]["step, one per call"]
                                          - per_step["step"])
    return result


def _matmul_n(settings: Settings) -> int:
    return TINY_MATMUL_N if settings.tiny else MATMUL_N


def _rates(settings: Settings, fns: dict[str, tuple[Callable, tuple]]) -> dict[str, Any]:
    """Time ``fns`` interleaved; per-step seconds of the scanned pieces and both rates."""
    best, flops = interleaved_best(fns, settings.rounds)
    per_step = {k: v / settings.steps for k, v in best.items()
                if k not in ("matmul", "step, one per call")}
    n = _matmul_n(settings)
    matmul_gflops = 2.0 * n ** 3 / best["matmul"] / 1e9
    step_gflops = flops["step"] / per_step["step"] / 1e9
    return {"settings": dataclasses.asdict(settings), "matmul_n": n, "seconds": best,
            "matmul_gflops": matmul_gflops, "step_gflop": flops["step"] / 1e9,
            "step_gflops": step_gflops, "step_over_matmul": step_gflops / matmul_gflops,
            "seconds_per_step": per_step, "flops": flops,
            "load_average": load_average(),
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "device": jax.devices()[0].device_kind}


def format_profile(r: dict[str, Any]) -> str:
    s = r["seconds_per_step"]
    step = s["step"]
    lines = [f"Assign-and-Add fast-path step, batch {r['settings']['batch']}"
             f"{' (tiny model)' if r['settings']['tiny'] else ''}: "
             f"{r['step_gflop']:.3f} GFLOP (XLA cost analysis) in {1e3 * step:.2f} ms",
             f"  step effective GFLOP/s : {r['step_gflops']:8.1f}",
             f"  matmul GFLOP/s         : {r['matmul_gflops']:8.1f}   "
             f"(float32 {r['matmul_n']}x{r['matmul_n']}, same run)",
             f"  step / matmul          : {r['step_over_matmul']:8.2f}",
             f"{'piece':<26}{'ms/step':>10}{'share':>8}{'GFLOP':>9}{'GFLOP/s':>9}"]
    for k in [k for k in PIECES if k in s]:
        fl = r["flops"].get(k)
        if k == "backward":
            fl = r["flops"]["forward+backward"] - r["flops"]["forward"]
        gf = f"{fl / 1e9:9.3f}{fl / s[k] / 1e9 if s[k] > 0 else float('nan'):9.1f}" \
            if fl is not None else f"{'':>18}"
        lines.append(f"{k:<26}{1e3 * s[k]:>10.3f}{s[k] / step:>8.1%}{gf}")
    lines.append(f"load average {r['load_average']}; XLA_FLAGS={r['xla_flags']!r}; "
                 f"the step's compiler options {r['compiler_options']}")
    return "\n".join(lines)


if __name__ == "__main__":
    from absl import app, flags

    _TINY = flags.DEFINE_bool("tiny", False, "tiny model and batch (a seconds-long check)")
    _STEPS = flags.DEFINE_integer("steps", FULL.steps, "scan iterations per timed call",
                                  lower_bound=1)
    _ROUNDS = flags.DEFINE_integer("rounds", FULL.rounds, "interleaved rounds (best kept)",
                                   lower_bound=1)
    _OUT = flags.DEFINE_string("out", None, "also write the result as JSON here")
    _SPLIT = flags.DEFINE_bool("split", True, "time the step's pieces too (else only the step "
                               "and the matmul, e.g. to compare XLA_FLAGS)")
    _OPS = flags.DEFINE_integer("ops", 0, "also trace forward + backward and print the N most "
                                "expensive ops of each pass (experiments.benchmark.op_table)",
                                lower_bound=0)

    def _main(argv):
        from mechjax.sweeps.workdir import enable_compilation_cache
        enable_compilation_cache()
        base = TINY if _TINY.value else FULL
        settings = base if _TINY.value else dataclasses.replace(
            base, steps=_STEPS.value, rounds=_ROUNDS.value)
        result = profile(settings, _SPLIT.value)
        print(format_profile(result))
        if _OPS.value:
            from experiments.benchmark import op_table
            ops = op_table.profile_ops(*op_table.fastpath_loss_program(_TINY.value,
                                                                      settings.batch))
            print(op_table.format_table(ops, _OPS.value))
            result["op_table"] = ops
        if _OUT.value:
            from mechjax.io import write_json
            write_json(_OUT.value, result)

    app.run(_main)
