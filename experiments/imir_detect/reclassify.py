"""Re-run only the naming step (units, kinds, what they compute, circuits; ``circuits`` and
``roles``) on the kept sets a finished imir_detect run saved, without training or eliminating:

    python -m experiments.imir_detect.reclassify RUN_DIR

reads ``RUN_DIR/config.json`` and ``summary.json`` (each setting's basis is rebuilt from its
config; a run from before the causal/offsets/positions keys is the legacy model, ``run.LEGACY``),
writes ``RUN_DIR/reclassified.json`` (per setting and seed: kinds, descriptions, circuits and the
counts of the summary) and prints one line per seed.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Sequence

from mechjax.analysis.imir.detection import circuits as cc
from mechjax.analysis.imir.manifold.basis import Basis
from mechjax.models.config import ConfigError
from mechjax.io import write_json

from experiments.imir_detect import run
from experiments.imir_detect.schema import SETTINGS


def name_kept(basis: Basis, kept: Sequence[str], causal: bool) -> dict:
    """The naming of one kept set (coordinate names as ``Basis.names``)."""
    index = {n: i for i, n in enumerate(basis.names())}
    missing = [n for n in kept if n not in index]
    if missing:
        raise ConfigError(f"kept coordinate {missing[0]!r} is not in the setting's basis "
                          f"({basis.size} coordinates): the run used another basis")
    us = cc.units(basis, [index[n] for n in kept])
    t = basis.frame.n_pos
    kinds = cc.classify(us, t, causal)
    circs, unread = cc.circuits(basis, us, causal)
    rows = cc.circuit_rows(circs, kinds)
    return {"units": kinds, "what": cc.describe(us, t, causal), "circuits": rows,
            "unread": unread, "n_canonical": sum(k != "helper" for k in kinds.values()),
            "n_helpers": sum(k == "helper" for k in kinds.values()),
            "n_circuits_with_4_canonical": sum(r["n_canonical"] >= 4 for r in rows),
            "max_hops": max((r["hops"] for r in rows), default=0)}


def reclassify(workdir: str) -> dict:
    paths = [os.path.join(workdir, f) for f in ("config.json", "summary.json")]
    for p in paths:
        if not os.path.exists(p):
            raise ConfigError(f"{p}: not found; reclassify reads a finished imir_detect run")
    cfg, summary = (json.load(open(p)) for p in paths)
    out = {}
    for name in SETTINGS:
        if name not in summary:
            continue
        s = {**run.LEGACY, **cfg[name]}
        basis = run.setting(name, s)["basis"]
        out[name] = {str(seed): name_kept(basis, r["kept"], s["causal"])
                     for seed, r in zip(summary[name]["seeds"], summary[name]["per_seed"])}
    write_json(os.path.join(workdir, "reclassified.json"), out)
    return out


def main(argv: Sequence[str]) -> None:
    if len(argv) != 1:
        raise SystemExit("usage: python -m experiments.imir_detect.reclassify RUN_DIR")
    try:
        out = reclassify(argv[0])
    except ConfigError as err:
        raise SystemExit(f"error: {err}") from None
    for name, seeds in out.items():
        for seed, r in seeds.items():
            print(f"{name} seed {seed}: {r['n_canonical']} canonical, {r['n_helpers']} helpers, "
                  f"{r['n_circuits_with_4_canonical']} circuits with 4 canonical, "
                  f"max hops {r['max_hops']}; "
                  f"canonical {[u for u, k in r['units'].items() if k != 'helper']}")


if __name__ == "__main__":
    main(sys.argv[1:])
