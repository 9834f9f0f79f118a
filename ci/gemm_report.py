"""`make gemm-report`: the gemm family's measured claim (docs/gemm.md section 11, spec 003),
measured in simulation.

Cache misses and cycles of the GEMM tile over leading dimensions 992..4096 (1000 and every
multiple of the 4 KiB way included) for several explicit kernels ``(m, z)``, in three
modes: no copy, inline copy (``keep`` = the budget) and the padded layout (``lda`` plus one
line). The runs are the registered full-tier testbenches ``gemm_sweep_*`` (the ``sweep``
scenario of verif/gemm/jobs.py: every job after an ``rst``, so from a cold cache; the
scoreboard holds C, the counters and done's cycle to the golden model). This script reads
the hardware's counters from each run's summary.json, checks them once more against the
model's prediction, and asserts the claims:

* spike: for a kernel with ``m > ways``, no copy at every multiple of the way size misses
  at least ``SPIKE`` times the kernel's ``lda = 1000`` no-copy baseline, and at least 95 %
  of its A loads (spec 4.4);
* no spike: for ``m <= ways`` ("fully uses the multi-way capacity", spec 2.6) no copy at
  those strides stays within 10 % of the baseline;
* inline copy: within 10 % of the baseline, misses and cycles, at every multiple of the
  way size, for the kernels where the claim is made: the copy program is the patent's
  (``m > budget``) and the panel's copy buffer ``ceil(K/V) (m - keep) V eb`` bytes fits the
  ways the budget leaves to the B stream and the buffer (``(ways - budget) sets line``).
  The other kernels are measured and reported the same way, not asserted.

The model's 3C split (``lockstep.models.gemm.classify`` on the golden trace: compulsory,
capacity, conflict) is shown next to the measured misses at lda 1000, 1024, 2048, 3072 and
4096. Writes build/reports/gemm/{gemm_report.md, gemm_report.json, gemm_sweep.png}.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "build" / "reports" / "gemm"
PREFIX = "gemm_sweep_"
MODES = ("nocopy", "copy", "padded")
BASE_LD = 1000
TABLE_LDS = (1000, 1024, 2048, 3072, 4096)
SPIKE = 2.0  # "well above the baseline": at least this many times its misses
A_RATE = 0.95  # spec 4.4: no copy at an aliasing ld, m > ways: A-load miss rate >= 0.95
TOL = 1.10  # "within 10 %"
_TAG = re.compile(r"sweep (nocopy|copy|padded) m=(\d+) z=(\d+) ld=(\d+)$")
KINDS = ("A_LD", "B_LD", "BUF_LD", "COPY_RD", "COPY_WR", "C_WR")  # GemmParams.KINDS


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def total_misses(row: dict[str, Any]) -> int:
    """Every lookup that missed: the sum of the per-kind miss counters."""
    return sum(int(row[f"{k}_misses"]) for k in KINDS)


def collect(perf: list[dict[str, Any]]) -> dict[tuple[int, int], dict[int, dict[str, dict[str, Any]]]]:
    """The sweep's per-job rows (summary.json ``perf``) as ``{(m, z): {ld: {mode: point}}}``.

    A point: ``lda`` (the padded layout's is ``ld`` plus one line), ``misses`` (total),
    ``a_misses``, ``a_lookups``, ``misses_by_kind``, ``cycles`` (start to done), ``ok`` (the
    scoreboard's verdict on the job).

    Raises:
        ValueError: a row that is not a sweep job, or the same job twice.
    """
    out: dict[tuple[int, int], dict[int, dict[str, dict[str, Any]]]] = {}
    for row in perf:
        t = _TAG.match(row["tag"])
        if not t:
            raise ValueError(f"gemm-report: not a sweep job: {row['tag']!r}")
        mode, m, z, ld = t.group(1), int(t.group(2)), int(t.group(3)), int(t.group(4))
        by_ld = out.setdefault((m, z), {}).setdefault(ld, {})
        if mode in by_ld:
            raise ValueError(f"gemm-report: {row['tag']!r} measured twice")
        by_ld[mode] = {"lda": int(row["lda"]), "misses": total_misses(row), "a_misses": int(row["A_LD_misses"]),
                       "a_lookups": int(row["A_LD_lookups"]), "cycles": int(row["cycles"]), "ok": bool(row["ok"]),
                       "misses_by_kind": {k: int(row[f"{k}_misses"]) for k in KINDS}}
    return out


def aliasing(ld: int, p: dict[str, int]) -> bool:
    """``lda*eb`` a multiple of the way size (``sets*line``): the patent's bad stride."""
    return (ld * p["eb"]) % (p["sets"] * p["line"]) == 0


def buffer_bytes(m: int, p: dict[str, int], k: int) -> int:
    """The copy buffer of one panel with ``keep`` = the budget (docs/gemm.md section 4)."""
    return _ceil(k, p["v"]) * max(0, m - p["budget"]) * p["v"] * p["eb"]


def copy_claimed(m: int, p: dict[str, int], k: int) -> tuple[bool, str]:
    """Whether the inline-copy claim is made for rows ``m`` (module docstring), and why."""
    share = (p["ways"] - p["budget"]) * p["sets"] * p["line"]
    buf = buffer_bytes(m, p, k)
    if m <= p["budget"]:
        return False, f"m = {m} <= budget {p['budget']}: the copy program copies nothing"
    if buf > share:
        return False, (f"the panel's copy buffer ({buf} B) exceeds the {p['ways'] - p['budget']} ways the budget "
                       f"leaves to B and the buffer ({share} B)")
    return True, f"m = {m} > budget {p['budget']}, buffer {buf} B <= {share} B"


def _r(x: int, b: int) -> float:
    return x / b if b else float("inf")


def evaluate(table: dict[tuple[int, int], dict[int, dict[str, dict[str, Any]]]], p: dict[str, int],
             k: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The claims of the module docstring on measured points.

    Args:
        table: :func:`collect`'s result (every kernel must have its ``lda = 1000`` no-copy
            baseline and all three modes at every ld).
        p: the geometry: ``sets``, ``ways``, ``line``, ``eb``, ``v``, ``budget``.
        k: the jobs' K.

    Returns:
        ``(claims, problems)``: one record per kernel and claim (``claim``, ``kernel``,
        ``asserted``, ``holds``, ``detail``), and the messages of every asserted claim that
        does not hold or point that is missing or failed the scoreboard (the report fails
        on any).
    """
    claims: list[dict[str, Any]] = []
    problems: list[str] = []
    for (m, z), by_ld in sorted(table.items()):
        kern = f"({m}, {z})"
        for ld, modes in sorted(by_ld.items()):
            for mode in MODES:
                if mode not in modes:
                    problems.append(f"{kern} ld = {ld}: no {mode} measurement")
                elif not modes[mode]["ok"]:
                    problems.append(f"{kern} ld = {ld} {mode}: the scoreboard failed this job (hardware != model)")
        base = by_ld.get(BASE_LD, {}).get("nocopy")
        if base is None:
            problems.append(f"{kern}: no lda = {BASE_LD} no-copy baseline")
            continue
        bad_lds = [ld for ld in sorted(by_ld) if aliasing(ld, p) and all(md in by_ld[ld] for md in MODES)]
        if not bad_lds:
            problems.append(f"{kern}: no multiple of the way size measured")
            continue

        def rec(claim: str, asserted: bool, fails: list[str], ok_detail: str) -> None:
            holds = not fails
            claims.append({"claim": claim, "kernel": [m, z], "asserted": asserted, "holds": holds,
                           "detail": ok_detail if holds else "; ".join(fails)})
            if asserted and not holds:
                problems.extend(f"{kern} {claim}: {f}" for f in fails)

        nc = [(ld, by_ld[ld]["nocopy"]) for ld in bad_lds]
        if m > p["ways"]:
            fails = [f"ld = {ld}: {q['misses']} misses = {_r(q['misses'], base['misses']):.2f} x baseline "
                     f"(want >= {SPIKE:g}), A_LD {q['a_misses']}/{q['a_lookups']}"
                     for ld, q in nc if q["misses"] < SPIKE * base["misses"] or q["a_misses"] < A_RATE * q["a_lookups"]]
            rec("spike (no copy, m > ways)", True, fails,
                "no copy at lda " + ", ".join(str(ld) for ld, _ in nc) + ": "
                + ", ".join(f"{_r(q['misses'], base['misses']):.2f}x" for _, q in nc) + " the baseline's misses, "
                + "A_LD miss rate " + ", ".join(f"{_r(q['a_misses'], q['a_lookups']):.0%}" for _, q in nc))
        else:
            fails = [f"ld = {ld}: {q['misses']} misses = {_r(q['misses'], base['misses']):.2f} x baseline"
                     for ld, q in nc if q["misses"] > TOL * base["misses"]]
            rec("no spike (no copy, m <= ways)", True, fails,
                "no copy within 10 % at every multiple of the way size (worst "
                f"{max(_r(q['misses'], base['misses']) for _, q in nc):.3f}x)")
        claimed, why = copy_claimed(m, p, k)
        cp = [(ld, by_ld[ld]["copy"]) for ld in bad_lds]
        fails = [f"ld = {ld}: misses {q['misses']} = {_r(q['misses'], base['misses']):.3f}x, cycles {q['cycles']} = "
                 f"{_r(q['cycles'], base['cycles']):.3f}x the baseline"
                 for ld, q in cp if q["misses"] > TOL * base["misses"] or q["cycles"] > TOL * base["cycles"]]
        rec("inline copy within 10 % of the lda = 1000 baseline", claimed, fails,
            "worst misses " + f"{max(_r(q['misses'], base['misses']) for _, q in cp):.3f}x, cycles "
            + f"{max(_r(q['cycles'], base['cycles']) for _, q in cp):.3f}x the baseline")
        claims[-1]["why"] = ("claimed: " if claimed else "not claimed: ") + why
        pd = [(ld, by_ld[ld]["padded"]) for ld in bad_lds]
        fails = [f"ld = {ld} (lda {q['lda']}): misses {_r(q['misses'], base['misses']):.3f}x"
                 for ld, q in pd if q["misses"] > TOL * base["misses"]]
        rec("padded layout within 10 % (prior art, reported)", False, fails,
            f"worst {max(_r(q['misses'], base['misses']) for _, q in pd):.3f}x the baseline's misses")
        # elsewhere in the range: other strides with a spike, and where padding lands on one
        other = [f"{ld} ({_r(q['nocopy']['misses'], base['misses']):.2f}x)" for ld, q in sorted(by_ld.items())
                 if not aliasing(ld, p) and "nocopy" in q and q["nocopy"]["misses"] > TOL * base["misses"]]
        claims.append({"claim": "other no-copy strides above 10 % (reported)", "kernel": [m, z], "asserted": False,
                       "holds": not other, "detail": ", ".join(other) or "none"})
        padhit = [f"{ld} -> lda {q['padded']['lda']} ({_r(q['padded']['misses'], base['misses']):.2f}x)"
                  for ld, q in sorted(by_ld.items()) if "padded" in q and q["padded"]["misses"] > TOL * base["misses"]]
        claims.append({"claim": "padded layout above 10 % anywhere (reported)", "kernel": [m, z], "asserted": False,
                       "holds": not padhit, "detail": ", ".join(padhit) or "none"})
        cpall = [ld for ld, q in sorted(by_ld.items()) if "copy" in q and q["copy"]["misses"] > TOL * base["misses"]]
        claims.append({"claim": "inline copy above 10 % anywhere (reported)", "kernel": [m, z], "asserted": False,
                       "holds": not cpall, "detail": (f"{len(cpall)} of {len(by_ld)} lds: {cpall[0]}..{cpall[-1]}"
                                                       if cpall else "none")})
    return claims, problems


def _f(x: float) -> str:
    return "inf" if x == float("inf") else f"{x:.2f}"


def kernel_table(kern: tuple[int, int], by_ld: dict[int, dict[str, dict[str, Any]]], p: dict[str, int]) -> list[str]:
    """Markdown rows of one kernel: every ld, the three modes, ratios to the baseline."""
    base = by_ld[BASE_LD]["nocopy"]
    out = [f"### (m, z) = {kern}: baseline lda = {BASE_LD} no copy, {base['misses']} misses, {base['cycles']} cycles",
           "", "| ld | no copy misses | A_LD missed | cycles | copy misses | cycles | padded (lda) | misses | cycles "
           "| misses / base: no copy | copy | padded | cycles / base: no copy | copy | padded |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for ld in sorted(by_ld):
        q = by_ld[ld]
        n, c, pd = q["nocopy"], q["copy"], q["padded"]
        mark = " **(way multiple)**" if aliasing(ld, p) else (" (baseline)" if ld == BASE_LD else "")
        out.append(f"| {ld}{mark} | {n['misses']} | {_r(n['a_misses'], n['a_lookups']):.0%} | {n['cycles']} | "
                   f"{c['misses']} | {c['cycles']} | {pd['lda']} | {pd['misses']} | {pd['cycles']} | "
                   f"{_f(_r(n['misses'], base['misses']))} | {_f(_r(c['misses'], base['misses']))} | "
                   f"{_f(_r(pd['misses'], base['misses']))} | {_f(_r(n['cycles'], base['cycles']))} | "
                   f"{_f(_r(c['cycles'], base['cycles']))} | {_f(_r(pd['cycles'], base['cycles']))} |")
    return out + [""]


def summary_table(table: dict[tuple[int, int], dict[int, dict[str, dict[str, Any]]]]) -> list[str]:
    """Misses / cycles at the table's lds, every kernel and mode."""
    out = ["| (m, z) | lda | no copy misses | cycles | copy misses | cycles | padded misses | cycles |",
           "|---|---|---|---|---|---|---|---|"]
    for kern, by_ld in sorted(table.items()):
        for ld in TABLE_LDS:
            if ld in by_ld:
                q = by_ld[ld]
                out.append(f"| {kern} | {ld} | " + " | ".join(f"{q[md]['misses']} | {q[md]['cycles']}" for md in MODES)
                           + " |")
    return out + [""]


def three_c(tbs: list[Any], lds: tuple[int, ...] = TABLE_LDS) -> dict[str, dict[str, Any]]:
    """The model's prediction of every sweep job and the 3C split at ``lds``:
    ``{"m,z,ld,mode": {"counters", "cycles", "split"}}`` (``split`` only at ``lds``)."""
    import numpy as np

    from lockstep.models import gemm
    from lockstep.verif.gemm.jobs import make_jobs

    out: dict[str, dict[str, Any]] = {}
    for tb in tbs:
        p = tb.params
        # the layout and the trace do not depend on the values (the rng), only C does
        for job in make_jobs("sweep", p, np.random.default_rng(0), 0, tb.opts):
            t = _TAG.match(job.tag)
            assert t and job.golden is not None, job.tag
            key = ",".join(t.groups()[1:] + t.groups()[:1])
            g = job.golden
            e: dict[str, Any] = {"counters": dict(g.counters), "cycles": g.cycles}
            if int(t.group(4)) in lds:
                c = gemm.classify(g.trace, p.sets, p.ways, p.line)
                e["split"] = {"lookups": c.lookups, "misses": c.misses, "compulsory": c.compulsory,
                              "capacity": c.capacity, "conflict": c.conflict,
                              "by_kind": {kd: dict(zip(("lookups", "misses", "compulsory", "capacity", "conflict"), v))
                                          for kd, v in c.by_kind.items()}}
            out[key] = e
    return out


def model_check(perf: list[dict[str, Any]], model: dict[str, dict[str, Any]]) -> list[str]:
    """Every measured counter and done's cycle against the model's prediction."""
    bad = []
    for row in perf:
        t = _TAG.match(row["tag"])
        key = ",".join(t.groups()[1:] + t.groups()[:1]) if t else row["tag"]
        want = model.get(key)
        if want is None:
            bad.append(f"{row['tag']}: no model prediction")
            continue
        diff = {n: (row.get(n), v) for n, v in want["counters"].items() if row.get(n) != v}
        if diff:
            bad.append(f"{row['tag']}: counters (measured, model) "
                       + ", ".join(f"{n}={a},{b}" for n, (a, b) in diff.items()))
        if "split" in want and want["split"]["misses"] != total_misses(row):
            bad.append(f"{row['tag']}: {total_misses(row)} misses, the model's 3C replay has {want['split']['misses']}")
    return bad


def split_table(table: dict[tuple[int, int], dict[int, dict[str, dict[str, Any]]]],
                model: dict[str, dict[str, Any]]) -> list[str]:
    out = ["| (m, z) | lda | mode | misses (measured) | compulsory | capacity | conflict | A_LD conflict "
           "| BUF_LD + COPY_WR capacity |", "|---|---|---|---|---|---|---|---|---|"]
    for (m, z), by_ld in sorted(table.items()):
        for ld in TABLE_LDS:
            for mode in MODES:
                e = model.get(f"{m},{z},{ld},{mode}", {}).get("split")
                if e is None or ld not in by_ld:
                    continue
                bk = e["by_kind"]
                out.append(f"| ({m}, {z}) | {by_ld[ld][mode]['lda']} | {mode} | {by_ld[ld][mode]['misses']} | "
                           f"{e['compulsory']} | {e['capacity']} | {e['conflict']} | {bk['A_LD']['conflict']} | "
                           f"{bk['BUF_LD']['capacity'] + bk['COPY_WR']['capacity']} |")
    return out + [""]


def plot(table: dict[tuple[int, int], dict[int, dict[str, dict[str, Any]]]], p: dict[str, int], out: Path,
         what: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kerns = sorted(table)
    fig, axes = plt.subplots(2, len(kerns), figsize=(4.2 * len(kerns), 7), sharex=True, squeeze=False)
    style = {"nocopy": ("C3", "no copy"), "copy": ("C0", "inline copy (keep = budget)"),
             "padded": ("C2", "padded (lda + one line)")}
    for col, kern in enumerate(kerns):
        by_ld = table[kern]
        lds = sorted(by_ld)
        for row, (key, label) in enumerate((("misses", "cache misses (all kinds)"),
                                            ("cycles", "cycles (start to done)"))):
            ax = axes[row][col]
            base = by_ld[BASE_LD]["nocopy"][key]
            way = p["sets"] * p["line"] // p["eb"]
            for x in range(way, max(lds) + 1, way):
                ax.axvline(x, color="0.85", lw=0.8, zorder=0)
            ax.axhspan(base, TOL * base, color="0.9", zorder=0, label="baseline .. +10 %")
            for mode in reversed(MODES):  # no copy on top
                c, lab = style[mode]
                ax.plot(lds, [by_ld[ld][mode][key] for ld in lds], color=c, marker=".", ms=4, lw=1.2, label=lab)
            ys = [by_ld[ld][md][key] for ld in lds for md in MODES]
            ax.set_yscale("log")
            ax.set_ylim(0.8 * min(ys + [base]), max(1.5 * base, 1.3 * max(ys)))
            ax.grid(alpha=0.3, which="both")
            if row == 0:
                ax.set_title(f"(m, z) = {kern}")
            else:
                ax.set_xlabel("leading dimension of A (fp32 elements)")
            if col == 0:
                ax.set_ylabel(label)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"GEMM tile, {p['sets'] * p['ways'] * p['line'] // 1024} KiB {p['ways']}-way cache: misses and "
                 f"cycles vs lda (grey: multiples of the way), measured in simulation ({what})")
    fig.tight_layout()
    fig.savefig(out / "gemm_sweep.png", dpi=110)
    plt.close(fig)


def _canon(table: dict[tuple[int, int], Any]) -> str:
    return json.dumps({f"{kk[0]},{kk[1]}": v for kk, v in table.items()}, sort_keys=True)


def _geometry(params: Any) -> dict[str, int]:
    return {"sets": params.sets, "ways": params.ways, "line": params.line, "eb": params.eb, "v": params.v,
            "budget": params.budget, "miss_pen": params.miss_pen}


def _results(name: str, sim: str, seed: int, reuse: bool) -> tuple[dict[str, Any], float]:
    """A run's summary.json and its simulator wall time (``reuse``: an earlier run's)."""
    from lockstep.verif.registry import get
    from lockstep.verif.runner import BUILD, build_key, run

    if reuse:
        tb = get(name)
        found = sorted((BUILD / name / build_key(tb) / sim / "runs" / f"seed{seed}").glob("result.json"))
        if not found:
            raise SystemExit(f"gemm-report: --reuse: no result of {name} on {sim} seed {seed}; run without --reuse")
        res = json.loads(found[0].read_text())
        print(f"[gemm-report] reuse {found[0].parent}: ok={res['ok']}", flush=True)
        if res["ok"] != "True":
            raise SystemExit(f"gemm-report: {name} on {sim} failed; see {found[0].parent}/sim.log")
        return res["summary"], float(res["wall"])
    r = run(name, sim, seed=seed)
    print(f"[gemm-report] {r.line()}", flush=True)
    if not r.ok:
        raise SystemExit(f"gemm-report: {name} on {sim} failed; see {r.results}/sim.log ({r.repro()})")
    return r.summary, r.wall


def main() -> int:
    from lockstep.verif.registry import TESTBENCHES

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", default="verilator", help="comma-separated simulators (the first is reported; the "
                                                         "others must measure the same)")
    ap.add_argument("--seed", type=int, default=2026, help="seed of every run (only the values of A and B)")
    ap.add_argument("--reuse", action="store_true", help="read the runs of an earlier report (same seed) instead of "
                                                         "simulating again")
    a = ap.parse_args()
    sims = [s for s in a.sims.split(",") if s]
    tbs = [tb for name, tb in sorted(TESTBENCHES.items()) if name.startswith(PREFIX) and not tb.expect_fail]
    if not tbs:
        raise SystemExit(f"gemm-report: no {PREFIX}* testbench registered")
    ks = {int(tb.opts.get("k", 0)) for tb in tbs}
    geos = {json.dumps(_geometry(tb.params)) for tb in tbs}
    if len(ks) != 1 or len(geos) != 1:
        raise SystemExit("gemm-report: the sweep testbenches must share K and the cache geometry")
    k, p = ks.pop(), json.loads(geos.pop())
    t0 = time.monotonic()
    perf: dict[str, list[dict[str, Any]]] = {}
    walls: dict[str, float] = {}
    for sim in sims:
        perf[sim] = []
        for tb in tbs:
            summary, wall = _results(tb.name, sim, a.seed, a.reuse)
            perf[sim] += summary["perf"]
            walls[f"{tb.name} {sim}"] = round(wall, 1)
    sim_wall = sum(walls.values())
    main_sim = sims[0]
    table = collect(perf[main_sim])
    model = three_c(tbs)
    problems = model_check(perf[main_sim], model)
    claims, bad = evaluate(table, p, k)
    problems += bad
    for sim in sims[1:]:
        if _canon(collect(perf[sim])) != _canon(table):
            problems.append(f"{sim} measured different counters than {main_sim}")
    tb0 = tbs[0]
    g = tb0.params
    lines = [f"# GEMM family: misses and cycles vs leading dimension ({main_sim}"
             + (f", cross-checked on {', '.join(sims[1:])}" if sims[1:] else "") + f", seed {a.seed})", "",
             f"Setup: `GemmParams(mem_aw={g.mem_aw})` defaults, a {g.sets}-set x {g.ways}-way x {g.line} B LRU cache "
             f"({g.sets * g.ways * g.line // 1024} KiB, a {g.way_bytes} B way = {g.way_bytes // g.eb} elements of "
             f"{g.eb} B), V = {g.v}, miss penalty {g.miss_pen} cycles, budget {g.budget} of {g.ways} ways. Each job: "
             f"M = 2m, N = 2zV (two N-blocks, ldb = ldc = N), K = {k}, explicit (m, z), A at address 0, B, C and "
             "the buffer after it (one line and an element apart); no copy, inline copy with keep = budget (the "
             "buffer holds the panel's overflow rows, copied once per (M-block, K-block)), and padded (lda + "
             f"{g.line // g.eb} elements); every job from a cold cache (rst). Testbenches: "
             + ", ".join(f"`{tb.name}`" for tb in tbs) + f"; simulator time {sim_wall:.0f} s"
             + (" (the runs of an earlier report, --reuse)." if a.reuse else "."), "",
             "Measured: the tile's counters (misses = the sum of the six per-kind miss counters) and start-to-done "
             "cycles, each equal to the golden model's (the scoreboard, and this report again).", "",
             "## Claims", ""]
    for c in claims:
        verdict = ("holds" if c["holds"] else "FAILS") if c["asserted"] else ("(reported) " + ("ok" if c["holds"]
                                                                                               else "exceeds"))
        lines.append(f"- ({c['kernel'][0]}, {c['kernel'][1]}) {c['claim']}: **{verdict}** - {c['detail']}"
                     + (f" [{c['why']}]" if "why" in c else ""))
    lines += ["", "## Summary (lda 1000 and the multiples of 1024)", ""] + summary_table(table)
    lines += ["## The model's 3C split (the golden trace, `lockstep.models.gemm.classify`)", "",
              "Compulsory: first touch of a line; capacity: the misses of a fully associative LRU cache of the same "
              "size, minus compulsory; conflict: the rest (negative when full associativity does worse).", ""]
    lines += split_table(table, model)
    lines += ["## Every measured point", ""]
    for kern in sorted(table):
        lines += kernel_table(kern, table[kern], p)
    lines += ["", "Every measured counter equals the model." if not problems else "## PROBLEMS", ""]
    lines += [f"- {x}" for x in problems]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "gemm_report.md").write_text("\n".join(lines) + "\n")
    (OUT / "gemm_report.json").write_text(json.dumps({
        "seed": a.seed, "sims": sims, "k": k, "geometry": p, "testbenches": [tb.name for tb in tbs],
        "sim_wall_s": round(sim_wall, 1), "walls": walls, "reused": a.reuse, "claims": claims, "problems": problems,
        "points": [{"m": kk[0], "z": kk[1], "ld": ld, "mode": md, **q}
                   for kk, by_ld in sorted(table.items()) for ld, ms in sorted(by_ld.items()) for md, q in ms.items()],
        "three_c": {kk: v["split"] for kk, v in model.items() if "split" in v}}, indent=1))
    plot(table, p, OUT, main_sim)
    print("\n".join(lines))
    print(f"[gemm-report] wrote {OUT}/gemm_report.md, gemm_report.json, gemm_sweep.png (simulator time "
          f"{sim_wall:.0f} s, report {time.monotonic() - t0:.0f} s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
