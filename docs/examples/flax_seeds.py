"""A transformer written in Flax NNX learns modular addition over 8 seeds in one compiled program;
then ACE on every seed's final residual stream, and the cores compared across seeds.

    python docs/examples/flax_seeds.py            # p = 23, 8 seeds (minutes on a laptop CPU)
    python docs/examples/flax_seeds.py --tiny     # p = 7, 3 seeds, seconds (the test runs this)
    python docs/examples/flax_seeds.py --no-builtin   # the Flax model only

``Net`` below is plain Flax (nothing from mechjax inside). ``flax_adapter.nnx_model`` makes it a
``mechjax.models.Model``: ``run_sweep`` trains every seed as one program, ``run_with_cache`` reads
the residual stream by module path (``blocks.0``: the last block's output), and the array-level
ACE functions extract each seed's core with the logits tail ``h W_U + b`` (linear: the model has
no final norm), validate it (core-only and core-removed accuracy), and compare the seeds (projector
overlap, CCA). The built-in transformer of the same size runs beside it for reference.
"""
from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from mechjax.analysis import ace
from mechjax.models import flax_adapter, hooks
from mechjax.models.config import ModelConfig
from mechjax.sweeps.sweep import run_sweep
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, make_train

SIZES = {
    "default": dict(p=23, d=64, heads=4, seeds=8, steps=1500, eval_every=250,
                    train_fraction=0.6, lr=3e-3, weight_decay=1.0),
    "tiny": dict(p=7, d=16, heads=2, seeds=3, steps=100, eval_every=50,
                 train_fraction=0.8, lr=1e-2, weight_decay=0.1),
}
TAU = 0.99  # the energy kept by the core


# ---- the model, as a Flax user writes it --------------------------------------------------------
class Block(nnx.Module):
    def __init__(self, d: int, heads: int, rngs: nnx.Rngs):
        self.attn = nnx.MultiHeadAttention(heads, d, decode=False, rngs=rngs)
        self.up, self.down = nnx.Linear(d, 4 * d, rngs=rngs), nnx.Linear(4 * d, d, rngs=rngs)

    def __call__(self, x):
        x = x + self.attn(x, mask=nnx.make_causal_mask(x[..., 0]))
        return x + self.down(jax.nn.relu(self.up(x)))


