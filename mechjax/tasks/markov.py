"""The 4-state Markov chain task of the algorithmic-cores (ACE) paper.

A sequence is 32 states of the chain ``TRANSITION`` from a uniform start; the model reads states
0..30 and predicts states 1..31 at every position (``readout=None``, labels ``[b, 31]``). The data
are fixed: 3000 training and 3000 test sequences drawn from one data seed, shared by all model
seeds. The Bayes-optimal predictor outputs the most likely successor, ``argmax T[s_t]``; its
accuracy is ``sum_s pi_s max_j T[s, j] = 0.75`` (chance 0.25).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.tasks.base import Batch, Task, fixed_dataset_sampler

TRANSITION = np.array([[0.75, 0.25, 0.00, 0.00],
                       [0.00, 0.75, 0.25, 0.00],
                       [0.00, 0.00, 0.75, 0.25],
                       [0.25, 0.00, 0.00, 0.75]])
N_STATES = 4
SEQ_LEN = 32  # states per sequence; the model sees SEQ_LEN - 1 tokens


def sample_sequences(rng: np.random.Generator, n: int, seq_len: int = SEQ_LEN,
                     transition: np.ndarray = TRANSITION) -> np.ndarray:
    """``n`` state sequences ``[n, seq_len]`` int32: uniform start, then the chain.

    NumPy, not jax.random: the datasets are drawn once per data seed, and NumPy needs no
    compilation (eager jax.random compiles a program per op, seconds on CPU).
    """
    cdf = np.cumsum(transition, axis=1)
    states = np.empty((n, seq_len), np.int32)
    states[:, 0] = rng.integers(0, transition.shape[0], n)
    for t in range(1, seq_len):
        u = rng.random(n)[:, None]
        states[:, t] = np.minimum((u >= cdf[states[:, t - 1]]).sum(1), transition.shape[0] - 1)
    return states


def to_batch(states: jax.Array) -> Batch:
    """States ``[n, L]`` -> tokens ``states[:, :-1]``, labels ``states[:, 1:]`` (``[n, L-1]``)."""
    return {"tokens": states[:, :-1], "labels": states[:, 1:]}


def make_datasets(data_seed: int = 0, n_train: int = 3000, n_test: int = 3000,
                  seq_len: int = SEQ_LEN) -> dict[str, Batch]:
    """The fixed ``{'train', 'test'}`` datasets of one data seed (the same for every model seed)."""
    train_rng, test_rng = (np.random.default_rng(s)
                           for s in np.random.SeedSequence(data_seed).spawn(2))
    return {"train": to_batch(jnp.asarray(sample_sequences(train_rng, n_train, seq_len))),
            "test": to_batch(jnp.asarray(sample_sequences(test_rng, n_test, seq_len)))}


def bayes_predictions(tokens: jax.Array, transition: np.ndarray = TRANSITION) -> jax.Array:
    """The Bayes-optimal next-state prediction ``argmax_j T[s_t, j]`` for ``tokens [...]``."""
    return jnp.argmax(jnp.asarray(transition), axis=-1)[tokens].astype(jnp.int32)


def bayes_accuracy(tokens: jax.Array, labels: jax.Array,
                   transition: np.ndarray = TRANSITION) -> jax.Array:
    """Accuracy of the Bayes-optimal predictor on a dataset (about 0.75)."""
    return (bayes_predictions(tokens, transition) == labels).mean()


def stationary_distribution(transition: np.ndarray = TRANSITION) -> np.ndarray:
    """``pi`` with ``pi T = pi`` (left eigenvector for eigenvalue 1, normalised)."""
    lam, vec = np.linalg.eig(transition.T)
    pi = np.real(vec[:, np.argmin(np.abs(lam - 1.0))])
    return pi / pi.sum()


def optimal_accuracy(transition: np.ndarray = TRANSITION) -> float:
    """Expected Bayes accuracy ``sum_s pi_s max_j T[s, j]`` (0.75 for ``TRANSITION``).

    The uniform start is the stationary distribution of this doubly-stochastic chain, so the
    expectation holds at every position.
    """
    return float(stationary_distribution(transition) @ transition.max(axis=1))


def true_eigenvalues(transition: np.ndarray = TRANSITION) -> np.ndarray:
    """Eigenvalues of ``T`` by decreasing modulus: 1, 0.75 +- 0.25i, 0.5."""
    lam = np.linalg.eigvals(transition)
    return lam[np.lexsort((-lam.imag, -np.round(np.abs(lam), 12)))]


def make_task(data_seed: int = 0, n_train: int = 3000, n_test: int = 3000,
              batch_size: int = 64) -> Task:
    """The Markov task: minibatches of ``batch_size`` from the fixed training set.

    Eval pools ``'train'`` and ``'test'`` return the full fixed datasets. Loss and accuracy are
    taken at every position (``readout=None``; labels ``[b, 31]``).
    """
    data = make_datasets(data_seed, n_train, n_test)
    pools = {name: fixed_dataset_sampler(d["tokens"], d["labels"]) for name, d in data.items()}
    return Task(
        name="markov",
        sample=fixed_dataset_sampler(data["train"]["tokens"], data["train"]["labels"], batch_size),
        eval_pools=pools,
        readout=None,
        seq_len=SEQ_LEN - 1,
        vocab_size=N_STATES,
        vocab_out=N_STATES,
    )
