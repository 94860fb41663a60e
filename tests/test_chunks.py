"""Chunked evaluation over sequences (mechjax.chunks) gives what the unchunked call gives: the
helper itself, the trainer's pool scores, and ACE's activation read, interventions and
Jacobians."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis import ace
from mechjax.chunks import map_chunks
from mechjax.models.config import ConfigError, ModelConfig
from mechjax.models.transformer import param_shapes
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, make_train

from tests.ace_cases import tiny_model

# float tolerance for a row computed inside a smaller batch (XLA may block a matmul differently)
RTOL, ATOL = 1e-6, 1e-6


def assert_trees_close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=RTOL, atol=ATOL)


def random_params(cfg: ModelConfig) -> dict:
    """NumPy-drawn parameters (eager ``init_params`` compiles a program per shape)."""
    rng = np.random.default_rng(0)
    return {k: jnp.asarray(rng.normal(size=shape) / np.sqrt(shape[-1]), jnp.float32)
            for k, shape in param_shapes(cfg).items()}


def test_map_chunks_equals_one_call_for_any_remainder_and_pytrees():
    rng = np.random.default_rng(0)
    rows = {"x": jnp.asarray(rng.normal(size=(23, 4)), jnp.float32),
            "i": jnp.asarray(rng.integers(0, 9, size=(23,)), jnp.int32)}
    w = jnp.asarray(rng.normal(size=(4, 3)), jnp.float32)
    fn = lambda r: (jnp.tanh(r["x"] @ w) * r["i"][:, None], r["i"] * 2)  # noqa: E731
    whole = fn(rows)
    for chunk in (1, 5, 8, 23, 100, None):  # 23 = 4 x 5 + 3: a padded last chunk
        out = jax.jit(lambda r, c=chunk: map_chunks(fn, r, c))(rows)
        assert out[0].shape == (23, 3) and out[1].shape == (23,)
        assert_trees_close(out, whole)
        np.testing.assert_array_equal(out[1], whole[1])  # integer rows: exact, padding dropped


def test_map_chunks_refuses_bad_sizes():
    x = jnp.zeros((4, 2))
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match=f"chunk_size={bad!r}: a positive int"):
            map_chunks(lambda r: r, x, bad)
    with pytest.raises(ValueError, match=r"leading sizes \[3, 4\]"):
        map_chunks(lambda r: r, (x, jnp.zeros(3)), 2)


def test_trainer_pool_scores_chunked_equal_unchunked():
    task = modular.make_task(p=7, batch_size=16, train_fraction=0.6)
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_mlp=32, d_vocab=7, d_vocab_out=7,
                      n_ctx=2, causal=False)
    pool = task.eval_pools["test"](None, task.default_params)  # every pair, weights = split
    chunk = pool["tokens"].shape[0] // 3 + 1  # three chunks, the last padded
    scores = []
    for eval_chunk in (None, chunk):
        tr = make_train(task, cfg, TrainConfig(steps=5, eval_every=5, eval_chunk=eval_chunk))
        params = random_params(cfg)
        scores.append(jax.jit(tr.pool_scores)(params, pool))
    np.testing.assert_allclose(scores[1], scores[0], rtol=RTOL, atol=ATOL)
    with pytest.raises(ConfigError, match="train.eval_chunk=0: a positive int"):
        TrainConfig(eval_chunk=0)


def test_ace_pipeline_chunked_gives_the_same_core():
    cfg, params, tokens = tiny_model(1)
    labels = jnp.asarray(np.random.default_rng(3).integers(0, cfg.vocab_out, tokens.shape))
    jac_tokens, jac_pos = ace.jacobian_samples(np.asarray(tokens), 12, 0)
    inputs = ace.Inputs(tokens, labels, jnp.asarray(jac_tokens), jnp.asarray(jac_pos))
    base = dict(hook_name="blocks.0.hook_resid_post", tail="log_probs", identify="markov")
    whole = ace.analyse(params, inputs, cfg, ace.Pipeline(**base, chunk_size=None,
                                                          jac_chunk=None))
    # 24 sequences in chunks of 7 and 12 Jacobian samples in chunks of 5: both padded; the
    # activations enter the covariance and the fit, the Jacobians the observability Gramian,
    # the interventions the accuracies
    parts = ace.analyse(params, inputs, cfg, ace.Pipeline(**base, chunk_size=7, jac_chunk=5))
    assert int(parts.core.rank) == int(whole.core.rank)
    assert_trees_close((parts.core.weights, parts.core.mean, parts.accuracy, parts.fit.r2),
                       (whole.core.weights, whole.core.mean, whole.accuracy, whole.fit.r2))
    with pytest.raises(ValueError, match="Pipeline.jac_chunk=0: a positive int"):
        ace.Pipeline(**base, jac_chunk=0)
