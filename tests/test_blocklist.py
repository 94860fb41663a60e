"""Block-list tasks: structure, exact enumeration, and the symmetries the IMIR theory needs."""
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.tasks import blocklist as bl
from mechjax.tasks.base import Task

TINY = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2)

TASKS = {
    "recall": bl.BlockListSpec(kind="recall", n_common=8, n_rare=8, n_blocks=4, burstiness=2),
    "khop2": bl.BlockListSpec(kind="khop", hops=2, n_common=12, n_rare=12, n_blocks=5),
    "khop3": bl.BlockListSpec(kind="khop", hops=3, n_common=12, n_rare=16, n_blocks=5),
    "ngram": bl.BlockListSpec(kind="ngram", block_len=3, confusers=1, n_common=12, n_rare=12,
                              n_blocks=4),
    "cond": bl.BlockListSpec(kind="cond", n_cond=3, n_common=8, n_rare=8, n_blocks=4),
    "ioi": bl.BlockListSpec(kind="ioi", n_common=8, n_rare=8, n_blocks=4),
    "gap": bl.BlockListSpec(kind="recall", offsets="linear_gap", n_pad=3, n_blocks=4),
}


def _unroll(tokens, qpos, spec):
    """Rotate a cyclic sequence back so the query ends it."""
    return np.roll(tokens, spec.base_len - 1 - qpos) if spec.offsets == "cyclic" else tokens


def _oracle(spec, seq):
    """The in-context answer, read off the (unrotated) sequence by the task's rule."""
    k = spec.block_len
    if spec.offsets == "linear_gap":
        seq = seq[seq != spec.pad]
    ctx, query = seq[: (spec.n_blocks - 1) * k].reshape(-1, k), seq[-(k - 1):]
    if spec.kind in ("recall", "khop"):
        x = query[0]
        for _ in range(spec.hops):
            x = ctx[ctx[:, 0] == x][0, 1]
        return x
    if spec.kind == "ioi":
        row = ctx[(ctx == query[0]).any(1)][0]
        return row[1] if row[0] == query[0] else row[0]
    return ctx[(ctx[:, : k - 1] == query).all(1)][0, k - 1]  # ngram, cond


@pytest.mark.parametrize("name", sorted(TASKS))
def test_sample_shapes_and_in_context_rule(name):
    spec = TASKS[name]
    task = bl.blocklist_task(spec, batch_size=64)
    assert isinstance(task, Task) and task.readout is None
    tp = task.params_with_defaults({"f_v": 0.0})
    b = jax.jit(task.sample)(jax.random.key(1), tp)
    n, t = 64, spec.seq_len
    assert b["tokens"].shape == (n, t) and b["tokens"].dtype == jnp.int32
    assert b["labels"].shape == (n, t) and b["weights"].shape == (n, t)
    np.testing.assert_array_equal(b["weights"].sum(1), 1.0)
    np.testing.assert_array_equal(b["labels"][np.arange(n), b["query_pos"]], b["target"])
    assert int(b["tokens"].max()) < task.vocab_size and int(b["target"].max()) < task.vocab_out
    for seq, q, y in zip(np.asarray(b["tokens"]), np.asarray(b["query_pos"]),
                         np.asarray(b["target"])):
        assert _oracle(spec, _unroll(seq, q, spec)) == y
    if spec.offsets == "linear_gap":
        assert (np.asarray(b["tokens"]) == spec.pad).sum(1).tolist() == [spec.n_pad] * n
        assert (np.asarray(b["query_pos"]) == t - 1).all()
    assert set(task.eval_pools) == {"train", "icl_rare", "icl_common", "iwl"}


