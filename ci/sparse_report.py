"""`make sparse-report`: the sparse family's measured claims (docs/sparse.md section 10),
measured in simulation.

1. Compute cycles and speedup over dense mode at 0, 50, 75, 90 and 95 % activation
   sparsity, with a dense (WNZ = K^2) and a sparse (WNZ = K^2 // 2) kernel: the STU
   testbenches ``sparse_stu_sweep`` (u = 1) and ``sparse_stu_u2_sweep`` (u = 2) run each
   sparse-mode job next to its dense-mode twin (the same map and kernel, zeros
   included) and check it against the golden model; this script reads the counters the
   hardware reported (``cyc_compute``, and start-to-done) and puts the ideal
   ``K^2 ceil(HW/p) / (WNZ ceil(q/p))`` next to the measured speedup.
2. Cluster makespan (the largest unit ``cyc_compute`` of a pass) with the balanced
   partitioner against the equal grid, on a fixed set of skewed maps (fixed seed): the
   cluster testbench's ``makespan`` scenario runs every map twice on ``stc_cluster``;
   mean and worst over the set, from the hardware's counters.

Every run is a registered testbench (its scoreboard must pass); a measured counter that
differs from the model fails the report. Writes build/reports/sparse/{sparse_report.md,
sparse_report.json, speedup.png, makespan.png}.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from lockstep.verif.registry import get
from lockstep.verif.runner import run

OUT = Path(__file__).resolve().parent.parent / "build" / "reports" / "sparse"
SWEEPS = {1: "sparse_stu_sweep", 2: "sparse_stu_u2_sweep"}
CLUSTER = "sparse_cluster_balance"
_KIND = re.compile(r"sweep(\d+)(-half)?(-dense)?$")


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _run(name: str, sim: str, seed: int, opts: dict[str, Any] | None = None) -> dict[str, Any]:
    res = run(name, sim, seed=seed, opts=opts or {})
    print(f"[sparse-report] {res.line()}", flush=True)
    if not res.ok:
        raise SystemExit(f"sparse-report: {name} on {sim} failed; see {res.results}/sim.log ({res.repro()})")
    return res.summary


def sweep_rows(perf: list[dict[str, Any]], p: int, k: int) -> list[dict[str, Any]]:
    """One row per (kernel, sparsity): the sparse job's and its dense twin's counters."""
    jobs = {}
    for row in perf:
        m = _KIND.match(row["kind"])
        if m:
            jobs[(int(m.group(1)), bool(m.group(2)), bool(m.group(3)))] = row
    rows = []
    for half in (False, True):
        for pct in sorted({key[0] for key in jobs}):
            s, d = jobs[(pct, half, False)], jobs[(pct, half, True)]
            q, wnz, hw = s["q"], s["wnz"], s["hw"]
            ideal_sparse = wnz * _ceil(q, p) if q and wnz else 0
            ideal_dense = k * k * _ceil(hw, p)
            rows.append({
                "weights": "sparse" if half else "dense", "sparsity": pct, "q": q, "hw": hw, "wnz": wnz,
                "cyc_sparse": s["cyc_compute"], "cyc_dense": d["cyc_compute"],
                "cycles_sparse": s["cycles"], "cycles_dense": d["cycles"],
                "speedup": d["cyc_compute"] / s["cyc_compute"] if s["cyc_compute"] else float("inf"),
                "speedup_end_to_end": d["cycles"] / s["cycles"],
                "ideal": ideal_dense / ideal_sparse if ideal_sparse else float("inf"),
                "ideal_sparse": ideal_sparse, "ideal_dense": ideal_dense,
                "bound": _ceil(wnz * q, p),
            })
    return rows


def makespan_rows(perf: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per map: the balanced (or fallback) pass and the equal-grid pass."""
    maps: dict[int, dict[str, Any]] = {}
    for row in perf:
        e = maps.setdefault(row["tag"]["map"], {"map": row["tag"]["map"], "grid": row["tag"]["grid"]})
        side = "equal" if row["part"] == "equal" else "balanced"
        e[side] = row["makespan"]
        e[f"{side}_model"] = row["makespan_model"]
        e[f"{side}_cycles"] = row["cluster_cycles"]
        e[f"{side}_loads"] = row["loads"]
        if side == "balanced":
            e["fallback"] = row["part"] == "fallback"
    return [maps[i] for i in sorted(maps) if "equal" in maps[i] and "balanced" in maps[i]]


def _fmt(x: float) -> str:
    return "inf" if x == float("inf") else f"{x:.2f}"


