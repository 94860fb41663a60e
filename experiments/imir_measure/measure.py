"""The numbers quoted in docs/imir.md: confinement (exact, Monte Carlo, broken symmetries), the
reduced ODE against full gradient descent, and the 4-coordinate sub-manifold against full
training (``python -m experiments.imir_measure [confinement|ode|abgd ...]`` prints them).
"""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import submanifold as subm
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.manifold import confinement as cf
from mechjax.analysis.imir.dynamics import reference as ode
from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.dynamics import solver as solve
from mechjax.tasks import blocklist as bl

TINY = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2)


def _frame(spec, layers=2, heads=1, centred=True):
    return ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len, layers, heads,
                         centred=centred)


def confinement(seed: int = 1, scale: float = 0.7) -> dict:
    """Exact residuals for every basis variant and broken symmetry; Monte Carlo vs batch."""
    out: dict = {}
    frame = _frame(TINY)
    full = ib.make_basis(frame)
    theta = scale * jax.random.normal(jax.random.key(seed), (full.size,))
    w = proj.weights(full, theta)
    _, g = cf.population_gradient(TINY, frame, w)
    for name, (tm, pm) in {"full": ("full", "all"), "split_tokens": ("split", "all"),
                           "literal_tokens": ("literal", "all"),
                           "literal_positions": ("full", "literal"),
                           "literal": ("literal", "literal")}.items():
        b = ib.make_basis(frame, tm, pm)
        out[f"exact_f32/{name}"] = {"n_coords": b.size, **cf.grad_residual(b, g)}
    with jax.enable_x64(True):
        w64 = proj.weights(full, theta.astype(jnp.float64))
        _, g64 = cf.population_gradient(TINY, frame, w64)
        out["exact_f64/full"] = cf.grad_residual(full, g64)
    broken = {
        "fixed_offsets": (bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2,
                                           offsets="fixed"), None, True),
        "key_bias_0.5": (bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2,
                                          biased=True), {"key_bias": 0.5}, True),
        "uncentred_embeddings": (TINY, None, False),
    }
    for name, (spec, tp, centred) in broken.items():
        fr = _frame(spec, centred=centred)
        b = ib.make_basis(fr)
        _, gb = cf.population_gradient(spec, fr, proj.weights(b, theta), tp)
        out[f"broken/{name}"] = cf.grad_residual(b, gb)
    others = {
        "khop2": bl.BlockListSpec(kind="khop", hops=2, n_common=6, n_rare=3, n_blocks=3,
                                  f_r=0.4, f_v=0.2),
        "ioi": bl.BlockListSpec(kind="ioi", n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2),
        "ngram3": bl.BlockListSpec(kind="ngram", block_len=3, n_common=6, n_rare=3, n_blocks=2,
                                   f_r=0.4, f_v=0.2),
        "cond": bl.BlockListSpec(kind="cond", n_cond=2, n_common=4, n_rare=4, n_blocks=3,
                                 f_r=0.4, f_v=0.2),
    }
    for name, spec in others.items():
        fr = _frame(spec)
        b = ib.make_basis(fr)
        th = scale * jax.random.normal(jax.random.key(seed), (b.size,))
        out[f"tasks/{name}"] = cf.exact_confinement(spec, b, proj.weights(b, th))
    for name, (layers, heads) in {"3x1": (3, 1), "2x2": (2, 2)}.items():
        spec = bl.BlockListSpec(n_common=4, n_rare=2, n_blocks=2, f_r=0.4, f_v=0.2)
        fr = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len, layers, heads,
                           jax.random.key(3))
        b = ib.make_basis(fr)
        th = scale * jax.random.normal(jax.random.key(seed), (b.size,))
        out[f"layers_heads/{name}"] = cf.exact_confinement(spec, b, proj.weights(b, th))
    rows = cf.mc_confinement(TINY, full, w, [256, 1024, 4096, 16384, 65536],
                             jax.random.key(0), n_rep=3)
    out["monte_carlo"] = rows
    out["monte_carlo_slope"] = cf.loglog_slope([r["batch"] for r in rows],
                                               [r["rel_residual"] for r in rows])
    return out


