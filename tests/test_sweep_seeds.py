"""Seeds of a sweep are different runs: each seed starts from its own parameters and ends
elsewhere, and a seed trained among others is the run it would be alone."""
import itertools

import jax
import numpy as np
import pytest

from conftest import alone_tolerance
from mechjax.models.config import ModelConfig
from mechjax.sweeps import sweep
from mechjax.sweeps.sweep import run_sweep
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, make_train

SEEDS = [0, 1, 2]
BATCH = 16
# Two draws of the initial weights (std ~ 1 / sqrt(fan_in) ~ 0.25) are far apart; rounding
# differences of float32 are ~1e-7 relative. Seeds count as different when their parameters
# differ by this much relative to their size (RMS over all parameters), far above the noise.
MIN_RELATIVE_DISTANCE = 1e-2


@pytest.fixture(scope="module")
def trainer():
    task = modular.make_task(p=7, batch_size=BATCH, train_fraction=0.6)
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_mlp=32, d_vocab=7, n_ctx=2,
                      causal=False)
    return make_train(task, cfg, TrainConfig(steps=40, eval_every=10))


def train(trainer, seeds):
    return run_sweep(trainer, seeds, chunk_evals=2, log_every_chunk=False)


def flat(params):
    return np.concatenate([np.ravel(params[k]) for k in sorted(params)])


def initial_params(trainer, keys):
    """Each seed's initial parameters: the trainer's ``init`` at the key the sweep drew for it
    (the sweep's own starting state, which it does not return)."""
    hp = trainer.default_hparams()
    return [flat(jax.jit(trainer.init)(k, hp).params) for k in keys]


def pairwise_distinct(vectors):
    return all(np.sqrt(np.mean((u - v) ** 2)) > MIN_RELATIVE_DISTANCE * np.sqrt(np.mean(u ** 2))
               for u, v in itertools.combinations(vectors, 2))


def record_keys(monkeypatch, same_randomness=False):
    """Spy on the sweep's per-seed keys (``padded_seed_rows``); with ``same_randomness`` every
    seed gets the first seed's key, the bug these tests must catch."""
    seen = []
    real = sweep.padded_seed_rows

    def rows(seeds, n_devices):
        keys, index = real(seeds[:1] * len(seeds) if same_randomness else seeds, n_devices)
        seen.append(keys)
        return keys, index
    monkeypatch.setattr(sweep, "padded_seed_rows", rows)
    return seen


@pytest.fixture(scope="module")
def together(trainer):
    with pytest.MonkeyPatch.context() as mp:
        keys = record_keys(mp)
        result = train(trainer, SEEDS)
    return result, keys[0][:len(SEEDS)]


def test_seeds_start_and_end_at_different_parameters(trainer, together):
    result, keys = together
    assert pairwise_distinct(initial_params(trainer, keys))
    final = result.params_at(0)
    assert pairwise_distinct([flat({k: v[i] for k, v in final.items()})
                              for i in range(len(SEEDS))])


def seed_tolerance(trainer, params):
    """Float32 tolerance between a seed trained among others and alone: alone it runs as
    another compiled program (XLA drops the one-iteration loop over seeds), which may round
    differently (``conftest.alone_tolerance``)."""
    return alone_tolerance(trainer.model_cfg, BATCH * trainer.model_cfg.n_ctx,
                           trainer.train_cfg.steps,
                           float(trainer.default_hparams()["lr"]), params)


def test_each_seed_is_the_run_it_would_be_alone(trainer, together):
    result, _ = together
    final = result.params_at(0)
    atol = seed_tolerance(trainer, final)
    # far below how much two seeds differ: another seed's run would not pass for this one's
    assert all(np.abs(final[k][1] - final[k][0]).max() > 1e3 * atol for k in final)
    for i, seed in enumerate(SEEDS):
        alone = train(trainer, [seed]).params_at(0)
        for k in final:
            np.testing.assert_allclose(final[k][i], alone[k][0], rtol=0, atol=atol,
                                       err_msg=f"seed {seed} {k}")


def test_a_sweep_drawing_the_same_randomness_for_every_seed_is_caught(trainer, monkeypatch):
    keys = record_keys(monkeypatch, same_randomness=True)
    result = train(trainer, SEEDS)
    final = result.params_at(0)
    assert not pairwise_distinct(initial_params(trainer, keys[0][:len(SEEDS)]))
    assert not pairwise_distinct([flat({k: v[i] for k, v in final.items()})
                                  for i in range(len(SEEDS))])
