"""The shared config schema: one declaration validates, fills defaults, writes --help and explains
bad overrides; every experiment's configs pass their schema; the CLI's errors are one line."""
import importlib
import subprocess

import ml_collections
import pytest

from conftest import PYTHON, REPO, run_module_env
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.cli.schema import (SEEDS, DataclassSection, Schema, Section, boolean, choice,
                                   fraction, hparams, integer, optional, sequence)

SCHEMA = Schema(
    "toy",
    **SEEDS,
    threshold=fraction("accuracy that counts"),
    mode=choice(("f", "r")),
    grid=sequence(fraction(), increasing=True),
    stop=boolean(default=False),
    task=Section("the task", p=integer(min=3), batch=optional(integer())),
    model=DataclassSection(ModelConfig, fixed=("d_vocab",)),
    hparams=hparams("lr", "weight_decay"),
)


def good() -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict({
        "n_seeds": 2, "threshold": 0.9, "mode": "f", "grid": [0.2, 0.5],
        "task": {"p": 7, "batch": None}, "model": {"d_model": 16},
        "hparams": {"lr": 1e-3, "weight_decay": 1.0}})


def test_a_good_config_is_filled_and_normalized():
    config = SCHEMA.validate(good())
    assert config.seed_offset == 0 and config.stop is False       # defaults filled
    assert config.grid == (0.2, 0.5)                              # sequences become tuples
    assert isinstance(SCHEMA.validate({**good().to_dict(), "threshold": 1}).threshold, float)
    assert config.model.to_dict() == {"d_model": 16}              # the dataclass fills the rest
    assert SCHEMA.validate(config).to_dict() == config.to_dict()  # idempotent


@pytest.mark.parametrize("edit, message", [
    # the three bad hyperparameters a new user tried, accepted before
    (lambda c: c.hparams.__setattr__("lr", -1.0),
     "config.hparams.lr=-1.0: must be a finite number > 0"),
    (lambda c: c.hparams.__setattr__("lr", float("nan")), "config.hparams.lr=nan: must be"),
    (lambda c: c.hparams.__setattr__("weight_decay", -1.0),
     "config.hparams.weight_decay=-1.0: must be a finite number >= 0"),
    (lambda c: c.__setattr__("n_seeds", 0), "config.n_seeds=0: must be an integer >= 1"),
    (lambda c: c.__setattr__("n_seeds", True), "config.n_seeds=True: must be an integer"),
    (lambda c: c.__setattr__("threshold", 1.5), "config.threshold=1.5: must be a finite number "
                                                "in (0, 1]"),
    (lambda c: c.__setattr__("mode", "q"), "config.mode='q': must be one of ('f', 'r')"),
    (lambda c: c.__setattr__("grid", (0.5, 0.2)), "strictly increasing"),
    (lambda c: c.__setattr__("grid", [0.5, 1.2]), "config.grid=[0.5, 1.2]: must be a non-empty "
                                                  "sequence, each a finite number in (0, 1], "
                                                  "strictly increasing (1.2 is not)"),
    (lambda c: c.task.__setattr__("p", 2), "config.task.p=2: must be an integer >= 3"),
    (lambda c: c.task.__setattr__("batch", 0), "config.task.batch=0: must be None or an integer"),
    (lambda c: c.__setattr__("epochs", 3), "config: unknown keys ['epochs']; allowed: "
                                           "['grid', 'hparams', 'mode', 'model', 'n_seeds'"),
    (lambda c: c.task.__setattr__("q", 3), "config.task: unknown keys ['q']; allowed: "
                                           "['batch', 'p']"),
    (lambda c: c.model.__setattr__("d_vocab", 3), "config.model: unknown keys ['d_vocab']"),
    (lambda c: c.hparams.__setattr__("init_scale", 1.0), "config.hparams: unknown keys "
                                                         "['init_scale']; allowed: ['lr', "),
    (lambda c: delattr(c, "threshold"), "config: missing keys ['threshold']"),
])
def test_a_bad_value_is_one_line_naming_it_and_what_is_allowed(edit, message):
    config = good()
    edit(config)
    with pytest.raises(ConfigError) as err:
        SCHEMA.validate(config)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_help_documents_every_key_from_the_same_declaration():
    text = SCHEMA.help()
    for line in ("hparams.lr: a finite number > 0. peak learning rate",
                 "seed_offset: an integer >= 0; default 0. first seed",
                 "task.p: an integer >= 3", "model.d_model: int; default 128"):
        assert line in text, line
    assert "model.d_vocab:" not in text  # fixed by the experiment


