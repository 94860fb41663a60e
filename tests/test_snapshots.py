"""Which steps a sweep's snapshot policy keeps, and its refusal of steps off the chunk grid."""
import pytest

from mechjax.sweeps.snapshots import SnapshotPolicy
from mechjax.training.train import TrainConfig


def test_snapshot_policy_steps():
    cfg = TrainConfig(steps=55, eval_every=10)  # 6 evaluations, chunks of 2: steps 20, 40, 55
    assert SnapshotPolicy().steps_to_save(cfg, 2) == [55]
    assert SnapshotPolicy(every_chunks=2, steps=(0, 20)).steps_to_save(cfg, 2) == [0, 20, 40, 55]
    assert SnapshotPolicy(steps=(40,), final=False).steps_to_save(cfg, 2) == [40]
    with pytest.raises(ValueError, match=r"steps \[30\] do not end a chunk; allowed: 0 and "
                                         r"\[20, 40, 55\]"):
        SnapshotPolicy(steps=(30,)).steps_to_save(cfg, 2)
    with pytest.raises(ValueError, match="every_chunks=0"):
        SnapshotPolicy(every_chunks=0).steps_to_save(cfg, 2)
