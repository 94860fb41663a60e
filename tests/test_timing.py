"""Batched-over-seeds timing: same numbers as the loop, times reported separately."""
from __future__ import annotations

import jax
import numpy as np
import jax.numpy as jnp

from mechjax.sweeps.timing import batched_over_seeds, grid_vs_sequential, loop_over_seeds, over_seeds


def test_batched_and_loop_give_each_seeds_result():
    stacked = {"w": jnp.arange(12.0).reshape(3, 4)}
    x = jnp.asarray([1.0, 2.0, 3.0, 4.0])
    fn = lambda p, x: (p["w"] * x).sum()  # noqa: E731
    out, t = batched_over_seeds(fn, stacked, x)
    np.testing.assert_allclose(out, [20.0, 60.0, 100.0])
    loop, t_loop = loop_over_seeds(fn, stacked, x)
    np.testing.assert_allclose([float(v) for v in loop], [20.0, 60.0, 100.0])
    for times in (t, t_loop):
        assert set(times) == {"compile_seconds", "seconds"}
        assert times["compile_seconds"] > 0 and times["seconds"] > 0


def test_over_seeds_stacks_the_loop_like_the_vmap():
    stacked = {"w": jnp.arange(12.0).reshape(3, 4)}
    x = jnp.asarray([1.0, 2.0, 3.0, 4.0])
    fn = lambda p, x: {"sum": (p["w"] * x).sum(), "w2": p["w"] * 2}  # noqa: E731
    looped, t_loop = over_seeds(fn, stacked, x, vectorize="loop")
    batched, t_vmap = over_seeds(fn, stacked, x)  # auto: the vmapped program
    assert (t_loop["vectorize"], t_vmap["vectorize"]) == ("loop", "vmap")
    np.testing.assert_allclose(looped["sum"], [20.0, 60.0, 100.0])
    for k in ("sum", "w2"):
        np.testing.assert_array_equal(looped[k], batched[k])


def test_grid_vs_sequential_times_every_run_of_the_grid():
    # the smallest trainer (no LayerNorm, no dropout, default init): the bookkeeping is what is
    # checked here, and each of its three programs compiles in a fraction of a bigger model's time
    from mechjax.models.config import ModelConfig
    from mechjax.tasks import modular
    from mechjax.training.train import TrainConfig, make_train
    task = modular.make_task(p=5, batch_size=8, train_fraction=0.6)
    cfg = ModelConfig(n_layers=1, d_model=8, n_heads=1, d_mlp=16, d_vocab=5, d_vocab_out=5,
                      n_ctx=2, causal=False)
    trainer = make_train(task, cfg, TrainConfig(steps=3, eval_every=1))
    hp = trainer.default_hparams(lr=1e-2)
    grid = {k: jnp.broadcast_to(v, (2,)) for k, v in hp.items()}
    grid["weight_decay"] = jnp.asarray([0.5, 1.0], jnp.float32)
    out = grid_vs_sequential(trainer, [0, 1], grid, steps=3)
    assert out["runs"] == 4 and out["steps_per_run"] == 3
    assert out["grid_seconds"] > 0 and out["sequential_seconds"] > 0
    assert out["sequential_over_grid"] == out["sequential_seconds"] / out["grid_seconds"]


def test_vmap_in_seed_blocks_gives_the_plain_vmap_for_every_block_size():
    rng = np.random.default_rng(0)
    stacked = {"w": jnp.asarray(rng.normal(size=(7, 3, 4)), jnp.float32)}  # 7 seeds
    x = jnp.asarray(rng.normal(size=(4,)), jnp.float32)
    fn = lambda p, x: {"y": p["w"] @ x, "n": jnp.linalg.norm(p["w"])}  # noqa: E731
    plain = jax.vmap(fn, (0, None))(stacked, x)
    for block in (None, 1, 2, 3, 7, 8):  # 2 and 3 leave a padded last block
        blocked, t = batched_over_seeds(fn, stacked, x, seed_block=block)
        for key in plain:
            assert blocked[key].shape == plain[key].shape
            np.testing.assert_allclose(blocked[key], plain[key], rtol=1e-6, err_msg=f"{block}")
    assert set(t) == {"compile_seconds", "seconds"}
    out, t = over_seeds(fn, stacked, x, vectorize="vmap", seed_block=3)
    np.testing.assert_allclose(out["y"], plain["y"], rtol=1e-6)
