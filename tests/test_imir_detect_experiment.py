"""python -m experiments.imir_detect: the tiny config end to end (training, detection, summary,
figures), detection of a given weights file and of one seed of a workdir, a warning for a model
outside the theory's assumptions, and one-line refusals of bad input before any compute or any
write."""
import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from experiments.imir_detect import run as rd
from experiments.imir_detect.configs import tiny
from experiments.imir_detect.schema import SCHEMA
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.detection import detector as dt
from mechjax.analysis.imir.detection import explain as ex
from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.seeds import STAT_KEYS
from mechjax.models.config import ConfigError
from mechjax.interop.weights import save_npz


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    wd = str(tmp_path_factory.mktemp("tiny") / "run")
    c = tiny.get_config()
    c.detect.batch_doubling = True
    return wd, rd.run(c, wd)


def test_tiny_config_end_to_end(tiny_run):
    wd, summary = tiny_run
    s = summary["recall_icl"]
    assert len(s["per_seed"]) == 2
    for r in s["per_seed"]:
        # the paper's position set P = {I_p, M} (k = 2): 46 coordinates (the extended set: 56)
        assert r["n_coordinates_total"] == 46
        assert r["model"] == {"causal": True, "offsets": "fixed", "positions": "paper",
                              "train_in": "weights", "optimizer": "adam", "init_std": 0.01}
        assert 0 < r["manifold_explained_fraction"] <= 1
        assert r["n_kept"] == len(r["kept"]) > 0
        assert {"acc/full", "acc/circuit", "acc/circuit_without_helpers"} <= set(r)
        # head-level analysis of the same model: every head, and blind spots among kept units
        assert set(r["heads"]["per_head"]) == {"L0H0", "L1H0"}
        assert set(r["heads"]["helpers_in_unimportant_heads"]) <= set(r["units"])
        # the budget curve: one entry per tau; the reported tau is one of them, with its values
        tc = r["tau_curve"]
        assert tc["tau"] == [0.02, 0.1, 0.5] and r["tau"] in tc["tau"]
        i = tc["tau"].index(r["tau"])
        assert (tc["kept"][i], tc["acc_circuit"][i]) == (r["n_kept"], r["acc/circuit"])
    # the acceptance's names, the same for every setting, as seed statistics
    for k in ("canonical_units", "circuits_with_4_canonical", "helpers", "acc_circuit",
              "acc_without_helpers", "kept", "tau"):
        assert set(s[k]) == set(STAT_KEYS) and len(s[k]["per_seed"]) == 2, k
    assert s["acc_circuit"]["per_seed"] == [r["acc/circuit"] for r in s["per_seed"]]
    assert len(s["tau_curve"]["helpers"]) == 3 and "canonical_recovered" in s
    assert s["kept_same_when_batch_doubles"]["per_seed"] == [
        int(r["batch_doubling"]["all_same"]) for r in s["per_seed"]]
    assert summary["tau_rule"].startswith("the loosest tau")
    with open(os.path.join(wd, "summary.json")) as f:
        assert json.load(f)["recall_icl"]["kept"] == s["kept"]
    assert "tau curve" in rd.format_summary(summary)
    figs = sorted(os.listdir(os.path.join(wd, "figures")))
    assert figs == ["recall_icl_accuracy_vs_kept.png", "recall_icl_budget_curve.png",
                    "recall_icl_circuit_seed0.png", "recall_icl_circuit_seed1.png"]


def _setting_basis():
    c = tiny.get_config()
    st = rd.setting("recall_icl", c.recall_icl.to_dict())
    return c, st["frame"], st["basis"]


def test_detects_a_given_weights_file(tmp_path):
    """A planted induction head written as a .npz (no training): alpha, beta, gamma found."""
    c, frame, basis = _setting_basis()
    t = frame.n_pos
    theta = np.zeros(basis.size)
    for name, v in {"L0H0 I|M|I": 30.0, "L1H0 I|I_rare|O1": 30.0, "L1H0 I|I_common|O1": 30.0,
                    "L1H0 I|I_p|I": -30.0, "U O2|I_rare": 10.0,
                    "U O2|I_common": 10.0}.items():
        theta[basis.index(name)] = v
    params = {**ib.fixed_params(frame), **proj.weights(basis, jnp.asarray(theta, jnp.float32))}
    path = str(tmp_path / "planted.npz")
    save_npz({k: np.asarray(v) for k, v in params.items()}, path)
    c.weights, c.weights_causal = path, True
    c.recall_icl.enabled = False
    c.detect.batch_doubling = True
    summary = rd.run(c, str(tmp_path / "run"))
    w = summary["weights"]
    assert w["abgd_found"] == ["alpha", "beta", "gamma"]
    assert w["manifold_explained_fraction"] == pytest.approx(1.0, abs=1e-5)
    assert w["acc/circuit"] >= w["acc/full"] - 0.02
    # twice the batch (the same model and budgets): at the tightest budget both keep the
    # circuit's five coordinates (the planted positional self-score costs less than any budget);
    # looser budgets cut into the redundant class-split copies, where the batches may differ
    bd = w["batch_doubling"]
    assert (bd["batch_size"], bd["doubled"]) == (64, 128)
    assert bd["same_per_tau"][0] and bd["kept_doubled"][0] == w["tau_curve"]["kept"][0] == 5
    for same, jac, k2, k in zip(bd["same_per_tau"], bd["jaccard_per_tau"], bd["kept_doubled"],
                                w["tau_curve"]["kept"]):
        assert (jac == 1.0) == same and (k2 == k or not same)
    assert bd["taus_same"] == sum(bd["same_per_tau"])


