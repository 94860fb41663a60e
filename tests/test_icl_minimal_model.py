"""The minimal network trained on the Reddy task: a seeds x B grid as one compiled program, and the
direction of the burstiness effect in every seed (tiny sizes)."""
import numpy as np

from mechjax import icl_minimal_model as m
from mechjax.sweep import run_sweep
from mechjax.tasks import icl_minimal as icl
from mechjax.train import TrainConfig


def test_burstiness_moves_icl_up_and_iwl_down_in_every_seed():
    spec = icl.IclSpec(d=16, n_ctx=4, n_labels=8, k_max=32, k=32, burstiness=2, noise=0.1)
    tc = TrainConfig(steps=200, eval_every=100, optimizer="adam", eval_chunk=None)
    tr = m.make_trainer(spec, tc, batch_size=64, eval_size=256, mlp_width=32)
    res = run_sweep(tr, [0, 1, 2], {"lr": [1e-2], "task.B": [0.0, 4.0]}, log_every_chunk=False)
    assert res.traces == 1
    icl_acc, iwl_acc = res.metrics["acc/icl"][..., -1], res.metrics["acc/iwl"][..., -1]
    # B = N: the query's label is always in context, so the model reads it from there (ICL probe
    # up); B = 0: only the weights know the label (IWL probe up).
    assert np.all(icl_acc[:, 1] > icl_acc[:, 0] + 0.2), icl_acc
    assert np.all(iwl_acc[:, 0] > iwl_acc[:, 1] + 0.2), iwl_acc
