"""The prepared accelerator run on the CPU at tiny sizes, in this process: the throughput part's
measurements and bf16 parity, the TransformerLens measurement, and the parent's own logic (every
part a process under its time limit, results.json and the report) with stand-in parts.

The parent never starts JAX (on a GPU only one JAX process may hold the memory), so its logic
runs here with parts that are small Python processes; the real parts' commands are checked to
name their module and an existing config. The experiments behind parts (b) and (c) run end to
end in test_assign_add_experiment.py and test_ace_grokking.py, so no test here runs them again.
"""
import dataclasses
import json
import os
import sys
import time

import pytest

from conftest import PYTHON, REPO

from experiments.benchmark import accelerator, bench, throughput
from mechjax.analysis.seeds import seed_stats

# Planted final accuracies per dtype and pool (seed 0, seed 1): the parity check must train each
# dtype's own trainer and report the largest gap of the seed means, here 0.07 on 1var_train.
# (That bfloat16 training really tracks float32 is test_train.py's
# test_bfloat16_compute_keeps_float32_state_and_tracks_float32; the tiny Assign-and-Add model
# stays at chance for hundreds of steps, so a real tiny parity run compares two chance levels.)
PLANTED = {"float32": {"0var_heldout": (0.5, 0.7), "1var_train": (0.9, 0.9),
                       "2var_two_misplaced": (0.2, 0.4)},
           "bfloat16": {"0var_heldout": (0.56, 0.6), "1var_train": (0.83, 0.83),
                        "2var_two_misplaced": (0.3, 0.3)}}


@pytest.mark.timeout(600)  # 4 tiny sweep programs compiled; minutes at load 15
def test_throughput_rows_and_the_bf16_parity_gap(tmp_path, monkeypatch):
    import numpy as np
    from mechjax.sweeps import sweep
    trained = []

    def planted_sweep(trainer, seeds, hparams, log_every_chunk=True):
        cfg = trainer.train_cfg
        trained.append((cfg.compute_dtype, tuple(cfg.eval_pools), list(seeds)))
        acc = {f"acc/{pool}": np.array([[v] for v in seed_values])
               for pool, seed_values in PLANTED[cfg.compute_dtype].items()}
        metrics = {**acc, "train/loss": np.zeros((len(seeds), 1))}
        return type("Planted", (), {"metrics_at": lambda self, grid: metrics})()

    monkeypatch.setattr(sweep, "run_sweep", planted_sweep)
    out = str(tmp_path / "throughput.json")
    # one seed: the batched sweep in both dtypes, two compiled programs (the loop is the same
    # program at S = 1, so the plan skips it; TINY's S = 2 adds the loop's two)
    settings = dataclasses.replace(throughput.TINY, sizes=(1,))
    tp = throughput.run(settings, out, time_limit_s=1e9)
    assert json.load(open(out)) == json.loads(json.dumps(tp))  # written after each step
    assert tp["device"]["platform"] == "cpu" and tp["device"]["bf16"]
    measured = [(r["mode"].split("_")[1], r["dtype"], r["models"]) for r in tp["rows"]]
    assert measured == [("vmap", "float32", 1), ("vmap", "bfloat16", 1)]
    assert not tp["skipped"]
    for r in tp["rows"]:
        assert r["compile_seconds"] > 0 and r["seconds"] > 0 and r["model_steps_per_s"] > 0
    # each dtype its own trainer, same seeds, only the pools that define the phases evaluated
    pools = ("0var_heldout", "1var_train", "2var_two_misplaced")
    assert trained == [("float32", pools, [0, 1]), ("bfloat16", pools, [0, 1])]
    parity = tp["parity"]
    assert parity["bfloat16"]["acc"] == pytest.approx({"0var_heldout": 0.58, "1var_train": 0.83,
                                                       "2var_two_misplaced": 0.3})
    assert parity["max_abs_diff/bfloat16"] == pytest.approx(0.07)


def test_a_limit_stops_measuring_and_says_what_was_skipped(tmp_path):
    tp = throughput.run(throughput.TINY, str(tmp_path / "tp.json"), time_limit_s=0.0)
    assert tp["rows"] == [] and tp["parity"] is None
    assert tp["skipped"] == [f"{v} {d} S={s}" for v, d, s in
                             throughput.plan(throughput.TINY.sizes, ("float32", "bfloat16"))
                             ] + ["parity"]


def test_transformer_lens_measures_the_same_step():
    pytest.importorskip("transformer_lens")
    row = bench.measure_transformer_lens(steps=2, batch=16, repeats=1, tiny=True)
    assert row["mode"] == "transformer_lens" and row["platform"] == "cpu"
    assert row["seconds"] > 0 and row["model_steps_per_s"] == pytest.approx(2 / row["seconds"])


# Stand-ins for the parts: what each leaves behind (a throughput.json, a JSON line on stdout, an
# experiment's summary.json in its workdir).
FAKE_SUMMARIES = {
    "assign_add": {"n_seeds": 2, "phase1_step": seed_stats([100.0, 140.0])},
    "grokking": {"n_seeds": 2, "core_dim/final_wd1": seed_stats([4.0, 6.0])},
}
FAKE_THROUGHPUT = {"device": {"platform": "cpu", "kind": "cpu", "count": 1, "bf16": True},
                   "settings": dataclasses.asdict(throughput.TINY), "skipped": [],
                   "rows": [{"mode": "sweep_vmap", "dtype": "float32", "models": 2,
                             "model_steps_per_s": 123.0}], "parity": None}
