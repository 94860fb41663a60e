"""Assign-and-Add generator: every batch is decoded by an independent numpy parser and checked
against the paper's task and partitions; reference checkpoints pin the generator to the authors'."""
from __future__ import annotations

import json
import os
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.tasks import assign_add as aa
from conftest import PYTHON, REPO, run_module_env


# ---- an independent decoder ---------------------------------------------------------------------
def decode(row) -> dict:
    """Parse one sequence by the task's rules; raise AssertionError on any violation."""
    row = [int(t) for t in row]
    assert len(row) == 16
    prefix, query = row[:12], row[12:]
    bindings, order, i = {}, [], 0
    while i < 12:
        tok = prefix[i]
        if tok == aa.PAD:
            i += 1
            continue
        assert aa.VAR0 <= tok < aa.VAR0 + 12, f"prefix token {tok} at {i} is not PAD or variable"
        assert i + 1 < 12 and 0 <= prefix[i + 1] < aa.P, "variable not followed by its value"
        assert tok not in bindings, "variable assigned twice"
        bindings[tok] = prefix[i + 1]
        order.append(tok)
        i += 2
    assert query[0] == aa.PLUS and query[3] == aa.EQ
    ops = query[1:3]
    is_var = [t >= aa.VAR0 for t in ops]
    for t, v in zip(ops, is_var):
        assert v or 0 <= t < aa.P
        assert not v or t in bindings, "query variable not assigned"
    vals = [bindings[t] if v else t for t, v in zip(ops, is_var)]
    kind = int(is_var[0]) + 2 * int(is_var[1])
    if kind == aa.TWO_VAR:
        assert ops[0] != ops[1]
    return {"kind": kind, "pair": tuple(vals), "label": (vals[0] + vals[1]) % aa.P,
            "vars": [t - aa.VAR0 if v else None for t, v in zip(ops, is_var)],
            "n_assign": len(order), "bindings": bindings}


def decode_batch(batch) -> list[dict]:
    rows = [decode(r) for r in np.asarray(batch["tokens"])]
    labels = np.asarray(batch["labels"])
    assert [r["label"] for r in rows] == labels.tolist()
    return rows


HELDOUT_JSON = os.path.join(os.path.dirname(REPO), "shared", "reference", "assign_add",
                            "heldout_pairs.json")


@pytest.fixture(scope="module")
def split():
    return aa.authors_split()


@pytest.fixture(scope="module")
def task():
    return aa.make_task(4096)


# ---- splits --------------------------------------------------------------------------------------
def test_authors_split_is_the_released_heldout_list(split):
    held = split.heldout_pairs(0.7)
    assert held.shape == (1045, 2)
    assert int(split.n_train(0.7)) == 2436
    if os.path.exists(HELDOUT_JSON):
        released = aa.load_heldout_pairs(HELDOUT_JSON)
        assert sorted(map(tuple, released.tolist())) == sorted(map(tuple, held.tolist()))
        fixed = aa.split_from_heldout(released)
        np.testing.assert_array_equal(np.asarray(fixed.train_mask(0.1)),
                                      np.asarray(split.train_mask(0.7)))  # f ignored when fixed


def test_split_errors():
    with pytest.raises(ValueError, match="duplicates"):
        aa.split_from_heldout([[1, 2], [1, 2]])
    with pytest.raises(ValueError, match="lie in"):
        aa.split_from_heldout([[1, 59]])
    with pytest.raises(FileNotFoundError):
        aa.load_heldout_pairs("/nonexistent/heldout.json")


def test_operand_pair_counts():
    r = aa.Restriction()
    assert [len(r.two_var_pairs(k)) for k in (0, 1, 2)] == [92, 36, 4]
    assert {tuple(p) for p in r.two_var_pairs(2)} == {(10, 0), (10, 1), (11, 0), (11, 1)}


# ---- training batches ----------------------------------------------------------------------------
def test_training_batch_obeys_every_rule(task, split):
    batch = jax.jit(task.sample)(jax.random.PRNGKey(0), task.params_with_defaults())
    assert batch["tokens"].shape == (4096, 16) and batch["tokens"].dtype == jnp.int32
    rows = decode_batch(batch)
    train = np.asarray(split.train_mask(0.7))
    r = aa.Restriction()
    kinds = np.zeros(4)
    for row in rows:
        assert train[row["pair"]], f"held-out pair {row['pair']} in a training query"
        left, right = row["vars"]
        assert left is None or left not in r.left_forbidden
        assert right is None or right not in r.right_forbidden
        assert (2 if row["kind"] == aa.TWO_VAR else 1) <= row["n_assign"] <= 6
        kinds[row["kind"]] += 1
    expected = np.asarray(aa.TRAIN_ROWS) / sum(aa.TRAIN_ROWS)
    assert np.all(np.abs(kinds / len(rows) - expected) < 4 * np.sqrt(expected / len(rows)))
    # distractor structure: n is spread over its range and PADs fill every gap position
    n_assign = np.bincount([row["n_assign"] for row in rows], minlength=7)
    assert np.all(n_assign[1:] > 0)


