"""ACE cores of the binding circuit across seeds (``mechjax.studies.binding_cores`` and the
``experiments.seed_atlas.binding_cores`` command) on planted seeds, no training.

Planted split: four random tiny Assign-and-Add models whose two attention layers write only into
the first ``K`` residual directions ``S`` (``W_O`` projected onto S), so the activation at the
layer-2 MLP input varies only in S and the core is S (or a subspace of it). Seeds 0-3 are those
models; seeds 4-7 are the same models with the residual stream rotated by a random orthogonal Q
(every weight that reads or writes it: the same function, the core moved to Q S). ACE must find
two groups in the overlap (1 within, ~K/D between), while the CCA of each model with its rotated
twin is 1 (the cores differ geometrically and match statistically, as the ACE paper finds across
seeds). Control: a rotation that keeps S (Q = Q_S + Q_rest) changes every weight as much but not
the core's subspace: one group. Every call has the same shapes, so ACE compiles once for the
file."""
import dataclasses
import json
import os

import jax
import numpy as np
import pytest
import scipy.linalg

from conftest import assert_refused_before_writing

from experiments.seed_atlas import binding_cores as command
from experiments.seed_atlas.configs import binding_cores as bc_cfg
from mechjax.studies import binding_cores as bc
from mechjax.io import write_json, write_npz
from mechjax.models.transformer import init_params
from mechjax.sweeps.snapshots import snapshot_path
from mechjax.sweeps.files import write_metrics
from mechjax.tasks import assign_add as aa
from mechjax.training.train import TrainConfig

D, K = 16, 3
CFG = dataclasses.replace(aa.model_config(), d_model=D, d_mlp=32)
GROUP = np.array([0, 0, 0, 0, 1, 1, 1, 1])
PROBE, JAC = 96, 24
STEPS = (0, 10)  # the fake run's saved steps


def rotate(params, q):
    """The residual stream ``x -> x q``: readers ``W -> q^T W``, writers ``W -> W q``."""
    out = dict(params)
    for name in ("embed.W_E", "pos_embed.W_pos", "blocks.0.attn.W_O", "blocks.1.attn.W_O",
                 "blocks.1.mlp.W_out"):
        out[name] = params[name] @ q
    for name in ("blocks.0.attn.W_Q", "blocks.0.attn.W_K", "blocks.0.attn.W_V",
                 "blocks.1.attn.W_Q", "blocks.1.attn.W_K", "blocks.1.attn.W_V",
                 "blocks.1.mlp.W_in", "unembed.W_U"):
        out[name] = np.einsum("de,...dk->...ek", q, params[name])
    return out


def orthogonal(seed, n):
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))[0]


def planted(keep_subspace: bool = False):
    """Stacked params ``[8, ...]``: four S-writing models, then the same four rotated (numpy:
    no eager JAX op to compile)."""
    write_s = np.diag((np.arange(D) < K).astype(np.float32))
    base = []
    for i in range(4):
        p = {k: np.asarray(v) for k, v in init_params(jax.random.PRNGKey(i), CFG).items()}
        for layer in (0, 1):
            p[f"blocks.{layer}.attn.W_O"] = p[f"blocks.{layer}.attn.W_O"] @ write_s
        base.append(p)
    if keep_subspace:
        q = scipy.linalg.block_diag(orthogonal(10, K), orthogonal(11, D - K))
    else:
        q = orthogonal(12, D)
    seeds = base + [rotate(p, q.astype(np.float32)) for p in base]
    return {k: np.stack([p[k] for p in seeds]) for k in seeds[0]}


def analyse(params):
    inputs = bc.binding_inputs(jax.random.PRNGKey(1234), PROBE, JAC, aa.authors_split(42), 0.7)
    result, _ = bc.binding_cores(params, inputs, CFG, bc.binding_pipeline(keep_coords=K))
    return bc.compare_cores(result, GROUP, K)