WRITE = "import json, os, sys; os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True); " \
        "open(sys.argv[1], 'w').write(sys.argv[2])"
# sleeps past any limit, and so does a process it starts: the limit must end both
HANG = ("import subprocess, sys, time; open(sys.argv[1], 'w').write(str(subprocess.Popen("
        "[sys.executable, '-c', 'import time; time.sleep(120)']).pid)); time.sleep(120)")


def stand_ins(out, pid_file):
    return {
        "throughput": [PYTHON, "-c", WRITE, os.path.join(out, "throughput.json"),
                       json.dumps(FAKE_THROUGHPUT)],
        "transformer_lens": [PYTHON, "-c", "print('loading'); print('{\"mode\": "
                             "\"transformer_lens\", \"platform\": \"cpu\", "
                             "\"model_steps_per_s\": 7.0}')"],
        "assign_add": [PYTHON, "-c", WRITE, os.path.join(out, accelerator.WORKDIRS["assign_add"],
                                                         "summary.json"),
                       json.dumps(FAKE_SUMMARIES["assign_add"])],
        "grokking": [PYTHON, "-c", HANG, pid_file],
    }


def test_the_real_commands_name_their_modules_and_configs(tmp_path):
    out = str(tmp_path / "acc")
    for tiny, size in ((True, "tiny.py"), (False, "paper.py")):
        real = accelerator.commands(out, tiny, accelerator.TINY_LIMITS)
        assert real["throughput"][1:3] == ["-m", "experiments.benchmark.throughput"]
        assert ("--tiny" in real["throughput"]) == tiny
        assert real["transformer_lens"][1:4] == ["-m", "experiments.benchmark.bench",
                                                 "transformer_lens"]
        for name, module in (("assign_add", "experiments.assign_add"),
                             ("grokking", "experiments.ace_grokking")):
            cmd = real[name]
            assert cmd[1:3] == ["-m", module], cmd
            assert f"--workdir={os.path.join(out, accelerator.WORKDIRS[name])}" in cmd
            config = next(a for a in cmd if a.startswith("--config="))[len("--config="):]
            assert config.endswith(f"configs/{size}") and os.path.exists(os.path.join(REPO,
                                                                                      config))


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc for the killed grandchild")
def test_every_part_a_process_under_its_limit_then_the_report(tmp_path, monkeypatch):
    out, pid_file = str(tmp_path / "acc"), str(tmp_path / "grandchild.pid")
    monkeypatch.setattr(accelerator, "commands", lambda out_, tiny, limits: stand_ins(out_,
                                                                                      pid_file))
    monkeypatch.setattr(accelerator, "torch_available", lambda: True)
    limits = dict(accelerator.TINY_LIMITS, grokking=1.0)
    results = accelerator.main(out, True, list(accelerator.PARTS), limits, "the command")
    parts = results["parts"]
    assert list(parts) == list(accelerator.PARTS)
    assert [parts[n]["status"] for n in ("throughput", "transformer_lens", "assign_add")] == \
        ["ok"] * 3
    # past its limit: killed with what it started, said so, well before the stand-in's 120 s
    grok = parts["grokking"]
    assert grok["status"] == "stopped at its time limit (rerun resumes)" and grok["limit_s"] == 1
    assert 1.0 <= grok["seconds"] < 30
    grandchild = int(open(pid_file).read())
    deadline = time.monotonic() + 10  # SIGKILL is delivered asynchronously

    def gone():
        try:
            return open(f"/proc/{grandchild}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    while not gone() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(), f"the part's own child {grandchild} outlived the limit"
    # each part's output read from where the part leaves it
    assert results["throughput"] == json.loads(json.dumps(FAKE_THROUGHPUT))
    assert results["transformer_lens"]["model_steps_per_s"] == 7.0
    assert results["assign_add"] == FAKE_SUMMARIES["assign_add"]
    assert results["grokking"] is None
    assert json.load(open(os.path.join(out, "results.json"))) == results
    table = open(os.path.join(out, "table.md")).read()
    for name in accelerator.PARTS:
        assert f"| {name} |" in table
    assert "| 2 | 123 |" in table and "| TransformerLens (cpu, 1 model, float32) | 7 |" in table
    assert "- `phase1_step`: 120.000 +- 20.000" in table, table
    assert "(no summary.json: the part did not finish" in table


def test_transformer_lens_is_skipped_without_torch(tmp_path, monkeypatch):
    monkeypatch.setattr(accelerator, "torch_available", lambda: False)
    results = accelerator.main(str(tmp_path / "acc"), True, ["transformer_lens"],
                               accelerator.TINY_LIMITS, "c")
    assert results["parts"]["transformer_lens"]["status"].startswith("skipped: torch")


@pytest.mark.parametrize("parts, limits, message", [
    ("gpu", "", "error: --parts='gpu': allowed a comma list of"),
    ("grokking", "grokking=soon", "error: --limits item 'grokking=soon': must be PART=SECONDS"),
])
def test_bad_flags_are_one_line_before_anything_is_written(tmp_path, parts, limits, message):
    with pytest.raises(SystemExit) as exit_:
        accelerator.cli(str(tmp_path / "acc"), True, parts, limits, [])
    assert str(exit_.value.code).startswith(message) and "\n" not in str(exit_.value.code)
    assert not (tmp_path / "acc").exists()
