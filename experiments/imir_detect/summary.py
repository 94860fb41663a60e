"""The imir_detect summary: per setting, every quantity as seed statistics
(``mechjax.analysis.seeds.seed_stats``: mean, std, min, max, per-seed values) under one naming
for every setting, at each seed's reported budget, and the budget curve (each quantity per
budget, tight to loose).

Keys per setting (``summary.json``: ``summary[setting][key]``, e.g. ``khop/canonical_units``):
``coordinates_total``, ``explained_fraction``, ``kept``, ``units``, ``canonical_units``,
``helpers``, ``circuits_with_4_canonical``, ``max_hops``, ``acc_full``, ``acc_projected``,
``acc_circuit``, ``acc_without_helpers``, ``acc_gap_full_minus_circuit``, ``tau`` (the budget
reported per seed), ``tau_rule_met``, with ``head_ablation``: ``heads_important``,
``helpers_in_unimportant_heads``; with ``batch_doubling``: ``kept_same_when_batch_doubles``
(1 where the kept set is the same at every budget on twice the batch) and
``taus_same_when_batch_doubles``. ``per_seed`` holds each seed's full report
(``detector.report`` keys, with its own ``tau_curve``).
"""
from __future__ import annotations

from typing import Any

from mechjax.analysis.imir.detection import budget
from mechjax.analysis.seeds import format_stats, seed_stats

# What "recovers the canonical coordinates" means per setting (docs: circuits.ABGD).
EXPECTED = {"recall_icl": ("alpha", "beta", "gamma"), "recall_iwl": ("delta",)}
# summary name -> the per-seed report's key (detector.report)
FROM_REPORT = {"coordinates_total": "n_coordinates_total",
               "explained_fraction": "manifold_explained_fraction", "kept": "n_kept",
               "units": "n_units", "canonical_units": "n_canonical", "helpers": "n_helpers",
               "acc_full": "acc/full", "acc_projected": "acc/projected",
               "acc_circuit": "acc/circuit", "acc_without_helpers": "acc/circuit_without_helpers",
               "tau": "tau", "tau_rule_met": "tau_rule_met"}
CURVE_KEYS = ("kept", "canonical_units", "helpers", "circuits_with_4_canonical", "acc_circuit",
              "acc_without_helpers")


def recovered(name: str, rep: dict) -> bool | None:
    """Whether the setting's canonical coordinates survived (None where none is named)."""
    if name in EXPECTED:
        return set(EXPECTED[name]) <= set(rep["abgd_found"] or [])
    return None


def _derived(r: dict) -> dict[str, Any]:
    """The per-seed values the report holds only implicitly."""
    out = {"circuits_with_4_canonical": budget.with_4_canonical(r["circuits"]),
           # the longest chain of look-ups a kept readout reads out (2: a 2-hop composition)
           "max_hops": max((c["hops"] for c in r["circuits"]), default=0),
           "acc_gap_full_minus_circuit": r["acc/full"] - r["acc/circuit"]}
    if "heads" in r:
        out["heads_important"] = r["heads"]["n_heads_important"]
        out["helpers_in_unimportant_heads"] = r["heads"]["n_helpers_in_unimportant_heads"]
    if "batch_doubling" in r:
        out["kept_same_when_batch_doubles"] = int(r["batch_doubling"]["all_same"])
        out["taus_same_when_batch_doubles"] = r["batch_doubling"]["taus_same"]
    return out


def summarise(name: str, reports: list[dict], seeds: list[int]) -> dict:
    out: dict[str, Any] = {"seeds": seeds}
    for k, rk in FROM_REPORT.items():
        out[k] = seed_stats([r[rk] for r in reports])
    derived = [_derived(r) for r in reports]
    for k in derived[0]:
        out[k] = seed_stats([d[k] for d in derived])
    rec = [recovered(name, r) for r in reports]
    if rec[0] is not None:
        out["canonical_recovered_all_seeds"] = all(rec)
        out["canonical_recovered"] = rec
    curves = [r["tau_curve"] for r in reports]
    out["tau_curve"] = {"tau": curves[0]["tau"],
                        **{k: [seed_stats([c[k][i] for c in curves])
                               for i in range(len(curves[0]["tau"]))] for k in CURVE_KEYS}}
    out["per_seed"] = reports
    return out


ORDER = ("tau", "tau_rule_met", "coordinates_total", "explained_fraction", "kept", "units",
         "canonical_units", "helpers", "circuits_with_4_canonical", "max_hops", "acc_full",
         "acc_projected", "acc_circuit", "acc_without_helpers", "acc_gap_full_minus_circuit",
         "heads_important", "helpers_in_unimportant_heads", "kept_same_when_batch_doubles",
         "taus_same_when_batch_doubles")
REPORT_LINES = ("source", "setting", "tau", "tau_rule_met", *FROM_REPORT.values(),
                "deviations", "abgd_found")


def _curve_lines(tc: dict) -> list[str]:
    """The budget curve, one line per quantity: the seed mean at each budget."""
    lines = [f"{'tau curve':>32s}: " + " ".join(f"{t:>6g}" for t in tc["tau"])]
    for k in CURVE_KEYS:
        lines.append(f"{k:>32s}: " + " ".join(f"{s['mean']:>6.3g}" for s in tc[k]))
    return lines


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"tau rule: {summary['tau_rule']}"]
    if "weights" in summary:
        w = summary["weights"]
        lines += [f"{k:>32s}: {w[k]}" for k in dict.fromkeys(REPORT_LINES)]
        if "heads" in w:
            lines.append(f"{'helpers in harmless heads':>32s}: "
                         f"{w['heads']['helpers_in_unimportant_heads']}")
    for name, s in summary.items():
        if not (isinstance(s, dict) and "per_seed" in s):
            continue
        lines.append(f"{name}:")
        # tau values span decades: per seed as written, not to 2 decimals
        lines.append(f"{'tau':>32s}: {s['tau']['per_seed']}")
        lines += [f"{k:>32s}: {format_stats(s[k])}" for k in ORDER[1:] if k in s]
        if "canonical_recovered" in s:
            lines.append(f"{'canonical_recovered':>32s}: {s['canonical_recovered']}")
        lines += _curve_lines(s["tau_curve"])
        for i, r in enumerate(s["per_seed"]):
            lines.append(f"{'seed ' + str(s['seeds'][i]):>32s}: canonical "
                         f"{[u for u, k in r['units'].items() if k != 'helper']} helpers "
                         f"{[u for u, k in r['units'].items() if k == 'helper']}")
            if "heads" in r:
                lines.append(f"{'':>32s}  helpers in heads whose ablation is harmless: "
                             f"{r['heads']['helpers_in_unimportant_heads']}")
    return "\n".join(lines)
