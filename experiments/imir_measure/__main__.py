"""The numbers quoted in docs/imir.md (``experiments.imir_measure.measure``) as JSON:
``python -m experiments.imir_measure [confinement|ode|abgd|layout ...]`` (default: all four)."""
from __future__ import annotations

import json
import sys
import time

from experiments.imir_measure import measure

JOBS = {"confinement": measure.confinement, "ode": measure.ode_vs_gd, "abgd": measure.abgd_vs_full,
        "layout": measure.layout_leak}


def main(argv: list[str]) -> None:
    for name in argv or list(JOBS):
        if name not in JOBS:
            raise SystemExit(f"job {name!r}: allowed {sorted(JOBS)}")
        t = time.time()
        res = JOBS[name]()
        res["seconds"] = time.time() - t
        print(json.dumps({name: res}, indent=1, default=float), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
