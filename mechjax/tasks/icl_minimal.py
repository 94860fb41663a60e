"""Reddy (ICLR 2024) minimal in-context classification task, as pure samplers of keys.

A sequence is ``x_1, l_1, ..., x_N, l_N, x_q``: N item-label pairs and a query item, every token a
vector in D dimensions. Items come from K classes with means ``mu_k ~ N(0, I/D)``; an item of class
k is ``(mu_k + eps * eta) / sqrt(1 + eps^2)`` with ``eta ~ N(0, I/D)`` fresh per item (eps is the
within-class noise). Class k carries label ``k mod L``; each label is a fixed vector
``~ N(0, I/D)``. Classes are drawn with Zipf probabilities ``p_k ~ (k + 1)^-alpha``. Burstiness B, as Reddy
defines it: the context holds N/B classes with B items each (B divides N), one of them the
query's class, the others Zipf draws, at shuffled slots; B = 0 is N iid Zipf draws.

Reddy's training mixtures: a fraction ``p_B`` of training sequences is bursty as above, the rest N
iid Zipf draws with an iid query (``p_B = 1``: every sequence bursty); a fraction ``p_C`` uses
novel classes instead (N/B of them, means drawn fresh per sequence, each with a random label,
bursty with B items each, B = N/2 when B = 0), so their labels can only be read from the context.

Probes, as Reddy and Chan et al. measure them:
  ``icl``: two novel classes (means drawn fresh per sequence, so not learnable in weights), each
    given a distinct random label, N/2 items of each in context, query from one of them; correct
    means predicting the label the context gives its class.
  ``iwl``: query from the training classes (Zipf), no context item of the query's class; correct
    means predicting the class's fixed label.
  ``swap``: Reddy's label-swap test: two training classes (Zipf, distinct), N/2 items each,
    every context label shifted to the next label ``(k + 1) mod L``; correct means predicting the
    context's (shifted) label, against the label the weights learned for the class.

K, B, eps, alpha, p_B and p_C are traced task parameters (``K`` masks a pool of ``k_max`` means), so a
sweep vmaps seeds x (K, B, eps, alpha) in one compiled program. ``data_seed`` fixes means and label
vectors. What Reddy's text leaves to us (derived here): labels ``k mod L`` rather than a random map
(classes are exchangeable under random means, so it is the same distribution); B = 0 means no
planted copy; the ICL probe is 2-way with N/2 copies each (Reddy's B = N/2 layout).
An earlier version planted B copies of the query's class among N - B *singletons*: then the
query's label was the context's most frequent label, a shortcut that needs no item matching
(docs/icl_minimal.md).
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from mechjax.models.config import ConfigError
from mechjax.tasks.base import Task

Batch = dict[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class IclSpec:
    """Static sizes: ``d`` item dims, ``n_ctx`` context pairs N, ``n_labels`` L, ``k_max`` largest K
    a sweep may use; defaults of the traced knobs (K, B, eps, alpha) in ``default_params``."""

    d: int = 63
    n_ctx: int = 8
    n_labels: int = 32
    k_max: int = 512
    k: int = 512
    burstiness: int = 2
    noise: float = 0.1
    zipf: float = 0.0
    data_seed: int = 0
    p_bursty: float = 1.0
    p_novel: float = 0.0

    def __post_init__(self):
        check_values(self.d, self.n_ctx, self.n_labels, self.k_max, self.k, self.burstiness,
                     self.zipf, self.noise, self.p_bursty, self.p_novel)

    @property
    def seq_len(self) -> int:
        return 2 * self.n_ctx + 1

    def default_params(self) -> dict[str, float]:
        return {"K": float(self.k), "B": float(self.burstiness), "eps": float(self.noise),
                "alpha": float(self.zipf), "data_seed": float(self.data_seed),
                "p_B": float(self.p_bursty), "p_C": float(self.p_novel)}


def check_values(d: int, n: int, l: int, k_max: int, k: float, b: float, alpha: float,
                 eps: float = 0.0, p_b: float = 1.0, p_c: float = 0.0) -> None:
    """One-line ConfigErrors for values the task cannot represent (also used on sweep grids)."""
    if d < 1:
        raise ConfigError(f"D={d}: item dimension must be >= 1")
    if n < 2 or n % 2:
        raise ConfigError(f"N={n}: context pairs must be even and >= 2 (the ICL probe is 2-way)")
    if l < n:
        raise ConfigError(f"L={l} < N={n}: need at least as many labels as context pairs")
    if not 1 <= k <= k_max:
        raise ConfigError(f"K={k}: allowed 1..k_max={k_max}")
    if not 0 <= b <= n:
        raise ConfigError(f"B={b} > N={n} (or < 0): burstiness must be in 0..N")
    if b >= 1 and n % round(b):
        raise ConfigError(f"B={b}: must be 0 or divide N={n} (N/B classes of B items each)")
    if alpha < 0:
        raise ConfigError(f"Zipf exponent alpha={alpha}: must be >= 0")
    if eps < 0:
        raise ConfigError(f"noise eps={eps}: must be >= 0")
    for name, value in (("p_B", p_b), ("p_C", p_c)):
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"{name}={value}: a fraction of training sequences, in [0, 1]")


def tables(spec: IclSpec, params) -> tuple[jax.Array, jax.Array]:
    """Class means ``[k_max, d]`` and label vectors ``[L, d]`` from ``params['data_seed']``."""
    key = jax.random.PRNGKey(jnp.asarray(params["data_seed"], jnp.int32))
    km, kl = jax.random.split(key)
    scale = 1.0 / jnp.sqrt(spec.d)
    return (jax.random.normal(km, (spec.k_max, spec.d)) * scale,
            jax.random.normal(kl, (spec.n_labels, spec.d)) * scale)


def class_probs(spec: IclSpec, params) -> jax.Array:
    """Zipf probabilities over the first K of ``k_max`` classes ``[k_max]`` (0 beyond K)."""
    rank = jnp.arange(spec.k_max, dtype=jnp.float32) + 1.0
    w = jnp.where(rank <= params["K"], rank ** -params["alpha"], 0.0)
    return w / w.sum()


def _items(key: jax.Array, means: jax.Array, eps: jax.Array) -> jax.Array:
    """Noisy items ``[..., d]`` around ``means [..., d]``."""
    eta = jax.random.normal(key, means.shape) / jnp.sqrt(means.shape[-1])
    return (means + eps * eta) / jnp.sqrt(1.0 + eps ** 2)


def _interleave(x_ctx: jax.Array, lab_vec: jax.Array, x_q: jax.Array) -> jax.Array:
    """``[N, d]`` items, ``[N, d]`` label vectors, ``[d]`` query -> ``[2N + 1, d]``."""
    pairs = jnp.stack([x_ctx, lab_vec], axis=1).reshape(-1, x_ctx.shape[-1])
    return jnp.concatenate([pairs, x_q[None]], axis=0)


def _train_one(key: jax.Array, spec: IclSpec, params, means, lvec, p) -> Batch:
    kq, kc, kperm, kx = jax.random.split(key, 4)
    n = spec.n_ctx
    c_q = jax.random.choice(kq, spec.k_max, p=p)
    drawn = jax.random.choice(kc, spec.k_max, (n,), p=p)
    # Reddy's burstiness: N/B classes, B items each, the query's class one of them (group 0).
    # Every context label then appears B times, so counting labels cannot find the answer;
    # B = 0: N iid Zipf draws (the query's class only by chance).
    b = jnp.round(params["B"])
    group = jnp.arange(n) // jnp.maximum(b, 1.0).astype(jnp.int32)
    bursty = jnp.where(group == 0, c_q, drawn[group])
    # the mixtures draw from their own key, so p_B = 1, p_C = 0 leaves every draw above unchanged
    k_b, k_c, k_novel = jax.random.split(jax.random.fold_in(key, 1), 3)
    is_bursty = (b >= 1) & (jax.random.uniform(k_b) < params["p_B"])
    cls = jax.random.permutation(kperm, jnp.where(is_bursty, bursty, drawn))
    x = _items(kx, means[jnp.concatenate([cls, c_q[None]])], params["eps"])
    ctx_lab = cls % spec.n_labels
    out = {"inputs": _interleave(x[:n], lvec[ctx_lab], x[n]), "labels": c_q % spec.n_labels,
           "ctx_labels": ctx_lab, "ctx_classes": cls, "query_class": c_q}
    novel = _novel_one(k_novel, spec, params, lvec)
    use_novel = jax.random.uniform(k_c) < params["p_C"]
    return jax.tree.map(lambda a, c: jnp.where(use_novel, a, c), novel, out)


def _novel_one(key: jax.Array, spec: IclSpec, params, lvec) -> Batch:
    """A bursty sequence of novel classes (Reddy's p_C): N/B classes with means drawn here and
    random labels, B items each (B = N/2 when B = 0), the query from one of them."""
    km, kl, kperm, kq, kx = jax.random.split(key, 5)
    n = spec.n_ctx
    b = jnp.round(params["B"])
    b = jnp.where(b >= 1, b, n // 2).astype(jnp.int32)
    group = jax.random.permutation(kperm, jnp.arange(n) // b)
    mu = jax.random.normal(km, (n, spec.d)) / jnp.sqrt(spec.d)
    labs = jax.random.randint(kl, (n,), 0, spec.n_labels)
    q = group[jax.random.randint(kq, (), 0, n)]  # each group holds B slots: uniform over groups
    x = _items(kx, mu[jnp.concatenate([group, q[None]])], params["eps"])
    ctx_lab = labs[group]
    return {"inputs": _interleave(x[:n], lvec[ctx_lab], x[n]), "labels": labs[q],
            "ctx_labels": ctx_lab, "ctx_classes": -1 - group, "query_class": -1 - q}


def _iwl_one(key: jax.Array, spec: IclSpec, params, means, lvec, p) -> Batch:
    kq, kc, kx = jax.random.split(key, 3)
    n = spec.n_ctx
    c_q = jax.random.choice(kq, spec.k_max, p=p)
    # Context classes from the training distribution with the query's class removed.
    p_other = p.at[c_q].set(0.0)
    p_other = jnp.where(p_other.sum() > 0, p_other / p_other.sum(), p)
    cls = jax.random.choice(kc, spec.k_max, (n,), p=p_other)
    x = _items(kx, means[jnp.concatenate([cls, c_q[None]])], params["eps"])
    ctx_lab = cls % spec.n_labels
    return {"inputs": _interleave(x[:n], lvec[ctx_lab], x[n]), "labels": c_q % spec.n_labels,
            "ctx_labels": ctx_lab, "ctx_classes": cls, "query_class": c_q}


def _icl_one(key: jax.Array, spec: IclSpec, params, means, lvec, p) -> Batch:
    del means, p
    km, kl, kperm, kq, kx = jax.random.split(key, 5)
    n = spec.n_ctx
    novel = jax.random.normal(km, (2, spec.d)) / jnp.sqrt(spec.d)
    labs = jax.random.choice(kl, spec.n_labels, (2,), replace=False)
    which = jax.random.permutation(kperm, jnp.arange(n) % 2)
    q = jax.random.randint(kq, (), 0, 2)
    x = _items(kx, novel[jnp.concatenate([which, q[None]])], params["eps"])
    ctx_lab = labs[which]
    # ctx_classes / query_class: -1 - (novel index), never a training class.
    return {"inputs": _interleave(x[:n], lvec[ctx_lab], x[n]), "labels": labs[q],
            "ctx_labels": ctx_lab, "ctx_classes": -1 - which, "query_class": -1 - q}


def _swap_one(key: jax.Array, spec: IclSpec, params, means, lvec, p) -> Batch:
    kc, kperm, kq, kx = jax.random.split(key, 4)
    n = spec.n_ctx
    two = jax.random.choice(kc, spec.k_max, (2,), replace=False, p=p)
    which = jax.random.permutation(kperm, jnp.arange(n) % 2)
    q = jax.random.randint(kq, (), 0, 2)
    cls = two[which]
    x = _items(kx, means[jnp.concatenate([cls, two[q][None]])], params["eps"])
    # each class shown with the next label: the context and the weights disagree on every item
    swapped = (two % spec.n_labels + 1) % spec.n_labels
    ctx_lab = swapped[which]
    return {"inputs": _interleave(x[:n], lvec[ctx_lab], x[n]), "labels": swapped[q],
            "ctx_labels": ctx_lab, "ctx_classes": cls, "query_class": two[q]}


_KINDS = {"train": _train_one, "icl": _icl_one, "iwl": _iwl_one, "swap": _swap_one}


@functools.partial(jax.jit, static_argnames=("spec", "batch_size", "kind"))
def sample(key: jax.Array, spec: IclSpec, params, batch_size: int, kind: str = "train") -> Batch:
    """A batch: ``inputs [b, 2N+1, d]`` float32, ``labels [b]`` int32 (the query's label), and
    ``ctx_labels [b, N]``, ``ctx_classes [b, N]``, ``query_class [b]`` for probes and tests.
    ``kind``: ``train`` | ``icl`` | ``iwl`` | ``swap``. Jittable; ``params`` may be traced."""
    means, lvec = tables(spec, params)
    p = class_probs(spec, params)
    one = _KINDS[kind]
    keys = jax.random.split(key, batch_size)
    return jax.vmap(lambda k: one(k, spec, params, means, lvec, p))(keys)


def make_task(spec: IclSpec, batch_size: int, eval_size: int) -> Task:
    """The task as a ``mechjax`` Task: training batches and the ``icl``/``iwl``/``swap`` probes."""
    def sampler(kind: str, n: int):
        def draw(key, task_params):
            out = sample(key, spec, dict(spec.default_params(), **task_params), n, kind)
            return {"tokens": out["inputs"], "labels": out["labels"]}
        return draw
    return Task("icl_minimal", sampler("train", batch_size),
                {"icl": sampler("icl", eval_size), "iwl": sampler("iwl", eval_size),
                 "swap": sampler("swap", eval_size)},
                readout=-1, default_params=spec.default_params(), seq_len=None)
