"""SPEC 2.6's model, training clock and checkpoint schedule (the core analysis itself is tested in
tests/test_ace_pipeline.py)."""
from __future__ import annotations

from mechjax.analysis import grokking_core as gc


def test_schedule_and_clock():
    epochs = gc.checkpoint_epochs(20000)  # SPEC 2.6: every 100 to 2000, then every 500
    assert epochs[:3] == [0, 100, 200] and 2000 in epochs and 2100 not in epochs
    assert epochs[-2:] == [19500, 20000] and len(epochs) == 21 + 36
    assert gc.checkpoint_epochs(250, 100, 2000, 500) == [0, 100, 200, 250]
    assert gc.steps_per_epoch(1404, 512) == 3 and gc.steps_per_epoch(1404, None) == 1
    assert gc.steps_per_epoch(264, 512) == 1
