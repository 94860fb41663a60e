"""Units named by what they compute (mechjax.analysis.imir.detection.roles via circuits.classify /
describe / circuits): planted coordinate sets of every form (the induction head, the mirrored
circuit, composite key and readout paths, multi-head circuits, 2-hop chains) are recovered
exactly, and near misses (a shift the wrong way, a relay that moves the query, a causal mask that
turns a next-token head into a far look-back) are helpers. Pure numpy on unit names: no model."""
import functools

import pytest

from mechjax.analysis.imir.detection import circuits as cc
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.tasks import blocklist as bl


@functools.lru_cache(maxsize=None)
def basis_of(n_layers=2, n_heads=1, khop=False, positions="all"):
    spec = (bl.BlockListSpec(kind="khop", hops=2, n_common=6, n_rare=5, n_blocks=4) if khop
            else bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3))
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len, n_layers, n_heads)
    # "all": every shift M^1 .. M^(T-1); "literal": the paper's P = {I_p, M}
    return ib.make_basis(frame, position_mode=positions, block_len=2)


def named(basis, names, causal=False):
    us = cc.units(basis, [basis.index(n) for n in names])
    t = basis.frame.n_pos
    return (cc.classify(us, t, causal), cc.describe(us, t, causal),
            {c.readout: c for c in cc.circuits(basis, us, causal)[0]})


def test_induction_head_shift_on_the_key_path():
    kinds, what, circs = named(basis_of(), ["L0H0 I|M|I", "L1H0 I|I_rare|O1", "U O2|I_rare",
                                            "U I|C"])
    assert kinds == {"L0H0 I|M|I": "shift", "L1H0 I|I_t|O1": "match", "U O2|I_t": "copy",
                     "U I|C": "iwl"}
    assert what == {"L0H0 I|M|I": "offset -1 (back)",
                    "L1H0 I|I_t|O1": "hop 1 match, shift on the key path",
                    "U O2|I_t": "1-hop readout through O2 (1 head)",
                    "U I|C": "in-weights association"}
    assert circs["O2"].hops == 1 and circs["I"].hops == 0


def test_previous_token_head_with_a_same_token_bias_is_still_the_shift():
    """What trained causal recall models keep (seeds 1-3 of the cpu run): the previous-token
    head also scores same-token keys (``L0H0 I|I_t|I``). It stays a position head (the bias is
    a helper) and alpha, beta, gamma are named; a head whose token score compares different
    offsets (a look-up) is not turned into a shift."""
    b = basis_of(positions="literal")
    names = ["L0H0 I|M|I", "L0H0 I|I_rare|I", "L1H0 I|I_rare|O1", "U O2|I_rare"]
    kinds, what, _ = named(b, names, causal=True)
    assert kinds == {"L0H0 I|M|I": "shift", "L0H0 I|I_t|I": "helper", "L1H0 I|I_t|O1": "match",
                     "U O2|I_t": "copy"}
    assert what["L0H0 I|I_t|I"] == "same-token bias of a position head"
    # layer 1: a shift plus a look-up against layer 0's output (a != b): still the look-up
    names = ["L0H0 I|M|I", "L1H0 I|M|I", "L1H0 I|I_rare|O1", "U O2|I_rare"]
    kinds, _, _ = named(b, names, causal=True)
    assert kinds["L1H0 I|I_t|O1"] == "match" and kinds["L1H0 I|M|I"] == "helper"


