"""Minimal reproduction of the LAPACK deadlock (docs/design.md): concurrent batched LAPACK
calls deadlock XLA's CPU pool.

    python tests/lapack_deadlock_repro.py --impl=jnp      # jnp.linalg.svd: hangs (exit 75)
    python tests/lapack_deadlock_repro.py --impl=mechjax  # mechjax.linalg.svd: completes (exit 0)

``--pattern=independent``: one jitted program holds ``--calls`` independent batched float64 SVDs of
``--batch`` matrices of ``--dim`` x ``--dim``. ``--pattern=analysis`` (the shape of ACE over seeds
and checkpoints): ``lax.map`` over ``--calls`` chunks of a function vmapped over ``--batch``
models, each doing SVD -> QR -> eigh on ``--dim``-wide activations. The thunk executor runs
independent custom calls concurrently on the intra-op pool, and jaxlib 0.10.2 fans each batch out
into that same pool and blocks on it (``jax::ParallelBatchMap``: chunks only when batch * cost >=
2e5 FLOP and the pool has > 1 thread); when every worker does so at once, nobody runs the chunks.
The program runs ``--iters`` times under mechjax's stall watchdog, which ends a deadlocked run with
exit status 75 and one line on stderr instead of hanging forever.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from mechjax import linalg  # noqa: E402
from mechjax.sweeps import watchdog  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=("jnp", "mechjax"), required=True)
    parser.add_argument("--pattern", choices=("independent", "analysis"), default="independent")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--calls", type=int, default=32)
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--stall_seconds", type=float, default=30.0)
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    lib = jnp.linalg if args.impl == "jnp" else linalg

    def one_model(h):  # [n, d] activations -> a core-like summary, three decompositions in a row
        u, s, _ = lib.svd(h.T @ h, full_matrices=False)
        q, _ = lib.qr(u * s)
        return lib.eigh(q.T @ (h.T @ h) @ q)[0]

    if args.pattern == "independent":
        def program(xs):
            return [lib.svd(x, compute_uv=False) for x in xs]
    else:
        def program(xs):
            return jax.lax.map(jax.vmap(one_model), jnp.stack(xs))
    program = jax.jit(program)
    xs = [jax.random.normal(jax.random.PRNGKey(i), (args.batch, args.dim, args.dim), jnp.float64)
          for i in range(args.calls)]
    jax.block_until_ready(program(xs))  # compile outside the timed loop
    t0 = time.perf_counter()
    with watchdog.watch(f"{args.calls} batched LAPACK calls ({args.pattern}, {args.impl})",
                        stall_seconds=args.stall_seconds):
        for _ in range(args.iters):
            jax.block_until_ready(program(xs))
    print(f"completed {args.iters} runs of {args.calls} batched calls [{args.batch}, {args.dim}, "
          f"{args.dim}] ({args.pattern}) with {args.impl}: {(time.perf_counter() - t0) / args.iters * 1e3:.2f} "
          f"ms per run on {os.cpu_count()} cores", flush=True)


if __name__ == "__main__":
    main()
