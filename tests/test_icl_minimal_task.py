"""The Reddy minimal ICL task: planted statistics (burstiness, Zipf, noise, the p_B / p_C
mixtures) and probe definitions (icl, iwl, label swap)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.models.config import ConfigError
from mechjax.tasks import icl_minimal as icl

TASK = icl.IclSpec(d=16, n_ctx=8, n_labels=8, k_max=64, k=16, burstiness=2, noise=0.1)
BATCH = 4000


@jax.jit
def _train_over_b(key, bs):
    """One compiled program: a training batch for every B in ``bs`` (B traced)."""
    def one(b):
        params = dict(TASK.default_params(), B=b)
        return icl.sample(key, TASK, params, BATCH)
    return jax.vmap(one)(bs)


def test_query_class_count_is_burstiness_plus_chance():
    bs = jnp.array([0.0, 2.0, 4.0, 8.0])
    out = _train_over_b(jax.random.PRNGKey(0), bs)
    same = np.asarray(out["ctx_classes"] == out["query_class"][..., None]).sum(-1)  # [nb, b]
    for i, b in enumerate([0, 2, 4, 8]):
        # The query's B items plus chance hits: each of the other N/B classes (N for B = 0) is
        # the query's class with probability 1/K = 1/16 and brings max(B, 1) items.
        expect = b + (8 - b) / 16
        assert same[i].min() >= b
        sd = np.sqrt(max(b, 1) * (8 - b) / 16 / BATCH)
        assert abs(same[i].mean() - expect) < 4 * sd + 1e-9


def test_bursty_context_has_every_class_b_times():
    # Reddy's layout: N/B classes of B items each, so every context label appears a multiple of
    # B times and the most frequent label is not the answer (no label-counting shortcut).
    out = _train_over_b(jax.random.PRNGKey(5), jnp.array([2.0, 4.0]))
    for i, b in enumerate([2, 4]):
        cls = np.asarray(out["ctx_classes"][i])
        for row in cls[:500]:
            assert np.all(np.unique(row, return_counts=True)[1] % b == 0)
        distinct = np.mean([len(np.unique(r)) for r in cls])
        # N/B uniform draws over K = 16 classes (the query's among them): 16 (1 - (15/16)^(N/B))
        assert abs(distinct - 16 * (1 - (15 / 16) ** (8 // b))) < 0.05


def test_zipf_frequencies_match():
    params = dict(TASK.default_params(), alpha=1.0, K=8.0)
    out = jax.jit(lambda k: icl.sample(k, TASK, params, 20000))(jax.random.PRNGKey(1))
    counts = np.bincount(np.asarray(out["query_class"]), minlength=TASK.k_max)
    p = 1.0 / np.arange(1, 9)
    p /= p.sum()
    assert counts[8:].sum() == 0
    chi2 = ((counts[:8] - 20000 * p) ** 2 / (20000 * p)).sum()
    assert chi2 < 24.3  # 7 dof, p = 0.001


def test_noise_and_labels():
    params = TASK.default_params()
    out = icl.sample(jax.random.PRNGKey(2), TASK, params, 500)
    means, lvec = icl.tables(TASK, params)
    xq = np.asarray(out["inputs"][:, -1])
    # Within-class noise 0.1: the query's nearest class mean is its own class.
    nearest = np.argmax(xq @ np.asarray(means[:16]).T, axis=1)
    assert (nearest == np.asarray(out["query_class"])).mean() > 0.99
    np.testing.assert_array_equal(out["labels"], out["query_class"] % 8)
    np.testing.assert_allclose(out["inputs"][:, 1:-1:2], lvec[out["ctx_labels"]], atol=1e-6)


def test_iwl_probe_has_no_query_class_in_context():
    out = icl.sample(jax.random.PRNGKey(3), TASK, TASK.default_params(), 2000, kind="iwl")
    assert not np.any(np.asarray(out["ctx_classes"] == out["query_class"][:, None]))
    np.testing.assert_array_equal(out["labels"], out["query_class"] % 8)


def test_icl_probe_novel_classes_labels_in_context():
    out = icl.sample(jax.random.PRNGKey(4), TASK, TASK.default_params(), 2000, kind="icl")
    assert np.all(np.asarray(out["query_class"]) < 0)  # novel: never a training class
    hits = np.asarray(out["ctx_labels"] == out["labels"][:, None]).sum(-1)
    np.testing.assert_array_equal(hits, 4)  # the query's label given by N/2 context pairs
    x = np.asarray(out["inputs"])
    ctx, xq = x[:, 0:-1:2], x[:, -1]
    same = np.asarray(out["ctx_classes"] == out["query_class"][:, None])
    sim = np.einsum("bnd,bd->bn", ctx, xq)
    assert (np.where(same, sim, -9).max(1) > np.where(~same, sim, -9).max(1)).mean() > 0.99


@jax.jit
def _train_over_mix(key, p_b, p_c):
    """A training batch for every (p_B, p_C) pair (traced), B = 2."""
    def one(pb, pc):
        return icl.sample(key, TASK, dict(TASK.default_params(), p_B=pb, p_C=pc), BATCH)
    return jax.vmap(one)(p_b, p_c)


def test_bursty_fraction_p_b_mixes_bursty_and_iid_sequences():
    p_b = jnp.array([1.0, 0.5, 0.0])
    out = _train_over_mix(jax.random.PRNGKey(6), p_b, jnp.zeros(3))
    same = np.asarray(out["ctx_classes"] == out["query_class"][..., None]).sum(-1)
    for i, pb in enumerate([1.0, 0.5, 0.0]):
        # bursty: B = 2 items plus chance hits from the 3 other classes (2 items each, 1/16);
        # iid: each of the 8 context items is the query's class with probability 1/16
        expect = pb * (2 + 6 / 16) + (1 - pb) * 8 / 16
        assert abs(same[i].mean() - expect) < 0.05
    assert same[0].min() >= 2 and (same[2] == 0).mean() > 0.5  # iid: no copy in most sequences


def test_novel_fraction_p_c_gives_context_only_classes():
    out = _train_over_mix(jax.random.PRNGKey(7), jnp.array([1.0, 1.0]), jnp.array([1.0, 0.25]))
    novel = np.asarray(out["query_class"]) < 0
    assert novel[0].all() and abs(novel[1].mean() - 0.25) < 0.03
    cls, lab = np.asarray(out["ctx_classes"][0]), np.asarray(out["ctx_labels"][0])
    q, y = np.asarray(out["query_class"][0]), np.asarray(out["labels"][0])
    for row_c, row_l, qc, yl in zip(cls[:500], lab[:500], q[:500], y[:500]):
        assert np.all(row_c < 0)                                    # every item novel
        assert np.all(np.unique(row_c, return_counts=True)[1] == 2)  # bursty, B = 2
        assert np.all(row_l[row_c == qc] == yl)  # the query's label is its class's context label
    # the labels are drawn per sequence: they follow no class index
    assert len(np.unique(y)) == TASK.n_labels


def test_swap_probe_shows_each_training_class_with_the_next_label():
    out = icl.sample(jax.random.PRNGKey(8), TASK, TASK.default_params(), 2000, kind="swap")
    q, y = np.asarray(out["query_class"]), np.asarray(out["labels"])
    assert np.all((q >= 0) & (q < 16))  # training classes
    np.testing.assert_array_equal(y, (q % 8 + 1) % 8)  # never the label the weights learn
    cls, lab = np.asarray(out["ctx_classes"]), np.asarray(out["ctx_labels"])
    np.testing.assert_array_equal(lab, (cls % 8 + 1) % 8)
    assert np.all((cls == q[:, None]).sum(-1) == 4)  # the query's class N/2 times, the other N/2
    assert np.all([len(np.unique(r)) == 2 for r in cls])


@pytest.mark.parametrize("kw, msg", [
    (dict(p_bursty=1.5), r"p_B=1.5: a fraction"), (dict(p_novel=-0.1), r"p_C=-0.1"),
    (dict(n_labels=4), "L=4 < N=8"), (dict(burstiness=9), "B=9 > N=8"),
    (dict(burstiness=3), "B=3: must be 0 or divide N=8"),
    (dict(zipf=-0.5), "alpha=-0.5"), (dict(d=0), "D=0")])
def test_bad_values_one_line_errors(kw, msg):
    with pytest.raises(ConfigError, match=msg) as e:
        icl.IclSpec(**dict(dict(d=16, n_labels=8, k_max=64, k=16), **kw))
    assert "\n" not in str(e.value)
