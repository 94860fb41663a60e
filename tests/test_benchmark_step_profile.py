"""The step profile's tiny mode: one process prints the step's effective GFLOP/s beside the measured
matmul GFLOP/s and the split of the step into its pieces."""
import json
import re
import subprocess

from conftest import FAST_COMPILE, PYTHON, REPO, run_module_env

from experiments.benchmark import step_profile


def test_tiny_profile_prints_step_and_matmul_rates(tmp_path):
    out = tmp_path / "profile.json"
    proc = subprocess.run([PYTHON, "-m", "experiments.benchmark.step_profile", "--tiny",
                           "--ops=2", f"--out={out}"], cwd=REPO, env=run_module_env(FAST_COMPILE),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    step = re.search(r"step effective GFLOP/s :\s+([0-9.]+)", proc.stdout)
    matmul = re.search(r"matmul GFLOP/s\s+:\s+([0-9.]+)", proc.stdout)
    assert step and matmul, proc.stdout
    result = json.loads(out.read_text())
    assert result["settings"] == step_profile.dataclasses.asdict(step_profile.TINY)
    # the printed rates are the JSON's (positive; a loaded machine may print 0.0 for the tiny step)
    assert step.group(1) == f"{result['step_gflops']:.1f}" and result["step_gflops"] > 0
    assert matmul.group(1) == f"{result['matmul_gflops']:.1f}" and result["matmul_gflops"] > 0
    # XLA counted the work of every piece that computes; the step holds forward and backward
    flops = result["flops"]
    assert flops["forward"] > 0 and flops["forward+backward"] > flops["forward"]
    assert flops["step"] >= flops["forward+backward"]
    assert flops["matmul"] == 2 * result["matmul_n"] ** 3
    for piece in step_profile.PIECES:
        assert piece in result["seconds_per_step"] and piece in proc.stdout
    # --ops: the traced op table of forward + backward, its dots counted
    assert "top 2 ops of the backward pass" in proc.stdout
    assert any(r["pass_"] == "backward" and r["dot_flops"] > 0 for r in result["op_table"]["rows"])
