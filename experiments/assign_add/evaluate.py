"""Accuracy of an Assign-and-Add checkpoint on every evaluation pool and the exhaustive sets.

    python -m experiments.assign_add.evaluate --weights=PATH.npz \
        --heldout=PATH/heldout_pairs.json --workdir=DIR

writes ``DIR/summary.json`` with ``acc/<pool>`` for the nine 2000-sequence pools of the paper,
``acc/exact_0var_heldout`` (every held-out pair as a 0-var sequence), ``acc/exact_2var_union``
(the 193,580-sequence union; its two parts as ``acc/exact_2var_union_heldout_pairs`` and
``acc/exact_2var_union_misplaced``), ``acc/exact_2var_doubly_novel`` (held-out pair *and*
misplaced variables, not part of the union), and ``n/<set>`` sizes; with ``--mechanism`` also
``mech/<name>`` from ``mechjax.studies.assign_add_mech.mechanism_summary``. Without
``--heldout`` the authors' split (``random.Random(42)``, f = 0.7) is used. Inputs are checked
before anything is written.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from absl import app, flags

from mechjax.models.config import ModelConfig
from mechjax.cli.experiment import quiet_library_logs
from mechjax.io import write_json
from mechjax.models.transformer import Params, apply
from mechjax.tasks import assign_add as aa
from mechjax.filecheck import FileError
from mechjax.interop.weights import load_npz

try:  # exact one-position logits (tested against the full forward pass); optional
    from mechjax.models import fastpath as _fastpath
except ImportError:  # pragma: no cover
    _fastpath = None

_WEIGHTS = flags.DEFINE_string("weights", None, "checkpoint .npz (TransformerLens state dict)")
_HELDOUT = flags.DEFINE_string("heldout", None, "heldout_pairs.json; default: the authors' split")
_WORKDIR = flags.DEFINE_string("workdir", None, "folder for summary.json")
_SEED = flags.DEFINE_integer("seed", 0, "key for pool sampling and exhaustive-set prefixes")
_BATCH = flags.DEFINE_integer("batch_size", 8192, "sequences per compiled forward call")
_POOL = flags.DEFINE_integer("pool_size", aa.POOL_SIZE, "sequences per evaluation pool")
_MECH = flags.DEFINE_bool("mechanism", False, "also write the paper's mechanism numbers (mech/*)")


def predict_fn(cfg: ModelConfig):
    """Jitted ``(params, tokens [b, 16]) -> argmax prediction [b]`` at the last position."""
    if _fastpath is not None and _fastpath.applies(cfg):
        logits = lambda p, t: _fastpath.readout_logits(p, t, cfg, -1)  # noqa: E731
    else:
        logits = lambda p, t: apply(p, t, cfg)[:, -1]  # noqa: E731
    return jax.jit(lambda p, t: jnp.argmax(logits(p, t), axis=-1))


def correct(params: Params, batch: Mapping[str, jax.Array], cfg: ModelConfig,
            batch_size: int = 8192, predict=None) -> np.ndarray:
    """``[n]`` bool: whether the model's prediction at ``=`` equals the label, in fixed-size
    chunks (the last one padded) so one compilation serves every set."""
    predict = predict_fn(cfg) if predict is None else predict
    tokens, labels = np.asarray(batch["tokens"]), np.asarray(batch["labels"])
    n = tokens.shape[0]
    size = min(batch_size, n)
    out = []
    for start in range(0, n, size):
        chunk = tokens[start:start + size]
        m = chunk.shape[0]
        if m < size:
            chunk = np.concatenate([chunk, np.repeat(chunk[:1], size - m, 0)])
        out.append(np.asarray(predict(params, jnp.asarray(chunk)))[:m] == labels[start:start + m])
    return np.concatenate(out)


def evaluate(params: Params, heldout_pairs=None, *, seed: int = 0, pool_size: int = aa.POOL_SIZE,
             batch_size: int = 8192, cfg: ModelConfig | None = None,
             restriction: aa.Restriction = aa.Restriction()) -> dict[str, float]:
    """Accuracies (``acc/...``) and set sizes (``n/...``) of one checkpoint."""
    cfg = aa.model_config() if cfg is None else cfg
    split = (aa.authors_split() if heldout_pairs is None
             else aa.split_from_heldout(heldout_pairs))
    held = split.heldout_pairs(0.7)
    task = aa.make_task(1, split=split, restriction=restriction, pool_size=pool_size)
    task_params = task.params_with_defaults()
    predict = predict_fn(cfg)
    key = jax.random.PRNGKey(seed)
    k_pools, k_ex0, k_ex2 = jax.random.split(key, 3)
    sets = {name: sampler(jax.random.fold_in(k_pools, i), task_params)
            for i, (name, sampler) in enumerate(sorted(task.eval_pools.items()))}
    sets["exact_0var_heldout"] = aa.exhaustive_0var_heldout(k_ex0, held)
    union = aa.exhaustive_2var_union(k_ex2, held, restriction, include_doubly_novel=True)
    n_union = len(held) * len(restriction.two_var_pairs(0)) + \
        (aa.N_PAIRS - len(held)) * len(restriction.two_var_pairs((1, 2)))
    n_first = len(held) * len(restriction.two_var_pairs(0))
    out: dict[str, float] = {}
    for name, batch in sets.items():
        ok = correct(params, batch, cfg, batch_size, predict)
        out[f"acc/{name}"] = float(ok.mean())
        out[f"n/{name}"] = int(ok.size)
    ok = correct(params, union, cfg, batch_size, predict)
    for name, part in (("exact_2var_union", ok[:n_union]),
                       ("exact_2var_union_heldout_pairs", ok[:n_first]),
                       ("exact_2var_union_misplaced", ok[n_first:n_union]),
                       ("exact_2var_doubly_novel", ok[n_union:])):
        out[f"acc/{name}"] = float(part.mean()) if part.size else float("nan")
        out[f"n/{name}"] = int(part.size)
    return out


def mechanism(params: Params, seed: int = 0, n: int = 1024) -> dict[str, float]:
    """``mech/<name>``: progress measures and mechanism numbers of ``assign_add_mech``."""
    from mechjax.studies import assign_add_mech as mech
    k_probe, k_paired = jax.random.split(jax.random.PRNGKey(seed))
    data, paired = mech.probe_data(k_probe, n), mech.paired_data(k_paired, n)
    out = jax.jit(lambda p: mech.mechanism_summary(p, data, paired))(params)
    return {f"mech/{k}": float(v) for k, v in out.items()}


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    for flag in (_WEIGHTS, _WORKDIR):
        if not flag.value:
            raise app.UsageError(f"--{flag.name} is required")
    if _BATCH.value <= 0 or _POOL.value <= 0:
        raise app.UsageError("--batch_size and --pool_size must be positive")
    workdir = _WORKDIR.value
    if os.path.exists(workdir) and not os.path.isdir(workdir):
        sys.exit(f"evaluate: --workdir={workdir!r} exists and is not a folder")
    quiet_library_logs()  # an error is the one line below, not after JAX's start-up chatter
    cfg = aa.model_config()
    try:  # every input is checked before anything is written
        params = load_npz(_WEIGHTS.value, cfg)
        heldout = aa.load_heldout_pairs(_HELDOUT.value) if _HELDOUT.value else None
        if heldout is not None:
            aa.split_from_heldout(heldout)
    except (FileError, FileNotFoundError, ValueError) as err:  # FileError: a broken file
        sys.exit(f"evaluate: {err}")
    start = time.time()
    summary = evaluate(params, heldout, seed=_SEED.value, pool_size=_POOL.value,
                       batch_size=_BATCH.value, cfg=cfg)
    if _MECH.value:
        summary.update(mechanism(params, _SEED.value))
    summary.update({"weights": os.path.abspath(_WEIGHTS.value),
                    "heldout": os.path.abspath(_HELDOUT.value) if _HELDOUT.value else "authors",
                    "seed": _SEED.value, "seconds": round(time.time() - start, 2)})
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, "summary.json")
    write_json(path, summary)
    for key in sorted(k for k in summary if k.startswith("acc/")):
        print(f"{key:40s} {summary[key]:.4f}  (n={summary['n/' + key[4:]]})")
    for key in sorted(k for k in summary if k.startswith("mech/")):
        print(f"{key:40s} {summary[key]:.4f}")
    print(f"wrote {path} in {summary['seconds']} s")


if __name__ == "__main__":
    app.run(main)
