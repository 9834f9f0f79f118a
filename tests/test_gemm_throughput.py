"""The GEMM tile's throughput mode: its generated harness, its file formats, its records
rebuilt into the per-edge observation, and (simulation) the same stream as the per-edge
mode, failures named."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from lockstep.gen.gemm.harness import emit_gemm_harness, gemm_harness, harness_name, load_depth, top_ports_of
from lockstep.gen.lint import lint_file
from lockstep.models import gemm
from lockstep.verif.gemm.jobs import make_jobs, stream_jobs
from lockstep.verif.gemm.tile_env import CNT_BASE, ERR_ADDR, REGS, STATUS, budget, check, csr_writes
from lockstep.verif.gemm.tp_env import (
    Final, RecordError, Trace, build_jobs, observation, read_final, read_trace, stream_entry, write_job,
)
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import generate_rtl, run

GEMM_TP = sorted(n for n, tb in TESTBENCHES.items() if tb.family == "gemm" and tb.mode == "throughput")


def test_every_tile_testbench_has_a_throughput_version():
    """Every per-edge tile testbench but the sweep has a ``<name>_tp`` twin on the same
    top, parameters, scenario and expectation; the random one runs in the quick tier
    with a negative twin on the same build (and the patent geometry's, the keeps, auto
    and errors scenarios), deep enough (100,000 cycles on Verilator, 10,000
    on Icarus: a random job averages about 4,500 edges, and the registry's comment gives
    the least over many seeds)."""
    edge = [n for n, tb in TESTBENCHES.items() if tb.test_module.endswith("gemm.test_tile")
            and tb.opts["scenario"] != "sweep"]
    assert len(edge) >= 8
    for n in edge:
        tp, tb = TESTBENCHES[f"{n}_tp"], TESTBENCHES[n]
        assert (tp.toplevel, tp.params, tp.tb_params, tp.expect_fail, tp.opts["scenario"]) == (
            tb.toplevel, tb.params, tb.tb_params, tb.expect_fail, tb.opts["scenario"]), n
        assert tp.mode == "throughput" and tp.opts["harness"] == "lockstep.gen.gemm.harness:emit_gemm_harness", n
    quick = {n: TESTBENCHES[n] for n in GEMM_TP if TESTBENCHES[n].tier == "quick"}
    assert set(quick) == {f"gemm_tile_{s}_tp" for s in ("random", "mutant", "patent", "errors_patent", "keeps", "auto",
                                                           "errors")}
    assert quick["gemm_tile_mutant_tp"].expect_fail and quick["gemm_tile_mutant_tp"].params == quick[
        "gemm_tile_random_tp"].params
    r = quick["gemm_tile_random_tp"].opts
    assert r["jobs"] * 3000 >= 100_000 and r["by_sim"]["icarus"]["jobs"] * 2500 >= 10_000


# ---- the harness ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["gemm_tile_random_tp", "gemm_tile_random_dm_tp"])
def test_harness_lints_clean(name, tmp_path):
    """verilator --lint-only -Wall --timing and iverilog -g2012 accept the harness with
    its top (16-bit and 8-bit elements), with no waiver."""
    tb = TESTBENCHES[name]
    record = generate_rtl(tb)
    path = emit_gemm_harness(record, tmp_path)
    assert path.name == f"{harness_name(tb.toplevel)}.v"
    assert "lint_off" not in path.read_text()
    assert lint_file(path, extra=(record.with_suffix(".v"),), timing=True) == []


def _record() -> dict:
    return json.loads(generate_rtl(TESTBENCHES["gemm_tile_random_tp"]).read_text())


def test_harness_takes_every_width_from_the_record():
    """The images' words are the record's port widths; a missing port, a wrong
    direction, disagreeing widths or no mem_elems are refused, naming what is wrong."""
    rec = _record()
    tp = top_ports_of(rec)
    assert tp.mem_elems == rec["timing"]["mem_elems"] == 8192
    text = gemm_harness(rec)
    assert f"reg [{13 + 16 - 1}:0] limg [0:DEPTH-1];" in text and f"localparam integer DEPTH = {2 * 8192};" in text
    assert "reg [37:0] cimg [0:NCSR-1];" in text and "localparam integer NCSR = 64;" in text
    wide = json.loads(json.dumps(rec))
    wide["ports"]["ld_data"]["width"] = wide["ports"]["rb_data"]["width"] = 24
    assert "reg [36:0] limg" in gemm_harness(wide)
    bad = json.loads(json.dumps(rec))
    del bad["ports"]["busy"]
    with pytest.raises(ValueError, match="'busy'"):
        gemm_harness(bad)
    bad = json.loads(json.dumps(rec))
    bad["ports"]["rb_data"]["width"] += 1
    with pytest.raises(ValueError, match=r"ld_data \[16\] vs rb_data \[17\]"):
        gemm_harness(bad)
    bad = json.loads(json.dumps(rec))
    bad["ports"]["done"]["dir"] = "in"
    with pytest.raises(ValueError, match="'done'"):
        gemm_harness(bad)
    bad = json.loads(json.dumps(rec))
    del bad["timing"]["mem_elems"]
    with pytest.raises(ValueError, match="timing.mem_elems"):
        gemm_harness(bad)


# ---- the file formats -----------------------------------------------------------------------
P = TESTBENCHES["gemm_tile_random"].params


def test_write_job_writes_what_the_harness_reads(tmp_path):
    """Loads element by element with their values masked to the element width, the CSR
    writes in the per-edge order (START last), the check regions, then the settings;
    a job the harness cannot hold is refused naming it."""
    jobs = make_jobs("errors", P, np.random.default_rng(1), 12)
    busy = next(j for j in jobs if j.busy_at is not None)
    tp = top_ports_of(_record())
    write_job(tmp_path, 5, busy, tp, 777)
    loads = [int(w, 16) for w in (tmp_path / "tp_load_5.hex").read_text().split()]
    want = [(lo + i, int(v) & 0xFFFF) for lo, vals in busy.loads for i, v in enumerate(vals)]
    assert [(w >> 16, w & 0xFFFF) for w in loads] == want and any(v < 0 for _, vals in busy.loads for v in vals)
    csr = [int(w, 16) for w in (tmp_path / "tp_csr_5.hex").read_text().split()]
    assert [(w >> 32, w & 0xFFFFFFFF) for w in csr] == csr_writes(busy.cfg) and csr[-1] >> 32 == 0
    rb = [int(w, 16) for w in (tmp_path / "tp_rb_5.hex").read_text().split()]
    assert rb == [lo + i for lo, n in busy.check for i in range(n)]
    assert (tmp_path / "tp_cfg_5.txt").read_text() == f"{len(loads)} 16 {len(rb)} 777 {busy.busy_at} 0 0\n"
    big = dataclasses.replace(busy, loads=[(0, np.zeros(load_depth(P.mem_elems) + 1, np.int64))])
    with pytest.raises(ValueError, match=r"job 6 \(start while busy.*16385 loads"):
        write_job(tmp_path, 6, big, tp, 9)
    out = dataclasses.replace(busy, loads=[(P.mem_elems - 1, np.zeros(2, np.int64))])
    with pytest.raises(ValueError, match="a load element outside 0..8191"):
        write_job(tmp_path, 6, out, tp, 9)


def test_read_trace_parses_and_refuses_malformed_or_x_lines(tmp_path):
    """Requests with their cycles, busy changes, X/Z taps as problems; a line that does
    not parse, an X field, a busy that is not a bit or a cycle going back is a
    RecordError naming the file, the line and its text (never a silent drop)."""
    f = tmp_path / "tp_trace_0.log"
    f.write_text("Y 1 1\nT 1 0 40 20\nT 3 5 1f0 20\nU 4\nY 9 0\n")
    tr = read_trace(f)
    assert tr.requests == [(0, 0x40, 0x20), (5, 0x1F0, 0x20)] and tr.cycles == [1, 3]
    assert tr.busy == [(1, 1), (9, 0)] and tr.problems == ["a tap (tr_*, busy, done) holds X or Z bits in cycle 4"]
    for line, match in [("T 5 0 4x 20", r"line 2: field 3 is '4x': X or Z"), ("Q 5 1", r"line 2 does not parse"),
                        ("T 5 0 40", r"line 2 does not parse: 'T 5 0 40'"), ("", r"line 2 does not parse: ''"),
                        ("Y 5 2", r"busy is 2, not 0 or 1"), ("T 0 0 1 1", r"cycle 0 after cycle 1")]:
        f.write_text(f"Y 1 1\n{line}\n")
        with pytest.raises(RecordError, match=match):
            read_trace(f)
    with pytest.raises(RecordError, match="no such record file"):
        read_trace(tmp_path / "missing.log")


def test_read_final_refuses_short_or_x(tmp_path):
    f = tmp_path / "tp_final_0.log"
    good = [f"{a:08x}" for a in range(64)] + ["0005", "ffa6"] + ["R done 4d2 10 1f4"]
    f.write_text("\n".join(good) + "\n")
    fin = read_final(f, 64, 2)
    assert (fin.reason, fin.run_cycles, fin.start, fin.edges) == ("done", 1234, 16, 500)
    assert fin.csr[17] == 17 and fin.rb.tolist() == [5, 0xFFA6]
    for lines, match in [(good[:-2] + good[-1:], r"66 lines, not 67"),
                         (good[:65] + ["0x0z"] + good[66:], r"line 66: read-back element 1 reads '0x0z'"),
                         (good[:17] + ["xxxxxxxx"] + good[18:], r"line 18: CSR 17 is 'xxxxxxxx'"),
                         (good[:-1] + ["R ended 1 2 3"], r"line 67 does not parse")]:
        f.write_text("\n".join(lines) + "\n")
        with pytest.raises(RecordError, match=match):
            read_final(f, 64, 2)


def _records(job, p, max_cycles: int, trace=None) -> tuple[Trace, Final]:
    """What a correct harness writes for ``job`` (its golden run): busy 1 until done."""
    g = job.golden
    reqs = [tuple(r) for r in g.trace.tolist()] if trace is None else trace
    tr = Trace(reqs, list(range(2, 2 + len(reqs))), [(1, 1), (g.cycles, 0)] if g.cycles > 1 else [(1, 0)])
    csr = [0] * 64
    csr[STATUS], csr[ERR_ADDR] = 0, job.sticky
    for i, name in enumerate(p.COUNTERS):
        csr[CNT_BASE + i] = g.counters[name]
    for name, a in REGS.items():
        csr[a] = job.regs[name]
    rb = np.concatenate([g.mem[lo:lo + n] for lo, n in job.check] or [np.zeros(0, np.int64)]) & ((1 << p.ew) - 1)
    return tr, Final("done", g.cycles, 100, 4000, csr, rb)


def test_observation_feeds_the_per_edge_checks():
    """Records rebuilt into the per-edge Observation pass the per-edge check for correct
    records (signed memory, busy per cycle, every CSR); a wrong request fails naming its
    cycle; a timeout reads as the per-edge 'no done within' message."""
    jobs = [j for j in make_jobs("random", P, np.random.default_rng(3), 4) if j.golden.trace.tolist()]
    assert len(jobs) >= 2  # (the refused wide-register starts have no trace)
    for job in jobs:
        tr, fin = _records(job, P, budget(job))
        obs = observation(job, tr, fin, P, budget(job))
        assert check(job, obs, job.golden.mem) == []
        assert len(obs.busy) == job.golden.cycles and stream_entry(obs)["trace"][0][0] == 2
    job = jobs[1]
    reqs = [tuple(r) for r in job.golden.trace.tolist()]
    reqs[4] = (reqs[4][0], reqs[4][1] + 64, reqs[4][2])
    tr, fin = _records(job, P, budget(job), reqs)
    errs = check(job, observation(job, tr, fin, P, budget(job)), job.golden.mem)
    assert errs and re.match(r"trace: request 4 \(cycle 6\): got \w+ addr=0x[0-9a-f]+ bytes=\d+, want", errs[0]), errs
    tr, fin = _records(job, P, budget(job))
    fin.reason, fin.run_cycles = "timeout", budget(job)
    errs = check(job, observation(job, tr, fin, P, budget(job)), job.golden.mem)
    assert errs[0] == f"no done within {budget(job)} cycles" and any("done in cycle None" in e for e in errs)


def test_build_jobs_is_the_per_edge_builder():
    """Same scenario, parameters, seed and count: the per-edge testbench's jobs; the
    sweep is refused (per-edge only)."""
    a = build_jobs(P, 9, {"scenario": "random", "jobs": 4})
    b = make_jobs("random", P, np.random.default_rng(9), 4)
    assert [repr(j) for j in a] == [repr(j) for j in b] and all(
        (x.golden.mem == y.golden.mem).all() for x, y in zip(a, b))
    with pytest.raises(ValueError, match="per-edge only"):
        build_jobs(P, 1, {"scenario": "sweep"})


def test_streamed_jobs_chain_the_builder():
    """A streamed run's jobs: the first repetition is ``make_jobs``'s; the next ones come
    from the same builder, so two repetitions of 3 random jobs are the 6 jobs of one
    builder (the memory image and cache model carried: same configurations, loads and
    golden memory), and a scenario that makes no job is refused rather than looping."""
    it = build_jobs(P, 9, {"scenario": "random", "jobs": 3}, stream=True)
    got = [next(it) for _ in range(6)]
    want = make_jobs("random", P, np.random.default_rng(9), 6)
    assert [j.cfg for j in got] == [j.cfg for j in want]
    assert [j.tag for j in got[:3]] == [j.tag for j in want[:3]]
    assert got[3].tag.startswith("random 0") and want[3].tag.startswith("random 3")  # (": wide registers" or not)
    assert all((x.golden.mem == y.golden.mem).all() and x.sticky == y.sticky and x.regs == y.regs
               for x, y in zip(got, want))
    with pytest.raises(ValueError, match="made no job"):
        next(stream_jobs("random", P, np.random.default_rng(1), 0))


# ---- simulation ---------------------------------------------------------------------------
def _edge_stream(monkeypatch, edge: str) -> str:
    """Register (for this test only) the per-edge testbench ``edge`` with the module that
    also writes its observations (lockstep.verif.gemm.test_tp on the bare top)."""
    name = f"{edge}_stream"
    monkeypatch.setitem(TESTBENCHES, name, dataclasses.replace(
        TESTBENCHES[edge], name=name, test_module="lockstep.verif.gemm.test_tp"))
    return name


#: (per-edge testbench, seed, jobs, simulator): the quick tier's random tile on both
#: simulators; the errors scenario (a second START while busy, a reset in a job, a job
#: after a reset, refused jobs) on Verilator (33 jobs: per-edge on Icarus costs 40 s).
EQUIV = [("gemm_tile_random", 3, 2, "icarus"), ("gemm_tile_random", 11, 2, "verilator")] + [
    ("gemm_tile_errors", 1, 12, "verilator")]


@pytest.mark.sim
@pytest.mark.parametrize("edge,seed,jobs,sim", EQUIV)
def test_both_modes_see_the_identical_stream(edge, seed, jobs, sim, monkeypatch):
    """For one seed, the per-edge BFM and the throughput harness see the very same
    stream, job by job: done's cycle, busy in every cycle, every request with its cycle,
    STATUS, ERR, every counter, the SEL/DET registers and every element read back; both
    pass against the golden model."""
    a = run(_edge_stream(monkeypatch, edge), sim, seed=seed, opts={"jobs": jobs})
    b = run(f"{edge}_tp", sim, seed=seed, opts={"jobs": jobs, "cycles": 0, "dump_stream": True})
    assert a.ok and b.ok, (a.line(), b.line(), a.summary.get("errors"), b.summary.get("errors"))
    sa = json.loads((a.results / "stream.json").read_text())
    sb = json.loads((b.results / "stream.json").read_text())
    assert len(sa) == len(sb) == b.summary["jobs"] >= jobs
    for i, (x, y) in enumerate(zip(sa, sb)):
        diff = {k: (str(x[k])[:200], str(y[k])[:200]) for k in x if x[k] != y[k]}
        assert not diff, f"job {i}: per-edge vs throughput: {diff}"
    assert sum(len(x["trace"]) for x in sa) > 100 and any(x["mem"] for x in sa)
    # transactions: the requests of every job that ran to done, and every job
    assert b.summary["transactions"] == sum(len(x["trace"]) for x in sb if x["done"] is not None) + len(sb)
    if edge == "gemm_tile_errors":   # the mid-job controls ran: START_BUSY raised, a job abandoned
        assert any(x["done"] is None for x in sb) and any(x["err"] & gemm.ERR["START_BUSY"] for x in sb)


@pytest.mark.sim
def test_the_negative_twin_fails_naming_job_cycle_fields_and_replay():
    """A 4-way cache checked as a 2-way one fails: the first message names the job, the
    cycle and a replay (throughput with a waves window, and per-edge); the counters
    differ by name."""
    res = run("gemm_tile_mutant_tp", "verilator", seed=4)
    assert res.ok and not res.passed and res.summary["mismatches"] > 0
    errors = res.summary["errors"]
    assert re.match(r"job 0 \(keeps no-copy: M=\d+ .*\): done in cycle \d+, want \d+\n    replay: make sim "
                    r"TEST=gemm_tile_mutant_tp SEED=4 WAVES=1 WINDOW=\d+:\d+; per-edge: python -m "
                    r"lockstep.verif.runner gemm_tile_mutant --seed 4 --opt jobs=3$", errors[0]), errors[0]
    assert any(re.search(r"job 0 .*: counters \(got, want\): .*A_LD_misses=\d+,\d+", e) for e in errors), errors


def _stub(tmp_path: Path) -> Path:
    """A wrong gemm_top with the record's ports: every output 0, so done never rises."""
    rec = _record()
    decl = ",\n".join(f"  {'input' if p['dir'] == 'in' else 'output'} wire [{p['width'] - 1}:0] {n}"
                      for n, p in rec["ports"].items())
    outs = "\n".join(f"  assign {n} = {p['width']}'d0;" for n, p in rec["ports"].items() if p["dir"] == "out")
    path = tmp_path / "stub.v"
    path.write_text(f"module gemm_top (\n{decl}\n);\n{outs}\nendmodule\n")
    return path


