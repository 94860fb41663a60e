"""``mechjax.filecheck`` through every reader: one table of broken files, made here from valid
ones (truncated, a key dropped, a type changed, a NaN put in, a shape shuffled), each refused
with one line naming the file and the key or tensor. Valid files load unchanged (the readers'
own tests)."""
import json
import os
import re
import shutil

import numpy as np
import pytest

from mechjax.sweeps import runs
from mechjax import filecheck
from mechjax.models.config import ModelConfig
from mechjax.interop import load_gpt2, save_gpt2
from mechjax.interop.gpt2 import gpt2_model_config
from mechjax.models.transformer import param_shapes
from mechjax.tasks import assign_add as aa
from mechjax.interop.weights import load_npz, save_npz

TL_CFG = ModelConfig(n_layers=1, d_model=8, n_heads=2, d_mlp=16, d_vocab=10, n_ctx=4)
GPT2_CFG = gpt2_model_config(n_layers=1, d_model=8, n_heads=2, d_vocab=11, n_ctx=4)


def random_params(cfg):
    rng = np.random.default_rng(0)
    return {k: rng.normal(size=s).astype(np.float32) for k, s in param_shapes(cfg).items()}


# ---- how a file is broken ------------------------------------------------------------------------
def truncate(path):
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])


def edit_json(edit):
    def apply(path):
        with open(path) as f:
            doc = json.load(f)
        edit(doc)
        with open(path, "w") as f:
            json.dump(doc, f)
    return apply


def drop(key):
    return edit_json(lambda doc: doc.pop(key))


def set_key(key, value):
    return edit_json(lambda doc: doc.__setitem__(key, value))


def edit_npz(edit):
    def apply(path):
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        edit(arrays)
        np.savez(path, **arrays)
    return apply


def put_nan(key):
    def edit(arrays):
        arrays[key] = arrays[key].copy()
        arrays[key].reshape(-1)[1] = np.nan
    return edit_npz(edit)


def edit_safetensors(edit):
    from safetensors.numpy import load_file, save_file

    def apply(path):
        arrays = load_file(path)
        edit(arrays)
        save_file(arrays, path, metadata={"format": "pt"})
    return apply


def set_nan(arrays, key):
    arrays[key] = arrays[key].copy()
    arrays[key].reshape(-1)[1] = np.nan


# ---- each kind of file: a valid one, and its reader ----------------------------------------------
def make_weights(folder):
    save_npz(random_params(TL_CFG), os.path.join(folder, "w.npz"))


def make_gpt2(folder):
    save_gpt2(os.path.join(folder, "gpt2"), GPT2_CFG, random_params(GPT2_CFG))


def make_heldout(folder):
    with open(os.path.join(folder, "heldout_pairs.json"), "w") as f:
        json.dump({"modulus": 59, "heldout_pairs": [[1, 2], [3, 4]]}, f)


SNAPSHOT = "snapshots/step_000000020.npz"  # one of the quickstart run's steps


def read_run(folder):
    run = runs.open(os.path.join(folder, "run"))
    run.model_cfg, run.train_cfg, run.metrics  # noqa: B018
    return run.stacked_params(step=20)


KINDS = {  # kind: (make a valid one in a folder, read it, the reader's error)
    "weights": (make_weights, lambda d: load_npz(os.path.join(d, "w.npz"), TL_CFG),
                filecheck.WeightsError),
    "gpt2": (make_gpt2, lambda d: load_gpt2(os.path.join(d, "gpt2")), filecheck.CheckpointError),
    "heldout": (make_heldout, lambda d: aa.load_heldout_pairs(os.path.join(d,
                                                                             "heldout_pairs.json")),
                filecheck.FileError),
    "run": (None, read_run, filecheck.RunError),
}