def test_mirrored_circuit_next_token_head_self_match_readout_through_two_heads():
    b = basis_of()
    t = b.frame.n_pos
    names = [f"L0H0 I|M^{t - 1}|I", "L1H0 I|I_rare|I", "U O1*O2|I_rare"]
    kinds, what, circs = named(b, names)
    assert kinds == {f"L0H0 I|M^{t - 1}|I": "shift", "L1H0 I|I_t|I": "match",
                     "U O1*O2|I_t": "copy"}
    assert what[f"L0H0 I|M^{t - 1}|I"] == "offset +1 (forward)"
    assert what["L1H0 I|I_t|I"] == "hop 1 match, shift on the value path"
    assert what["U O1*O2|I_t"] == "1-hop readout through O1*O2 (2 heads)"
    assert set(circs["O1*O2"].units) == {"U O1*O2|I_t", "L1H0 I|I_t|I",
                                          f"L0H0 I|M^{t - 1}|I"}
    # causal: M^(T-1) is T-1 back, so the readout gets a token *before* the match: no circuit
    kinds, what, _ = named(b, names, causal=True)
    assert set(kinds.values()) == {"helper"}
    assert what[f"L0H0 I|M^{t - 1}|I"] == f"offset {1 - t:+d} (back)"
    # the same self-match read straight through O2 retrieves the matched token itself: helper
    kinds, _, _ = named(b, [f"L0H0 I|M^{t - 1}|I", "L1H0 I|I_rare|I", "U O2|I_rare"])
    assert set(kinds.values()) == {"helper"}


def test_multi_head_circuits_share_one_previous_token_head():
    b = basis_of(n_heads=2, positions="literal")
    names = ["L0H1 I|M|I", "L0H0 I|I_p|I",                   # prev head; a self head unread
             "L1H0 I|I_rare|O1.1", "L1H1 I|I_common|O1.1",   # a match head per token class
             "U O2.0|I_rare", "U O2.1|I_common"]
    kinds, what, circs = named(b, names)
    assert kinds == {"L0H1 I|M|I": "shift", "L0H0 I|I_p|I": "helper",
                     "L1H0 I|I_t|O1.1": "match", "L1H1 I|I_t|O1.1": "match",
                     "U O2.0|I_t": "copy", "U O2.1|I_t": "copy"}
    assert what["L0H0 I|I_p|I"] == "offset +0 (self)"
    assert set(circs) == {"O2.0", "O2.1"}
    for h in (0, 1):
        assert set(circs[f"O2.{h}"].units) == {f"U O2.{h}|I_t", f"L1H{h} I|I_t|O1.1",
                                                "L0H1 I|M|I"}


@pytest.mark.parametrize("relay, canonical", [("I_p", True), ("M", False)])
def test_readout_through_a_composition_of_heads(relay, canonical):
    # the look-up at layer 1 reaches the readout through layer 2's head: an offset-0 relay keeps
    # the query in place (a 2-head readout), an offset -1 one copies the look-up of q-1
    b = basis_of(n_layers=3, positions="literal")
    names = ["L0H0 I|M|I", "L1H0 I|I_rare|O1", f"L2H0 I|{relay}|I", "U O2*O3|I_rare"]
    kinds, what, circs = named(b, names)
    if canonical:
        assert kinds == {"L0H0 I|M|I": "shift", "L1H0 I|I_t|O1": "match",
                         "L2H0 I|I_p|I": "shift", "U O2*O3|I_t": "copy"}
        assert what["U O2*O3|I_t"] == "1-hop readout through O2*O3 (2 heads)"
        assert circs["O2*O3"].hops == 1
    else:
        assert set(kinds.values()) == {"helper"}


def test_composite_key_path_and_net_offsets():
    # two stacked previous-token heads: the key path O1*O2 carries the token two back
    b = basis_of(n_layers=3, positions="literal")
    kinds, what, _ = named(b, ["L0H0 I|M|I", "L1H0 I|M|I", "L1H0 O1|I_p|O1",
                               "L2H0 I|I_rare|O1*O2", "U O3|I_rare"])
    assert kinds == {"L0H0 I|M|I": "shift", "L1H0 I|M|I": "shift", "L1H0 O1|I_p|O1": "helper",
                     "L2H0 I|I_t|O1*O2": "match", "U O3|I_t": "copy"}
    assert what["L1H0 O1|I_p|O1"] == "offset +0 (self)"   # both operands one back: net 0
    # a second nonzero offset on the same head leaves it no single shift: nothing canonical
    kinds, _, _ = named(basis_of(n_layers=3), ["L0H0 I|M|I", "L0H0 I|M^2|I", "L1H0 I|I_rare|O1",
                                               "U O2|I_rare"])
    assert set(kinds.values()) == {"helper"}


