"""The trained cells' in-weights read-off measures what the exact dynamics' ``p_iwl`` measures:
the sampled mean over ``cells.theory.iwl_pool`` equals the exact read-off within its Monte Carlo
error, through the theory cells' pool and the standard cells' ``eval_fn`` alike, at a burstiness
where the spec's own layout reads another population (many standard errors away)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.cells import standard
from mechjax.analysis.imir.cells.theory import eval_pool, iwl_pool
from mechjax.analysis.imir.dynamics import model as exact
from mechjax.analysis.imir.manifold import project as proj
from mechjax.models.transformer import forward
from mechjax.tasks import blocklist as bl

TASK = bl.BlockListSpec(n_common=6, n_rare=6, n_blocks=4, burstiness=2)
N = 2048
TP = {"f_r": jnp.float32(0.3), "f_v": jnp.float32(0.1)}


def _p_assoc(params, cfg, pool, assoc):
    toks, qpos, _ = pool
    lg = jnp.take_along_axis(forward(params, toks, cfg), qpos[:, None, None], 1)[:, 0]
    query = jnp.take_along_axis(toks, qpos[:, None], 1)[:, 0]
    return np.asarray(jax.nn.softmax(lg, -1)[jnp.arange(len(query)), assoc[query]])


def _within(p: np.ndarray, want: float, n_se: float = 4.0) -> bool:
    return abs(p.mean() - want) <= n_se * p.std() / np.sqrt(p.size) + 1e-6


def test_trained_cells_in_weights_pool_is_the_exact_p_iwl_population() -> None:
    model = exact.make(TASK)
    cfg = exact.ib.imir_config(model.basis.frame)
    fixed = exact.ib.fixed_params(model.basis.frame)
    assoc = jnp.asarray(TASK.association())
    eval_fn = standard.readoff_fn(TASK, cfg, N)
    gaps = []
    # ICL formed with IWL half formed: context copying makes the layouts differ
    for sub in ((3.0, 3.0, 3.0, 0.5), (3.0, 3.0, 3.0, 3.0)):
        theta = jnp.asarray(exact.abgd_init(model, sub), jnp.float32)
        params = {**fixed, **proj.weights(model.basis, theta)}
        want = float(model.readouts(theta, TP)["p_iwl"])
        got = _p_assoc(params, cfg, iwl_pool(TASK, jax.random.key(3), N), assoc)
        assert _within(got, want), (got.mean(), want)
        # the standard cells' eval_fn draws its pool with iwl_pool from key(0): the same numbers
        np.testing.assert_allclose(
            float(eval_fn(params, TP, jax.random.key(4))["p_iwl"]),
            _p_assoc(params, cfg, iwl_pool(TASK, jax.random.key(0), N), assoc).mean(), rtol=1e-5)
        # the spec's own b = 2 layout (b copies of distractor 0): another population
        own = _p_assoc(params, cfg, eval_pool(TASK, jax.random.key(3), N, 0.0, False), assoc)
        gaps.append(not _within(own, want, 10.0))
    assert any(gaps)
