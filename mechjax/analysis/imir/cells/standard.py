"""The standard architecture on phase-diagram cells: a 2-layer, 1-head attention-only
transformer with separate ``W_Q``/``W_K``/``W_V``/``W_O``, trained token and positional
embeddings and unembedding, TransformerLens random init, trained on the recall task of a
``BlockListSpec`` at cells ``(f_r[c], f_v[c])`` for several seeds.

Unlike ``cells.train_cells`` (the theory's model: merged ``W_KQ``, frozen orthogonal OV, started
on the manifold) nothing here is tied to the theory, so it tests whether the exact diagram's
winners carry over to an ordinary transformer. Attention is non-causal, as in the theory's model
(``basis.imir_config``): the task rotates the sequence cyclically, so the query can sit anywhere.

All cells x seeds are one compiled program: ``make_train`` + ``run_sweep`` with the cells as
traced hyperparameters ``task.f_r``, ``task.f_v``. The read-offs at every evaluation are the
exact dynamics' (``dynamics.model``): ``p_rare`` / ``acc_rare`` mean target probability / argmax
accuracy
with the relevant item rare and the distractors at the cell's law (``cells.eval_pool`` with
``rare_relevant``), ``p_iwl`` / ``acc_iwl`` the probability / argmax accuracy of ``C(a)`` on
common faithful queries (``f_r = f_v = 0``) whose relevant block was replaced by a distractor
block, in the ``b = 1`` layout. The winner is ``phase.readoff``'s (uncapped ICL level).
"""
from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.phase import readoffs as ph
from mechjax.analysis.imir.cells.theory import eval_pool, iwl_pool
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import forward
from mechjax.sweeps.sweep import run_sweep
from mechjax.tasks import blocklist as bl
from mechjax.training.train import TrainConfig, make_train

READOFFS = ("p_rare", "acc_rare", "p_iwl", "acc_iwl")


def standard_config(spec: bl.BlockListSpec, d_model: int) -> ModelConfig:
    """The standard architecture for ``spec`` (non-causal, like the theory's model)."""
    return ModelConfig(n_layers=2, d_model=d_model, n_heads=1, d_mlp=None, attn_only=True,
                       d_vocab=spec.vocab_in, d_vocab_out=spec.n_tokens, n_ctx=spec.seq_len,
                       positional_embedding=True, causal=False, init="transformer_lens")


def _query_scores(params, cfg: ModelConfig, pool, target) -> tuple[jax.Array, jax.Array]:
    """Mean probability and argmax accuracy of ``target [n]`` at each sequence's query."""
    toks, qpos, _ = pool
    logits = forward(params, toks, cfg)
    logits = jnp.take_along_axis(logits, qpos[:, None, None], 1)[:, 0]
    p = jnp.take_along_axis(jax.nn.softmax(logits, -1), target[:, None], 1)[:, 0]
    return jnp.mean(p), jnp.mean((jnp.argmax(logits, -1) == target).astype(jnp.float32))


def readoff_fn(spec: bl.BlockListSpec, cfg: ModelConfig, eval_size: int, seed: int = 0):
    """The trainer's ``eval_fn``: ``READOFFS`` at the run's ``(f_r, f_v)``. The rare pool is
    drawn from the run's fixed evaluation key (the same sequences at every evaluation); the
    in-weights pool does not depend on the cell, so one pool (from ``seed``) serves every run."""
    # drawn here once, which keeps its sampler out of the sweep program (compilation dominates
    # small sweeps on CPU)
    iwl = jax.jit(lambda k: iwl_pool(spec, k, eval_size))(jax.random.key(seed))
    iwl_target = jnp.asarray(spec.association())[
        jnp.take_along_axis(iwl[0], iwl[1][:, None], 1)[:, 0]]

    def eval_fn(params, task_params, eval_key):
        # fold_in past the trainer's pool indices, so this pool is drawn apart from its own
        rare = eval_pool(spec, jax.random.fold_in(eval_key, 1000), eval_size,
                         task_params["f_r"], True, task_params["f_v"], rare_relevant=True)
        p_rare, acc_rare = _query_scores(params, cfg, rare, rare[2])
        p_iwl, acc_iwl = _query_scores(params, cfg, iwl, iwl_target)
        return {"p_rare": p_rare, "acc_rare": acc_rare, "p_iwl": p_iwl, "acc_iwl": acc_iwl}

    return eval_fn


def train_standard_cells(spec: bl.BlockListSpec, f_r: np.ndarray, f_v: np.ndarray,
                         seeds: Sequence[int], d_model: int, steps: int, lr: float,
                         batch_size: int, eval_size: int, n_evals: int, threshold: float,
                         optimizer: str = "adam", workdir: str | None = None,
                         ) -> dict[str, np.ndarray]:
    """Train the standard architecture at every cell ``(f_r[c], f_v[c])`` for every seed, in one
    compiled program (``workdir``: ``run_sweep`` checkpoints there and resumes).

    Returns ``READOFFS`` and ``loss`` (mean training loss of each interval) ``[n_cells, n_seeds,
    n_evals]``, ``step [n_evals]``, ``winner [n_cells, n_seeds]`` (``phase.WINNERS`` codes of
    the final read-offs at ``threshold``, as ``phase.readoff``), ``emergence [n_cells,
    n_seeds]`` (step at which ``p_rare`` reaches ``threshold``; inf: never) and ``traces``
    (times the program was traced: 1 = one compiled program)."""
    if steps % n_evals:
        raise ValueError(f"steps={steps} must be a multiple of n_evals={n_evals}")
    f_r, f_v = np.asarray(f_r, np.float32).ravel(), np.asarray(f_v, np.float32).ravel()
    if f_r.shape != f_v.shape:
        raise ValueError(f"f_r has {f_r.size} cells but f_v has {f_v.size}")
    cfg = standard_config(spec, d_model)
    task = bl.blocklist_task(spec, batch_size, eval_size)
    # no trainer pools: the read-offs are eval_fn's (the task's iwl pool keeps the cell's f_v,
    # so its target is not always C(a))
    train_cfg = TrainConfig(steps=steps, eval_every=steps // n_evals, optimizer=optimizer,
                            eval_pools=())
    trainer = make_train(task, cfg, train_cfg, readoff_fn(spec, cfg, eval_size))
    res = run_sweep(trainer, list(seeds), {"lr": lr, "task.f_r": f_r, "task.f_v": f_v},
                    workdir, log_every_chunk=False)
    # sweep metrics are [n_seeds, n_cells, n_evals]: cells first here
    out = {k: np.swapaxes(res.metrics[k], 0, 1) for k in READOFFS}
    out["loss"] = np.swapaxes(res.metrics["train/loss"], 0, 1)
    step = res.steps.astype(np.float64)
    n_runs = f_r.size * len(seeds)
    flat = {k: out[k].reshape(n_runs, -1) for k in ("p_rare", "acc_rare", "p_iwl")}
    ro = ph.readoff(flat, step, threshold)
    shape = (f_r.size, len(seeds))
    return {**out, "step": step, "winner": ro["winner"].reshape(shape),
            "emergence": ro["emergence"].reshape(shape), "traces": np.asarray(res.traces)}


def majority(winner: np.ndarray) -> np.ndarray:
    """Per row of ``winner [n_cells, n_seeds]`` the most frequent code (ties: the lowest)."""
    w = np.asarray(winner)
    counts = np.stack([(w == i).sum(-1) for i in range(len(ph.WINNERS))], -1)
    return np.argmax(counts, -1)