def test_knobs_are_traced_and_vmappable():
    spec = TASKS["recall"]
    f_r = jnp.array([0.0, 0.5, 1.0])

    def frac_rare(fr):
        b = bl.sample(spec, jax.random.key(0), {"f_r": fr, "f_v": jnp.float32(0.3)}, 4096)
        common = b["is_rare"] == 0
        q = jnp.take_along_axis(b["tokens"], b["query_pos"][:, None], 1)[:, 0]
        c = jnp.asarray(spec.association())
        fixed = jnp.sum(common * (b["target"] == c[q])) / jnp.maximum(jnp.sum(common), 1)
        return b["is_rare"].mean(), fixed

    rare, fixed = jax.jit(jax.vmap(frac_rare))(f_r)
    np.testing.assert_allclose(rare, [0.0, 0.5, 1.0], atol=0.03)
    np.testing.assert_allclose(fixed[:2], 0.7, atol=0.03)  # 1 - f_v of common partners kept


def test_iwl_pool_removes_the_answer_from_the_context():
    spec = TASKS["recall"]
    task = bl.blocklist_task(spec)
    b = task.eval_pools["iwl"](jax.random.key(0), task.params_with_defaults())
    tok, y = np.asarray(b["tokens"]), np.asarray(b["target"])
    assert not any(y_ in row for row, y_ in zip(tok, y))
    assert (np.asarray(b["is_rare"]) == 0).all()


def _distribution(spec, params=None, relabel=None, roll=0):
    sup = bl.enumerate_support(spec)
    p = np.asarray(sup.probs({k: jnp.asarray(v) for k, v in
                              {**spec.default_params(), **(params or {})}.items()}))
    tok, y, q = (np.asarray(sup.batch[k]) for k in ("tokens", "target", "query_pos"))
    if relabel is not None:
        tok, y = relabel[tok], relabel[y]
    if roll:
        tok, q = np.roll(tok, roll, axis=1), (q + roll) % tok.shape[1]
    dist = defaultdict(float)
    for row, yy, qq, pp in zip(tok, y, q, p):
        dist[(tuple(row), int(yy), int(qq))] += pp
    return dist


def _same(d1, d2, tol=1e-6):
    keys = set(d1) | set(d2)
    return max(abs(d1.get(k, 0.0) - d2.get(k, 0.0)) for k in keys) < tol


def test_enumeration_is_a_distribution_and_matches_the_sampler():
    sup = bl.enumerate_support(TINY)
    assert bl.support_size(TINY) == 122880 and sup.size < 122880
    p = sup.probs({"f_r": jnp.float32(0.4), "f_v": jnp.float32(0.2)})
    np.testing.assert_allclose(float(p.sum()), 1.0, rtol=1e-6)
    # a marginal: P(is_rare, query position) exactly vs from 40k samples
    exact = np.zeros((2, TINY.seq_len))
    np.add.at(exact, (np.asarray(sup.batch["is_rare"]), np.asarray(sup.batch["query_pos"])),
              np.asarray(p))
    b = bl.sample(TINY, jax.random.key(0), TINY.default_params(), 40000)
    emp = np.zeros_like(exact)
    np.add.at(emp, (np.asarray(b["is_rare"]), np.asarray(b["query_pos"])), 1.0 / 40000)
    np.testing.assert_allclose(emp, exact, atol=0.01)


def test_distribution_invariant_under_association_preserving_relabelling():
    base = _distribution(TINY)
    for seed in range(3):
        assert _same(base, _distribution(TINY, relabel=bl.relabel(TINY, seed)))
    # and under the cyclic position shift
    assert _same(base, _distribution(TINY, roll=1))
    # power check: a relabelling that breaks the association is *not* a symmetry
    g = np.arange(TINY.vocab_in)
    g[[1, 2]] = [2, 1]  # swaps members of two different pairs
    assert not _same(base, _distribution(TINY, relabel=g))


def test_broken_symmetries_are_detected():
    fixed = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2,
                             offsets="fixed")
    d = _distribution(fixed)
    assert not _same(d, _distribution(fixed, roll=1))
    assert _same(d, _distribution(fixed, relabel=bl.relabel(fixed, 0)))
    biased = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2, biased=True)
    d = _distribution(biased, {"key_bias": 0.5})
    g = np.arange(biased.vocab_in)
    g[:4] = [2, 3, 0, 1]  # swaps the two pairs: association-preserving, but moves cycle 0
    assert not _same(d, _distribution(biased, {"key_bias": 0.5}, relabel=g))
    assert _same(_distribution(biased), _distribution(biased, relabel=g))  # key_bias = 0


