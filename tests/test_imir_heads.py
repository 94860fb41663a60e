"""Head-level analysis against coordinate-level detection (mechjax.analysis.imir.detection.heads):
on a
planted model with two redundant induction heads, mean-ablating either one alone is harmless
(head-level analysis calls both unimportant), the previous-token head is important, and the
detector keeps one of the two heads, whose helper is then reported as invisible to head-level
analysis."""
import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.detection import circuits as cc
from mechjax.analysis.imir.detection import detector as dt
from mechjax.analysis.imir.detection import heads as hd
from mechjax.analysis.imir.manifold import project as proj
from mechjax.tasks import blocklist as bl

TASK = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3)
FRAME = ib.make_frame(ib.TokenStructure.from_spec(TASK), TASK.seq_len, n_layers=2, n_heads=2)
BASIS = ib.make_basis(FRAME)
T = TASK.seq_len
TAU = 0.1
BIG, READ = 30.0, 10.0   # attention scores that saturate the softmax; a copy logit


def redundant_induction():
    """Layer 0 head 0 attends to the previous token; layer-1 heads 0 and 1 both match the query
    against it (each with the helper that stops it from reading the slot after the query) and
    both are copied out: either induction head alone solves the task."""
    plant = {"L0H0 I|M|I": BIG}
    for h in (0, 1):
        plant.update({f"L1H{h} I|I_rare|O1.0": BIG, f"L1H{h} I|M^{T - 1}|I": -BIG,
                      f"U O2.{h}|I_rare": READ})
    return plant


def planted_params(plant, noise, seed=0):
    theta = noise * np.asarray(jax.random.normal(jax.random.key(seed), (BASIS.size,)))
    for name, value in plant.items():
        theta[BASIS.index(name)] = value
    return {**ib.fixed_params(FRAME), **proj.weights(BASIS, jnp.asarray(theta, jnp.float32))}


def test_redundant_heads_hide_the_kept_helper_from_head_ablation():
    params = planted_params(redundant_induction(), noise=0.01)
    tp = {"f_r": 1.0, "f_v": 0.0}
    batch = bl.sample(TASK, jax.random.key(0), tp, 256)
    eval_batch = bl.sample(TASK, jax.random.key(1), tp, 256)
    ablation = hd.head_ablation(params, ib.imir_config(FRAME), eval_batch, TAU)
    assert ablation.acc == 1.0
    # the previous-token head carries both routes; each induction head is redundant
    assert ablation.important[0, 0] and ablation.acc_drop[0, 0] > 0.5
    assert not ablation.important[1].any() and np.all(ablation.acc_drop[1] == 0.0)
    assert not ablation.important[0, 1]           # a head with only noise weights
    det = dt.detect(params, BASIS, batch, TAU, eval_batch=eval_batch, exact_max=16)
    kept_heads = {u.owner for u in det.units if u.owner is not None and u.layer == 1}
    assert len(kept_heads) == 1                   # the detector keeps one of the two
    (h,) = kept_heads
    rep = dt.against_heads(params, det, BASIS, eval_batch, TAU)
    assert rep["helpers_in_unimportant_heads"] == [f"L1H{h[1]} I|M^{T - 1}|I"]
    assert f"L1H{h[1]} I|I_t|O1.0" in rep["canonical_in_unimportant_heads"]
    assert rep["per_head"]["L0H0"]["important"] and rep["n_heads_important"] == 1


def test_blind_spots_follow_the_heads_a_unit_lives_in():
    """A score unit lives in its own head, a readout unit in every head on its path; a
    direct-path readout has no head, so head ablation never sees it."""
    names = ["L0H0 I|M|I", "L1H1 I|M^2|I", "U O1.0*O2.1|I_rare", "U I|C"]
    units = cc.units(BASIS, [BASIS.index(n) for n in names])
    kinds = {u.name: "helper" for u in units}
    important = np.array([[True, False], [False, False]])
    ablation = hd.HeadAblation(0.0, 1.0, np.where(important, 1.0, 0.0), np.ones((2, 2)), TAU)
    blind = hd.blind_spots(units, kinds, ablation)
    assert blind["helpers"] == ["L1H1 I|M^2|I", "U I|C"]
    assert [u.name for u in units if hd.unit_heads(u) == [(0, 0), (1, 1)]] == \
        ["U O1.0*O2.1|I_t"]