W_E = r"embed.W_E"
CASES = [  # (kind, file in the folder, how it is broken, what the one line says)
    ("weights", "w.npz", truncate, r"w.npz' is not a readable .npz archive"),
    ("weights", "w.npz", edit_npz(lambda a: a.pop("unembed.W_U")), r"missing keys \['unembed.W_U'\]"),
    ("weights", "w.npz", edit_npz(lambda a: a.__setitem__(W_E, a[W_E].astype(np.int32))),
     r"non-floating dtype \[embed.W_E: int32\]"),
    ("weights", "w.npz", put_nan("blocks.0.attn.W_Q"),
     r"tensor 'blocks.0.attn.W_Q' has 1 of 64 entries that are not finite"),
    ("weights", "w.npz", edit_npz(lambda a: a.__setitem__(W_E, a[W_E].T)),
     r"embed.W_E: file \(8, 10\) vs config \(10, 8\)"),
    ("gpt2", "gpt2/config.json", truncate, r"config.json' is not valid JSON"),
    ("gpt2", "gpt2/config.json", drop("model_type"), r"model_type=None; only 'gpt2'"),
    ("gpt2", "gpt2/config.json", set_key("n_embd", "8"), r"n_embd='8'; must be a positive integer"),
    ("gpt2", "gpt2/config.json", set_key("tie_word_embeddings", "false"),
     r"tie_word_embeddings='false'; must be true or false"),
    ("gpt2", "gpt2/model.safetensors", truncate, r"model.safetensors' is not a readable safetensors"),
    ("gpt2", "gpt2/model.safetensors",
     edit_safetensors(lambda a: a.pop("transformer.h.0.mlp.c_fc.bias")),
     r"missing tensors \['h.0.mlp.c_fc.bias'\]"),
    ("gpt2", "gpt2/model.safetensors",
     edit_safetensors(lambda a: set_nan(a, "transformer.h.0.attn.c_attn.weight")),
     r"tensor 'h.0.attn.c_attn.weight' has 1 of 192 entries that are not finite"),
    ("gpt2", "gpt2/model.safetensors",
     edit_safetensors(lambda a: a.__setitem__("transformer.wpe.weight",
                                              a["transformer.wpe.weight"].T.copy())),
     r"wpe.weight: \(8, 4\), config.json implies \(4, 8\)"),
    ("heldout", "heldout_pairs.json", truncate, r"heldout_pairs.json' is not valid JSON"),
    ("heldout", "heldout_pairs.json", drop("heldout_pairs"),
     r"key 'heldout_pairs' is missing; expected a list of \[x, y\] pairs"),
    ("heldout", "heldout_pairs.json", set_key("heldout_pairs", "1,2"),
     r"key 'heldout_pairs' is a string \('1,2'\); expected a list"),
    ("heldout", "heldout_pairs.json", set_key("heldout_pairs", [[1.5, 2.0]]),
     r"pairs of float64; expected integers"),
    ("heldout", "heldout_pairs.json", set_key("heldout_pairs", [[1, 2, 3]]),
     r"expected a list of \[x, y\], got shape \(1, 3\)"),
    ("run", "run/sweep.json", truncate, r"sweep file '.*sweep.json' is not valid JSON"),
    ("run", "run/sweep.json", drop("seeds"), r"sweep.json': missing keys \['seeds'\]"),
    ("run", "run/sweep.json", set_key("seeds", "0,1"), r"key 'seeds' is a string"),
    ("run", "run/model_config.json", drop("d_model"),
     r"model_config.json': missing keys \['d_model'\]; a stored file must have every one"),
    ("run", "run/model_config.json", set_key("n_layers", "1"),
     r"model_config.json': key 'n_layers' is a string \('1'\); expected an integer"),
    ("run", "run/train_config.json", drop("eval_every"), r"missing keys \['eval_every'\]"),
    ("run", "run/train_config.json", set_key("steps", 0), r"train.steps=0: must be a positive"),
    ("run", "run/config.json", truncate, r"run file '.*config.json' is not valid JSON"),
    ("run", "run/metrics.npz", truncate, r"metrics file '.*metrics.npz' is not a readable .npz"),
    ("run", "run/metrics.npz", edit_npz(lambda a: a.pop("metrics/step")),
     r"metrics.npz': missing keys \['metrics/step'\]"),
    ("run", "run/metrics.npz",
     edit_npz(lambda a: a.__setitem__("metrics/acc/test", a["metrics/acc/test"][:, :, :-1])),
     r"metrics.npz': shape mismatches \[metrics/acc/test: file \(5, 1, 5\) vs expected "
     r"\(5, 1, 6\)\]"),
    ("run", f"run/{SNAPSHOT}", truncate, r"parameter snapshot '.*step_000000020.npz' is not a "
                                         r"readable .npz"),
    ("run", f"run/{SNAPSHOT}", edit_npz(lambda a: a.pop("unembed.W_U")),
     r"step_000000020.npz': missing parameters \['unembed.W_U'\]"),
    ("run", f"run/{SNAPSHOT}", put_nan(W_E),
     r"step_000000020.npz': tensor 'embed.W_E' has 1 of 880 entries that are not finite"),
    ("run", f"run/{SNAPSHOT}", edit_npz(lambda a: a.__setitem__(W_E, a[W_E][:4])),
     r"shape mismatches \[embed.W_E: file \(4, 1, 11, 16\) vs expected \(5, 1, 11, 16\)\]"),
]