@pytest.mark.parametrize("change, match", [
    ("width", r"--weights=.*: weights have d_model=30; the IMIR frame of this task needs "
              r"d_model=52"),
    ("mlp", r"--weights=.*: model has MLP weights"),
    ("missing", r"^--weights=.*nothere\.npz: weights file .* does not exist$"),
    ("stacked", r"^--weights=.*: embed.W_E has shape \(2, \d+, \d+\).*--from_workdir=DIR --seed=N"),
    ("both", r"^--weights=.* and --from_workdir=.*: give one model source"),
    ("tau", r"tau"),
    ("no_mask", r"^--weights=.*w\.npz: a bare weights file does not say whether its attention "
                r"is causal; pass --causal=True .* or --causal=False \(read in setting recall_icl, "
                r"offsets=fixed, positions=paper\)$"),
])
def test_bad_input_is_refused_before_anything_runs(tmp_path, change, match):
    c, frame, _ = _setting_basis()
    params = {k: np.asarray(v) for k, v in ib.fixed_params(frame).items()}
    params.update({k: np.asarray(v) for k, v in ib.zero_trainables(frame).items()})
    if change == "width":
        params = {k: np.zeros([30 if s == frame.d_model else s for s in v.shape])
                  for k, v in params.items()}
    if change == "mlp":
        params["blocks.0.mlp.W_in"] = np.ones((frame.d_model, 4))
    if change == "stacked":  # a sweep snapshot: every array has a seed axis
        params = {k: np.stack([v, v]) for k, v in params.items()}
    path = str(tmp_path / "w.npz")
    save_npz(params, path)
    c.weights = path if change != "missing" else str(tmp_path / "nothere.npz")
    c.weights_causal = None if change == "no_mask" else True
    if change == "both":
        c.from_workdir = str(tmp_path)
    if change == "tau":
        c.tau = -1.0
    wd = str(tmp_path / "run")
    with pytest.raises(ConfigError, match=match) as err:
        rd.run(c, wd)
    assert "\n" not in str(err.value)
    assert not os.path.exists(wd)


def test_detects_one_seed_of_a_workdir_as_its_own_run_did(tiny_run, tmp_path):
    """--from_workdir --seed reads the model back through mechjax.sweeps.runs, in the task the run was
    trained on, and finds what the training run found for that seed (same data, same model)."""
    wd, trained = tiny_run
    c = tiny.get_config()
    c.recall_icl.enabled = False
    c.recall_icl.n_common = 6      # a different spec here: the run's own config must win
    c.from_workdir, c.from_seed = wd, 1
    got = rd.run(c, str(tmp_path / "again"))["weights"]
    want = trained["recall_icl"]["per_seed"][1]
    assert got["source"].startswith(f"workdir {wd}, sweep recall_icl, seed 1, step ")
    for k in ("kept", "n_kept", "acc/full", "acc/circuit", "manifold_explained_fraction"):
        assert got[k] == want[k]


@pytest.mark.parametrize("change, match", [
    ("no_dir", r"^--from_workdir=.*nowhere: workdir .* is not a folder$"),
    ("seed", r"^--from_workdir=.*: seed=7 is not in this run; seeds: \[0, 1\]$"),
    ("step", r"^--from_workdir=.*: step=3 has no saved parameters; saved steps: \[100\]$"),
])
def test_bad_workdir_source_is_refused_in_one_line(tiny_run, tmp_path, change, match):
    wd, _ = tiny_run
    c = tiny.get_config()
    c.from_workdir = str(tmp_path / "nowhere") if change == "no_dir" else wd
    c.from_seed = 7 if change == "seed" else 0
    c.from_step = 3 if change == "step" else -1
    with pytest.raises(ConfigError, match=match):
        rd.run(c, str(tmp_path / "run"))
    assert not os.path.exists(tmp_path / "run")


def test_model_outside_the_assumptions_warns_with_the_explained_fraction(tmp_path):
    """Standard Q/K/V/O and learned embeddings: detection still runs, with a ManifoldWarning
    naming each deviation and the explained fraction, and the deviations in the summary."""
    c, frame, basis = _setting_basis()
    d = frame.d_model
    rng = np.random.default_rng(0)
    params = {"embed.W_E": rng.normal(size=(frame.tokens.n_tokens, d)) * 0.1,
              "pos_embed.W_pos": np.asarray(ib.fixed_params(frame)["pos_embed.W_pos"]),
              "unembed.W_U": rng.normal(size=(d, frame.tokens.n_out))}
    for l in range(frame.n_layers):
        for m in ("W_Q", "W_K", "W_V"):
            params[f"blocks.{l}.attn.{m}"] = rng.normal(size=(1, d, 8)) / np.sqrt(d)
        params[f"blocks.{l}.attn.W_O"] = rng.normal(size=(1, 8, d)) / np.sqrt(8)
    path = str(tmp_path / "standard.npz")
    save_npz(params, path)
    c.weights, c.weights_causal = path, True
    c.recall_icl.enabled = False
    with pytest.warns(dt.ManifoldWarning, match=r"standard W_Q/W_K.*standard W_V/W_O.*token "
                      r"embeddings are not the frame's.*manifold explains 0\.\d{3}"):
        w = rd.run(c, str(tmp_path / "run"))["weights"]
    assert 0 < w["manifold_explained_fraction"] < 1
    assert any("token embeddings" in x for x in w["deviations"])
    assert any("W_OV is not the frame's" in x for x in w["deviations"])