def sweep_table(rows: list[dict[str, Any]], u: int, p: int, k: int) -> list[str]:
    out = [f"### STU, u = {u} (p = {p}, K = {k}, {rows[0]['hw']} positions per map)", "",
           "| kernel | WNZ | zeros % | q | cyc_compute sparse | dense | speedup | ideal K^2 ceil(HW/p) / (WNZ ceil(q/p)) "
           "| ceil(WNZ q/p) | start-to-done sparse | dense | end-to-end speedup |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['weights']} | {r['wnz']} | {r['sparsity']} | {r['q']} | {r['cyc_sparse']} | {r['cyc_dense']} | "
                   f"{_fmt(r['speedup'])} | {_fmt(r['ideal'])} | {r['bound']} | {r['cycles_sparse']} | "
                   f"{r['cycles_dense']} | {_fmt(r['speedup_end_to_end'])} |")
    return out + [""]


def makespan_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    red = [1 - r["balanced"] / r["equal"] if r["equal"] else 0.0 for r in rows]
    return {
        "maps": n,
        "mean_balanced": sum(r["balanced"] for r in rows) / n,
        "mean_equal": sum(r["equal"] for r in rows) / n,
        "worst_balanced": max(r["balanced"] for r in rows),
        "worst_equal": max(r["equal"] for r in rows),
        "mean_reduction_pct": 100 * sum(red) / n,
        "least_reduction_pct": 100 * min(red),
        "most_reduction_pct": 100 * max(red),
        "better": sum(r["balanced"] < r["equal"] for r in rows),
        "same": sum(r["balanced"] == r["equal"] for r in rows),
        "worse": sum(r["balanced"] > r["equal"] for r in rows),
        "fallbacks": sum(bool(r.get("fallback")) for r in rows),
        "mean_cycles_balanced": sum(r["balanced_cycles"] for r in rows) / n,
        "mean_cycles_equal": sum(r["equal_cycles"] for r in rows) / n,
    }


def check(sweeps: dict[int, list[dict[str, Any]]], ms: list[dict[str, Any]]) -> list[str]:
    """Measured counters against the models (u = 1: the ideal formula exactly)."""
    bad = []
    for u, rows in sweeps.items():
        for r in rows:
            if r["cyc_dense"] != r["ideal_dense"]:
                bad.append(f"u = {u}: dense-mode cyc_compute {r['cyc_dense']} != K^2 ceil(HW/p) = {r['ideal_dense']}")
            if u == 1 and r["cyc_sparse"] != r["ideal_sparse"]:
                bad.append(f"u = 1, {r['weights']} kernel, {r['sparsity']}%: cyc_compute {r['cyc_sparse']} != "
                           f"WNZ ceil(q/p) = {r['ideal_sparse']}")
            if u == 2 and r["cyc_sparse"] < r["bound"]:
                bad.append(f"u = 2, {r['weights']} kernel, {r['sparsity']}%: {r['cyc_sparse']} rounds < ceil(WNZ q/p)")
    for r in ms:
        for side in ("balanced", "equal"):
            if r[side] != r[f"{side}_model"]:
                bad.append(f"map {r['map']} {side}: makespan {r[side]} != model {r[f'{side}_model']}")
        if r["balanced"] > r["equal"]:
            bad.append(f"map {r['map']}: balanced makespan {r['balanced']} > equal grid {r['equal']} (fallback broken)")
    return bad