def test_a_value_the_flag_parser_refuses_is_described_by_the_schema():
    assert SCHEMA.key_at("task.p").allowed == "an integer >= 3"
    assert SCHEMA.key_at("task") is None and SCHEMA.key_at("task.nope") is None
    err = ValueError("flag --config.task.p=3.5: invalid literal for int() with base 10: '3.5'")
    assert SCHEMA.flag_error(["--workdir=w", "--config.task.p=3.5"], err) == (
        "--config.task.p=3.5: must be an integer >= 3")
    # a flag that is no config key: the parser's own first line
    other = ValueError("flag --overwrite=maybe: Non-boolean argument\nmore")
    assert SCHEMA.flag_error(["--overwrite=maybe"], other) == (
        "--overwrite=maybe: Non-boolean argument")


def test_a_bad_override_path_names_the_allowed_keys():
    assert SCHEMA.override_error(["--config.task.p=3"]) is None
    assert SCHEMA.override_error(["--workdir=w", "--config.nope=1"]) == (
        f"--config.nope: config has no key 'nope'; allowed: {SCHEMA.allowed()}")
    assert "config.model has no key 'nope'; allowed: ['act_fn'," in \
        SCHEMA.override_error(["--config.model.nope=1"])
    assert SCHEMA.override_error(["--config.task.p.x=1"]) == (
        "--config.task.p.x: config.task.p is a value, not a section")


CONFIG_FILES = {  # (experiment package, schema) -> the config files that schema checks
    ("quickstart", "SCHEMA"): ("cpu", "tiny", "tiny_grok"),
    ("assign_add", "SCHEMA"): ("cpu", "paper", "tiny"),
    ("assign_add", "SWEEP_SCHEMA"): ("sweep_f", "sweep_r"),
    ("ace_markov", "SCHEMA"): ("cpu", "paper", "tiny"),
    ("ace_grokking", "SCHEMA"): ("cpu", "paper", "tiny"),
    ("grokking_law", "SCHEMA"): ("cpu", "paper", "tiny"),
    ("imir_phase", "SCHEMA"): ("cpu", "paper", "tiny"),
}


def _leaves(value, prefix=""):
    """``{"a.b": leaf}`` of a nested dict, sequences as tuples."""
    if isinstance(value, dict):
        return {k: v for name, x in value.items() for k, v in _leaves(x, f"{prefix}{name}.").items()}
    if isinstance(value, (list, tuple)):
        return {prefix[:-1]: tuple(_leaves(x, "_.")["_"] for x in value)}
    return {prefix[:-1]: value}


@pytest.mark.parametrize("package, attr", sorted(CONFIG_FILES))
def test_every_config_file_passes_its_schema_with_its_values_kept(package, attr):
    schema = getattr(importlib.import_module(f"experiments.{package}.schema"), attr)
    for file in CONFIG_FILES[package, attr]:
        raw = importlib.import_module(f"experiments.{package}.configs.{file}").get_config()
        checked = _leaves(schema.validate(raw).to_dict())
        for key, value in _leaves(raw.to_dict()).items():
            assert checked[key] == value, (file, key)


TINY = "--config=experiments/quickstart/configs/tiny.py"


@pytest.mark.parametrize("args, expected", [
    ([TINY, "--config.nonexistent=1"], "error: --config.nonexistent: config has no key "
                                       "'nonexistent'; allowed: ['chunk_evals', 'grok_threshold'"),
    ([TINY, "--config.model.nonexistent=1"], "error: --config.model.nonexistent: config.model "
                                             "has no key 'nonexistent'; allowed: ['act_fn'"),
    ([TINY, "--config.hparams.lr=-1"], "error: config.hparams.lr=-1.0: must be a finite "
                                       "number > 0"),
    (["--config=nope.py"], "error: --config=nope.py: cannot load it ([Errno 2] No such file"),
    # refused by absl's int parser before the schema sees it: still the schema's words
    ([TINY, "--config.n_seeds=2.5"], "error: --config.n_seeds=2.5: must be an integer >= 1"),
])
def test_the_cli_refuses_bad_overrides_in_one_line_before_writing(tmp_path, args, expected):
    workdir = tmp_path / "run"
    proc = subprocess.run([PYTHON, "-m", "experiments.quickstart", f"--workdir={workdir}", *args],
                          cwd=REPO, env=run_module_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0
    assert proc.stderr.strip().startswith(expected), proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-2000:]
    assert not workdir.exists()


def test_a_schema_key_the_config_file_leaves_at_its_default_is_overridable(tmp_path):
    # imir_detect's config files do not set detect.mode (the schema's default): the override
    # must reach the schema (which refuses this value), not die in flag parsing
    workdir = tmp_path / "run"
    proc = subprocess.run([PYTHON, "-m", "experiments.imir_detect", f"--workdir={workdir}",
                           "--config=experiments/imir_detect/configs/tiny.py",
                           "--config.detect.mode=bogus"],
                          cwd=REPO, env=run_module_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0
    assert proc.stderr.strip() == ("error: config.detect.mode='bogus': must be one of "
                                   "('fast', 'exact')"), proc.stderr[-2000:]
    assert not workdir.exists()