class Net(nnx.Module):
    def __init__(self, vocab: int, d: int, heads: int, rngs: nnx.Rngs, n_ctx: int = 2):
        self.embed, self.pos = nnx.Embed(vocab, d, rngs=rngs), nnx.Embed(n_ctx, d, rngs=rngs)
        self.blocks = nnx.List([Block(d, heads, rngs)])
        self.unembed = nnx.Linear(d, vocab, rngs=rngs)

    def __call__(self, tokens):  # [b, p] -> logits [b, p, vocab]
        x = self.embed(tokens) + self.pos(jnp.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.unembed(x)


# ---- training and ACE ----------------------------------------------------------------------------
def train(model: Any, task, size: dict) -> tuple[dict, dict, float]:
    """All seeds as one sweep: ``(metrics {name: [n_seeds, n_evals]}, params {name: [n_seeds,
    ...]}, seconds)``."""
    trainer = make_train(task, model, TrainConfig(steps=size["steps"],
                                                  eval_every=size["eval_every"]))
    t0 = time.perf_counter()
    result = run_sweep(trainer, list(range(size["seeds"])),
                       {"lr": size["lr"], "weight_decay": size["weight_decay"]},
                       log_every_chunk=False)
    assert result.traces == 1  # every seed in one compiled program
    return result.metrics_at(0), result.params_at(0), time.perf_counter() - t0


def flax_readout(model) -> Callable:
    """``params -> (h [N, D], W_U [D, V], b_U [V])``: the last block's output at the read-out
    position, cached by module path, and the unembedding."""
    def read(params, tokens):
        h = flax_adapter.run_with_cache(model, params, tokens, "blocks.0")["blocks.0"][:, -1]
        return h, params["unembed.kernel"], params["unembed.bias"]
    return read


def builtin_readout(cfg: ModelConfig) -> Callable:
    def read(params, tokens):
        _, cache = hooks.run_with_cache(params, tokens, cfg, "blocks.0.hook_resid_post")
        return (cache["blocks.0.hook_resid_post"][:, -1], *ace.unembed(params, cfg, jnp.float32))
    return read


def cores(read: Callable, params: dict, tokens: jax.Array, labels: jax.Array) -> dict:
    """ACE on every seed (one vmapped program), then the seeds x seeds comparisons."""
    one_seed = jax.tree.map(lambda v: v[0], params)
    d = jax.eval_shape(lambda q: read(q, tokens[:1])[0], one_seed).shape[-1]  # the stream width
    pipe = ace.Pipeline(position=-1, tail="unembed", validation="rank_scan",
                        identify="cyclic_shift", tau=TAU, keep_coords=d)

    @jax.jit
    def one(p):
        h, w_u, b_u = read(p, tokens)
        return ace.analyse_linear(h, labels, w_u, b_u, pipe)

    res = jax.vmap(one)(params)
    overlap = ace.overlap_matrix(res.core.basis, res.core.rank)
    cca = ace.cca_matrix(res.coords, res.core_dim)
    rank = np.asarray(res.core.rank)
    return {"rank": rank, "core_dim": np.asarray(res.core_dim),
            **{f"acc/{k}": np.asarray(v) for k, v in res.accuracy.items()},
            "overlap": ace.offdiag_mean(overlap), "overlap/chance": float(rank.mean() / d),
            "cca": ace.offdiag_mean(cca)}


# ---- the table ---------------------------------------------------------------------------------
def table(name: str, m: dict, c: dict, seconds: float) -> str:
    rows = [f"{name}: trained in {seconds:.1f} s (one program); core at tau={TAU}",
            f"{'seed':>5} {'train':>6} {'test':>6} {'rank':>5} {'dim':>4} {'full':>6} "
            f"{'core':>6} {'-core':>6}"]
    for s in range(len(c["rank"])):
        rows.append(f"{s:>5d} {m['acc/train'][s, -1]:6.3f} {m['acc/test'][s, -1]:6.3f} "
                    f"{c['rank'][s]:>5d} {c['core_dim'][s]:>4d} {c['acc/full'][s]:6.3f} "
                    f"{c['acc/core_only'][s]:6.3f} {c['acc/core_removed'][s]:6.3f}")
    rows.append(f"seeds x seeds: projector overlap {c['overlap']:.3f} (random subspaces "
                f"~{c['overlap/chance']:.3f}), CCA {c['cca']:.3f}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    size = dict(SIZES["tiny" if args.tiny else "default"])
    if args.seeds is not None:
        size["seeds"] = args.seeds
    p = size["p"]
    task = modular.make_task(p=p, batch_size=None, train_fraction=size["train_fraction"])
    tokens = jnp.asarray([(a, b) for a in range(p) for b in range(p)], jnp.int32)
    labels = (tokens[:, 0] + tokens[:, 1]) % p
    t0 = time.perf_counter()
    flax = flax_adapter.nnx_model(lambda rngs: Net(p, size["d"], size["heads"], rngs),
                                  tokens[:2], n_ctx=2)
    models = {"flax nnx": (flax, flax_readout(flax))}
    if not args.no_builtin:
        cfg = ModelConfig(n_layers=1, d_model=size["d"], n_heads=size["heads"],
                          d_mlp=4 * size["d"], d_vocab=p, n_ctx=2, use_bias=True)
        models["built-in"] = (cfg, builtin_readout(cfg))
    out = {}
    for name, (model, read) in models.items():
        m, params, seconds = train(model, task, size)
        c = cores(read, params, tokens, labels)
        print(table(name, m, c, seconds), flush=True)
        out[name] = {"metrics": m, "cores": c, "train_seconds": seconds}
    print(f"total {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="p = 7, 3 seeds: seconds")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds")
    parser.add_argument("--no-builtin", action="store_true",
                        help="skip the built-in transformer run")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
