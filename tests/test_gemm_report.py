"""`make gemm-report`'s table and claim logic (ci/gemm_report.py) on synthetic rows, and the
registered sweep testbenches' jobs (no simulator)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from lockstep.models.gemm.params import GemmParams
from lockstep.verif.gemm.jobs import make_jobs
from lockstep.verif.registry import TESTBENCHES

_spec = importlib.util.spec_from_file_location("gemm_report",
                                               Path(__file__).resolve().parent.parent / "ci" / "gemm_report.py")
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)

P = GemmParams()
GEO = {"sets": P.sets, "ways": P.ways, "line": P.line, "eb": P.eb, "v": P.v, "budget": P.budget, "miss_pen": P.miss_pen}
K = 256
LDS = (992, 1000, 1024, 1536, 2048)


def row(mode: str, m: int, z: int, ld: int, misses: int, cycles: int, a_miss: int = 100, a_lk: int = 1000,
        ok: bool = True) -> dict:
    """A summary.json perf row: ``a_miss`` A_LD misses, the rest on B_LD."""
    r = {"tag": f"sweep {mode} m={m} z={z} ld={ld}", "klass": mode, "cycles": cycles,
         "lda": ld + (16 if mode == "padded" else 0), "ok": ok, "A_LD_lookups": a_lk}
    for k in P.KINDS:
        r[f"{k}_misses"] = 0
    r["A_LD_misses"], r["B_LD_misses"] = a_miss, misses - a_miss
    return r


def kernel_rows(m: int, z: int, base: int = 4000, spike: float = 4.0, copy: float = 1.05, padded: float = 1.0,
                lds=LDS) -> list[dict]:
    """No copy spikes ``spike`` x at the way multiples (every A load missing), copy and padded
    at the given ratios everywhere."""
    out = []
    for ld in lds:
        alias = ld % 1024 == 0
        n = int(base * spike) if alias else base
        out.append(row("nocopy", m, z, ld, n, 15 * n, a_miss=1000 if alias else 100))
        out.append(row("copy", m, z, ld, int(base * copy), int(15 * base * copy)))
        out.append(row("padded", m, z, ld, int(base * padded), int(15 * base * padded)))
    return out


def asserted(claims, kern, word):
    return [c for c in claims if tuple(c["kernel"]) == kern and word in c["claim"]]


def test_total_misses_sums_every_kind():
    r = row("nocopy", 14, 2, 1000, 10, 100, a_miss=4)
    r["C_WR_misses"] = 5
    assert R.total_misses(r) == 15


def test_collect_groups_by_kernel_ld_and_mode():
    t = R.collect(kernel_rows(14, 2))
    assert sorted(t) == [(14, 2)]
    assert sorted(t[(14, 2)]) == list(LDS)
    q = t[(14, 2)][1024]
    assert set(q) == set(R.MODES)
    assert q["nocopy"]["misses"] == 16000 and q["nocopy"]["a_misses"] == 1000 and q["padded"]["lda"] == 1040


@pytest.mark.parametrize("bad", [{"tag": "random 3"}, "twice"])
def test_collect_refuses_foreign_or_repeated_rows(bad):
    rows = kernel_rows(14, 2)
    rows.append(dict(rows[0]) if bad == "twice" else {**rows[0], **bad})
    with pytest.raises(ValueError):
        R.collect(rows)


def test_copy_claim_follows_the_budget_and_the_buffer():
    assert R.copy_claimed(14, GEO, K)[0]  # 16 K-blocks x 8 rows x 64 B = 8 KiB = the 2 ways left
    assert R.copy_claimed(7, GEO, K)[0]
    assert not R.copy_claimed(6, GEO, K)[0]  # m = budget: nothing to copy
    ok, why = R.copy_claimed(28, GEO, K)
    assert not ok and "exceeds" in why
    assert not R.copy_claimed(14, GEO, 2 * K)[0]  # a longer panel's buffer no longer fits


def test_spike_and_copy_claim_hold():
    claims, problems = R.evaluate(R.collect(kernel_rows(14, 2)), GEO, K)
    assert problems == []
    (spike,) = asserted(claims, (14, 2), "spike")
    assert spike["asserted"] and spike["holds"] and "4.00x" in spike["detail"]
    (copy,) = [c for c in asserted(claims, (14, 2), "inline copy within") if c["asserted"]]
    assert copy["holds"] and copy["why"].startswith("claimed")
    # 1536 is not a way multiple: no spike there in the synthetic rows, none reported
    (other,) = asserted(claims, (14, 2), "other no-copy")
    assert other["holds"]


def test_a_missing_spike_is_a_problem():
    rows = kernel_rows(14, 2)
    for r in rows:
        if r["tag"] == "sweep nocopy m=14 z=2 ld=2048":
            r["B_LD_misses"] = 6000 - r["A_LD_misses"]  # 1.5 x the baseline
    claims, problems = R.evaluate(R.collect(rows), GEO, K)
    assert any("spike" in p and "ld = 2048" in p for p in problems), problems
    assert not asserted(claims, (14, 2), "spike")[0]["holds"]


def test_a_spike_without_a_missing_a_load_rate_is_a_problem():
    rows = kernel_rows(14, 2)
    for r in rows:
        if r["tag"] == "sweep nocopy m=14 z=2 ld=1024":
            r["A_LD_misses"], r["B_LD_misses"] = 900, 16000 - 900  # 90 % < 95 %
    _, problems = R.evaluate(R.collect(rows), GEO, K)
    assert any("A_LD 900/1000" in p for p in problems), problems


def test_a_copy_claim_failure_is_reported_and_fails():
    rows = kernel_rows(14, 2, copy=1.2)
    claims, problems = R.evaluate(R.collect(rows), GEO, K)
    assert any("inline copy" in p and "ld = 1024" in p and "1.200x" in p for p in problems), problems
    assert any("ld = 2048" in p for p in problems)
    (copy,) = asserted(claims, (14, 2), "inline copy within")
    assert copy["asserted"] and not copy["holds"]


def test_copy_cycles_count_too():
    rows = kernel_rows(14, 2)
    for r in rows:
        if r["tag"] == "sweep copy m=14 z=2 ld=1024":
            r["cycles"] = int(15 * 4000 * 1.15)
    _, problems = R.evaluate(R.collect(rows), GEO, K)
    assert any("cycles" in p and "1.150x" in p for p in problems), problems


def test_an_unclaimed_kernel_is_reported_not_asserted():
    rows = kernel_rows(28, 1, spike=7.5, copy=1.16)
    claims, problems = R.evaluate(R.collect(rows), GEO, K)
    assert problems == []
    (copy,) = asserted(claims, (28, 1), "inline copy within")
    assert not copy["asserted"] and not copy["holds"] and copy["why"].startswith("not claimed")
    assert "1.160x" in copy["detail"]
    (anywhere,) = asserted(claims, (28, 1), "inline copy above")
    assert not anywhere["holds"] and "992..2048" in anywhere["detail"]


def test_a_spike_where_m_fits_the_ways_is_a_problem():
    claims, problems = R.evaluate(R.collect(kernel_rows(7, 2, spike=1.3)), GEO, K)
    assert any("no spike" in p for p in problems), problems
    claims, problems = R.evaluate(R.collect(kernel_rows(7, 2, spike=1.0)), GEO, K)
    assert problems == [] and asserted(claims, (7, 2), "no spike")[0]["holds"]


def test_padding_onto_a_way_multiple_is_reported():
    rows = kernel_rows(14, 2, lds=(1000, 1008, 1024)) + []
    for r in rows:
        if r["tag"] == "sweep padded m=14 z=2 ld=1008":  # lda 1008 + 16 = 1024
            r["B_LD_misses"] = 16000 - r["A_LD_misses"]
    claims, problems = R.evaluate(R.collect(rows), GEO, K)
    assert problems == []
    (pad,) = asserted(claims, (14, 2), "padded layout above")
    assert not pad["holds"] and "1008 -> lda 1024" in pad["detail"]


def test_missing_points_and_scoreboard_failures_are_problems():
    rows = [r for r in kernel_rows(14, 2) if r["tag"] != "sweep nocopy m=14 z=2 ld=1000"]
    _, problems = R.evaluate(R.collect(rows), GEO, K)
    assert any("baseline" in p for p in problems) and any("no nocopy measurement" in p for p in problems)
    rows = kernel_rows(14, 2)
    rows[-1]["ok"] = False
    _, problems = R.evaluate(R.collect(rows), GEO, K)
    assert any("scoreboard failed" in p for p in problems)
    _, problems = R.evaluate(R.collect(kernel_rows(14, 2, lds=(1000, 1536))), GEO, K)
    assert any("no multiple of the way size" in p for p in problems)


def test_tables_render_every_point():
    t = R.collect(kernel_rows(14, 2) + kernel_rows(6, 4, spike=1.0))
    md = "\n".join(R.kernel_table((14, 2), t[(14, 2)], GEO))
    assert md.count("\n| ") == 1 + len(LDS) and "| 1024 **(way multiple)** | 16000 | 100% |" in md
    assert "| 4.00 | 1.05 | 1.00 |" in md
    s = R.summary_table(t)
    assert sum(line.startswith("| (") for line in s[2:]) == 2 * sum(ld in R.TABLE_LDS for ld in LDS)


# ---- the registered sweep -------------------------------------------------------------
SWEEPS = {n: tb for n, tb in TESTBENCHES.items() if n.startswith(R.PREFIX)}


def test_the_sweep_covers_the_claims_range():
    assert SWEEPS and all(tb.tier == "full" for tb in SWEEPS.values())
    by_kernel: dict[tuple[int, int], set[int]] = {}
    for tb in SWEEPS.values():
        assert tb.params == GemmParams(mem_aw=tb.params.mem_aw)  # the patent's geometry
        for mz in tb.opts["kernels"]:
            by_kernel.setdefault(tuple(mz), set()).update(tb.opts["lds"])
    for kern, lds in by_kernel.items():
        assert {1000, 1024, 2048, 3072, 4096} <= lds and min(lds) == 992 and max(lds) == 4096, kern
    assert any(m > P.ways for m, _ in by_kernel) and any(m <= P.ways for m, _ in by_kernel)


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_the_largest_sweep_job_fits_the_memory(name):
    """The largest ld of each testbench (and its padded twin) lays out in mem_aw bits."""
    tb = SWEEPS[name]
    opts = {**tb.opts, "lds": [max(tb.opts["lds"])]}
    jobs = make_jobs("sweep", tb.params, np.random.default_rng(0), 0, opts)
    assert len(jobs) == 3 * len(opts["kernels"])
    for j in jobs:
        assert j.golden is not None and j.golden.err == 0, j
        assert all(lo + len(v) <= tb.params.mem_elems for lo, v in j.loads)
