"""The ACE grokking model, training clock and checkpoint schedule (the core analysis itself is
tested in tests/test_ace_pipeline.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from mechjax.studies import grokking_core as gc
from mechjax.models.config import ConfigError
from mechjax.tasks import modular


def test_schedule_and_clock():
    epochs = gc.checkpoint_epochs(20000)  # the paper's: every 100 to 2000, then every 500
    assert epochs[:3] == [0, 100, 200] and 2000 in epochs and 2100 not in epochs
    assert epochs[-2:] == [19500, 20000] and len(epochs) == 21 + 36
    assert gc.checkpoint_epochs(250, 100, 2000, 500) == [0, 100, 200, 250]
    assert gc.steps_per_epoch(1404, 512) == 3 and gc.steps_per_epoch(1404, None) == 1
    assert gc.steps_per_epoch(264, 512) == 1


def test_checked_schedule_names_the_key_that_breaks_the_schedule():
    assert gc.checked_schedule(8, 1, 2, 4, 4, 4, (0, 8)) == [0, 2, 4, 8]
    for args, key in (((8, 3, 2, 4, 4, 4, ()), "checkpoints.dense_every=2"),
                      ((8, 1, 2, 5, 4, 4, ()), "checkpoints.dense_until=5"),
                      ((9, 1, 2, 4, 4, 4, ()), "train.epochs=9"),
                      ((8, 1, 2, 4, 4, 6, ()), "branch.epoch=6"),     # not a checkpoint
                      ((8, 1, 2, 4, 4, 8, ()), "branch.epoch=8"),     # the last epoch
                      ((8, 1, 2, 4, 4, 4, (0, 6)), "ace.clock_epochs=(0, 6)")):
        with pytest.raises(ConfigError, match=re.escape(key)):
            gc.checked_schedule(*args)


def test_heldout_pair_inputs_are_the_pairs_outside_the_training_split():
    task = modular.make_task(p=7, op="add", train_fraction=0.6, split_seed=0)
    inputs = gc.heldout_pair_inputs(task)
    n_train = int(np.round(0.6 * 49))
    assert inputs.tokens.shape == (49 - n_train, 2)
    a, b = np.asarray(inputs.tokens).T
    np.testing.assert_array_equal(np.asarray(inputs.labels), (a + b) % 7)
    train = task.eval_pools["train"](None, task.params_with_defaults())
    seen = {tuple(t) for t, w in zip(np.asarray(train["tokens"]), np.asarray(train["weights"]))
            if w > 0}
    assert not seen & {tuple(t) for t in np.asarray(inputs.tokens)}
