"""Every test runs under a time limit: a test that hangs fails within it, with its stack."""
import os
import subprocess
import sys
import time

from conftest import REPO

HANGING_TEST = '''
import threading


def test_waits_for_an_event_nobody_sets():
    threading.Event().wait()  # blocked forever in a lock, as a deadlocked compiled call is
'''
LIMIT = 3


def test_a_hanging_test_fails_within_its_limit_with_a_stack(tmp_path):
    """The project's pytest settings (setup.cfg), with the limit cut to a few seconds, on a test
    that waits forever: pytest ends it, names it and prints where it was waiting."""
    path = tmp_path / "test_hangs.py"
    path.write_text(HANGING_TEST)
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", os.path.join(REPO, "setup.cfg"), "-p",
         "no:cacheprovider", "--rootdir", str(tmp_path), "-o", f"timeout={LIMIT}", str(path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert elapsed < LIMIT + 30, elapsed  # the limit, plus pytest's own start-up
    assert "Timeout" in text, text
    # the stack of the hanging test, down to the line it waits on
    assert "test_waits_for_an_event_nobody_sets" in text and "Event().wait()" in text, text