def make_valid(kind, folder, quickstart_workdir):
    make = KINDS[kind][0]
    if make is None:
        shutil.copytree(quickstart_workdir, os.path.join(folder, "run"),
                        ignore=shutil.ignore_patterns("checkpoints", "figures"))
    else:
        make(folder)


@pytest.fixture(scope="module")
def run_workdir(quickstart_run):
    return quickstart_run


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_valid_file_of_each_kind_reads(kind, tmp_path, run_workdir):
    make_valid(kind, str(tmp_path), run_workdir)
    KINDS[kind][1](str(tmp_path))  # no error: the table below breaks exactly one thing


@pytest.mark.parametrize("kind, name, breaks, message", CASES,
                         ids=[f"{c[0]}-{os.path.basename(c[1])}-{c[2].__qualname__.split('.')[0]}"
                              f"-{i}" for i, c in enumerate(CASES)])
def test_a_broken_file_gives_one_line_naming_file_and_key(kind, name, breaks, message, tmp_path,
                                                          run_workdir):
    make_valid(kind, str(tmp_path), run_workdir)
    path = os.path.join(str(tmp_path), name)
    breaks(path)
    with pytest.raises(KINDS[kind][2]) as err:
        KINDS[kind][1](str(tmp_path))
    line = str(err.value)
    assert re.search(message, line), line
    assert "\n" not in line and os.path.basename(name) in line, line


def test_a_run_with_one_bad_snapshot_opens_and_names_the_unreadable_step(tmp_path, run_workdir):
    make_valid("run", str(tmp_path), run_workdir)
    truncate(os.path.join(str(tmp_path), "run", SNAPSHOT))
    run = runs.open(os.path.join(str(tmp_path), "run"))
    assert 20 in run.steps_saved and run.metrics["step"].shape == (5, 1, 6)
    assert run.stacked_params(step=40)["embed.W_E"].shape == (5, 11, 16)  # the others read
    with pytest.raises(runs.RunError, match=r"step_000000020.npz' is not a readable"):
        run.params(seed=0, step=20)


def test_finite_check_counts_every_bad_entry_and_names_the_others():
    arrays = {"a": np.array([1.0, np.nan, np.inf, -np.inf], np.float32),
              "b": np.ones(3, np.float32), "c": np.array([np.nan]), "i": np.arange(3)}
    with pytest.raises(filecheck.FileError, match=r"'a' has 3 of 4 entries .* \(also not finite: "
                                                 r"\['c'\]\)"):
        filecheck.check_finite(arrays, "f.npz")
    big = {"x": np.full(4, 3e38, np.float32)}  # the fast sum overflows; the entries are finite
    filecheck.check_finite(big, "f.npz")
    # bfloat16 (ml_dtypes, numpy kind 'V') is a float too: its NaN is found, not skipped
    import ml_dtypes
    half = {"h": np.array([1.0, np.nan, 2.0], ml_dtypes.bfloat16)}
    with pytest.raises(filecheck.FileError, match=r"'h' has 1 of 3 entries"):
        filecheck.check_finite(half, "f.npz")


def test_a_snapshot_of_huge_finite_values_loads(tmp_path, run_workdir):
    # x . x and the sum of these overflow to inf: the fast finite test must fall back to the
    # elementwise one, not refuse a valid file
    make_valid("run", str(tmp_path), run_workdir)
    path = os.path.join(str(tmp_path), "run", SNAPSHOT)
    edit_npz(lambda a: a.__setitem__("embed.W_E", np.full_like(a["embed.W_E"], 3e38)))(path)
    run = runs.open(os.path.join(str(tmp_path), "run"))
    assert not filecheck.surely_finite(np.full(4, 3e38, np.float32))
    assert (run.stacked_params(step=20, grid=None)["embed.W_E"] == np.float32(3e38)).all()
