"""The truncated IMIR forward (mechjax.analysis.imir.forward.truncated) computes exactly what the
full
forward computes: logits, the query loss and accuracy, the trainer's loss and gradients, corners of
W(theta), and the
trainer built on it; a rotated frame is refused."""
import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.manifold import project as proj
from mechjax.analysis.imir.forward import truncated as tr
from mechjax.analysis.imir.forward.loss import readout_accuracy, readout_loss
from mechjax.models.transformer import forward
from mechjax.tasks import blocklist as bl
from mechjax.training.train import TrainConfig, make_train

# 2 layers, 2 heads: several populated widths and a head concatenation per layer
TASK = bl.BlockListSpec(kind="khop", hops=2, n_common=6, n_rare=3, n_blocks=3)
FRAME = ib.make_frame(ib.TokenStructure.from_spec(TASK), TASK.seq_len, n_layers=2, n_heads=2)
BASIS = ib.make_basis(FRAME)
TP = {"f_r": 0.5, "f_v": 0.2}


def random_params(causal=False, seed=0):
    cfg = ib.imir_config(FRAME, causal=causal)
    keys = jax.random.split(jax.random.key(seed), 4)
    w = {k: 0.5 * jax.random.normal(kk, v.shape)
         for (k, v), kk in zip(ib.zero_trainables(FRAME).items(), keys)}
    return {**ib.fixed_params(FRAME), **w}, cfg


@pytest.mark.parametrize("causal", [False, True])
def test_logits_loss_and_accuracy_equal_the_full_forward(causal):
    params, cfg = random_params(causal)
    batch = bl.sample(TASK, jax.random.key(1), TP, 32)

    @jax.jit  # one program per side, not one per eager operation
    def both(params):
        return (forward(params, batch["tokens"], cfg),
                tr.truncated_forward(params, batch["tokens"], FRAME, cfg),
                tr.query_loss_and_accuracy(params, batch, FRAME, cfg),
                (readout_loss(params, cfg, batch), readout_accuracy(params, cfg, batch)))

    full, truncated, (loss, acc), (want_loss, want_acc) = both(params)
    np.testing.assert_allclose(truncated, full, rtol=1e-4, atol=1e-4 * float(np.abs(full).max()))
    assert float(loss) == pytest.approx(float(want_loss), rel=1e-5)
    assert float(acc) == float(want_acc)


def test_theta_weights_are_the_corners_of_w_theta_and_drive_the_same_loss():
    theta = jax.random.normal(jax.random.key(2), (BASIS.size,))
    full = proj.weights(BASIS, theta)
    corners = tr.theta_weights(BASIS, theta)
    w = tr.widths(FRAME)
    for l in range(FRAME.n_layers):
        k = f"blocks.{l}.attn.W_KQ"
        np.testing.assert_allclose(corners[k], full[k][:, : w[l], : w[l]], atol=1e-5)
        # nothing outside the corner: the full matrix is zero there
        assert float(jnp.abs(full[k]).sum()) == pytest.approx(float(jnp.abs(corners[k]).sum()),
                                                              rel=1e-5)
    np.testing.assert_allclose(corners["unembed.W_U"], full["unembed.W_U"], atol=1e-5)


def test_truncated_model_loss_and_gradients_equal_the_full_transformer():
    task = bl.blocklist_task(TASK, 16, eval_size=32)
    cfg = ib.imir_config(FRAME)
    tc = TrainConfig(steps=4, eval_every=2, optimizer="adam")
    params, _ = random_params(seed=3)
    batch = bl.sample(TASK, jax.random.key(4), TP, 32)
    outs = [jax.jit(jax.value_and_grad(lambda p: t.loss(p, batch)[0]))(params)
            for t in (make_train(task, cfg, tc),
                      make_train(task, tr.truncated_model(FRAME, cfg), tc))]
    (l0, g0), (l1, g1) = outs
    assert float(l1) == pytest.approx(float(l0), rel=1e-5)
    for k in ib.trainable_names(FRAME):
        scale = float(jnp.abs(g0[k]).max())
        assert scale > 0
        np.testing.assert_allclose(g1[k], g0[k], atol=1e-4 * scale)
    with pytest.raises(ValueError, match="frozen frame weights"):
        tr.truncated_model(FRAME, dataclasses.replace(cfg, frozen=()))


def test_rotated_frame_is_refused():
    rotated = ib.make_frame(FRAME.tokens, FRAME.n_pos, 2, 1, rotation_key=jax.random.key(0))
    with pytest.raises(ValueError, match="unrotated frame"):
        tr.check_frame(rotated)


def test_every_stage_split_gives_the_same_loss():
    params, cfg = random_params(causal=False, seed=5)
    batch = bl.sample(TASK, jax.random.key(6), TP, 32)
    want, _ = tr.query_loss_and_accuracy(params, batch, FRAME, cfg)

    @functools.partial(jax.jit, static_argnums=0)
    def split_at(stage, params):
        cache = tr.stage_input(params, batch, FRAME, cfg, stage)
        return tr.stage_loss(params, cache, batch, FRAME, cfg, stage)[0]

    for stage in range(FRAME.n_layers + 1):
        assert float(split_at(stage, params)) == pytest.approx(float(want), rel=1e-5)


def test_coordinate_model_is_the_imir_model_at_w_theta_with_the_chain_rule_gradient():
    causal = True  # the paper's model (the mask only enters through the shared forward)
    cfg = ib.imir_config(FRAME, causal)
    task = bl.blocklist_task(TASK, 16, eval_size=32)
    tc = TrainConfig(steps=4, eval_every=2, optimizer="sgd")
    coord, weights = (make_train(task, tr.coordinate_model(BASIS, causal), tc),
                      make_train(task, tr.truncated_model(FRAME, cfg), tc))
    theta = 0.5 * jax.random.normal(jax.random.key(7), (BASIS.size,))
    w = {**ib.fixed_params(FRAME), **proj.weights(BASIS, theta)}
    batch = bl.sample(TASK, jax.random.key(8), TP, 32)
    l_c, g_c = jax.jit(jax.value_and_grad(lambda p: coord.loss(p, batch)[0]))({"theta": theta})
    l_w, g_w = jax.jit(jax.value_and_grad(lambda p: weights.loss(p, batch)[0]))(w)
    assert float(l_c) == pytest.approx(float(l_w), rel=1e-5)
    # d loss / d theta_i = <B_i, d loss / dW>: W(theta) is the basis' own linear map
    want = proj.inner(BASIS, g_w)
    np.testing.assert_allclose(g_c["theta"], want, atol=1e-4 * float(jnp.abs(want).max()))
    # the logits the trainer evaluates with are the full forward's at W(theta)
    np.testing.assert_allclose(coord.logits({"theta": theta}, batch["tokens"]),
                               forward(w, batch["tokens"], cfg), rtol=1e-4, atol=1e-4)
    assert coord.model_cfg.to_dict()["n_coordinates"] == BASIS.size