def test_sweep_over_f_and_r_compiles_once(task, split):
    """f and r are traced: one compilation serves a vmapped grid, and each row respects its f."""
    traces = []

    def sample(key, f, r):
        traces.append(1)
        return task.sample(key, {"f": f, "r": r})

    fs = jnp.asarray([0.1, 0.3, 0.7, 0.95, 0.1, 0.7])
    rs = jnp.asarray([1.0, 1.0, 1.0, 1.0, 0.0, 0.2])
    fn = jax.jit(jax.vmap(sample, in_axes=(None, 0, 0)))
    batches = fn(jax.random.PRNGKey(1), fs, rs)
    fn(jax.random.PRNGKey(2), fs * 0.9, rs)
    assert len(traces) == 1
    ranking_of = np.empty(aa.N_PAIRS, np.int64)
    ranking_of[split.ranking] = np.arange(aa.N_PAIRS)
    for i, f in enumerate(np.asarray(fs)):
        tokens = np.asarray(batches["tokens"][i])
        rows = [decode(t) for t in tokens]
        ranks = np.asarray([ranking_of[r["pair"][0] * aa.P + r["pair"][1]] for r in rows])
        assert ranks.max() < int(np.floor(f * aa.N_PAIRS)), f
        if f <= 0.1:  # only 348 training pairs: the batch must cover many of them
            assert len(np.unique(ranks)) > 200
        share = np.mean([r["kind"] == aa.TWO_VAR for r in rows])
        # each 2-var row kept with probability r, a dropped one redrawn: 10 r / (32 + 10 r)
        expected = 10 * float(rs[i]) / (32 + 10 * float(rs[i]))
        assert abs(share - expected) <= 4 * np.sqrt(expected / len(rows)), (float(rs[i]), share)


def test_keep_probability_r_as_loss_weight(split):
    weighted = jax.jit(aa.make_train_sampler(4096, split, r_mode="weight"))
    batch = weighted(jax.random.PRNGKey(3), {"f": 0.7, "r": 0.2})
    decode_batch(batch)
    kinds = np.asarray(aa.sequence_kind(batch["tokens"]))
    w = np.asarray(batch["weights"])
    assert np.all(w[kinds != aa.TWO_VAR] == 1.0)
    assert abs(w[kinds == aa.TWO_VAR].mean() - 0.2) < 0.05
    with pytest.raises(ValueError, match="r_mode"):
        aa.make_train_sampler(8, split, r_mode="drop")


# ---- pools and exhaustive sets -------------------------------------------------------------------
def test_pools(task, split):
    train = np.asarray(split.train_mask(0.7))
    r = aa.Restriction()
    params = task.params_with_defaults()
    want = {  # kinds allowed, held-out pairs?, number of misplaced operands allowed
        "0var_train": ({0}, False, {0}), "0var_heldout": ({0}, True, {0}),
        "1var_train": ({1, 2}, False, {0}), "1var_heldout": ({1, 2}, True, {0}),
        "2var_train": ({3}, False, {0}), "2var_heldout": ({3}, True, {0}),
        "1var_restricted": ({1, 2}, False, {1}), "2var_one_misplaced": ({3}, False, {1}),
        "2var_two_misplaced": ({3}, False, {2})}
    assert set(task.eval_pools) == set(want)
    for name, (kinds, heldout, misplaced) in want.items():
        batch = task.eval_pools[name](jax.random.PRNGKey(4), params)
        assert batch["tokens"].shape == (2000, 16), name
        rows = decode_batch(batch)
        seen = {row["kind"] for row in rows}
        assert seen == kinds, (name, seen)
        for row in rows:
            assert train[row["pair"]] != heldout, name
            left, right = row["vars"]
            n_bad = int(left in r.left_forbidden) + int(right in r.right_forbidden)
            assert n_bad in misplaced, (name, row)


