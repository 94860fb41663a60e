"""accuracy / cross-entropy / ROC-AUC against values worked out by hand or by brute force."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax import metrics


LOGITS = jnp.array([[2.0, 0.0, 0.0],    # predicts 0
                    [0.0, 3.0, 1.0],    # predicts 1
                    [1.0, 1.0, 5.0],    # predicts 2
                    [0.0, 0.0, -1.0]])  # tie between 0 and 1: argmax takes 0
LABELS = jnp.array([0, 2, 2, 1])


def _nll(logits, labels):
    z = np.asarray(logits, np.float64)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -logp[np.arange(len(labels)), np.asarray(labels)]


def test_accuracy_counts_argmax_hits_and_breaks_ties_to_the_lowest_index():
    assert float(metrics.accuracy(LOGITS, LABELS)) == 0.5          # rows 0 and 2
    assert float(metrics.accuracy(LOGITS, jnp.array([0, 1, 2, 0]))) == 1.0


def test_weights_make_a_weighted_mean_and_zero_weight_scores_zero():
    w = jnp.array([0.0, 3.0, 1.0, 0.0])
    assert float(metrics.accuracy(LOGITS, LABELS, w)) == pytest.approx(0.25)
    nll = _nll(LOGITS, LABELS)
    assert float(metrics.cross_entropy(LOGITS, LABELS, w)) == pytest.approx(
        (3 * nll[1] + nll[2]) / 4, rel=1e-6)
    assert float(metrics.accuracy(LOGITS, LABELS, jnp.zeros(4))) == 0.0
    assert float(metrics.cross_entropy(LOGITS, LABELS, jnp.zeros(4))) == 0.0


def test_cross_entropy_is_the_mean_negative_log_probability_of_the_label():
    assert float(metrics.cross_entropy(LOGITS, LABELS)) == pytest.approx(
        _nll(LOGITS, LABELS).mean(), rel=1e-6)
    # Per position over a [b, p, V] batch (no readout).
    logits = jax.random.normal(jax.random.PRNGKey(0), (3, 5, 7))
    labels = jax.random.randint(jax.random.PRNGKey(1), (3, 5), 0, 7)
    expected = _nll(logits.reshape(-1, 7), labels.reshape(-1)).mean()
    assert float(metrics.cross_entropy(logits, labels)) == pytest.approx(expected, rel=1e-6)


def test_dtype_float32_by_default_and_promoted_when_none():
    with jax.enable_x64(True):
        logits = jnp.asarray(LOGITS, jnp.float64)
        w = jnp.asarray([1.0, 1.0, 1.0, 1e-12], jnp.float64)
        assert metrics.cross_entropy(logits, LABELS).dtype == jnp.float32
        assert metrics.accuracy(logits, LABELS, w).dtype == jnp.float32
        promoted = metrics.cross_entropy(logits, LABELS, w, dtype=None)
        assert promoted.dtype == jnp.float64
        nll = _nll(LOGITS, LABELS)
        assert float(promoted) == pytest.approx((nll[:3].sum() + 1e-12 * nll[3]) / (3 + 1e-12),
                                                rel=1e-14)


def test_cross_entropy_gradient_is_softmax_minus_onehot():
    g = jax.grad(lambda z: metrics.cross_entropy(z, LABELS))(LOGITS)
    expected = (jax.nn.softmax(LOGITS) - jax.nn.one_hot(LABELS, 3)) / 4
    np.testing.assert_allclose(g, expected, atol=1e-6)


def test_roc_auc_matches_pairwise_count_with_ties():
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 6, size=300).astype(np.float32)
    positive = rng.random(300) < 0.4
    diff = scores[positive][:, None] - scores[~positive][None, :]
    expected = ((diff > 0) + 0.5 * (diff == 0)).mean()
    assert float(metrics.roc_auc(jnp.asarray(scores), jnp.asarray(positive))) == pytest.approx(
        expected, abs=1e-6)


def test_roc_auc_of_a_perfect_an_inverted_and_an_uninformative_score():
    positive = jnp.array([True, True, False, False, False])
    s = jnp.array([5.0, 4.0, 1.0, 2.0, 3.0])
    assert float(metrics.roc_auc(s, positive)) == 1.0
    assert float(metrics.roc_auc(-s, positive)) == 0.0
    assert float(metrics.roc_auc(jnp.ones(5), positive)) == 0.5
