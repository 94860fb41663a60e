"""Full-size config (a GPU, or hours on CPU): the recall settings at imir_phase's sizes and the
5-layer 2-hop model, 8 seeds each. Every setting is the IMIR paper's model: causal
attention, block lists without cyclic wrap (the query ends the sequence), position selections
P = {I_p, M, .., M^(k-1)}; ``causal=False, offsets="cyclic", positions="all"`` is the
non-causal cyclic variant on the extended position set (forward shifts included)."""
import ml_collections
from ml_collections import config_dict

PAPER_MODEL = dict(causal=True, offsets="fixed", positions="paper")


def _recall(f_r, f_v, enabled=True):
    return dict(enabled=enabled, hops=1, n_layers=2, n_heads=1, n_common=8, n_rare=8,
                n_blocks=4, f_r=f_r, f_v=f_v, steps=3000, eval_every=300, lr=0.01,
                batch_size=128, init_std=0.01, **PAPER_MODEL)


def get_config():
    c = ml_collections.ConfigDict()
    c.n_seeds = 8
    c.seed_offset = 0
    # the budget curve, tight to loose; the rule (mechjax.analysis.imir.detection.budget)
    # reports the loosest tau whose circuit stays within tau_margin of the full model's
    # accuracy; --config.tau=X detects at X alone
    c.tau = config_dict.placeholder(float)
    c.tau_curve = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
    c.tau_margin = 0.02
    c.weights_causal = config_dict.placeholder(bool)   # --causal: a bare --weights file's mask
    c.weights = ""
    c.from_workdir = ""
    c.from_seed = 0
    c.from_step = -1
    c.weights_setting = "recall_icl"
    c.recall_icl = _recall(f_r=0.8, f_v=0.5)
    c.recall_iwl = _recall(f_r=0.0, f_v=0.0)
    c.khop = dict(enabled=True, hops=2, n_layers=5, n_heads=1, n_common=6, n_rare=5, n_blocks=4,
                  f_r=0.8, f_v=0.5, steps=6000, eval_every=500, lr=0.01, batch_size=128,
                  init_std=0.01, **PAPER_MODEL)
    c.detect = dict(batch_size=1024, eval_size=2048, exact_max=512, screen=32, refresh=16,
                    bulk_fraction=0.25, cost_bulk=0.0, overshoot=64, curve_points=48,
                    head_ablation=True)
    return c
