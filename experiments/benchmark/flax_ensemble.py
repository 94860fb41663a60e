"""mechjax's seed sweep of a Flax NNX model against Flax's own ensemble idiom, same model, task,
optimizer, seeds and steps, timed in one process with the forms' calls alternated.

    python -m experiments.benchmark.flax_ensemble [--steps=200] [--seeds=8] [--repeats=3]

The model is ``Net`` of ``docs/examples/flax_seeds.py`` (one block, d = 64, 4 heads) on addition
mod 23, full batch on the 60% training split, AdamW (lr 3e-3, weight decay 1.0).

mechjax: ``make_train(task, nnx_model(factory, ...), TrainConfig(steps, eval_every=steps))`` and
the compiled program ``run_sweep`` calls (``sweep_program``), ``vectorize='auto'`` (``lax.map``
over seeds on CPU, ``vmap`` on accelerators) and ``vectorize='vmap'``. One call trains ``steps``
steps and evaluates once at the end (train and test pools): ``eval_every = steps``, the fewest
evaluations the trainer allows.

The idiom (Flax's ensemble pattern, ``nnx.vmap`` docs): the models and their ``nnx.Optimizer``s
are created under ``nnx.vmap`` over one key per seed; a Python loop calls a train step that is
``nnx.jit(nnx.vmap(step))``, stepping every model at once; after the loop one ``nnx.vmap``'d
evaluation (train and test loss and accuracy), so both forms evaluate once per timed call.

Each model is built from the key mechjax's ``Trainer.init`` draws its parameters from, so both
forms start from the same parameters (the test checks their initial losses agree).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec

from mechjax.models import flax_adapter
from mechjax.sweeps.sweep import SEED_AXIS, seed_mesh, sweep_program
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, Trainer, make_train

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# docs/examples/flax_seeds.py at its default size (tiny: at its tiny size)
SIZES = {"default": dict(p=23, d=64, heads=4, train_fraction=0.6, lr=3e-3, weight_decay=1.0),
         "tiny": dict(p=7, d=16, heads=2, train_fraction=0.8, lr=1e-2, weight_decay=0.1)}
FORMS = ("mechjax auto", "mechjax vmap", "flax idiom")


def load_net() -> type:
    """``Net`` of ``docs/examples/flax_seeds.py`` (examples/ is not a package)."""
    path = os.path.join(REPO, "docs", "examples", "flax_seeds.py")
    spec = importlib.util.spec_from_file_location("flax_seeds", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Net


@dataclasses.dataclass
class Runner:
    """``go()`` trains every model ``steps`` steps from where the last call left them, evaluates
    once, and returns each model's final training loss ``[S]``."""

    go: Callable[[], np.ndarray]
    initial_loss: np.ndarray  # [S]: each model's training loss at its initial parameters
    first_call_s: float = 0.0  # the warm-up call: compilation and one call


def _setup(size: dict) -> tuple[Any, Callable[[nnx.Rngs], nnx.Module]]:
    net = load_net()
    task = modular.make_task(p=size["p"], batch_size=None, train_fraction=size["train_fraction"])
    return task, lambda rngs: net(size["p"], size["d"], size["heads"], rngs)


def _trainer(task: Any, factory: Callable, steps: int, calls: int) -> Trainer:
    example = jnp.zeros((2, 2), jnp.int32)
    model = flax_adapter.nnx_model(factory, example, n_ctx=2)
    # enough steps that every call trains (steps past train_cfg.steps would be masked)
    return make_train(task, model, TrainConfig(steps=steps * calls, eval_every=steps))


def init_keys(seeds: int) -> jax.Array:
    """``[S, 2]``: the key ``Trainer.init`` draws seed ``s``'s parameters from."""
    return jnp.stack([jax.random.split(jax.random.PRNGKey(s), 3)[0] for s in range(seeds)])


def mechjax_runner(size: dict, steps: int, seeds: int, calls: int, vectorize: str) -> Runner:
    task, factory = _setup(size)
    tr = _trainer(task, factory, steps, calls)
    mesh = seed_mesh()
    if seeds % mesh.devices.size:
        raise ValueError(f"seeds={seeds}: must be a multiple of the {mesh.devices.size} devices")
    sharding = NamedSharding(mesh, PartitionSpec(SEED_AXIS))
    hp = tr.default_hparams(lr=size["lr"], weight_decay=size["weight_decay"])
    grid = {k: v[None] for k, v in hp.items()}
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    init = jax.jit(jax.vmap(jax.vmap(tr.init, (None, 0)), (0, None)), out_shardings=sharding)
    state = [init(keys, grid)]
    batch = task.sample(jax.random.PRNGKey(0), task.params_with_defaults())  # full batch
    first = jax.jit(jax.vmap(lambda p: tr.loss(p, batch)[0]))(
        jax.tree.map(lambda v: v[:, 0], state[0].params))
    program, total = sweep_program(tr, 1, mesh, vectorize), tr.total_steps()

    def go() -> np.ndarray:  # the program donates its input state and returns the next one
        state[0], metrics = jax.block_until_ready(program(state[0], grid, total))
        return np.asarray(metrics["loss/train"][:, 0, -1])

    return Runner(go, np.asarray(first))


