"""Core interventions: trivial bases give trivial answers, rank scans, the linear-tail scan against hooks, centred LLM interventions."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ace_cases import tiny_model
from mechjax.analysis import ace
from mechjax.models.hooks import run_with_hooks
from mechjax.models.transformer import apply

def test_validate_full_and_empty_basis_give_trivial_answers():
    cfg, params, tokens = tiny_model(1)
    name, d = "blocks.0.hook_resid_post", cfg.d_model
    eye, empty = jnp.eye(d), ace.mask_basis(jnp.eye(d), 0)

    @jax.jit
    def logits(eye, empty):  # one program: the plain pass and the four interventions
        run = lambda fn: run_with_hooks(params, tokens, cfg, {name: fn})[0]
        return [apply(params, tokens, cfg)] + [
            run(hook(q)) for q in (eye, empty) for hook in (ace.core_only_hook,
                                                            ace.core_removed_hook)]

    full_logits, only_eye, removed_eye, only_empty, removed_empty = logits(eye, empty)
    labels = jnp.argmax(full_logits, -1)  # full accuracy is 1 by construction
    bias = jnp.broadcast_to(params["unembed.b_U"], full_logits.shape)
    const_acc = float((labels == jnp.argmax(params["unembed.b_U"])).mean())
    np.testing.assert_allclose(only_eye, full_logits, atol=1e-5)
    np.testing.assert_allclose(removed_eye, bias, atol=1e-6)
    np.testing.assert_allclose(only_empty, bias, atol=1e-6)
    np.testing.assert_allclose(removed_empty, full_logits, atol=1e-6)

    res = ace.validate(params, tokens, labels, cfg, name, eye)
    assert float(res["full"]) == 1.0 and float(res["core_only"]) == 1.0
    assert float(res["core_removed"]) == pytest.approx(const_acc)
    res = ace.validate(params, tokens, labels, cfg, name, empty)
    assert float(res["core_only"]) == pytest.approx(const_acc)
    assert float(res["core_removed"]) == 1.0
    # One readout position and the loss metric.
    loss = ace.validate(params, tokens, labels[:, -1], cfg, name, eye, "loss", readout=-1)
    assert float(loss["core_only"]) == pytest.approx(float(loss["full"]), rel=1e-5)

    keep, remove = ace.causal_scan(params, tokens, labels, cfg, name, eye, batch_size=4)
    assert keep.shape == remove.shape == (d + 1,)
    assert float(keep[d]) == 1.0 and float(remove[0]) == 1.0
    assert float(keep[0]) == pytest.approx(const_acc)
    assert float(remove[d]) == pytest.approx(const_acc)


def test_rank_scans():
    removed = jnp.array([1.0, 0.9, 0.15, 0.5, 0.1, 0.05, 0.0])
    assert int(ace.r_nec(removed, 1, 10)) == 2     # 2/V = 0.2
    assert int(ace.r_nec(removed, 3, 10)) == 4     # must be >= r_energy
    assert int(ace.r_nec(removed, 1, 100)) == 6    # never <= 0.02 before the end -> R
    only = jnp.array([0.1, 0.5, 0.9985, 0.9, 1.0])
    assert int(ace.r_suf(only, 1.0)) == 4
    assert int(ace.r_suf(only, 0.9995)) == 2


def test_linear_tail_scan_matches_hook_scan():
    from mechjax.studies import grokking_core as gc
    from mechjax.models.transformer import init_params
    p = 7
    cfg = gc.spec_model_config(p, d_model=8, n_heads=2, d_mlp=16, dropout=0.0)
    params = init_params(jax.random.PRNGKey(0), cfg)
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    tokens = jnp.asarray(np.stack([a.ravel(), b.ravel()], 1), jnp.int32)
    labels = (tokens[:, 0] + tokens[:, 1]) % p
    basis, _ = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(1), (8, 8)))
    h = ace.activations(params, tokens, cfg, gc.HOOK, position=-1)
    only, removed, full = ace.linear_tail_scan(h, basis, params["unembed.W_U"],
                                               params["unembed.b_U"], labels)
    ref_only, ref_removed = ace.causal_scan(params, tokens, labels, cfg, gc.HOOK, basis,
                                            readout=-1)
    np.testing.assert_allclose(only, ref_only, atol=1e-6)
    np.testing.assert_allclose(removed, ref_removed, atol=1e-6)
    assert float(full) == pytest.approx(float(ref_removed[0]))  # rank 0 removes nothing
    assert float(only[-1]) == pytest.approx(float(full), abs=1e-6)  # the full basis keeps all


def test_validate_centred_llm_interventions():
    cfg, params, tokens = tiny_model(2)
    name = "blocks.1.hook_resid_post"  # the tail to the last-position logits is affine
    score_fn = lambda logits: logits[:, 0] - logits[:, 1]
    base = score_fn(jax.jit(apply, static_argnums=2)(params, tokens, cfg)[:, -1])
    positive = base > jnp.median(base)  # base AUC = 1
    mean = ace.activations(params, tokens, cfg, name, position=-1).mean(0)
    eye = jnp.eye(cfg.d_model)
    res = ace.validate_centred(params, tokens, cfg, name, eye, mean, score_fn, positive)
    assert float(res["base"]) == 1.0 and float(res["keep"]) == 1.0
    # Projections on the identity are exact: every prompt scores the same (all ties: 0.5), and
    # x -> -x mirrors the score.
    assert float(res["remove"]) == pytest.approx(0.5, abs=1e-6)
    assert float(res["flip"]) == pytest.approx(0.0, abs=1e-6)
    res = ace.validate_centred(params, tokens, cfg, name, ace.mask_basis(eye, 0), mean, score_fn,
                               positive)
    assert float(res["remove"]) == 1.0 and float(res["flip"]) == 1.0
    assert float(res["keep"]) == pytest.approx(0.5, abs=1e-6)


@pytest.mark.parametrize("readout", [None, -1])
def test_validate_last_block_matches_the_hooked_passes(readout):
    cfg, params, tokens = tiny_model(2)
    name = "blocks.1.hook_resid_post"
    assert ace.reads_last_block(cfg, name)
    assert not ace.reads_last_block(cfg, "blocks.0.hook_resid_post")
    rng = np.random.default_rng(0)
    basis = ace.mask_basis(jnp.asarray(np.linalg.qr(rng.normal(size=(16, 16)))[0], jnp.float32), 3)
    labels = jnp.asarray(rng.integers(0, 5, size=tokens.shape), jnp.int32)
    h = ace.activations(params, tokens, cfg, name)
    if readout is not None:
        labels, h = labels[:, readout], h.reshape(*tokens.shape, -1)[:, readout]
    else:
        h = h.reshape(*tokens.shape, -1)
    for metric in ("accuracy", "loss"):
        hooked = ace.validate(params, tokens, labels, cfg, name, basis, metric, readout=readout)
        direct = ace.validate_last_block(params, h, labels, cfg, basis, metric)
        for key in ("full", "core_only", "core_removed"):
            np.testing.assert_allclose(direct[key], hooked[key], rtol=1e-6, err_msg=key)
