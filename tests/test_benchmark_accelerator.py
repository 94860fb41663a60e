"""The prepared accelerator run, end to end on the CPU at tiny sizes: every part, its outputs,
the report, and a part stopped at its time limit."""
import json
import os
import subprocess

import pytest

from conftest import FAST_COMPILE, PYTHON, REPO, run_module_env

from experiments.benchmark import throughput


def accelerator(out, *flags):
    return subprocess.run([PYTHON, "-m", "experiments.benchmark.accelerator", f"--out={out}",
                           "--tiny", *flags], cwd=REPO, env=run_module_env(FAST_COMPILE),
                          capture_output=True, text=True, timeout=900)


def check_report(proc, out, parts):
    """The run succeeded, ran exactly ``parts``, and printed the table it wrote."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.load(open(out / "results.json"))
    for name, part in results["parts"].items():
        assert part["status"] == "ok" or (name == "transformer_lens" and
                                          part["status"].startswith("skipped")), (name, part)
    assert sorted(results["parts"]) == sorted(parts)
    table = open(out / "table.md").read()
    assert table == proc.stdout  # the report is printed and written
    for name in results["parts"]:
        assert f"| {name} |" in table
    return results, table


# Two tests, so the suite's two workers can share the parts; together they are the whole run.
@pytest.mark.timeout(600)  # a whole tiny experiment: 30-75 s cold on 2 cores
def test_tiny_throughput_and_transformer_lens(tmp_path):
    out = tmp_path / "acc"
    parts = ["throughput", "transformer_lens"]
    results, table = check_report(accelerator(out, f"--parts={','.join(parts)}"), out, parts)

    tp = results["throughput"]
    assert tp["device"]["platform"] == "cpu" and tp["device"]["bf16"]
    measured = [(r["mode"].split("_")[1], r["dtype"], r["models"]) for r in tp["rows"]]
    assert measured == throughput.plan(throughput.TINY.sizes, ("float32", "bfloat16"))
    assert not tp["skipped"]
    for r in tp["rows"]:
        assert r["compile_seconds"] > 0 and r["seconds"] > 0 and r["model_steps_per_s"] > 0
    parity = tp["parity"]
    assert set(parity["float32"]["acc"]) == set(parity["bfloat16"]["acc"]) == \
        {"0var_heldout", "1var_train", "2var_two_misplaced"}
    # bfloat16 compute tracks float32 within a stated margin (measured 0.0 at these 4 steps,
    # 0.016 at 40), and the reported gap is the largest of the pools' gaps.
    gaps = [abs(parity["bfloat16"]["acc"][k] - parity["float32"]["acc"][k])
            for k in parity["float32"]["acc"]]
    assert parity["max_abs_diff/bfloat16"] == max(gaps) <= 0.05
    assert "| S | vmap float32 | map float32 | vmap bfloat16 | map bfloat16 |" in table
    assert "| 2 |" in table and "Largest gap bfloat16 vs float32" in table


@pytest.mark.timeout(600)  # a whole tiny experiment: 30-75 s cold on 2 cores
def test_tiny_paper_scale_parts(tmp_path):
    out = tmp_path / "acc"
    parts = ["assign_add", "grokking"]
    results, table = check_report(accelerator(out, f"--parts={','.join(parts)}"), out, parts)
    # (b) and (c): the experiments' own summaries, in their workdirs and in the results
    assert results["assign_add"]["n_seeds"] == 2
    assert os.path.exists(out / "assign_add" / "summary.json")
    assert results["grokking"]["n_seeds"] == 2 and "core_dim/final_wd0" in results["grokking"]
    assert os.path.exists(out / "ace_grokking" / "summary.json")
    assert "- `core_dim/final_wd1`:" in table and "- `phase1_step`:" in table


def test_a_part_past_its_limit_is_stopped_and_said_so(tmp_path):
    out = tmp_path / "acc"
    proc = accelerator(out, "--parts=grokking", "--limits=grokking=1")
    assert proc.returncode == 1
    part = json.load(open(out / "results.json"))["parts"]["grokking"]
    assert part["status"] == "stopped at its time limit (rerun resumes)"
    assert part["seconds"] < 30
    assert "(no summary.json: the part did not finish" in open(out / "table.md").read()


def test_bad_flags_are_one_line(tmp_path):
    proc = accelerator(tmp_path / "acc", "--parts=gpu")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1].startswith("error: --parts='gpu': allowed")
    assert not (tmp_path / "acc").exists()