def write_run(folder, params, task=True):
    """A run folder as ``experiments.assign_add`` leaves it (what ``mechjax.sweeps.runs`` reads):
    snapshots at ``STEPS``, group 1 at restricted accuracy 1 and group 0 at chance."""
    os.makedirs(folder)
    write_json(os.path.join(folder, "model_config.json"), CFG.to_dict())
    write_json(os.path.join(folder, "train_config.json"), dataclasses.asdict(TrainConfig()))
    write_json(os.path.join(folder, "sweep.json"), {
        "seeds": list(range(8)), "hparams": {"lr": [1e-3]}, "chunk_evals": 1,
        "snapshot_steps": list(STEPS), "task": "assign_add"})
    write_json(os.path.join(folder, "config.json"),
               {"task": {"split": "authors", "split_seed": 42, "f": 0.7}} if task else {})
    acc = np.where(GROUP, 1.0, 0.02)[:, None, None].astype(np.float32)
    write_metrics(os.path.join(folder, "metrics.npz"),
                  {"step": np.full((8, 1, 1), STEPS[-1], np.float32),
                   "acc/1var_restricted": acc}, {"lr": np.asarray([1e-3])}, list(range(8)))
    for step in STEPS:
        write_npz(snapshot_path(folder, step),
                  {k: np.asarray(v)[:, None] for k, v in params.items()})
    return folder


def config_for(run_dir, **changes):
    config = bc_cfg.get_config()
    config.run = run_dir
    config.update(probe_size=PROBE, jac_samples=JAC, probe_seed=1234, compare_dims=K, **changes)
    return config


@pytest.fixture(scope="module")
def params():
    return planted()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, params):
    return write_run(str(tmp_path_factory.mktemp("bc") / "run"), params)


def test_the_command_finds_the_rotated_group_in_the_overlap_not_in_the_cca(run_dir, tmp_path):
    summary = command.run(config_for(run_dir), str(tmp_path / "out"))
    assert summary["labels"] == GROUP.tolist() and summary["step"] == STEPS[-1]
    assert max(summary["core_dim"]) <= K
    overlap = summary["overlap"]
    assert min(overlap["within"].values()) > 0.7 and overlap["between"]["0-1"] < 0.4
    assert overlap["clusters"]["adjusted_rand"] == 1.0 and overlap["label_silhouette"] > 0.5
    mats = np.load(tmp_path / "out" / "matrices.npz")
    twins = np.arange(4)
    # each model against its own rotation: orthogonal-ish cores, identical coordinates up to a
    # linear map
    assert (mats["cca"][twins, twins + 4] > 0.99).all()
    assert (mats["overlap"][twins, twins + 4] < 0.5).all()
    # so the CCA groups each model with its twin, not the rotated seeds together
    assert summary["cca"]["clusters"]["labels"] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert summary["cca"]["clusters"]["adjusted_rand"] < 0
    assert summary["cca_floor"]["cca"] < 0.3  # queries shuffled: no shared statistics
    assert os.listdir(tmp_path / "out" / "figures") == ["binding_cores.png"]
    assert json.load(open(tmp_path / "out" / "summary.json"))["overlap"]["clusters"][
        "n_groups"] == 2


def test_a_rotation_that_keeps_the_subspace_makes_one_group():
    summary, mats = analyse(planted(keep_subspace=True))
    overlap = summary["overlap"]
    assert overlap["clusters"]["n_groups"] == 1 and overlap["clusters"]["adjusted_rand"] == 0.0
    assert (mats["overlap"] > 0.99).all()  # every core is the same subspace
    assert (mats["cca"][np.arange(4), np.arange(4) + 4] > 0.99).all()


def test_bad_input_is_refused_before_anything_is_written(run_dir, params, tmp_path):
    wrong = write_run(str(tmp_path / "wrong"), params, task=False)
    for changes, message in [({"run": ""}, "--run=RUN"),
                             ({"run": str(tmp_path / "none")}, "is not a folder"),
                             ({"run": wrong}, "no assign_add config.json"),
                             ({"step": 5}, "step=5: no parameters saved there"),
                             ({"compare_dims": D + 1}, f"compare_dims={D + 1} exceeds"),
                             ({"jac_samples": PROBE + 1}, "exceeds probe_size")]:
        config = config_for(run_dir)
        config.update(changes)
        assert_refused_before_writing(command.run, config, str(tmp_path / "out"), message)
