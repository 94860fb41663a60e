"""The 5-layer 2-hop setting alone on CPU (the truncated forward makes it fit): 4 seeds in one
program, the paper config's spec and training; the greedy pass on 256 sequences, accuracies on
2048 others, lazy screening above 64 active coordinates."""
from experiments.imir_detect.configs import paper


def get_config():
    c = paper.get_config()
    c.n_seeds = 4
    c.recall_icl.enabled = False
    c.recall_iwl.enabled = False
    c.detect.update(batch_size=256, eval_size=2048, exact_max=64, screen=32, refresh=16,
                    overshoot=16)
    return c
