"""`make bench`: simulation speed per mode (per-edge, throughput, raw) and golden-model speed.

For every throughput testbench of the quick tier (or ``--tests``), on each simulator:

* ``edge``: its per-edge twin (the same DUT, parameters and unit; Python on every clock
  edge), run with ``--edge-small`` and ``--edge-large`` transactions;
* ``throughput``: the throughput testbench (the generated harness; Python once per
  chunk), run with ``--tp-small`` and the quick tier's depth (100,000 transactions on
  Verilator, 10,000 on Icarus);
* ``raw``: the same harness, RTL and stimulus with no cocotb
  (:func:`lockstep.verif.raw.run_raw`: Verilator's own ``--binary`` main loop, or
  ``vvp``), timing the simulator alone, records checked afterwards.

The sched fabric's, the GEMM tile's, the STU's and the host top's throughput testbenches
run whole programs, jobs or episodes:
their per-edge twin runs once at its registered length, their throughput and raw runs a
tenth of the quick tier's programs or jobs, then all of them. The streaming units run with no idle cycles and no back-pressure, so a
transaction is a cycle. ``cycles_per_s`` is
cycles over the whole run's wall time (start-up included, what a user waits for);
``steady_cycles_per_s`` is the marginal rate between the small and the large run (start-up
and build checks subtracted), the figure the targets are about.

Then each family's main golden model in elements, cycles or tasks per second, with
``bfp.mx_quantize`` beside ``ml_dtypes``' own cast to the same element type.

Writes build/reports/bench/bench.json (a list of records, see :data:`FIELDS`), bench.md
(the tables) and bench.png. Timing is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from lockstep.verif.raw import run_raw
from lockstep.verif.registry import SIMULATORS, TESTBENCHES
from lockstep.verif.runner import run, run_opts

OUT = Path(__file__).resolve().parent.parent / "build" / "reports" / "bench"

#: The fields of a simulation record in bench.json.
FIELDS = ("testbench", "family", "mode", "sim", "cycles", "transactions", "wall_s", "cycles_per_s",
          "steady_cycles_per_s", "python_s")

_FLAT = {"idle": 0.0, "backpressure": 0.0}


def _record(tb: str, mode: str, sim: str, cycles: int, txns: int, wall: float, steady: float | None,
            python_s: float | None = None) -> dict[str, Any]:
    return {"testbench": tb, "family": TESTBENCHES[tb].family, "mode": mode, "sim": sim, "cycles": int(cycles),
            "transactions": int(txns), "wall_s": round(wall, 4), "cycles_per_s": round(cycles / wall, 1),
            "steady_cycles_per_s": None if steady is None else round(steady, 1),
            "python_s": None if python_s is None else round(python_s, 3)}


def _pair(name: str, sim: str, small: int, large: int, key: str = "blocks") -> dict[str, Any]:
    """Run ``name`` with ``small`` then ``large`` transactions (``key``: ``blocks``, or
    ``programs``, ``jobs`` or ``episodes`` for a harness of whole episodes); the large
    run's record."""
    flat = _FLAT if key == "blocks" else {}
    run(name, sim, seed=1, opts={**flat, key: min(small, 64)})  # build outside the timing
    a = run(name, sim, seed=1, opts={**flat, key: small})
    b = run(name, sim, seed=1, opts={**flat, key: large})
    for r in (a, b):
        if not r.ok:
            raise RuntimeError(f"bench: {name} on {sim} failed: {r.results}")
    steady = (b.cycles - a.cycles) / max(b.wall - a.wall, 1e-9)
    py = sum(b.summary.get("python_s", {}).values()) if b.summary.get("python_s") else None
    return _record(name, TESTBENCHES[name].mode, sim, b.cycles, int(b.summary.get("transactions", large)), b.wall,
                   steady, py)


