"""Minibatches of a fixed dataset: shuffled without replacement, or drawn with replacement."""
import jax
import jax.numpy as jnp
import numpy as np

from mechjax.tasks.base import fixed_dataset_sampler


def _batches(replace):
    tokens = jnp.arange(8).reshape(4, 2)  # row i holds 2i, 2i + 1
    sample = jax.jit(fixed_dataset_sampler(tokens, tokens[:, 1], 4, weights=jnp.ones((4, 2)),
                                           replace=replace))
    return [sample(jax.random.key(i), {}) for i in range(10)]


def test_without_replacement_every_batch_is_a_permutation_of_the_rows():
    for b in _batches(False):
        assert sorted(np.asarray(b["tokens"][:, 0]).tolist()) == [0, 2, 4, 6]


def test_with_replacement_rows_repeat_and_stay_whole():
    batches = _batches(True)
    # 10 batches of 4 from 4 rows: all repeat-free has probability (4!/4^4)^10 ~ 4e-11
    assert any(len(set(np.asarray(b["tokens"][:, 0]).tolist())) < 4 for b in batches)
    for b in batches:
        t = np.asarray(b["tokens"])
        np.testing.assert_array_equal(t[:, 1], t[:, 0] + 1)  # rows, not mixed entries
        np.testing.assert_array_equal(np.asarray(b["labels"]), t[:, 1])
        assert b["weights"].shape == (4, 2)
