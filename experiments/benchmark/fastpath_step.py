"""The one-position fast path (``mechjax.models.fastpath``) against the full forward, on the ACE
paper's grokking encoder (post-LN, dropout 0.1, biases, 2 positions, read at the last): the
training step of one model, both forms compiled from the same trainer config, timed alternately
(best of ``--repeats``), and the parameters after the same steps from the same state compared.

``python -m experiments.benchmark.fastpath_step [--p=53] [--steps=30] [--repeats=5] [--tiny]``
prints steps/s of both and their ratio. Only the ratio means anything on shared cores.
"""
from __future__ import annotations

import dataclasses
import time

import jax
import numpy as np

from mechjax.studies import grokking_core as gc
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, make_train


def measure(p: int = 53, steps: int = 30, repeats: int = 5, batch: int = 512,
            tiny: bool = False) -> dict[str, float]:
    widths = {"d_model": 16, "n_heads": 2, "d_mlp": 32} if tiny else {}
    model_cfg = gc.spec_model_config(p, **widths)
    task = modular.make_task(p=p, op="add", batch_size=batch, train_fraction=0.5, split_seed=0)
    base = TrainConfig(steps=steps * (2 * repeats + 2), eval_every=steps, optimizer="adamw")
    trainers = {name: make_train(task, model_cfg, dataclasses.replace(base, fast_readout=fast))
                for name, fast in (("fast", True), ("full", False))}
    assert trainers["fast"].use_fastpath and not trainers["full"].use_fastpath
    hp = trainers["fast"].default_hparams(lr=1e-3, weight_decay=1.0)
    state0 = jax.jit(trainers["fast"].init)(jax.random.PRNGKey(0), hp)
    programs = {name: jax.jit(lambda s, h, tr=tr: tr.run(s, h, 1)[0])
                for name, tr in trainers.items()}
    after = {name: jax.block_until_ready(run(state0, hp)) for name, run in programs.items()}
    states, best = dict(after), {name: float("inf") for name in programs}
    for _ in range(repeats):
        for name, run in programs.items():
            t0 = time.perf_counter()
            states[name] = jax.block_until_ready(run(states[name], hp))
            best[name] = min(best[name], time.perf_counter() - t0)
    diff = max(float(np.abs(np.asarray(after["fast"].params[k]) -
                            np.asarray(after["full"].params[k])).max())
               for k in after["fast"].params)
    return {"p": p, "steps": steps, "batch": batch,
            "fast_steps_per_s": steps / best["fast"], "full_steps_per_s": steps / best["full"],
            "speedup": best["full"] / best["fast"], "max_abs_param_diff_after_steps": diff}


if __name__ == "__main__":
    from absl import app, flags

    _P = flags.DEFINE_integer("p", 53, "the modulus (ACE paper: 53)")
    _STEPS = flags.DEFINE_integer("steps", 30, "training steps per timed call")
    _REPEATS = flags.DEFINE_integer("repeats", 5, "timed calls of each form (best kept)")
    _TINY = flags.DEFINE_bool("tiny", False, "tiny widths (a check of the code path)")

    def main(argv):
        del argv
        result = measure(_P.value, _STEPS.value, _REPEATS.value, tiny=_TINY.value)
        print(f"p={result['p']} batch {result['batch']}: fast path "
              f"{result['fast_steps_per_s']:.1f} steps/s, full forward "
              f"{result['full_steps_per_s']:.1f} steps/s, speed-up {result['speedup']:.2f}x; "
              f"params after {result['steps']} steps differ by at most "
              f"{result['max_abs_param_diff_after_steps']:.2e}")

    app.run(main)