def plot(sweeps: dict[int, list[dict[str, Any]]], ms: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, kern in zip(axes, ("dense", "sparse")):
        for u, rows in sweeps.items():
            rs = [r for r in rows if r["weights"] == kern]
            xs = [r["sparsity"] for r in rs]
            if u == 1:
                ax.plot(xs, [r["ideal"] for r in rs], "k-", lw=1, label="ideal K^2 ceil(HW/p) / (WNZ ceil(q/p))")
            ax.plot(xs, [r["speedup"] for r in rs], "o" if u == 1 else "s", ms=6, mfc="none",
                    label=f"measured compute, u = {u}")
            ax.plot(xs, [r["speedup_end_to_end"] for r in rs], "--", marker="." , label=f"measured start-to-done, u = {u}")
        ax.set_yscale("log", base=2)
        ax.set_xlabel("activation sparsity (% zeros)")
        ax.set_title(f"{kern} kernel (WNZ = {rs[0]['wnz']})")
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("speedup over dense mode")
    axes[0].legend(fontsize=7)
    fig.suptitle("STU: sparse-mode speedup over dense mode, measured in simulation")
    fig.tight_layout()
    fig.savefig(out / "speedup.png", dpi=120)
    plt.close(fig)

    fig, axes = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    xs = list(range(len(ms)))
    for ax, key, what in ((axes[0], "", "makespan (largest unit cyc_compute)"),
                          (axes[1], "_cycles", "cluster cycles (start to cluster_done)")):
        ax.bar([x - 0.2 for x in xs], [r["equal" + key] for r in ms], 0.4, color="C1", label="equal grid")
        ax.bar([x + 0.2 for x in xs], [r["balanced" + key] for r in ms], 0.4, color="C0",
               label="balanced partition")
        ax.set_ylabel("cycles")
        ax.set_title(what, fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    axes[1].set_xticks(xs, [f"{r['map']}{'*' if r.get('fallback') else ''}" for r in ms], fontsize=7)
    axes[1].set_xlabel("skewed map (* : the partitioner fell back to the equal grid)")
    fig.suptitle(f"stc_cluster: balanced partitioner vs equal grid on {len(ms)} skewed maps, measured in simulation")
    fig.tight_layout()
    fig.savefig(out / "makespan.png", dpi=120)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", default="verilator", help="comma-separated simulators (the first is reported; the "
                                                         "others must measure the same)")
    ap.add_argument("--seed", type=int, default=2026, help="seed of every run (the fixed map set)")
    ap.add_argument("--maps", type=int, default=24, help="skewed maps of the makespan set")
    a = ap.parse_args()
    sims = [s for s in a.sims.split(",") if s]
    results: dict[str, Any] = {}
    for sim in sims:
        sw = {}
        for u, name in SWEEPS.items():
            fmt = get(name).params
            sw[u] = sweep_rows(_run(name, sim, a.seed)["perf"], fmt.p, fmt.kmax)
        ms = makespan_rows(_run(CLUSTER, sim, a.seed, {"scenario": "makespan", "jobs": 2 * a.maps})["perf"])
        results[sim] = {"sweeps": sw, "makespan": ms}
    main_sim = sims[0]
    sweeps, ms = results[main_sim]["sweeps"], results[main_sim]["makespan"]
    problems = check(sweeps, ms)
    for sim in sims[1:]:
        if json.dumps(results[sim], sort_keys=True) != json.dumps(results[main_sim], sort_keys=True):
            problems.append(f"{sim} measured different counters than {main_sim}")
    cl = get(CLUSTER).params
    summ = makespan_summary(ms)
    lines = [f"# Sparse family: measured claims ({main_sim}" + (f", cross-checked on {', '.join(sims[1:])}" if sims[1:]
                                                                 else "") + f", seed {a.seed})", "",
             "## Compute cycles and speedup over dense mode", "",
             "Measured: the STU's `cyc_compute` counter (compute rounds) and start-to-done cycles (with the drain of "
             "the (H+K-1) x (W+K-1) output map), sparse mode next to the dense-mode twin job. Ideal: the spec's "
             "K^2 ceil(HW/p) / (WNZ ceil(q/p)); u = 2 rounds are bounded below by ceil(WNZ q / p).", ""]
    for u, rows in sweeps.items():
        fmt = get(SWEEPS[u]).params
        lines += sweep_table(rows, u, fmt.p, fmt.kmax)
    lines += ["## Cluster makespan: balanced partitioner vs equal grid", "",
              f"`stc_cluster` with m = {cl.m} units (p = {cl.p}), {summ['maps']} skewed {cl.hmax} x {cl.wmax} maps "
              f"(fixed seed {a.seed}), {cl.m} cells ({' x '.join(map(str, ms[0]['grid']))}), a full "
              f"{cl.kmax} x {cl.kmax} kernel per map "
              "(WNZ = K^2); makespan = the largest unit `cyc_compute` of the pass (measured), cluster cycles = "
              "start to `cluster_done` (compute, pipeline and the drain of each unit's whole (h+K-1) x (w+K-1) "
              "footprint, which follows the cell's area, not its non-zeros).", "",
              "| | balanced | equal grid |", "|---|---|---|",
              f"| mean makespan (cycles) | {summ['mean_balanced']:.1f} | {summ['mean_equal']:.1f} |",
              f"| worst makespan (cycles) | {summ['worst_balanced']} | {summ['worst_equal']} |",
              f"| mean cluster cycles | {summ['mean_cycles_balanced']:.1f} | {summ['mean_cycles_equal']:.1f} |", "",
              f"Makespan reduction per map: mean {summ['mean_reduction_pct']:.1f} %, least "
              f"{summ['least_reduction_pct']:.1f} %, most {summ['most_reduction_pct']:.1f} %; balanced better on "
              f"{summ['better']}, equal on {summ['same']}, worse on {summ['worse']} maps; "
              f"{summ['fallbacks']} fallbacks to the equal grid.", "",
              "| map | loads balanced | makespan | loads equal | makespan |", "|---|---|---|---|---|"]
    for r in ms:
        lines.append(f"| {r['map']}{' (fallback)' if r.get('fallback') else ''} | {r['balanced_loads']} | "
                     f"{r['balanced']} | {r['equal_loads']} | {r['equal']} |")
    lines += ["", "Every measured counter equals the model." if not problems else "## PROBLEMS", ""]
    lines += [f"- {x}" for x in problems]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "sparse_report.md").write_text("\n".join(lines) + "\n")
    (OUT / "sparse_report.json").write_text(json.dumps({"seed": a.seed, "sims": sims, "results": results,
                                                        "makespan_summary": summ, "problems": problems}, indent=1))
    plot(sweeps, ms, OUT)
    print("\n".join(lines))
    print(f"[sparse-report] wrote {OUT}/sparse_report.md, speedup.png, makespan.png")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