def _data(task: Any) -> tuple[jax.Array, ...]:
    """``(x_train, y_train, x_test, y_test)``: the task's own split, as a Flax user's arrays."""
    pools = {n: task.eval_pools[n](jax.random.PRNGKey(0), task.params_with_defaults())
             for n in ("train", "test")}
    out = []
    for b in pools.values():
        rows = np.asarray(b["weights"]) > 0
        out += [jnp.asarray(np.asarray(b[k])[rows]) for k in ("tokens", "labels")]
    return tuple(out)


def _loss(model: nnx.Module, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    logits = model(x)[:, -1]
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    return loss, (logits.argmax(-1) == y).mean()


def idiom_runner(size: dict, steps: int, seeds: int) -> Runner:
    """Flax's ensemble idiom (see the module docstring); no mechjax code inside the loop."""
    task, factory = _setup(size)
    x, y, x_test, y_test = _data(task)
    tx = optax.adamw(size["lr"], weight_decay=size["weight_decay"])  # betas, eps: as TrainConfig

    @nnx.vmap(in_axes=0, out_axes=0)
    def create(key: jax.Array):
        model = factory(nnx.Rngs(key))
        return model, nnx.Optimizer(model, tx, wrt=nnx.Param)

    models, optimizers = create(init_keys(seeds))

    @nnx.jit
    @nnx.vmap(in_axes=(0, 0, None, None))
    def train_step(model, optimizer, x, y):
        (loss, _), grads = nnx.value_and_grad(_loss, has_aux=True)(model, x, y)
        optimizer.update(model, grads)
        return loss

    @nnx.jit
    @nnx.vmap(in_axes=(0, None, None, None, None))
    def evaluate(model, x, y, x_test, y_test):
        (loss, acc), (test_loss, test_acc) = _loss(model, x, y), _loss(model, x_test, y_test)
        return {"loss/train": loss, "acc/train": acc, "loss/test": test_loss,
                "acc/test": test_acc}

    first = nnx.jit(nnx.vmap(lambda m: _loss(m, x, y)[0], in_axes=0))(models)

    def go() -> np.ndarray:
        for _ in range(steps):
            train_step(models, optimizers, x, y)
        metrics = jax.block_until_ready(evaluate(models, x, y, x_test, y_test))
        return np.asarray(metrics["loss/train"])

    return Runner(go, np.asarray(first))


def runner(form: str, size: dict, steps: int, seeds: int, repeats: int) -> Runner:
    if form not in FORMS:
        raise ValueError(f"form={form!r}: allowed {FORMS}")
    if form == "flax idiom":
        return idiom_runner(size, steps, seeds)
    calls = repeats + 1  # the warm-up call, then the timed ones
    return mechjax_runner(size, steps, seeds, calls, form.split()[1])


def measure(size: dict, steps: int, seeds: int, repeats: int,
            forms: tuple[str, ...] = FORMS) -> dict[str, Any]:
    """Every form compiled and warmed up, then ``repeats`` rounds calling each form once in turn
    (a slow stretch of a shared machine hits all of them); each keeps its fastest call.
    ``{"rows": {form: {...}}, "losses": {form: [initial [S], after call 1 [S], ...]}}``."""
    if "flax idiom" not in forms:
        raise ValueError(f"forms={forms}: the speeds are relative to 'flax idiom'")
    forms = {f: runner(f, size, steps, seeds, repeats) for f in forms}
    losses = {f: [r.initial_loss] for f, r in forms.items()}
    for f, r in forms.items():
        t0 = time.perf_counter()
        losses[f].append(r.go())
        r.first_call_s = time.perf_counter() - t0
    best = dict.fromkeys(forms, float("inf"))
    for _ in range(repeats):
        for f, r in forms.items():
            t0 = time.perf_counter()
            losses[f].append(r.go())
            best[f] = min(best[f], time.perf_counter() - t0)
    idiom = best["flax idiom"]
    rows = {f: {"seconds": s, "ms_per_model_step": 1e3 * s / (seeds * steps),
                "speed_vs_idiom": idiom / s, "first_call_s": forms[f].first_call_s}
            for f, s in best.items()}
    return {"rows": rows, "losses": losses, "steps": steps, "seeds": seeds,
            "platform": jax.devices()[0].platform}


def table(out: dict[str, Any], repeats: int) -> str:
    lines = [f"{out['seeds']} models x {out['steps']} steps, {out['platform']} "
             f"({os.cpu_count()} cores), one process, calls alternated, best of {repeats}",
             f"{'form':<14}{'ms/model-step':>15}{'speed vs idiom':>16}{'first call s':>14}"]
    for f, r in out["rows"].items():
        lines.append(f"{f:<14}{r['ms_per_model_step']:>15.3f}{r['speed_vs_idiom']:>16.2f}"
                     f"{r['first_call_s']:>14.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps per timed call")
    parser.add_argument("--seeds", type=int, default=8, help="models trained together")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per form (best kept)")
    parser.add_argument("--tiny", action="store_true", help="the example's tiny size (p = 7)")
    args = parser.parse_args(argv)
    out = measure(SIZES["tiny" if args.tiny else "default"], args.steps, args.seeds, args.repeats)
    print(table(out, args.repeats), flush=True)
    return out


if __name__ == "__main__":
    main()
