"""The agreement experiment end to end at test size: the self-trained seeds, the same models read
back as GPT-2-format folders (mechjax's and transformers' own), resume, and bad input refused
before anything is computed or written."""
from __future__ import annotations

import json
import os

import jax
import numpy as np
import pytest

from conftest import run_watched
from experiments.ace_agreement import run
from experiments.ace_agreement.configs import tiny
from mechjax.sweeps import runs
from mechjax.models.config import ConfigError
from mechjax.interop import (CheckpointError, TokenizerError, build_word_level, gpt2_model_config,
                             load_tokenizer, save_gpt2)
from mechjax.models.transformer import init_params

FIGURES = ("auc_vs_depth.png", "core_vs_margin.png", "generation_example.png",
           "margin_boxplots.png", "spearman.png")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("agree") / "run")
    return workdir, run_watched(run.run, tiny.get_config(), workdir)


def folders_only(*paths):
    config = tiny.get_config()
    config.n_seeds = 0
    config.gpt2_paths = ",".join(paths)
    return config


def test_summary_keys_and_per_model_consistency(finished):
    workdir, summary = finished
    with open(os.path.join(workdir, "summary.json")) as f:
        saved = json.load(f)
    assert saved["spearman/models"] == ["seed_0", "seed_1"]
    for key in run.SUMMARY_KEYS:
        assert set(saved[key]) == {"mean", "std", "min", "max", "n", "n_never", "per_seed"}, key
        assert saved[key]["per_seed"] == [saved["models"][m][key] for m in ("seed_0", "seed_1")]
    for name, block in saved["models"].items():
        layers = block["per_layer"]
        # the selected layer is the lowest flip AUC, and the top-level AUCs are read there
        assert block["layer/selected"] == int(np.argmin(layers["auc/flip"]))
        for mode in ("keep", "remove", "flip"):
            assert block[f"auc/{mode}"] == layers[f"auc/{mode}"][block["layer/selected"]]
        assert len(layers["auc/flip"]) == tiny.get_config().model.n_layers
        assert 0.0 <= block["knob_r2"] <= 1.0 + 1e-6
        assert set(block["flip_generation/example"]) == {"greedy", "sampled"}
        for decoding in ("greedy", "sampled"):
            assert set(block["flip_generation/example"][decoding]) == {"clean", "pushed",
                                                                       "reflected"}
            # the first-slot rule scores at most one slot per prompt, the all-slots rule more
            first = block[f"flip_generation/{decoding}/n_slots"]
            every = block[f"flip_generation/{decoding}/all_slots/n_slots"]
            for run_name, n in first.items():
                assert n <= tiny.get_config().generation.n_prompts and n <= every[run_name]
    # The phenomenon: each tiny model has learned agreement (its margin separates singular from
    # plural prompts), flipping the ACE core reverses it (AUC far below chance), and pushing the
    # core during generation makes most generations take the other verb.
    for name, block in saved["models"].items():
        assert block["auc/base"] >= 0.9, (name, block["auc/base"])
        assert block["auc/flip"] <= 0.2, (name, block["auc/flip"])
        assert block["flip_generation/greedy/clean_agreement"] >= 0.8, name
        assert block["flip_generation/greedy/fraction_flipped"] >= 0.75, name
    rho = np.asarray(saved["spearman/matrix"])
    per_layer = saved["spearman/per_layer_offdiag_seeds"]
    assert len(per_layer) == tiny.get_config().model.n_layers
    selected = {saved["models"][m]["layer/selected"] for m in ("seed_0", "seed_1")}
    if len(selected) == 1:  # both seeds read at one layer: the two Spearman keys are one number
        assert per_layer[selected.pop()] == pytest.approx(saved["spearman/offdiag_seeds"])
    np.testing.assert_allclose(np.diag(rho), 1.0)
    np.testing.assert_allclose(rho, rho.T)
    assert saved["spearman/models"] and "seed_0" in run.format_summary(summary)
    for name in FIGURES:
        assert os.path.getsize(os.path.join(workdir, "figures", name)) > 1000, name


def test_run_opens_and_its_artifacts_reload(finished):
    workdir, _ = finished
    opened = runs.open(workdir)
    assert opened.seeds == [0, 1] and opened.summary["n_seeds"] == 2
    assert opened.params(seed=1)["embed.W_E"].shape[0] == opened.model_cfg.d_vocab
    tok = load_tokenizer(os.path.join(workdir, "tokenizer"))
    assert tok.encode(" were") and os.path.isfile(os.path.join(workdir, "gpt2", "seed_1",
                                                               "model.safetensors"))


def test_a_seed_saved_as_gpt2_folder_gives_the_same_analysis(finished, tmp_path):
    # The folder holds seed_0's weights and tokenizer, so every number must be seed_0's:
    # loading, tokenization (own tokenizer from the folder) and analysis agree end to end.
    workdir, summary = finished
    folder = os.path.join(workdir, "gpt2", "seed_0")
    again = run_watched(run.run, folders_only(folder), tmp_path / "folder")
    ours, theirs = summary["models"]["seed_0"], again["models"]["gpt2:seed_0"]
    for key in ("auc/base", "auc/keep", "auc/remove", "auc/flip", "knob_r2"):
        assert theirs[key] == pytest.approx(ours[key], abs=1e-4), key
    assert theirs["layer/selected"] == ours["layer/selected"]
    for decoding in ("greedy", "sampled"):
        assert (theirs["flip_generation/example"][decoding]["clean"]
                == ours["flip_generation/example"][decoding]["clean"])
    assert again["n_seeds"] == 0 and again["auc/base"] is None