def test_rare_tokens_carry_no_identity():
    # exact: given a rare query token, the target is uniform over the other rare tokens
    sup = bl.enumerate_support(TINY)
    p = np.asarray(sup.probs(TINY.default_params()))
    tok, y, q = (np.asarray(sup.batch[k]) for k in ("tokens", "target", "query_pos"))
    qtok = tok[np.arange(len(q)), q]
    rare = TINY.rare_ids
    joint = np.zeros((TINY.n_tokens, TINY.n_tokens))
    np.add.at(joint, (qtok, y), p)
    block = joint[np.ix_(rare, rare)]
    cond = block / block.sum(1, keepdims=True)
    want = (1 - np.eye(len(rare))) / (len(rare) - 1)
    np.testing.assert_allclose(cond, want, atol=1e-6)
    assert joint[np.ix_(rare, np.arange(TINY.n_common))].sum() == 0  # rare -> rare only
    # common tokens do carry identity: C(x) is the most likely target
    c = TINY.association()
    common = np.arange(TINY.n_common)
    assert (joint[common].argmax(1) == c[common]).all()
    # Monte Carlo: a rare token's targets are spread over the pool across sequences
    spec = TASKS["recall"]
    b = bl.sample(spec, jax.random.key(3), {"f_r": 1.0, "f_v": 0.0}, 20000)
    qt = np.asarray(b["tokens"])[np.arange(20000), np.asarray(b["query_pos"])]
    yt = np.asarray(b["target"])[qt == spec.rare_ids[0]]
    counts = np.bincount(yt - spec.n_common, minlength=spec.n_rare)[1:]
    assert counts.min() > 0.6 * counts.mean()


def test_spec_validation_messages():
    with pytest.raises(ValueError, match="context slots"):
        bl.BlockListSpec(n_blocks=2, burstiness=2)
    with pytest.raises(ValueError, match="n_rare"):
        bl.BlockListSpec(n_rare=2, n_blocks=4)
    with pytest.raises(ValueError, match="allowed"):
        bl.BlockListSpec(kind="nope")
    with pytest.raises(ValueError, match="block_len 3"):
        bl.BlockListSpec(kind="cond", n_cond=2, block_len=2)
    with pytest.raises(ValueError, match="khop"):
        bl.BlockListSpec(kind="recall", hops=2)
    assert bl.BlockListSpec(kind="cond", n_cond=2).block_len == 3


def test_symmetric_support_has_the_same_orbits_and_masses():
    """Pinning the group-element draws (rotation, cycle, orientation, rare-token choice) gives
    the orbit quotient of the full enumeration: the same sequences with the same probabilities
    at any (f_r, f_v), from far fewer combinations."""
    from mechjax.tasks.blocklist.population import SYMMETRY_DRAWS, symmetric_support
    for spec in (TINY,):
        full = bl.enumerate_support(spec).orbit_quotient(spec)
        sym = symmetric_support(spec)
        assert bl.support_size(spec, SYMMETRY_DRAWS) < bl.support_size(spec) / 100
        tp = {"f_r": jnp.float32(0.3), "f_v": jnp.float32(0.4)}

        def table(s):
            key = np.concatenate([np.asarray(s.batch["tokens"]),
                                  np.asarray(s.batch["target"])[:, None], s.param_draws], 1)
            order = np.lexsort(key.T[::-1])
            return key[order], np.asarray(s.probs(tp))[order]

        (ka, pa), (kb, pb) = table(full), table(sym)
        np.testing.assert_array_equal(ka, kb)
        np.testing.assert_allclose(pa, pb, rtol=1e-6)
