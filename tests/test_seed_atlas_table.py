"""``seed_atlas.measure_table`` and ``weight_similarity`` on a small saved run, read back through
``mechjax.sweeps.runs``; ``trajectory_similarity`` on hand-made trajectories."""
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.sweeps import runs
from mechjax.analysis import ace
from mechjax.analysis import seed_atlas as sa
from mechjax.models.config import ModelConfig
from mechjax.sweeps.snapshots import SnapshotPolicy
from mechjax.sweeps.sweep import run_sweep
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, make_train


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """3 seeds, snapshots at steps 0, 10, 20, 30."""
    workdir = str(tmp_path_factory.mktemp("atlas") / "w")
    task = modular.make_task(p=7, batch_size=16, train_fraction=0.6)
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_mlp=32, d_vocab=7, n_ctx=2,
                      causal=False)
    trainer = make_train(task, cfg, TrainConfig(steps=30, eval_every=10))
    run_sweep(trainer, [0, 1, 2], {"lr": [1e-2]}, workdir, chunk_evals=1,
              snapshots=SnapshotPolicy(every_chunks=1, steps=(0,)), log_every_chunk=False)
    return runs.open(workdir)


def test_measures_are_read_per_seed_and_step_jax_ones_vmapped(run):
    calls = {"jax": 0, "numpy": 0}

    def embed_norm(params, cfg):  # traceable: traced once, the program reused at every step
        calls["jax"] += 1
        return jnp.linalg.norm(params["embed.W_E"]) / cfg.d_model

    def unembed_max(params, cfg):  # not traceable (float of a value): once per seed
        calls["numpy"] += 1
        return float(np.abs(np.asarray(params["unembed.W_U"])).max())

    table = sa.measure_table(run, {"embed": embed_norm, "unembed": unembed_max})
    assert run.steps_saved == [0, 10, 20, 30]
    assert table["embed"].shape == table["unembed"].shape == (3, 4)
    for i, seed in enumerate(run.seeds):
        for j, step in enumerate(run.steps_saved):
            p = run.params(seed, step)
            assert table["embed"][i, j] == pytest.approx(np.linalg.norm(p["embed.W_E"]) / 16,
                                                         rel=1e-5)
            assert table["unembed"][i, j] == np.abs(p["unembed.W_U"]).max()
    assert calls["jax"] == 1 and calls["numpy"] == 4 * (1 + 3)  # per step: failed trace + 3 seeds
    assert not np.allclose(table["embed"][:, 0], table["embed"][:, -1])  # training moved it


def test_a_measure_giving_a_dict_fills_one_column_per_key(run):
    def norms(params, cfg):  # one pass, two numbers
        return {"W_E": jnp.linalg.norm(params["embed.W_E"]),
                "W_U": jnp.linalg.norm(params["unembed.W_U"])}

    table = sa.measure_table(run, {"norm": norms}, steps=[0, 30])
    assert sorted(table) == ["norm/W_E", "norm/W_U"] and table["norm/W_U"].shape == (3, 2)
    p = run.params(run.seeds[2], 30)
    assert table["norm/W_U"][2, 1] == pytest.approx(np.linalg.norm(p["unembed.W_U"]), rel=1e-5)
    assert table["norm/W_E"][2, 1] == pytest.approx(np.linalg.norm(p["embed.W_E"]), rel=1e-5)


def test_a_subset_of_steps_and_bad_measures(run):
    table = sa.measure_table(run, {"n": lambda p, c: p["embed.W_E"].sum()}, steps=[10, 30])
    assert table["n"].shape == (3, 2)
    with pytest.raises(ValueError, match="one number per model"):
        sa.measure_table(run, {"rows": lambda p, c: p["embed.W_E"][0]}, steps=[0])
    with pytest.raises(ValueError, match="measures is empty"):
        sa.measure_table(run, {})


def test_weight_similarity_is_ace_weight_cosine_on_the_chosen_parameters(run):
    sim = sa.weight_similarity(run, step=30, prefixes=("blocks.0.attn.",))
    stacked = run.stacked_params(30)
    chosen = {k: v for k, v in stacked.items() if k.startswith("blocks.0.attn.")}
    np.testing.assert_allclose(sim, ace.weight_cosine_matrix(chosen), rtol=1e-6)
    assert not np.allclose(sim, sa.weight_similarity(run, step=30))  # all weights differ
    with pytest.raises(ValueError, match="match no parameter"):
        sa.weight_similarity(run, prefixes=("nope",))


def test_trajectory_similarity_correlation_is_shape_distance_is_level():
    t = np.linspace(0, 1, 10)
    table = {"m": np.stack([t, 2 * t + 5, 1 - t, t + 0.01])}
    corr = sa.trajectory_similarity(table, kind="correlation")
    np.testing.assert_allclose(corr[0], [1, 1, -1, 1], atol=1e-9)  # scale and level removed
    dist = sa.trajectory_similarity(table, kind="distance")
    assert dist[0, 3] > 0.99 and dist[0, 1] < dist[0, 3] and dist.min() == 0.0
    np.testing.assert_allclose(np.diag(dist), 1.0)
    with pytest.raises(ValueError, match="allowed measures"):
        sa.trajectory_similarity(table, ["x"])
    with pytest.raises(ValueError, match="kind='cos'"):
        sa.trajectory_similarity(table, kind="cos")


def test_a_measure_constant_up_to_float32_rounding_adds_nothing():
    t = np.linspace(0, 1, 10)
    flat = (1.0 + 1e-7 * (-1.0) ** np.arange(30).reshape(3, 10)).astype(np.float32)  # sd ~1e-7
    z = sa.standardize({"flat": flat, "t": np.stack([t, t, -t])})
    np.testing.assert_array_equal(z["flat"], 0.0)
    assert z["t"].std() == pytest.approx(1.0)
    sim = sa.trajectory_similarity({"flat": flat}, kind="distance")
    np.testing.assert_array_equal(sim, 1.0)  # no difference to find, none made up