def test_a_transformers_checkpoint_runs(tmp_path):
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    from mechjax.tasks import agreement_corpus
    tok = agreement_corpus.build_tokenizer()
    torch.manual_seed(0)
    # tiny.py's shapes (read from it), so the analysis programs compiled for the tiny run's
    # models are reused (persistent-cache hits)
    shapes = tiny.get_config().model
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=shapes.n_layers, n_embd=shapes.d_model, n_head=shapes.n_heads,
        vocab_size=tok.vocab_size, n_positions=shapes.n_ctx))
    folder = str(tmp_path / "hf_gpt2")
    model.save_pretrained(folder)
    tok.save(folder)
    out = run_watched(run.run, folders_only(folder), tmp_path / "run")
    block = out["models"]["gpt2:hf_gpt2"]
    assert 0.0 <= block["auc/base"] <= 1.0
    assert len(block["per_layer"]["auc/flip"]) == shapes.n_layers


def test_second_run_resumes_and_retrains_nothing(finished, capfd):
    workdir, summary = finished
    again = run_watched(run.run, tiny.get_config(), workdir)
    err = capfd.readouterr().err
    assert "resumed from the checkpoint after chunk 2/2" in err
    assert "chunk 1/2 |" not in err and "chunk 2/2 |" not in err  # no training chunk ran
    assert again["models"]["seed_1"]["auc/base"] == summary["models"]["seed_1"]["auc/base"]


# ---- bad input -----------------------------------------------------------------------------------
def _random_folder(path, n_ctx=32, tokenizer=None):
    from mechjax.tasks import agreement_corpus
    tok = tokenizer or agreement_corpus.build_tokenizer()
    cfg = gpt2_model_config(n_layers=1, d_model=8, n_heads=2, d_vocab=tok.vocab_size,
                            n_ctx=n_ctx)
    params = jax.tree.map(np.asarray, init_params(jax.random.PRNGKey(0), cfg))
    return save_gpt2(str(path), cfg, params, tok)


def _bad_json(path):
    folder = _random_folder(path)
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write("{not json")
    return folder


def _not_gpt2(path):
    folder = _random_folder(path)
    with open(os.path.join(folder, "config.json")) as f:
        values = json.load(f)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({**values, "model_type": "llama"}, f)
    return folder


def _no_weights(path):
    folder = _random_folder(path)
    os.remove(os.path.join(folder, "model.safetensors"))
    return folder


def _verbs_not_tokens(path):
    from mechjax.tasks import agreement_corpus
    texts = [t.replace(" were", " w ere") for t in agreement_corpus.vocabulary_texts()]
    return _random_folder(path, tokenizer=build_word_level(texts, name="no-were"))


@pytest.mark.parametrize("make, error, message", [
    (lambda p: str(p / "missing"), CheckpointError, "does not exist"),
    (_bad_json, CheckpointError, "config.json"),
    (_not_gpt2, CheckpointError, "model_type='llama'"),
    (_no_weights, CheckpointError, "model.safetensors"),
    (_verbs_not_tokens, TokenizerError, "' were'"),
    (lambda p: _random_folder(p, n_ctx=8), CheckpointError, "n_ctx is 8"),
])
def test_bad_checkpoint_refused_before_anything_is_written(tmp_path, make, error, message):
    folder = make(tmp_path / "ckpt")
    with pytest.raises(error, match=message):
        run.run(folders_only(folder), str(tmp_path / "run"))
    assert not os.path.exists(tmp_path / "run")


@pytest.mark.parametrize("edit, message", [
    (lambda c: setattr(c, "gpt2_paths", ""), "nothing to analyse"),
    (lambda c: c.generation.__setattr__("n_prompts", 10 ** 6), "generation.n_prompts"),
    (lambda c: c.model.__setattr__("n_ctx", 10), "model.n_ctx=10"),
    (lambda c: c.model.__setattr__("n_heads", 3), "model.n_heads=3"),
    (lambda c: c.prompts.__setattr__("there", "here"), "prompts.there='here': must be one of"),
    (lambda c: c.prompts.__setattr__("relative", "inner"), "prompts.relative='inner'"),
    (lambda c: c.generation.__setattr__("margin", "both"), "generation.margin='both'"),
    (lambda c: c.corpus.__setattr__("bos_fraction", 1.5), "corpus.bos_fraction=1.5"),
])
def test_bad_config_refused_before_anything_is_written(tmp_path, edit, message):
    from conftest import assert_refused_before_writing
    config = tiny.get_config()
    edit(config)
    if message == "nothing to analyse":
        config.n_seeds = 0
    assert_refused_before_writing(run.run, config, tmp_path / "run", message)
