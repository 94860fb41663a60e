"""Old vs new ODE integration for IMIR, side by side: the hand-written fixed-step
RK4 the library used before (kept here only as the comparison) against ``dynamics.solver`` (diffrax,
adaptive Tsit5 with error control), on

  grid   the 4-coordinate reduced ODE on the ``imir_phase`` CPU grid (``configs/cpu.py``: 64 x 64
         (f_r, f_v) cells, vmapped), deviation against a float64 diffrax solve at rtol 1e-8;
  full   the full-manifold ODE check (``measure.ode_vs_gd``'s tiny spec), deviation against the
         same float64 reference, and against full gradient descent as the experiment reports it.

``python -m experiments.imir_phase.benchmark_ode [grid] [full] [--rtol=1e-4] [--n=64]`` prints one table
per problem: seconds (compile excluded, best of two), max |theta - reference| and max |p_rare -
reference|. Not a test: the numbers depend on the machine's load.
"""
from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments.imir_phase.configs import cpu
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.dynamics import reference as ode
from mechjax.analysis.imir.dynamics import four_coord as rd
from mechjax.analysis.imir.dynamics import solver as solve
from experiments.imir_measure.measure import TINY
from mechjax.tasks import blocklist as bl


def rk4(field, theta0, args, t1, n_steps, n_save):
    """The replaced integrator: classical RK4, ``n_steps`` fixed steps, ``n_save`` saves."""
    per, dt = n_steps // n_save, t1 / n_steps

    def step(_, th):
        k1 = field(th, args)
        k2 = field(th + 0.5 * dt * k1, args)
        k3 = field(th + 0.5 * dt * k2, args)
        k4 = field(th + dt * k3, args)
        return th + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)

    def chunk(th, _):
        th = jax.lax.fori_loop(0, per, step, th)
        return th, th

    _, traj = jax.lax.scan(chunk, theta0, None, n_save)
    return jnp.concatenate([theta0[None], traj])


def timed(fn, *args, repeats: int = 2):
    """Result (numpy) and the best of ``repeats`` runs' seconds, compilation excluded."""
    compiled = jax.jit(fn).lower(*args).compile()
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        best = min(best, time.perf_counter() - t0)
    return jax.tree.map(np.asarray, out), best


def row(name: str, secs: float, theta: np.ndarray, ref: np.ndarray, extra: str = "") -> str:
    dev = np.max(np.abs(theta.astype(np.float64) - ref))
    return f"  {name:<34s} {secs:9.2f} s   max|dtheta| {dev:9.2e}   {extra}"


def grid(rtol: float, n: int | None = None) -> None:
    c = cpu.get_config()
    t, o, g = c.task, c.ode, c.grid
    g.n = n or g.n
    sizes = rd.RecallSizes(t.n_common, t.n_rare, t.n_blocks)
    ax_r = np.linspace(g.f_r_min, g.f_r_max, g.n)
    ax_v = np.linspace(g.f_v_min, g.f_v_max, g.n)
    fr, fv = (x.ravel() for x in np.meshgrid(ax_r, ax_v, indexing="ij"))
    f = rd.field(sizes)
    field = lambda th, a: f(th, *a)

    def p_rare(traj, a):
        return jax.vmap(lambda th: rd.metrics(sizes, th, *a)["p_rare"])(traj)

    def batch(one, dtype):
        def run(th0, b, r, v):
            def cell(b, r, v):
                traj = one(th0, (b, r, v))
                return traj, p_rare(traj, (b, r, v))
            return jax.vmap(cell)(b, r, v)
        args = (jnp.asarray(o.init, dtype),) + tuple(
            jnp.asarray(x, dtype) for x in (np.full(fr.size, t.b), fr, fv))
        return run, args

    print(f"grid: {fr.size} cells, t1={o.t1}, n_save={o.n_save}, V={sizes.vocab}, "
          f"T={sizes.seq_len}")
    with jax.enable_x64(True):
        fn, args = batch(lambda th, a: solve.solve(field, th, a, o.t1, o.n_save, rtol=1e-8,
                                                   atol=1e-10), jnp.float64)
        (ref, ref_p), secs = timed(fn, *args, repeats=1)
    print(f"  reference: float64 diffrax rtol 1e-8 ({secs:.1f} s)")
    for n in (o.n_steps, 2 * o.n_steps, 4 * o.n_steps):
        fn, args = batch(lambda th, a, n=n: rk4(field, th, a, o.t1, n, o.n_save), jnp.float32)
        (th, p), secs = timed(fn, *args)
        print(row(f"RK4 {n} steps (old{', default' if n == o.n_steps else ''})", secs, th, ref,
                  f"max|dp_rare| {np.max(np.abs(p - ref_p)):.2e}"))
    for r in (rtol * 10, rtol, rtol / 10):
        fn, args = batch(lambda th, a, r=r: solve.solve(field, th, a, o.t1, o.n_save, rtol=r,
                                                        atol=r / 100), jnp.float32)
        (th, p), secs = timed(fn, *args)
        steps = jax.jit(jax.vmap(lambda b, rr, v, r=r: solve.solve_with_stats(
            field, args[0], (b, rr, v), o.t1, o.n_save, rtol=r, atol=r / 100)[1]["num_steps"]))(
            *args[1:])
        print(row(f"diffrax Tsit5 rtol {r:.0e}{' (default)' if r == solve.RTOL else ''}", secs,
                  th, ref, f"max|dp_rare| {np.max(np.abs(p - ref_p)):.2e}   steps "
                  f"{int(np.min(steps))}-{int(np.max(steps))}"))