@pytest.mark.sim
def test_a_top_that_never_finishes_ends_with_the_watchdog(tmp_path):
    """An implementation whose done never rises ends with the harness's watchdog on the
    first job (the per-edge budget), reported as the per-edge 'no done' message."""
    res = run("gemm_tile_random_tp", "icarus", seed=2, rtl=_stub(tmp_path), opts={"jobs": 2})
    assert not res.passed
    errors = res.summary["errors"]
    assert errors[0].startswith("the harness's watchdog ended the run in job 0"), errors
    assert any(re.match(r"job 0 \(random 0: .*\): no done within \d+ cycles", e) for e in errors), errors
    assert res.summary["jobs"] == 1   # the run stops at the first timeout


@pytest.mark.sim
def test_raw_run_checks_its_jobs():
    """The raw run (no cocotb: make bench's limit) runs the throughput test's jobs,
    counts cycles as it does, and checks every job: the quick tier's tile passes, and
    its negative twin's golden (a 2-way cache) finds mismatches."""
    from lockstep.verif.gemm.raw import run_raw_gemm
    from lockstep.verif.raw import build_raw
    from lockstep.verif.runner import run_opts

    tb = TESTBENCHES["gemm_tile_random_tp"]
    exe = build_raw(tb, "icarus")
    ok = run_raw_gemm(tb, "icarus", exe, 1, run_opts(tb, "icarus", {"jobs": 2}))
    tp = run("gemm_tile_random_tp", "icarus", seed=1, opts={"jobs": 2})
    assert ok.mismatches == 0 and ok.transactions == tp.summary["transactions"] > 100
    assert ok.cycles == tp.summary["cycles"]
    bad_tb = TESTBENCHES["gemm_tile_mutant_tp"]
    bad = run_raw_gemm(bad_tb, "icarus", build_raw(bad_tb, "icarus"), 1, run_opts(bad_tb, "icarus"))
    assert bad.mismatches > 0
