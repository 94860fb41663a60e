"""Per-seed read-offs of the core dynamics at grokking (ACE paper) from the per-checkpoint records
of two branches (``wd1``: the main run; ``wd0``: weight decay 0 from the branch epoch): the
grokking and memorization epochs, and the core dimension, rotational modes, held-out shift R^2,
on-circle fraction, redundancy gap and accuracies before, at and after grokking and at the end of
each branch.

Host side (numpy). Inputs: ``metrics[branch]`` ``{name: [n, E]}`` with an ``epoch [E]`` axis (the
training evaluations), ``stats[branch]`` ``{CoreStats field: [C, n, ...]}`` and ``epochs[branch]``
the C checkpoint epochs. A seed that never groks has None where a value is read at its grokking
checkpoint, and is counted, not dropped (``analysis.seeds.seed_stats``).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from mechjax.studies import grokking_core as gc
from mechjax.analysis.curves import first_crossing
from mechjax.analysis.seeds import seed_stats

BRANCHES = ("wd1", "wd0")  # the main run and the branch, in files and summary keys


def on_circle_fraction(s: Mapping[str, np.ndarray]) -> np.ndarray:
    """``[C, n]``: fraction of the kept shift eigenvalues that lie on the unit circle."""
    d = s["on_circle"].shape[-1]
    kept = np.arange(d) < s["n_directions"][..., None]
    return (s["on_circle"] & kept).sum(-1) / np.maximum(kept.sum(-1), 1)


def summarize(metrics: Mapping[str, Mapping[str, np.ndarray]],
              stats: Mapping[str, Mapping[str, np.ndarray]], epochs: Mapping[str, list],
              seeds: Sequence[int], p: int, d_model: int, grok_threshold: float,
              ) -> dict[str, Any]:
    """The summary.json numbers of the core-dynamics experiment (see the module docstring)."""
    thr = float(grok_threshold)
    m = metrics
    e1 = epochs["wd1"]
    s1, s0 = stats["wd1"], stats["wd0"]
    test_ckpt = s1["acc_full"].T                                    # [n, C] test accuracy
    # the first checkpoint epoch (an int) at or above the threshold per seed, None where never
    grok = [None if np.isnan(t) else int(t) for t in first_crossing(e1, test_ckpt, thr)]
    mem = first_crossing(m["wd1"]["epoch"], m["wd1"]["acc/train"], thr)        # NaN: never
    grok_eval = first_crossing(m["wd1"]["epoch"], m["wd1"]["acc/test"], thr)
    gi = [None if g is None else e1.index(g) for g in grok]
    circ1 = on_circle_fraction(s1)

    def at(arr, offset=0, cast=float):
        out = []
        for i, g in enumerate(gi):
            c = None if g is None else g + offset
            out.append(None if c is None or not 0 <= c < arr.shape[0] else cast(arr[c, i]))
        return out

    last = lambda arr, cast=float: [cast(v) for v in arr[-1]]  # noqa: E731
    return {
        "grok_epoch": seed_stats(grok),
        "grok/never_seeds": [sd for sd, g in zip(seeds, grok) if g is None],
        "grok_epoch/eval_grid": seed_stats(grok_eval),
        "memorization_epoch": seed_stats(mem),
        "core_dim/at_grok": seed_stats(at(s1["core_dim"], cast=int)),
        "core_dim/before_grok": seed_stats(at(s1["core_dim"], -1, int)),
        "core_dim/final_wd1": seed_stats(last(s1["core_dim"], int)),
        "core_dim/final_wd0": seed_stats(last(s0["core_dim"], int)),
        "core_dim/max_possible": int(d_model),
        "modes/at_grok": seed_stats(at(s1["n_rotational"], cast=int)),
        "modes/final_wd1": seed_stats(last(s1["n_rotational"], int)),
        "modes/final_wd0": seed_stats(last(s0["n_rotational"], int)),
        "modes/max_possible": gc.max_rotational_modes(p),
        "r2_heldout/before_grok": seed_stats(at(s1["heldout_r2"], -1)),
        "r2_heldout/after_grok": seed_stats(at(s1["heldout_r2"])),
        "r2_heldout/final_wd1": seed_stats(last(s1["heldout_r2"])),
        "r2_heldout/final_wd0": seed_stats(last(s0["heldout_r2"])),
        "eig/on_circle_fraction_before_grok": seed_stats(at(circ1, -1)),
        "eig/on_circle_fraction_after_grok": seed_stats(at(circ1)),
        "r_nec/final_wd1": seed_stats(last(s1["r_nec"], int)),
        "r_suf/final_wd1": seed_stats(last(s1["r_suf"], int)),
        "redundancy_gap/at_grok": seed_stats([None if a is None else a - c for a, c in zip(
            at(s1["r_nec"], cast=int), at(s1["r_suf"], cast=int))]),
        "redundancy_gap/final_wd1": seed_stats(last(s1["r_nec"] - s1["r_suf"], int)),
        "redundancy_gap/final_wd0": seed_stats(last(s0["r_nec"] - s0["r_suf"], int)),
        "acc/test_final_wd1": seed_stats(last(s1["acc_full"])),
        "acc/test_final_wd0": seed_stats(last(s0["acc_full"])),
        "acc/core_only_final_wd1": seed_stats(last(s1["acc_core_only"])),
        "acc/core_removed_final_wd1": seed_stats(last(s1["acc_core_removed"])),
        "acc/core_only_at_grok": seed_stats(at(s1["acc_core_only"])),
        "acc/core_removed_at_grok": seed_stats(at(s1["acc_core_removed"])),
        "acc/chance": 1.0 / p,
        "diverged_seeds": {name: [sd for sd, ok in zip(seeds, m[name]["finite"][:, -1]) if not ok]
                           for name in BRANCHES},
    }