def ode_vs_gd(spec: bl.BlockListSpec = TINY, t1: float = 400.0, lr: float = 0.2,
              n_save: int = 40, init_scale: float = 0.1, seed: int = 0,
              n_init: int = 1, return_trajectories: bool = False) -> dict:
    """Reduced ODE (full basis) vs gradient descent on every weight, from the same points.
    ``return_trajectories`` adds ``trajectories`` (first start: ``t``, ``ode``/``gd`` coordinates
    ``[n_save + 1, n]``, and the 4 coordinates largest at the end as ``ode_top``/``gd_top``)."""
    tp = {k: jnp.float32(v) for k, v in spec.default_params().items()}
    support = bl.enumerate_support(spec).prune(tp)
    frame = _frame(spec)
    basis = ib.make_basis(frame)
    loss = ode.population_loss_fn(basis, support)
    field = ode.enumerated_field(basis, ode.population_loss_fn(basis, support.orbit_quotient(spec)))
    theta0 = init_scale * jax.random.normal(jax.random.key(seed), (n_init, basis.size))
    t = time.time()
    traj, stats = jax.block_until_ready(jax.jit(jax.vmap(
        lambda th: solve.solve_with_stats(field, th, tp, t1, n_save)))(theta0))
    t_ode = time.time() - t
    t = time.time()
    n_gd = int(round(t1 / lr))
    gd = jax.jit(jax.vmap(lambda th: ode.gradient_descent(basis, loss, th, tp, lr, n_gd,
                                                          n_save)))(theta0)
    jax.block_until_ready(gd)
    t_gd = time.time() - t
    runs = []
    for i in range(n_init):
        losses = np.asarray(gd["loss"][i])
        hit = losses <= 0.1 * losses[0]
        upto = int(np.argmax(hit)) + 1 if hit.any() else len(losses)
        runs.append({"loss_curve": losses.round(4).tolist(),
                     "loss_start": float(losses[0]), "loss_end": float(losses[-1]),
                     "loss_drop_90_at_t": float(gd["t"][i][upto - 1]) if hit.any() else None,
                     "until_90": ode.max_rel_deviation(gd["theta"][i], traj[i], upto),
                     "whole": ode.max_rel_deviation(gd["theta"][i], traj[i]),
                     "max_off_span": float(gd["off_span"][i].max())})
    out = {"spec": repr(spec), "n_coords": basis.size, "support": support.size,
           "ode_steps": int(np.max(stats["num_steps"])), "ode_rtol": solve.RTOL,
           "ode_atol": solve.ATOL, "gd_steps": n_gd, "lr": lr,
           "seconds_ode": t_ode, "seconds_gd": t_gd, "runs": runs}
    if return_trajectories:
        ode_th, gd_th = np.asarray(traj[0]), np.asarray(gd["theta"][0])
        top = np.argsort(-np.abs(ode_th[-1]))[:4]
        out["trajectories"] = {"t": np.asarray(gd["t"][0]), "ode": ode_th, "gd": gd_th,
                               "names": [basis.names()[i] for i in top],
                               "ode_top": ode_th[:, top], "gd_top": gd_th[:, top]}
    return out


