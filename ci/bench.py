"""`make bench`: simulated cycles per second, per unit (or named testbenches) and simulator.

Each testbench runs twice, with SMALL and LARGE transactions, no idle cycles and no
back-pressure (one transaction per clock). Reported:

* total rate = cycles / wall seconds of the LARGE run (start-up included);
* steady rate = (cycles_LARGE - cycles_SMALL) / (wall_LARGE - wall_SMALL): the marginal
  speed with simulator start-up, Python import and build checks subtracted.

Writes build/reports/bench/bench.{md,json}. Timing is measured here, never asserted in
a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lockstep.verif.registry import SIMULATORS, TESTBENCHES
from lockstep.verif.runner import run

OUT = Path(__file__).resolve().parent.parent / "build" / "reports" / "bench"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", type=int, default=500)
    ap.add_argument("--large", type=int, default=5500)
    ap.add_argument("--tests", default="", help="comma-separated testbench names (default: one per unit)")
    a = ap.parse_args()
    names = [t for t in a.tests.split(",") if t]
    if not names:  # one representative per unit: its first registered positive testbench
        firsts: dict[str, str] = {}
        for tb in TESTBENCHES.values():
            if not tb.expect_fail:
                firsts.setdefault(tb.toplevel, tb.name)
        names = list(firsts.values())
    rows = []
    lines = ["| testbench | sim | cycles | wall s | total cycles/s | steady cycles/s |", "|---|---|---|---|---|---|"]
    opts = {"idle": 0.0, "backpressure": 0.0}
    for name in names:
        for sim in SIMULATORS:
            run(name, sim, seed=1, opts={**opts, "blocks": 10})  # build outside the timing
            small = run(name, sim, seed=1, opts={**opts, "blocks": a.small})
            large = run(name, sim, seed=1, opts={**opts, "blocks": a.large})
            if not (small.ok and large.ok):
                print(f"bench: {name} on {sim} failed: {large.results}", file=sys.stderr)
                return 1
            steady = (large.cycles - small.cycles) / max(large.wall - small.wall, 1e-9)
            row = {"test": name, "sim": sim, "cycles": large.cycles, "wall": large.wall,
                   "total_rate": large.cycles / large.wall, "steady_rate": steady}
            rows.append(row)
            lines.append(f"| {name} | {sim} | {large.cycles} | {large.wall:.2f} | "
                         f"{row['total_rate']:,.0f} | {steady:,.0f} |")
            print(lines[-1], flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bench.md").write_text("\n".join(lines) + "\n")
    (OUT / "bench.json").write_text(json.dumps(rows, indent=1))
    print(f"bench: wrote {OUT}/bench.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