@pytest.mark.parametrize("mirrored_first_hop", [False, True])
def test_two_hop_composition_is_one_circuit(mirrored_first_hop):
    b = basis_of(n_layers=5, khop=True)
    t = b.frame.n_pos
    if mirrored_first_hop:       # hop 1: next-token head, self-match, result on O1*O2
        hop1, q2 = [f"L0H0 I|M^{t - 1}|I", "L1H0 I|I_rare|I"], "O1*O2"
        want1 = {f"L0H0 I|M^{t - 1}|I": "shift", "L1H0 I|I_t|I": "match"}
    else:                        # hop 1: the induction head, result on O2
        hop1, q2 = ["L0H0 I|M|I", "L1H0 I|I_rare|O1"], "O2"
        want1 = {"L0H0 I|M|I": "shift", "L1H0 I|I_t|O1": "match"}
    names = [*hop1, "L2H0 I|M|I", f"L3H0 {q2}|I_rare|O3", "U O4|I_rare", "L4H0 I|M^2|I"]
    kinds, what, circs = named(b, names)
    assert kinds == {**want1, "L2H0 I|M|I": "shift", f"L3H0 {q2}|I_t|O3": "match",
                     "U O4|I_t": "copy", "L4H0 I|M^2|I": "helper"}
    assert what[f"L3H0 {q2}|I_t|O3"] == "hop 2 match, shift on the key path"
    assert what["U O4|I_t"] == "2-hop readout through O4 (1 head)"
    (circ,) = circs.values()
    assert circ.readout == "O4" and circ.hops == 2
    assert set(circ.units) == set(kinds) - {"L4H0 I|M^2|I"}
    # without hop 1's look-up the second match has nothing to chain: all helpers
    kinds, _, _ = named(b, [n for n in names if n not in hop1[1:]])
    assert set(kinds.values()) == {"helper"}


def _run_dir(tmp_path, kept, legacy=False):
    import json

    from experiments.imir_detect.configs import tiny
    cfg = tiny.get_config().to_dict()
    if legacy:                   # a run from before the causal/offsets/positions keys
        for k in ("causal", "offsets", "positions"):
            del cfg["recall_icl"][k]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "summary.json").write_text(json.dumps(
        {"recall_icl": {"seeds": [0], "per_seed": [{"kept": kept}]}}))
    return str(tmp_path)


def test_reclassify_names_a_saved_run_without_recomputing(tmp_path):
    from experiments.imir_detect import reclassify as rc
    from mechjax.models.config import ConfigError
    kept = ["L0H0 I|M|I", "L1H0 I|I_rare|O1", "L1H0 I|I_common|O1", "U O2|I_rare"]
    (r,) = rc.reclassify(_run_dir(tmp_path, kept))["recall_icl"].values()
    assert r["units"] == {"L0H0 I|M|I": "shift", "L1H0 I|I_t|O1": "match", "U O2|I_t": "copy"}
    assert (r["n_canonical"], r["n_helpers"], r["max_hops"]) == (3, 0, 1)
    assert (tmp_path / "reclassified.json").exists()
    # the legacy model (non-causal ring, every shift): the mirrored circuit is named
    t = 5                        # the tiny spec's sequence length
    kept = [f"L0H0 I|M^{t - 1}|I", "L1H0 I|I_rare|I", "U O1*O2|I_rare"]
    (r,) = rc.reclassify(_run_dir(tmp_path, kept, legacy=True))["recall_icl"].values()
    assert set(r["units"].values()) == {"shift", "match", "copy"}
    # the causal paper basis has no M^4: the run is refused in one line
    with pytest.raises(ConfigError, match=r"^kept coordinate 'L0H0 I\|M\^4\|I' is not in"):
        rc.reclassify(_run_dir(tmp_path, kept))
