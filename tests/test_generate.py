"""Sampling with hooks, and the agreement steering/judging built on it."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.models import generate as gen
from mechjax.studies import agreement_cores as ac
from mechjax.studies import agreement_generation as ag_gen
from mechjax.interop import gpt2_model_config
from mechjax.models.transformer import apply, init_params

VERBS = (3, 4, 5, 6)


@pytest.fixture(scope="module")
def model():
    cfg = gpt2_model_config(n_layers=2, d_model=16, n_heads=2, d_vocab=12, n_ctx=10)
    return cfg, init_params(jax.random.PRNGKey(0), cfg)


@pytest.mark.timeout(600)  # a whole tiny experiment: 30-75 s cold on 2 cores
def test_top_k_one_is_greedy_and_writes_after_each_prompt(model):
    cfg, params = model
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 12, (3, 10)), jnp.int32)
    lengths = jnp.array([2, 5, 4])
    out = np.asarray(gen.generate(gen.PlainLogits(cfg), params, tokens, lengths,
                                  jax.random.PRNGKey(0), 3, 1.0, 1))
    # The reference: greedy decoding, one token at a time. A causal model's logits at position
    # i do not depend on later tokens, so each sequence is zero-padded to n_ctx: one compiled
    # forward for every length instead of op-by-op calls at each length.
    forward_padded = jax.jit(lambda t: apply(params, t[None], cfg)[0])
    for row, ln in enumerate([2, 5, 4]):
        np.testing.assert_array_equal(out[row, :ln], tokens[row, :ln])  # prompt kept
        seq = list(np.asarray(tokens[row, :ln]))
        for _ in range(3):
            padded = np.zeros(cfg.n_ctx, np.int32)
            padded[:len(seq)] = seq
            seq.append(int(np.argmax(np.asarray(forward_padded(padded))[len(seq) - 1])))
        assert list(out[row, :ln + 3]) == seq


def test_greedy_flag_equals_top_k_one_in_the_same_program(model):
    cfg, params = model
    tokens = jnp.asarray(np.random.default_rng(3).integers(0, 12, (4, 10)), jnp.int32)
    lengths = jnp.array([2, 3, 4, 5])
    key = jax.random.PRNGKey(5)
    run = lambda greedy, k: np.asarray(gen.generate(  # noqa: E731
        gen.PlainLogits(cfg), params, tokens, lengths, key, 4, 1.0, k, jnp.asarray(greedy)))
    np.testing.assert_array_equal(run(True, 8), run(False, 1))
    assert not np.array_equal(run(True, None), run(False, None))  # sampling differs from argmax


def test_copula_margin_is_the_log_odds_of_the_two_numbers():
    logits = jnp.asarray(np.random.default_rng(4).normal(size=(5, 12)) * 3)
    p = np.asarray(jax.nn.softmax(logits))
    singular, plural = p[:, VERBS[0]] + p[:, VERBS[2]], p[:, VERBS[1]] + p[:, VERBS[3]]
    np.testing.assert_allclose(ac.copula_margin(logits, jnp.asarray(VERBS)),
                               np.log(plural / singular), rtol=1e-5)
    # one tense's pair dominating: the copula margin follows that pair, the summed one does not
    tilted = logits.at[:, VERBS[2]].set(-30.0).at[:, VERBS[3]].set(-30.0)
    l = np.asarray(tilted)
    np.testing.assert_allclose(ac.copula_margin(tilted, jnp.asarray(VERBS)),
                               l[:, VERBS[1]] - l[:, VERBS[0]], atol=1e-5)


def test_both_margins_of_hand_set_logits():
    # is, are, was, were = 0, 1, 2, 3: copula log((e^1 + e^3) / (e^0 + e^2)) = 1 exactly,
    # summed 1 + 3 - 0 - 2 = 2; a larger 'were' moves both up
    logits = jnp.zeros((2, 12)).at[:, VERBS].set(jnp.array([[0.0, 1.0, 2.0, 3.0],
                                                            [0.0, 1.0, 2.0, 5.0]]))
    ids = jnp.asarray(VERBS)
    np.testing.assert_allclose(ac.copula_margin(logits, ids)[0], 1.0, atol=1e-6)
    np.testing.assert_allclose(ac.copula_margin(logits, ids)[1],
                               np.log((np.e + np.e ** 5) / (1 + np.e ** 2)), atol=1e-6)
    np.testing.assert_allclose(ac.margin(logits, ids), [2.0, 4.0], atol=1e-6)


def test_sample_token_respects_top_k():
    logits = jnp.tile(jnp.arange(10.0), (2000, 1))
    draws = np.asarray(gen.sample_token(jax.random.PRNGKey(1), logits, 1.0, 3))
    assert set(draws) == {7, 8, 9}


def test_push_margin_reaches_the_opposite_sign_with_magnitude_target(model):
    cfg, params = model
    tokens = jnp.asarray(np.random.default_rng(2).integers(0, 12, (6, 10)), jnp.int32)
    pos = jnp.array([1, 3, 5, 7, 8, 9])
    ids = jnp.asarray(VERBS)
    rows = jnp.arange(6)

    @jax.jit  # one program, not op by op
    def direction_and_plain_logits(p):
        # a direction the margin responds to (as the core is): the mean margin gradient per layer
        _, grad, _ = ac.read_layers(p, ac.Prompts(tokens, pos, None), cfg, ids)
        q = grad.mean(1) / jnp.linalg.norm(grad.mean(1), axis=-1, keepdims=True)
        return q, gen.PlainLogits(cfg)(p, tokens, pos)

    q, plain = direction_and_plain_logits(params)

    @functools.lru_cache(maxsize=None)
    def pushed_and_alpha(kind):  # one program per margin kind; the layer is an argument
        fn = ag_gen.PushMargin(cfg, VERBS, target=1.0, newton_steps=6, margin=kind)
        return jax.jit(lambda args: (fn(args, tokens, pos), fn.alpha(args, tokens, pos)[0]))

    @functools.lru_cache(maxsize=None)
    def by_hand(layer):  # one program per hooked layer; alpha is an argument
        name = ac.resid_names(cfg)[layer]
        return jax.jit(lambda alpha: ac.last_logits(
            params, ac.Prompts(tokens, pos, None), cfg,
            {name: lambda h: h.at[rows, pos].add(alpha[:, None] * q[layer])}))

    for layer, kind in ((0, "summed"), (1, "summed"), (0, "copula"), (1, "copula")):
        measure = ac.MARGINS[kind]
        logits, alpha = pushed_and_alpha(kind)((params, q, jnp.asarray(layer)))
        m0, m1 = measure(plain, ids), measure(logits, ids)
        np.testing.assert_allclose(m1, -np.sign(m0), atol=1e-3)
        # only the current position moves: the same push by hand gives the same logits
        np.testing.assert_allclose(logits, by_hand(layer)(alpha), atol=1e-4)


def test_slots_and_judge_on_hand_written_texts():
    assert ag_gen.slots("The keys to the cabinet are here.") == [(1, 1)]
    assert ag_gen.slots("In the past, the key near the doors were ready.") == [(0, 1)]
    # the attractor is not a head noun; a sentence without head noun has no slot
    assert ag_gen.slots("The boxes are here. We waited. The man is here") == [(0, 0)]
    assert ag_gen.slots("The mice that I mentioned was<|endoftext|>The child is") == [(1, 0),
                                                                                      (0, 0)]
    judged = ag_gen.judge(["The keys are here.", "The key are here.", "We waited."])
    assert judged == {"n_texts": 3, "n_slots": 2, "agree": 0.5, "disagree": 0.5}
    assert ag_gen.judge(["We waited."])["agree"] is None
    # the first-slot rule scores only the verb the prompt asks for
    texts = ["The keys were here. The man are", "The key is old. The mice is", "We waited."]
    assert ag_gen.judge(texts, "first") == {"n_texts": 3, "n_slots": 2, "agree": 1.0,
                                            "disagree": 0.0}
    assert ag_gen.judge(texts, "all")["n_slots"] == 4
    with pytest.raises(ValueError, match="rule='last'"):
        ag_gen.judge(texts, "last")
    with pytest.raises(ValueError, match="margin='both'"):
        ag_gen.PushMargin(None, VERBS, margin="both")
