"""The stall watchdog ends a process whose pending call uses no CPU, and leaves busy ones alone."""
import subprocess
import time

import pytest

from conftest import PYTHON, run_module_env
from mechjax.sweeps import watchdog

STALL = """
import time
from mechjax.sweeps import watchdog
with watchdog.watch("simulated stalled call", stall_seconds=1.5, poll_seconds=0.25,
                    cpu_only=False):
    time.sleep(60)  # blocked without computing, as a deadlocked XLA program is
print("returned")
"""


def test_a_simulated_stall_exits_with_one_line(tmp_path):
    t0 = time.monotonic()
    out = subprocess.run([PYTHON, "-c", STALL], env=run_module_env({"TMPDIR": str(tmp_path)}),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == watchdog.EXIT_STALLED
    assert time.monotonic() - t0 < 50  # long before the 60 s sleep would have returned
    assert "returned" not in out.stdout
    lines = [ln for ln in out.stderr.splitlines() if "stalled" in ln]
    assert len(lines) == 1 and "simulated stalled call" in lines[0] and "resume" in lines[0]
    # the Python stacks the line points to, in the temporary folder it names
    (stacks,) = tmp_path.glob("mechjax-stall-*.txt")
    assert str(stacks) in lines[0] and "watchdog" in stacks.read_text()


def test_a_busy_call_is_not_stopped():
    with watchdog.watch("busy loop", stall_seconds=0.5, poll_seconds=0.1, cpu_only=False):
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            sum(i * i for i in range(1000))  # keeps the CPU busy for 4x the stall limit


def test_env_limit_is_validated(monkeypatch):
    monkeypatch.setenv(watchdog.ENV_VAR, "soon")
    with pytest.raises(ValueError, match="MECHJAX_STALL_SECONDS='soon'"):
        watchdog.stall_seconds_from_env()
    monkeypatch.setenv(watchdog.ENV_VAR, "0")
    assert watchdog.stall_seconds_from_env() == 0.0
    with watchdog.watch("off"):  # 0 turns it off: a sleeping block is left alone
        time.sleep(0.1)


NESTED = """
import time
from mechjax.sweeps import watchdog
with watchdog.watch("the whole run", stall_seconds=1.5, poll_seconds=0.25, cpu_only=False):
    with watchdog.watch("inner analysis call"):
        time.sleep(60)
"""


def test_a_stall_is_reported_under_the_innermost_call(tmp_path):
    out = subprocess.run([PYTHON, "-c", NESTED], env=run_module_env({"TMPDIR": str(tmp_path)}),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == watchdog.EXIT_STALLED
    assert "inner analysis call" in out.stderr and "the whole run" not in out.stderr