def test_exhaustive_sets(split):
    held = split.heldout_pairs(0.7)
    ex0 = aa.exhaustive_0var_heldout(jax.random.PRNGKey(5), held)
    rows = decode_batch(ex0)
    assert len(rows) == 1045 and {r["kind"] for r in rows} == {0}
    assert sorted(r["pair"] for r in rows) == sorted(map(tuple, held.tolist()))

    union = aa.exhaustive_2var_union(jax.random.PRNGKey(6), held, include_doubly_novel=True)
    tokens = np.asarray(union["tokens"])
    assert tokens.shape == (235_380, 16)
    n_union = 1045 * 92 + 2436 * 40
    assert n_union == 193_580
    # identity of each row: (value of left, value of right, left var, right var)
    pos = np.asarray(aa.operand_value_positions(union["tokens"]))
    vals = np.take_along_axis(tokens, pos, 1)
    assert np.all((vals.sum(1) % aa.P) == np.asarray(union["labels"]))
    ident = vals[:, 0] * 10**6 + vals[:, 1] * 10**4 + tokens[:, 13] * 100 + tokens[:, 14]
    assert len(np.unique(ident)) == len(ident)
    train = np.asarray(split.train_mask(0.7))[vals[:, 0], vals[:, 1]]
    r = aa.Restriction()
    bad = np.isin(tokens[:, 13] - aa.VAR0, r.left_forbidden).astype(int) + \
        np.isin(tokens[:, 14] - aa.VAR0, r.right_forbidden).astype(int)
    novel = (~train).astype(int) + (bad > 0)
    assert np.all(novel[:n_union] == 1)  # the union: novel on exactly one axis
    assert np.all((~train[n_union:]) & (bad[n_union:] > 0))  # the doubly novel rest
    for row in tokens[:50]:
        decode(row)


def test_worked_example_and_decoding_helpers():
    names = "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 27 =".split()
    ids = {str(i): i for i in range(aa.P)} | {"+": aa.PLUS, "=": aa.EQ, "PAD": aa.PAD}
    ids |= {v: aa.var_token(v) for v in aa.VAR_NAMES}
    tokens = jnp.asarray([[ids[n] for n in names]], jnp.int32)
    assert decode(tokens[0])["label"] == 8
    assert aa.operand_value_positions(tokens).tolist() == [[3, 14]]
    assert aa.sequence_kind(tokens).tolist() == [aa.LHS]
    assert aa.to_string(tokens[0]) == " ".join(names)


# ---- reference checkpoints -----------------------------------------------------------------------
def test_reference_checkpoints_reproduce_released_accuracies(reference_dir, split):
    """The released run's accuracies: final 0-var held-out, and the phase-2 and phase-3 jumps."""
    from experiments.assign_add.evaluate import correct, predict_fn
    from mechjax.interop.weights import load_npz
    cfg = aa.model_config()
    predict = predict_fn(cfg)
    load = lambda name: load_npz(os.path.join(reference_dir, f"{name}.npz"), cfg)  # noqa: E731
    task = aa.make_task(1, split=split)
    params = task.params_with_defaults()
    one_var = task.eval_pools["1var_train"](jax.random.PRNGKey(7), params)
    two_bad = task.eval_pools["2var_two_misplaced"](jax.random.PRNGKey(8), params)
    acc = lambda name, batch: float(correct(load(name), batch, cfg, 2048, predict).mean())  # noqa
    ex0 = aa.exhaustive_0var_heldout(jax.random.PRNGKey(9), split.heldout_pairs(0.7))
    assert abs(acc("final", ex0) - 0.993) < 0.006
    assert abs(acc("step_5301", one_var) - 0.77) < 0.05  # measured 0.75
    assert acc("step_5401", one_var) > 0.97
    assert abs(acc("step_14501", two_bad) - 0.53) < 0.06  # measured 0.49-0.51
    assert acc("step_16001", two_bad) > 0.98


def test_evaluate_rejects_bad_inputs_without_writing(tmp_path):
    workdir = tmp_path / "out"
    res = subprocess.run([PYTHON, "-m", "experiments.assign_add.evaluate", f"--workdir={workdir}",
                          "--weights=/nonexistent.npz"], cwd=REPO, env=run_module_env(),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "does not exist" in res.stderr
    assert not workdir.exists()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"heldout_pairs": [[1, 2, 3]]}))
    with pytest.raises(ValueError, match=r"expected a list of \[x, y\]"):
        aa.load_heldout_pairs(str(bad))
