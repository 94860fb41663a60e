"""The accelerator run's report and flag parsing (pure functions, no JAX)."""
import pytest

from experiments.benchmark import accelerator, report

LOG = """[mechjax 10:00:00] chunk 1/20 | step 2000/40000 | 950 model-steps/s | elapsed 0m34s | ETA 10m46s | train/loss 1.2
[mechjax 10:00:34] chunk 2/20 | step 4000/40000 | 1001 model-steps/s | elapsed 1m04s | ETA 9m36s | train/loss 0.9
"""


def row(mode, dtype, s, rate):
    return {"mode": mode, "dtype": dtype, "models": s, "model_steps_per_s": rate}


def test_last_progress_line_is_read():
    assert report.last_progress(LOG) == {"chunk": 2, "chunks": 20, "step": 4000,
                                         "steps": 40000, "model_steps_per_s": 1001,
                                         "eta": "9m36s"}
    assert report.last_progress("no progress here") is None


def test_throughput_table_one_column_per_mode_and_dtype():
    tp = {"rows": [row("sweep_vmap", "float32", 1, 100.0), row("sweep_vmap", "float32", 16, 900.0),
                   row("sweep_map", "float32", 16, 300.0),
                   row("sweep_vmap", "bfloat16", 1, 120.0)]}
    lines = report.throughput_table(tp, {"platform": "cuda", "model_steps_per_s": 50.0})
    assert lines[0] == "| S | vmap float32 | map float32 | vmap bfloat16 |"
    assert lines[2] == "| 1 | 100 | 100 | 120 |"   # one seed: the loop is the vmap program
    assert lines[3] == "| 16 | 900 | 300 | - |"     # not measured: '-'
    assert lines[4].startswith("| TransformerLens (cuda, 1 model, float32) | 50 |")


def test_markdown_reports_unfinished_parts():
    results = {"tiny": False, "command": "python -m experiments.benchmark.accelerator --out=x",
               "parts": {"grokking": {"status": "stopped at its time limit (rerun resumes)",
                                      "seconds": 200.0, "limit_s": 200.0,
                                      "progress": report.last_progress(LOG)}}}
    text = report.markdown(results)
    assert "| grokking | stopped at its time limit (rerun resumes) | 200 (200) | step 4000/40000" \
        in text
    assert "(no summary.json: the part did not finish" in text


def test_parts_and_limits_flags():
    assert accelerator.parse_parts("all") == list(accelerator.PARTS)
    assert accelerator.parse_parts("grokking,throughput") == ["throughput", "grokking"]
    assert accelerator.parse_limits("grokking=600", accelerator.LIMITS)["grokking"] == 600
    assert sum(accelerator.LIMITS.values()) == 480  # the whole run's 8 minutes
    with pytest.raises(ValueError, match=r"--parts='gpu': allowed a comma list of"):
        accelerator.parse_parts("gpu")
    for bad in ("grokking=-1", "grokking=soon", "gpu=10"):
        with pytest.raises(ValueError, match=f"--limits item '{bad}': must be PART=SECONDS"):
            accelerator.parse_limits(bad, accelerator.LIMITS)
