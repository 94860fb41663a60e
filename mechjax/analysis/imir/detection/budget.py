"""The budget curve of circuit detection (docs/imir.md, section 7): the detected circuit at several
loss budgets ``tau``, tight to loose, and the rule that picks the budget to report.

``curve(dets)`` tabulates, per budget, what ``detector.detect_curve`` found: kept coordinates,
canonical units, helpers, circuits of 4 canonical units, and the circuit's accuracy with and
without its helpers (held-out batch).

``pick(acc_circuit, acc_full, margin)`` is the rule, stated without reference to any paper's
numbers: *the loosest budget at which the circuit's accuracy stays within ``margin`` of the full
model's*, i.e. the last budget of the tight-to-loose list before the first one whose circuit
falls more than ``margin`` below the full model; accuracies on the selection batch (the data the
elimination ran on), so the held-out accuracies reported at the chosen budget are not the ones
it was chosen on. Where even the tightest budget's circuit falls short (a model the manifold
explains poorly: its projection alone is below the full model) the tightest is reported and
``met`` is False.

``doubling(kept, kept_doubled, reported)`` says whether the elimination's batch was large enough:
the kept set at each budget compared with the one found on a batch twice as large (the same
model, the same budgets). Coordinates whose removal costs about the budget are kept or removed
by the batch's sampling noise, so only a kept set that survives the doubling is a property of
the model rather than of the batch.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from mechjax.analysis.imir.detection import circuits as cc

RULE = ("the loosest tau of the curve at which the circuit's accuracy stays within tau_margin "
        "of the full model's (every tighter tau too; selection batch); the tightest where none")


def pick(acc_circuit: Sequence[float], acc_full: float, margin: float) -> tuple[int, bool]:
    """``(index, met)``: ``acc_circuit [n_taus]`` (tight to loose) against ``acc_full``."""
    ok = np.asarray(acc_circuit, float) >= acc_full - margin
    if not ok[0]:
        return 0, False
    fails = np.flatnonzero(~ok)
    return (int(fails[0]) - 1 if fails.size else len(ok) - 1), True


def with_4_canonical(rows: Sequence[dict]) -> int:
    """Circuits (``circuits.circuit_rows``) of at least 4 canonical units (the paper's count)."""
    return sum(r["n_canonical"] >= 4 for r in rows)


def curve(dets: Sequence, taus: Sequence[float]) -> dict[str, list]:
    """Per budget (``taus [n]``, one ``Detection`` each): the quantities of the budget figure."""
    return {
        "tau": [float(t) for t in taus],
        "kept": [int(d.elimination.kept.sum()) for d in dets],
        "canonical_units": [len(d.canonical()) for d in dets],
        "helpers": [len(d.helpers()) for d in dets],
        "circuits_with_4_canonical": [with_4_canonical(cc.circuit_rows(d.circuits, d.kinds))
                                      for d in dets],
        "acc_circuit": [d.accuracy["circuit"] for d in dets],
        "acc_without_helpers": [d.accuracy["canonical"] for d in dets],
        "acc_selection_circuit": [d.accuracy["selection_circuit"] for d in dets],
        "acc_full": dets[0].accuracy["full"],
    }


def doubling(kept: Sequence[np.ndarray], kept_doubled: Sequence[np.ndarray],
             reported: int) -> dict:
    """``kept [n_taus]`` and ``kept_doubled [n_taus]``: bool masks ``[n]`` per budget, on the
    elimination's batch and on one twice as large; ``reported``: the reported budget's index.
    Per budget whether the two kept sets are equal and their Jaccard overlap (1 for two empty
    sets), how many budgets agree, and whether the reported one does."""
    same = [bool(np.array_equal(a, b)) for a, b in zip(kept, kept_doubled)]
    jaccard = [float((a & b).sum() / (a | b).sum()) if (a | b).any() else 1.0
               for a, b in zip(kept, kept_doubled)]
    return {"same_per_tau": same, "taus_same": int(sum(same)), "all_same": all(same),
            "same_at_reported_tau": same[reported], "jaccard_per_tau": jaccard,
            "kept_doubled": [int(b.sum()) for b in kept_doubled]}
