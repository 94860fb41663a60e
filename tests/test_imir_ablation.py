"""The last layer's closed-form ablations (``forward.ablation``) against the plain loss (the
whole exact greedy path with and without them: ``tests/test_imir_detect.py``)."""
import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis.imir.detection import detector as dt
from mechjax.analysis.imir.detection import elimination as el
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.tasks import blocklist as bl

TASK = bl.BlockListSpec(n_common=4, n_rare=4, n_blocks=3)


def _setting(n_heads: int, seed: int):
    frame = ib.make_frame(ib.TokenStructure.from_spec(TASK), TASK.seq_len, n_heads=n_heads)
    basis = ib.make_basis(frame)
    theta = jax.random.normal(jax.random.key(seed), (basis.size,)) * 2.0
    batch = bl.sample(TASK, jax.random.key(seed + 1), {"f_r": 0.5, "f_v": 0.2}, 32)
    return basis, theta, batch


def test_closed_form_equals_the_plain_loss_of_every_last_layer_ablation():
    """Every last-layer W_KQ coordinate of a 2-head causal model, some already removed (value
    0: the loss is unchanged), against the plain loss of each ablated model."""
    basis, theta, batch = _setting(n_heads=2, seed=3)
    staged = dt.staged_loss(basis, causal=True)
    loss, _, _ = dt.model_fns(basis, causal=True)
    last = basis.frame.n_layers - 1
    assert set(staged.closed) == {last}
    mask = np.ones(basis.size, bool)
    mask[::5] = False
    idx = np.flatnonzero(staged.stage_of == last)
    got = el._Evaluator(loss, theta, (batch,), 4, staged).ablations(mask, idx)
    ablated = jnp.asarray(mask, jnp.float32)[None] * (1 - jax.nn.one_hot(idx, basis.size))
    want = jax.jit(jax.vmap(loss, (0, None)))(theta * ablated, batch)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    base = loss(theta * jnp.asarray(mask, jnp.float32), batch)
    np.testing.assert_allclose(got[~mask[idx]], base, rtol=1e-6)
    assert np.ptp(got) > 1e-3        # the coordinates matter: a wrong closed form would show