def test_cli_short_flags_and_one_line_error(tmp_path):
    """``--weights`` is ``--config.weights`` (the module's own aliases): a missing file is refused
    in one line before anything is written. In process: ``run_cli`` prints a ConfigError as
    ``error: <message>`` and exits (tests/test_config_schema.py runs that in a subprocess)."""
    from experiments.imir_detect.schema import ALIASES
    from mechjax.cli.experiment import expand_aliases
    missing = str(tmp_path / "missing.npz")
    argv = expand_aliases(["prog", f"--workdir={tmp_path / 'run'}", f"--weights={missing}"],
                          ALIASES)
    assert argv[2] == f"--config.weights={missing}"
    c = tiny.get_config()
    key, value = argv[2][len("--config."):].split("=", 1)
    c[key] = value
    with pytest.raises(ConfigError) as err:
        rd.run(c, str(tmp_path / "run"))
    assert str(err.value) == f"--weights={missing}: weights file {missing!r} does not exist"
    assert not os.path.exists(tmp_path / "run")


def test_model_variant_options():
    """The paper's position set P is the default; the extended set and the non-causal cyclic
    model are explicit options; a causal model on a cyclic layout is refused in one line."""
    c = tiny.get_config()
    s = c.recall_icl.to_dict()
    assert rd.setting("recall_icl", s)["basis"].sel_kq_names[-2:] == ("I_p", "M")
    ext = rd.setting("recall_icl", {**s, "causal": False, "offsets": "cyclic",
                                    "positions": "all"})
    assert ext["basis"].sel_kq_names[-4:] == ("M", "M^2", "M^3", "M^4")
    assert ext["spec"].offsets == "cyclic"
    with pytest.raises(ConfigError, match=r"^recall_icl.offsets=cyclic with recall_icl.causal"
                                          r"=True: a causal model needs offsets=fixed"):
        rd.setting("recall_icl", {**s, "offsets": "cyclic"})
    # a checkpoint's own config with a layout or position set the basis has no coordinates for
    with pytest.raises(ConfigError, match=r"^recall_icl.offsets='linear_gap': the detector's "
                                          r"basis expresses fixed, cyclic$"):
        rd.setting("recall_icl", {**s, "offsets": "linear_gap"})
    with pytest.raises(ConfigError, match=r"^recall_icl.positions='M\^-1'"):
        rd.setting("recall_icl", {**s, "positions": "M^-1"})


def test_manifold_training_moves_each_seed_inside_the_span(tmp_path):
    """``train_in=manifold``: the coordinates are trained from the projection of the weights
    arm's init, so each seed's returned weights lie on the manifold, differ per seed and from
    the start, and learned (loss below the start's)."""
    c = SCHEMA.validate(tiny.get_config())
    s = {**c.recall_icl.to_dict(), "train_in": "manifold", "steps": 20, "eval_every": 10,
         "lr": 0.05}
    st = rd.setting("recall_icl", s)
    params = rd.train(st, [0, 1], str(tmp_path))
    loss, _, _ = dt.model_fns(st["basis"], True)
    batch = rd._batches(st, c.detect.to_dict(), 0)[1]
    for i in range(2):
        w = {k: jnp.asarray(v[i]) for k, v in params.items()}
        rel, _ = proj.rel_residual(st["basis"], w)
        assert float(rel) < 1e-5
        trained = float(loss(proj.coords(st["basis"], w), batch))
        start = float(loss(jnp.zeros(st["basis"].size), batch))
        assert trained < start - 0.05
    assert not np.allclose(params["unembed.W_U"][0], params["unembed.W_U"][1])
    # each seed's W(theta) is written as a state dict the detector reads back as that seed
    source = rd.src.from_file(str(tmp_path / "recall_icl" / "weights_seed1.npz"))
    again = rd.src.from_run(str(tmp_path), 1)  # --from_workdir of the run finds the same file
    for k, v in params.items():
        np.testing.assert_array_equal(source.params[k], v[1])
        np.testing.assert_array_equal(again.params[k], v[1])
    with pytest.raises(ex.DetectError, match=r"keeps W\(theta\) of its last step only"):
        rd.src.from_run(str(tmp_path), 1, step=10)
    with pytest.raises(ex.DetectError, match=r"weights_seed5.npz is missing"):
        rd.src.from_run(str(tmp_path), 5)