def abgd_vs_full(spec: bl.BlockListSpec = TINY, t1: float = 400.0, lr: float = 0.2,
                 n_save: int = 40, start: float = 0.1) -> dict:
    """The 4-coordinate (alpha, beta, gamma, delta) ODE vs full training from the same point."""
    tp = {k: jnp.float32(v) for k, v in spec.default_params().items()}
    support = bl.enumerate_support(spec).prune(tp)
    frame = _frame(spec)
    basis = ib.make_basis(frame)
    names, phi = subm.abgd_coordinates(basis)
    loss = ode.population_loss_fn(basis, support)
    loss_q = ode.population_loss_fn(basis, support.orbit_quotient(spec))
    sub0 = jnp.full((4,), start, jnp.float32)
    sub_traj = jax.jit(lambda th: solve.solve(ode.enumerated_field(basis, loss_q, phi), th, tp, t1,
                                                n_save))(sub0)
    full0 = sub0 @ jnp.asarray(phi, jnp.float32)
    full_traj = jax.jit(lambda th: solve.solve(ode.enumerated_field(basis, loss_q), th, tp, t1,
                                                 n_save))(full0)
    gd = jax.jit(lambda th: ode.gradient_descent(basis, loss, th, tp, lr, int(round(t1 / lr)),
                                                 n_save))(full0)
    g = proj.gram(basis)
    to_sub = subm.abgd_projector(basis)
    gd_sub = np.asarray(gd["theta"]) @ to_sub.T
    lossf = jax.jit(jax.vmap(lambda th: loss(proj.weights(basis, th), tp)))
    l_sub = np.asarray(lossf(sub_traj @ jnp.asarray(phi, jnp.float32)))
    l_gd = np.asarray(gd["loss"])
    tt = np.asarray(gd["t"])

    def emergence(x):  # first time each coordinate reaches half its final value
        x = np.asarray(x)
        return {n: float(tt[np.argmax(np.abs(x[:, j] - x[0, j]) >=
                                      0.5 * np.abs(x[-1, j] - x[0, j]))])
                for j, n in enumerate(names)}

    off = np.asarray(gd["theta"]) - gd_sub @ phi
    off_frac = np.linalg.norm(off @ np.linalg.cholesky(g), axis=1) / np.maximum(
        np.linalg.norm(np.asarray(gd["theta"]) @ np.linalg.cholesky(g), axis=1), 1e-30)
    helpers = np.argsort(-np.abs(off[-1]))[:8]
    bn = basis.names()
    return {"ode_rtol": solve.RTOL, "t": tt.tolist(),
            "loss_abgd": l_sub.tolist(), "loss_full_training": l_gd.tolist(),
            "loss_full_ode": np.asarray(lossf(full_traj)).tolist(),
            "max_abs_loss_gap": float(np.max(np.abs(l_sub - l_gd))),
            "abgd_final": dict(zip(names, np.asarray(sub_traj[-1]).tolist())),
            "full_training_projected_final": dict(zip(names, gd_sub[-1].tolist())),
            "emergence_abgd": emergence(sub_traj), "emergence_full_training": emergence(gd_sub),
            "full_training_off_abgd_fraction_final": float(off_frac[-1]),
            "top_helper_coordinates": {bn[i]: float(off[-1, i]) for i in helpers}}


def layout_leak(n_layers: int = 5, n_pad: int = 2, scale: float = 0.7, seed: int = 1,
                batch_sizes: tuple[int, ...] = (1024, 4096, 16384), n_rep: int = 2) -> dict:
    """How far the population gradient leaves the manifold under each block-list layout, for
    ``imir_detect``'s 2-hop setting (``khop_cpu`` sizes, the causal model, the paper's position
    set): ``fixed`` (the query ends the sequence, blocks at fixed positions) against
    ``linear_gap`` (``n_pad`` pad tokens in random gaps, so blocks sit at random offsets).
    Monte Carlo at a random manifold point (``theta ~ N(0, scale^2)``): the residual's excess
    over its half-batch noise floor estimates the expected gradient's off-span fraction."""
    out: dict = {}
    for layout in ("fixed", "linear_gap"):
        spec = bl.BlockListSpec(kind="khop", hops=2, n_common=6, n_rare=5, n_blocks=4,
                                f_r=0.8, f_v=0.5, offsets=layout,
                                n_pad=n_pad if layout == "linear_gap" else 0)
        frame = _frame(spec, layers=n_layers)
        basis = ib.make_basis(frame, position_mode="literal", block_len=spec.block_len)
        theta = scale * jax.random.normal(jax.random.key(seed), (basis.size,))
        rows = cf.mc_confinement(spec, basis, proj.weights(basis, theta), list(batch_sizes),
                                 jax.random.key(0), n_rep=n_rep, causal=True, chunk=1024)
        out[layout] = {"n_coords": basis.size, "seq_len": spec.seq_len, "rows": rows,
                       "excess_at_largest": rows[-1]["excess"]}
    return out
