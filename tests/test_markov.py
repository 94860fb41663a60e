"""The Markov-chain task: the data follow T, and the Bayes predictor scores 0.75."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.tasks import markov


@pytest.fixture(scope="module")
def task():
    return markov.make_task(data_seed=0)


def test_shapes_and_protocol(task):
    assert task.readout is None and task.seq_len == 31
    assert task.vocab_size == task.vocab_out == 4
    batch = task.sample(jax.random.key(0), task.params_with_defaults())
    assert batch["tokens"].shape == batch["labels"].shape == (64, 31)
    assert batch["tokens"].dtype == jnp.int32
    # Labels are the inputs shifted by one: position t predicts state t + 1.
    np.testing.assert_array_equal(batch["tokens"][:, 1:], batch["labels"][:, :-1])
    train = task.eval_pools["train"](jax.random.key(1), {})
    test = task.eval_pools["test"](jax.random.key(1), {})
    assert train["tokens"].shape == test["tokens"].shape == (3000, 31)
    # Minibatches come from the fixed training set.
    rows = {tuple(r) for r in np.asarray(train["tokens"])}
    assert all(tuple(r) in rows for r in np.asarray(batch["tokens"]))
    # Different keys give different minibatches.
    other = task.sample(jax.random.key(2), {})
    assert not np.array_equal(other["tokens"], batch["tokens"])


def test_data_fixed_by_data_seed(task):
    again = markov.make_task(data_seed=0).eval_pools["test"](jax.random.key(5), {})
    np.testing.assert_array_equal(again["tokens"], task.eval_pools["test"](None, {})["tokens"])
    other = markov.make_datasets(data_seed=1)["test"]
    assert not np.array_equal(other["tokens"], again["tokens"])
    data = markov.make_datasets(data_seed=0)
    assert not np.array_equal(data["train"]["tokens"], data["test"]["tokens"])


def test_empirical_transitions_match_T(task):
    data = task.eval_pools["train"](None, {})
    states = np.concatenate([np.asarray(data["tokens"]), np.asarray(data["labels"][:, -1:])], 1)
    assert states.shape == (3000, 32)
    counts = np.zeros((4, 4))
    np.add.at(counts, (states[:, :-1].ravel(), states[:, 1:].ravel()), 1)
    freq = counts / counts.sum(1, keepdims=True)
    np.testing.assert_allclose(freq, markov.TRANSITION, atol=0.015)
    assert counts[markov.TRANSITION == 0].sum() == 0  # impossible moves never happen
    # Uniform start: 750 per state expected, sd ~ 24.
    start = np.bincount(states[:, 0], minlength=4)
    assert np.all(np.abs(start - 750) < 120)


def test_bayes_accuracy_and_spectrum(task):
    assert markov.optimal_accuracy() == pytest.approx(0.75)
    test = task.eval_pools["test"](None, {})
    assert float(markov.bayes_accuracy(test["tokens"], test["labels"])) == pytest.approx(0.75,
                                                                                          abs=0.01)
    np.testing.assert_array_equal(markov.bayes_predictions(jnp.arange(4)), [0, 1, 2, 3])
    np.testing.assert_allclose(markov.true_eigenvalues(), [1.0, 0.75 + 0.25j, 0.75 - 0.25j, 0.5],
                               atol=1e-12)
    np.testing.assert_allclose(markov.stationary_distribution(), np.full(4, 0.25))
