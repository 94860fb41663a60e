"""The LAPACK deadlock reproduction (tests/lapack_deadlock_repro.py) ends with mechjax.linalg.

The unfixed variant hangs the CPU pool, so it runs only on request
(``MECHJAX_DEADLOCK_REPRO=1``), and then must end in the watchdog's stall exit.
"""
import os
import subprocess

import pytest

from conftest import PYTHON, REPO, run_module_env

SCRIPT = os.path.join(REPO, "tests", "lapack_deadlock_repro.py")


def _run(impl, timeout, **sizes):
    flags = [f"--{k}={v}" for k, v in sizes.items()]
    return subprocess.run([PYTHON, SCRIPT, f"--impl={impl}", *flags], env=run_module_env(),
                          capture_output=True, text=True, timeout=timeout)


def test_fixed_reproduction_completes():
    out = _run("mechjax", timeout=600, iters=60, stall_seconds=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "completed 60 runs" in out.stdout


@pytest.mark.skipif(os.environ.get("MECHJAX_DEADLOCK_REPRO") != "1",
                    reason="the unfixed reproduction deadlocks the CPU pool; run it with "
                           "MECHJAX_DEADLOCK_REPRO=1")
def test_unfixed_reproduction_deadlocks():
    out = _run("jnp", timeout=900, iters=2000, stall_seconds=30)
    assert out.returncode == 75, (out.returncode, out.stdout[-500:], out.stderr[-2000:])
    assert "stalled" in out.stderr
