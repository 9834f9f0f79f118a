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
    if not names:  # one representative per streaming unit: its first positive testbench
        firsts: dict[str, str] = {}
        for tb in TESTBENCHES.values():
            if not tb.expect_fail and tb.family == "bfp":  # the units whose length is `blocks`
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
    lines += ["", *sched_bench(rows)]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bench.md").write_text("\n".join(lines) + "\n")
    (OUT / "bench.json").write_text(json.dumps(rows, indent=1))
    print(f"bench: wrote {OUT}/bench.md")
    return 0


def sched_bench(rows: list[dict]) -> list[str]:
    """The sched family: the golden executor's speed on a dense random program, and the
    ring's simulation speed (whole run: load + program; the trace monitor samples every
    cycle, so this is the per-edge Python rate, not the hardware's)."""
    import time

    from lockstep.models import sched
    from lockstep.models.sched.params import FabricParams

    p = FabricParams(sd=1024)
    prog = sched.random_program(3, p, n_txn=400, span=2000, max_len=16)
    t0 = time.perf_counter()
    golden = sched.execute(prog)
    dt = time.perf_counter() - t0
    out = ["| sched | what | cycles | wall s | cycles/s |", "|---|---|---|---|---|",
           f"| executor | 3 tiles, {len(golden.trace)} events | {golden.cycles} | {dt:.3f} | {golden.cycles / dt:,.0f} |"]
    rows.append({"test": "sched_executor", "sim": "python", "cycles": golden.cycles, "wall": dt,
                 "total_rate": golden.cycles / dt})
    print(out[-1], flush=True)
    for sim in SIMULATORS:
        run("sched_random", sim, seed=1)  # build outside the timing
        r = run("sched_random", sim, seed=1)
        rows.append({"test": "sched_random", "sim": sim, "cycles": r.cycles, "wall": r.wall,
                     "total_rate": r.cycles / r.wall})
        out.append(f"| sched_random | {sim} | {r.cycles} | {r.wall:.2f} | {r.cycles / r.wall:,.0f} |")
        print(out[-1], flush=True)
    return out


if __name__ == "__main__":
    sys.exit(main())