def full(rtol: float, n: int | None = None) -> None:
    spec = TINY
    tp = {k: jnp.float32(v) for k, v in spec.default_params().items()}
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len)
    basis = ib.make_basis(frame)
    support = bl.enumerate_support(spec).prune(tp).orbit_quotient(spec)
    t1, n_save = 400.0, 40
    print(f"full manifold: {basis.size} coordinates, {support.size} orbit sequences, t1={t1}")

    def field_for(dtype):
        return ode.enumerated_field(basis, ode.population_loss_fn(basis, support, dtype=dtype))

    with jax.enable_x64(True):
        th0 = 0.1 * jax.random.normal(jax.random.key(0), (basis.size,), jnp.float64)
        tp64 = {k: jnp.float64(v) for k, v in tp.items()}
        ref, secs = timed(lambda th: solve.solve(field_for(jnp.float64), th, tp64, t1, n_save,
                                                 rtol=1e-8, atol=1e-10), th0, repeats=1)
    print(f"  reference: float64 diffrax rtol 1e-8 ({secs:.1f} s)")
    th0 = th0.astype(jnp.float32)
    f32 = field_for(jnp.float32)
    for n in (200, 400):
        th, secs = timed(lambda th, n=n: rk4(f32, th, tp, t1, n, n_save), th0)
        print(row(f"RK4 {n} steps (old{' default' if n == 400 else ''})", secs, th, ref))
    for r in (rtol * 10, rtol, rtol / 10):
        th, secs = timed(lambda th, r=r: solve.solve(f32, th, tp, t1, n_save, rtol=r,
                                                     atol=r / 100), th0)
        _, st = jax.jit(lambda th, r=r: solve.solve_with_stats(f32, th, tp, t1, n_save, rtol=r,
                                                               atol=r / 100))(th0)
        print(row(f"diffrax Tsit5 rtol {r:.0e}{' (default)' if r == solve.RTOL else ''}", secs,
                  th, ref, f"steps {int(st['num_steps'])}"))


def main(argv: list[str]) -> None:
    rtol, n = solve.RTOL, None
    jobs = []
    for a in argv:
        if a.startswith("--rtol="):
            rtol = float(a.split("=", 1)[1])
        elif a.startswith("--n="):
            n = int(a.split("=", 1)[1])
        elif a in ("grid", "full"):
            jobs.append(a)
        else:
            raise SystemExit(f"unknown argument {a!r}; allowed: grid, full, --rtol=R, --n=N (grid side)")
    for job in jobs or ["grid", "full"]:
        {"grid": grid, "full": full}[job](rtol, n)


if __name__ == "__main__":
    main(sys.argv[1:])