def _single(name: str, sim: str) -> dict[str, Any]:
    """One per-edge run (at its registered length) of the twin of a throughput testbench
    that runs whole programs or jobs; no steady rate."""
    run(name, sim, seed=1)  # build outside the timing
    r = run(name, sim, seed=1)
    if not r.ok:
        raise RuntimeError(f"bench: {name} on {sim} failed: {r.results}")
    return _record(name, "edge", sim, r.cycles, int(r.summary.get("transactions", 0)), r.wall, None)


def simulation(names: list[str], sims: list[str], a: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        tb = TESTBENCHES[name]
        edge = name.removesuffix("_tp")
        for sim in sims:
            o = run_opts(tb, sim)
            key = next((k for k in ("programs", "jobs", "episodes") if k in o), "blocks")
            depth = int(o.get(key, 10_000))
            small = a.tp_small if key == "blocks" else max(1, depth // 10)
            rows.append(_pair(edge, sim, a.edge_small, a.edge_large) if key == "blocks" else _single(edge, sim))
            _show(rows[-1])
            rows.append(_pair(name, sim, small, depth, key))
            _show(rows[-1])
            lo = run_raw(name, sim, seed=1, opts={**(_FLAT if key == "blocks" else {}), key: small})
            big = run_raw(name, sim, seed=1, opts={**(_FLAT if key == "blocks" else {}), key: depth})
            for r in (lo, big):
                if r.mismatches:
                    raise RuntimeError(f"bench: raw {name} on {sim}: {r.mismatches} mismatches ({r.folder})")
            steady = (big.cycles - lo.cycles) / max(big.wall_s - lo.wall_s, 1e-9)
            rows.append(_record(name, "raw", sim, big.cycles, big.transactions, big.wall_s, steady))
            _show(rows[-1])
    return rows


def _show(r: dict[str, Any]) -> None:
    print(f"bench: {r['testbench']:28s} {r['mode']:10s} {r['sim']:9s} {r['cycles']:>9,d} cycles "
          f"{r['wall_s']:7.2f} s  {r['cycles_per_s']:>11,.0f} /s  steady {r['steady_cycles_per_s'] or 0:>11,.0f} /s",
          flush=True)


def _rate(fn: Callable[[], Any], units: int, reps: int = 5) -> float:
    """Best of ``reps`` runs of ``fn``: ``units`` per second."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return units / best


def models() -> list[dict[str, Any]]:
    """Each family's main golden model, in elements or transactions per second."""
    import ml_dtypes

    from lockstep.models import bfp, gemm, sched, sparse
    from lockstep.models.bfp.params import BfpFormat, MxParams
    from lockstep.models.host import pipe as host_pipe
    from lockstep.models.sched.params import FabricParams

    rng = np.random.default_rng(1)
    out: list[dict[str, Any]] = []

    def add(family: str, model: str, unit: str, rate: float, anchor: str | None = None, anchor_rate: float | None = None):
        out.append({"family": family, "model": model, "unit": unit, "per_s": round(rate, 1), "anchor": anchor,
                    "anchor_per_s": None if anchor_rate is None else round(anchor_rate, 1),
                    "ratio": None if anchor_rate is None else round(rate / anchor_rate, 4)})
        ratio = f" ({rate / anchor_rate:.3f}x {anchor})" if anchor_rate else ""
        print(f"bench: model {family:6s} {model:34s} {rate:>14,.0f} {unit}/s{ratio}", flush=True)

    x = (rng.standard_normal(1 << 20) * 4).astype(np.float32)
    p = MxParams("fp8_e4m3", 32)
    add("bfp", "mx_quantize fp8_e4m3 block 32", "elements", _rate(lambda: bfp.mx_quantize(x, p.elem, p.block), x.size),
        "ml_dtypes float8_e4m3fn cast", _rate(lambda: x.astype(ml_dtypes.float8_e4m3fn), x.size))
    fmt = BfpFormat(w=8, e=5, n=16, rounding="rne")
    blocks = x.view(np.uint32).reshape(-1, 16)
    add("bfp", "quantize w8 e5 n16 rne", "elements", _rate(lambda: bfp.quantize(blocks, fmt), x.size))
    # the statistics selector (sequential window state): claim-29 widths, e3 changing every 500 vectors
    sf = BfpFormat(w=16, e=5, n=16, stat_log2_win=10, k_sigma=3)
    acc = np.rint(rng.standard_normal((100_000, 16)) * 4096).astype(np.int64)
    e3 = np.repeat(rng.integers(-20, 20, size=200), 500)
    add("bfp", "StatsSelector.run w16 n16 window 1024", "vectors",
        _rate(lambda: bfp.StatsSelector(sf).run(acc, e3), len(acc), reps=3))

    prog = sched.random_program(3, FabricParams(sd=1024), n_txn=400, span=2000, max_len=16)
    cycles = sched.execute(prog).cycles
    add("sched", "execute (3 tiles, 400 transfers)", "cycles", _rate(lambda: sched.execute(prog), cycles, reps=3))

    # the GEMM tile: the quick tier's random jobs (12 on the small cache), each from the
    # memory image it starts from, cold cache; simulated tile cycles per second
    from lockstep.verif.gemm.jobs import make_jobs as gemm_jobs

    gp = TESTBENCHES["gemm_tile_random"].params
    mem, cases = np.zeros(gp.mem_elems, dtype=np.int64), []
    for job in gemm_jobs("random", gp, np.random.default_rng(1), 12):
        for lo, vals in job.loads:
            mem[lo:lo + len(vals)] = vals
        if job.golden is not None:
            cases.append((job.cfg, mem.copy(), job.golden.cycles))
            mem = job.golden.mem.copy()
    add("gemm", "run (12 random jobs, 16x4x32 B cache)", "cycles",
        _rate(lambda: [gemm.run(cfg, m, gp) for cfg, m, _ in cases], sum(c for *_, c in cases), reps=3))

    # sparse: the compressed format's encoder on 64 x 64 maps at 50 % density
    maps = [(rng.integers(-8, 8, (64, 64)) * (rng.random((64, 64)) < 0.5)).astype(np.int64) for _ in range(16)]
    add("sparse", "encode 64x64 maps, 50 % non-zero", "elements",
        _rate(lambda: [sparse.encode(m) for m in maps], 16 * 64 * 64))

    # host: the pipelining model (stream mode, random step times), tasks per second
    times = {"pre": ("exp", 3.0), "kernel": ("exp", 5.0), "post": ("exp", 2.0), "dma_wr": 1.0, "dma_rd": 1.0}
    add("host", "pipe.simulate stream, 2,000 tasks", "tasks",
        _rate(lambda: host_pipe.simulate("stream", 2000, times, n_kernels=2), 2000, reps=3))
    return out


def memory(counts: list[int], name: str = "bfp_quantize_patent_tp", sim: str = "verilator") -> list[dict[str, Any]]:
    """Peak resident memory of throughput runs of growing length (the simulator and
    Python share the process): flat when stimulus and records are streamed."""
    out = []
    for n in counts:
        r = run(name, sim, seed=1, opts={"blocks": n})
        if not r.ok:
            raise RuntimeError(f"bench: {name} with {n} transactions failed: {r.results}")
        out.append({"testbench": name, "sim": sim, "transactions": int(r.summary["transactions"]),
                    "max_rss_mb": r.summary.get("max_rss_mb"), "wall_s": round(r.wall, 2)})
        print(f"bench: memory {name} {n:>11,d} transactions: peak {out[-1]['max_rss_mb']} MB, {r.wall:.1f} s", flush=True)
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tbs = sorted({r["testbench"].removesuffix("_tp") for r in rows})
    fig, axes = plt.subplots(1, len(SIMULATORS), figsize=(6 * len(SIMULATORS), 4), squeeze=False)
    for ax, sim in zip(axes[0], SIMULATORS):
        for k, mode in enumerate(("edge", "throughput", "raw")):
            vals = [next((r["steady_cycles_per_s"] or r["cycles_per_s"] for r in rows if r["sim"] == sim
                          and r["mode"] == mode and r["testbench"].removesuffix("_tp") == t), 0) for t in tbs]
            ax.bar(np.arange(len(tbs)) + (k - 1) * 0.27, vals, 0.27, label=mode)
        ax.set_yscale("log")
        ax.set_xticks(np.arange(len(tbs)), tbs, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("steady simulated cycles/s")
        ax.set_title(sim)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(rows: list[dict[str, Any]], model_rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| testbench | sim | mode | cycles | transactions | wall s | cycles/s | steady cycles/s | Python s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['testbench']} | {r['sim']} | {r['mode']} | {r['cycles']:,} | {r['transactions']:,} | "
                     f"{r['wall_s']:.2f} | {r['cycles_per_s']:,.0f} | {r['steady_cycles_per_s'] or 0:,.0f} | "
                     f"{_opt(r['python_s'], '{:.2f}')} |")
    lines += ["", "| throughput vs raw | sim | steady ratio |", "|---|---|---|"]
    for r in rows:
        if r["mode"] == "throughput":
            raw = next(x for x in rows if x["mode"] == "raw" and x["testbench"] == r["testbench"] and x["sim"] == r["sim"])
            lines.append(f"| {r['testbench']} | {r['sim']} | "
                         f"{(r['steady_cycles_per_s'] or 0) / max(raw['steady_cycles_per_s'] or 1, 1):.2f}x |")
    lines += ["", "| family | model | per second | anchor | ratio |", "|---|---|---|---|---|"]
    for m in model_rows:
        lines.append(f"| {m['family']} | {m['model']} | {m['per_s']:,.0f} {m['unit']} | {m['anchor'] or ''} "
                     f"{_opt(m['anchor_per_s'], '({:,.0f})')} | {_opt(m['ratio'], '{:.3f}x')} |")
    return lines


def _opt(v: float | None, fmt: str) -> str:
    return "" if v is None else fmt.format(v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tests", default="", help="comma-separated throughput testbenches (default: the quick tier's)")
    ap.add_argument("--sims", default=",".join(SIMULATORS))
    ap.add_argument("--edge-small", type=int, default=500)
    ap.add_argument("--edge-large", type=int, default=3000)
    ap.add_argument("--tp-small", type=int, default=4096)
    ap.add_argument("--no-models", action="store_true")
    ap.add_argument("--memory", default="100000,1000000",
                    help="transaction counts of bfp_quantize_patent_tp runs whose peak memory is reported ('' for none)")
    a = ap.parse_args()
    names = [t for t in a.tests.split(",") if t] or [
        tb.name for tb in TESTBENCHES.values() if tb.mode == "throughput" and tb.tier == "quick" and not tb.expect_fail]
    for n in names:
        if n not in TESTBENCHES or TESTBENCHES[n].mode != "throughput":
            print(f"bench: {n!r} is not a registered throughput testbench", file=sys.stderr)
            return 2
    rows = simulation(names, [s for s in a.sims.split(",") if s], a)
    model_rows = [] if a.no_models else models()
    mem_rows = memory([int(n) for n in a.memory.split(",") if n])
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bench.json").write_text(json.dumps(rows, indent=1) + "\n")
    (OUT / "models.json").write_text(json.dumps(model_rows, indent=1) + "\n")
    (OUT / "memory.json").write_text(json.dumps(mem_rows, indent=1) + "\n")
    mem_lines = ["", "| run | transactions | peak resident MB | wall s |", "|---|---|---|---|"] + [
        f"| {m['testbench']} on {m['sim']} | {m['transactions']:,} | {m['max_rss_mb']} | {m['wall_s']:.1f} |" for m in mem_rows]
    (OUT / "bench.md").write_text("\n".join(table(rows, model_rows) + (mem_lines if mem_rows else [])) + "\n")
    plot(rows, OUT / "bench.png")
    print(f"bench: wrote {OUT}/bench.json, bench.md, bench.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
