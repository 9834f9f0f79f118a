"""The schedule-driven fabric's throughput mode: its generated harness, its file formats,
its bulk coverage, and (simulation) the same trace as the per-edge mode, failures named."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from lockstep.gen.lint import lint_file
from lockstep.gen.sched.harness import emit_sched_harness, fabric_ports, harness_name, sched_harness
from lockstep.models import sched
from lockstep.models.sched.params import FabricParams
from lockstep.verif.registry import SIMULATORS, TESTBENCHES
from lockstep.verif.runner import generate_rtl, run
from lockstep.verif.sched.tp_env import (
    RecordError, build_program, compare_traces, read_final, read_trace, write_episode,
)

SCHED_TP = sorted(n for n, tb in TESTBENCHES.items() if tb.family == "sched" and tb.mode == "throughput")


def test_every_sched_testbench_has_a_throughput_version():
    """Every per-edge testbench that runs a program has a ``<name>_tp`` twin on the same
    fabric and program builder; one runs in the quick tier (both simulators), with a
    negative twin that must fail."""
    edge = [n for n, tb in TESTBENCHES.items() if tb.family == "sched" and tb.test_module.endswith(".test_ring")]
    for n in edge:
        tp = TESTBENCHES[f"{n}_tp"]
        assert (tp.toplevel, tp.params, tp.tb_params, tp.expect_fail) == (
            TESTBENCHES[n].toplevel, TESTBENCHES[n].params, TESTBENCHES[n].tb_params, TESTBENCHES[n].expect_fail), n
        assert tp.opts["program"] == TESTBENCHES[n].opts["program"] and tp.mode == "throughput", n
    quick = [n for n in SCHED_TP if TESTBENCHES[n].tier == "quick"]
    assert any(not TESTBENCHES[n].expect_fail for n in quick) and any(TESTBENCHES[n].expect_fail for n in quick)
    assert all(TESTBENCHES[n].opts["harness"] == "lockstep.gen.sched.harness:emit_sched_harness" for n in SCHED_TP)


# one fabric of each kind the harness generates differently: ring, comm (external words,
# suspend and pad lines), MAC arrays on a mesh (psum lines)
LINTED = ["sched_random_tp", "sched_random_comm_tp", "sched_mesh_random_k2_tp"]


@pytest.mark.parametrize("name", LINTED)
def test_harness_lints_clean(name, tmp_path):
    """verilator --lint-only -Wall --timing and iverilog -g2012 accept the harness with
    its fabric, with no waiver."""
    tb = TESTBENCHES[name]
    record = generate_rtl(tb)
    path = emit_sched_harness(record, tmp_path)
    assert path.name == f"{harness_name(tb.toplevel)}.v"
    assert "lint_off" not in path.read_text()
    assert lint_file(path, extra=(record.with_suffix(".v"),), timing=True) == []


def _record(params: FabricParams) -> dict:
    from lockstep.gen.sched import ring_ports

    return {"module": "sched_ring", "params": params.to_dict(), "ports": ring_ports(params)}


def test_harness_refuses_a_record_it_cannot_drive():
    """A missing tap, a width that disagrees with the parameters, a record without
    parameters: each a ValueError naming what is wrong."""
    rec = _record(FabricParams())
    assert fabric_ports(rec).params == FabricParams()
    bad = json.loads(json.dumps(rec))
    del bad["ports"]["halted"]
    with pytest.raises(ValueError, match="'halted'"):
        sched_harness(bad)
    bad = json.loads(json.dumps(rec))
    bad["ports"]["wr_data"]["width"] += 1
    with pytest.raises(ValueError, match=r"wr_data is \[193\], its params give \[192\]"):
        sched_harness(bad)
    bad = json.loads(json.dumps(rec))
    del bad["params"]
    with pytest.raises(ValueError, match="no params"):
        sched_harness(bad)
    with pytest.raises(ValueError, match="ext_valid"):
        sched_harness({**rec, "params": FabricParams(comm=True).to_dict()})


# ---- the file formats -----------------------------------------------------------------------
P = FabricParams(k=2, comm=True)


def test_read_trace_rebuilds_every_event_kind(tmp_path):
    """Each record line becomes the per-edge monitor's event; error bits are moved to the
    cycle they were raised in; counter and X/Z lines become problems."""
    check = sched.encode(sched.Entry(t=9, op=0xC, port=3, a=5), P)
    lanes = (7 << P.accw) | 3
    lines = ["I 4 1 abc", "W 5 2 1 beef", "B 6 12", "M 7 0 3 1f 22", f"P 8 1 {lanes:x}", f"S 9 {check:x}", "D a 5",
             "E c 2 8", "F d 20", "X e f 0", "U f", f"Q 10 0 {7 << (5 * P.dw):x}", f"Q 11 2 {3 << (2 * P.aw):x}",
             "Q 12 3 9"]
    (tmp_path / "t.log").write_text("\n".join(lines) + "\n")
    events, problems = read_trace(tmp_path / "t.log", P)
    # the quiet outputs: tile 1's link 2 (lane 5), the address of tile 0's write port 2, the bus
    assert problems[-3:] == ["cycle 16: tile 1 link 2 holds 0x7 while idle (an idle output carries 0)",
                             "cycle 17: tile 0 write address 2 holds 0x3 while idle (an idle output carries 0)",
                             "cycle 18: the bus holds 0x9 while idle (an idle output carries 0)"]
    problems = problems[:-3]
    assert events == [(4, "issue", 1, 0xabc), (5, "word", 2, 1, 0xbeef), (6, "bus", -1, 0x12),
                      (7, "write", 0, 3, 0x1f, 0x22), (8, "psum", 1, (3, 7)), (9, "suspend", -1, 5),
                      (10, "pad", 0, 5), (11, "err", 2, 8), (12, "err", -1, 0x20)]
    assert problems[0] == "cycle 14: chip count is 15, expected 14 (+1 per cycle, no stall)"
    assert "tile 1 local count 0 != chip count 15" in problems[2]
    assert problems[-1].startswith("tap with X or Z bits in cycle 15")


def test_the_per_edge_monitor_checks_the_same_quiet_outputs():
    """quiet_problems (the per-edge monitor, every cycle) flags exactly the idle lanes
    holding a value, in the wording of the harness's Q records."""
    from lockstep.verif.sched.env import quiet_problems
    v = {"out_valid": 0b1, "out_data": 0xAB | (5 << P.dw), "wr_en": 0b100, "wr_data": 0x7 << (2 * P.dw),
         "wr_addr": 0x3 << (2 * P.aw), "bus_valid": 1, "bus_data": 4}
    assert quiet_problems(3, P, v) == ["cycle 3: tile 0 link 1 holds 0x5 while idle (an idle output carries 0)"]
    v.update(out_data=0xAB, bus_valid=0)
    assert quiet_problems(3, P, v) == ["cycle 3: the bus holds 0x4 while idle (an idle output carries 0)"]


@pytest.mark.parametrize("line,match", [
    ("W 5 2 1 bxef", r"line 2: field 4 is 'bxef': X or Z"),
    ("Z 5 1", r"line 2 does not parse: 'Z 5 1'"),
    ("Q 5 1", r"line 2 does not parse: 'Q 5 1'"),
    ("Q 5 4 1", r"quiet output 4 outside 0..3"),
    ("M 7 0 3 1f", r"line 2 does not parse"),
    ("I 4 9 abc", r"tile 9 outside 0..2"),
    ("W 5 0 3 1", r"port 3 outside 0..2"),
    ("M 7 0 9 1f 22", r"write source 9 outside"),
    ("", r"line 2 does not parse: ''"),
])
def test_read_trace_refuses_a_line_that_does_not_parse(tmp_path, line, match):
    """Never a silent drop: a malformed or X/Z line is a RecordError naming file, line and text."""
    (tmp_path / "tp_trace_0.log").write_text(f"I 0 0 1\n{line}\n")
    with pytest.raises(RecordError, match=match):
        read_trace(tmp_path / "tp_trace_0.log", FabricParams())
    with pytest.raises(RecordError, match="no such record file"):
        read_trace(tmp_path / "missing.log", FabricParams())


def _final(p: FabricParams, words: list[str] | None = None, head: str = "R halt 10 20") -> str:
    tiles = [f"T {t:x} 0 0 1" for t in range(p.nt)]
    return "\n".join([head, *tiles, "B 0 0", *(words or [f"{i % 7:04x}" for i in range(p.nt * p.words)])]) + "\n"


def test_read_final_parses_end_state_and_refuses_short_or_x(tmp_path):
    p = FabricParams(nt=2, aw=4)
    f = tmp_path / "tp_final_0.log"
    f.write_text(_final(p))
    fin = read_final(f, p)
    assert (fin.reason, fin.run_cycles, fin.load_cycles) == ("halt", 16, 32)
    assert fin.state["halted"] == [True, True] and fin.state["mems"][1][3] == (16 + 3) % 7
    f.write_text(_final(p)[:-5])
    with pytest.raises(RecordError, match=r"35 lines, not 36"):
        read_final(f, p)
    words = [f"{i % 7:04x}" for i in range(2 * 16)]
    words[20] = "00x1"
    f.write_text(_final(p, words))
    with pytest.raises(RecordError, match=r"tile 1 mem\[4\] reads '00x1'"):
        read_final(f, p)
    f.write_text(_final(p, head="R ended 10 20"))
    with pytest.raises(RecordError, match="line 1 does not parse"):
        read_final(f, p)


def test_write_episode_writes_what_the_harness_reads(tmp_path):
    """Whole images in load order, the settings, the external words; bad input refused."""
    p = FabricParams(comm=True, fifo_d=8)
    prog, _ = build_program("comm:pad", p, 4)
    ext = prog.meta["ext"]
    write_episode(tmp_path, 3, prog, 0, 999, ext)
    sched_words = (tmp_path / "tp_sched_3.hex").read_text().split()
    assert len(sched_words) == p.nt * p.sd
    assert [int(w, 16) for w in sched_words[p.sd:2 * p.sd]] == prog.schedule_image(1)
    data = (tmp_path / "tp_data_3.hex").read_text().split()
    assert [int(w, 16) for w in data[:p.words]] == prog.data_image(0).tolist()
    assert (tmp_path / "tp_cfg_3.txt").read_text() == "0 999\n"
    assert [tuple(int(x, 16) for x in ln.split()) for ln in (tmp_path / "tp_ext_3.txt").read_text().splitlines()] \
        == [tuple(x) for x in ext]
    with pytest.raises(ValueError, match="one per cycle in increasing cycles"):
        write_episode(tmp_path, 4, prog, 0, 9, [(5, 1), (5, 2)])
    with pytest.raises(ValueError, match="does not fit dw"):
        write_episode(tmp_path, 4, prog, 0, 9, [(5, 1 << 16)])
    with pytest.raises(ValueError, match="without comm"):
        write_episode(tmp_path, 4, build_program("random", FabricParams(), 1)[0], 0, 9, [(1, 1)])


def test_build_program_is_the_per_edge_builder():
    """Same name, parameters and seed -> the per-edge testbench's program; ``txns``
    places more transactions (a long program) with the same builder."""
    from lockstep.verif.sched.env import make_program

    p = FabricParams()
    assert build_program("random", p, 7)[0] == make_program("random", p, 7)[0]
    long, _ = build_program("random", p, 7, txns=100)
    assert sched.execute(long).cycles > 1500 and long != make_program("random", p, 7)[0]
    with pytest.raises(ValueError, match="only the program 'random'"):
        build_program("fig2a", FabricParams(hop_lat=3), 1, txns=5)


def test_compare_traces_names_index_cycle_and_fields():
    p = FabricParams()
    want = [(3, "issue", 0, 0x11410000009), (5, "write", 1, 3, 0xc4, 0x1234), (9, "bus", -1, 7)]
    have = [want[0], (6, "write", 1, 3, 0xc4, 0x1234), want[2]]
    bad, msgs = compare_traces(want, have, p)
    assert bad == 2
    assert msgs[0].startswith("trace event 1 (of 3 expected, 3 recorded) differs at cycle 5: recorded cycle 6 write: "
                              "tile 1 source 3 addr 0xc4 value 0x1234; golden cycle 5 write:")
    assert "1 golden event(s) missing" in msgs[1] and "1 unexpected" in msgs[1]
    bad, msgs = compare_traces(want, want[:2], p)
    assert bad == 1 and "trace event 2" in msgs[0] and "(none: the recorded trace has ended)" in msgs[0]
    assert compare_traces(want, list(want), p) == (0, [])


def test_bulk_cover_sampling_hits_what_the_per_edge_sampling_hits():
    """sample_bulk of a run adds exactly the hits SchedCoverage.sample adds, point by point
    (sampled once each way: every count doubles), on programs with every sampled kind."""
    from pyuvm import ConfigDB

    from lockstep.verif.sched.env import SchedCoverage
    from lockstep.verif.sched.tp_env import sample_bulk

    p = FabricParams(comm=True, fifo_d=8)
    ConfigDB().set(None, "*", "PARAMS", p.to_dict())
    cov = SchedCoverage("cov_bulk_test", None)
    cov.build_phase()
    runs = []
    for name, seed in (("comm:pad", 3), ("comm:suspend", 1), ("random", 5), ("jitter:within", 2)):
        prog, _ = build_program(name, p, seed, 60 if name == "random" else None)
        runs.append((prog, sched.execute(prog, ext=(prog.meta or {}).get("ext"))))
    for prog, g in runs:
        cov.sample(prog, g.trace, g, g.err, g.bus_err)
    one = [g.summary()["cover_points"] for g in cov.groups]
    for prog, g in runs:
        sample_bulk(cov, prog, g.trace, g, g.err, g.bus_err)
    two = [g.summary()["cover_points"] for g in cov.groups]
    assert len(one) == len(two) >= 7   # the jitter group was created by the first pass
    for a, b in zip(one, two):
        assert {k: {x: 2 * h for x, h in bins.items()} for k, bins in a.items()} == b
    assert sum(h for a in one for bins in a.values() for h in bins.values()) > 100


# ---- simulation ---------------------------------------------------------------------------
def _edge_trace(monkeypatch, edge: str) -> str:
    """Register (for this test only) the per-edge testbench ``edge`` with the module that
    also writes its monitor's trace (lockstep.verif.sched.test_tp on a bare fabric)."""
    name = f"{edge}_trace"
    monkeypatch.setitem(TESTBENCHES, name, dataclasses.replace(
        TESTBENCHES[edge], name=name, test_module="lockstep.verif.sched.test_tp"))
    return name


#: (per-edge testbench, seed, transactions of a long program). The quick tier's fabric on
#: both simulators; the comm and MAC-array fabrics, whose throughput builds are the full
#: tier's, on Icarus only (a Verilator build of each costs more than all the rest here).
EQUIV = [("sched_random", 3, None, "icarus"), ("sched_random", 11, None, "verilator"),
         ("sched_random", 7, 100, "icarus"), ("sched_random", 7, 100, "verilator")] + [("sched_comm_suspend", 2, None, "icarus"), ("sched_random_gemm_k2", 5, None, "icarus")]


@pytest.mark.sim
@pytest.mark.parametrize("edge,seed,txns,sim", EQUIV)
def test_both_modes_see_the_identical_trace(edge, seed, txns, sim, monkeypatch, tmp_path):
    """For one program (the per-edge builder's, same seed; a long one through its
    assembly text), the per-edge monitor and the throughput recorder see the very same
    events on the very same cycles -- issues, link, bus and psum words, writes, errors,
    suspensions and pads -- and both pass against the executor."""
    opts = {"programs": 1, "txns": None}
    if txns:   # a long program: both modes read it from its assembly text
        prog, _ = build_program("random", TESTBENCHES[edge].params, seed, txns)
        src = tmp_path / "long.s"
        src.write_text(sched.disassemble(prog))
        opts["program"] = f"asm:{src}"
    a = run(_edge_trace(monkeypatch, edge), sim, seed=seed, opts={k: v for k, v in opts.items() if k == "program"})
    b = run(f"{edge}_tp", sim, seed=seed, opts={**opts, "cycles": 0, "dump_trace": True})
    assert a.ok and b.ok, (a.line(), b.line(), a.summary.get("errors"), b.summary.get("errors"))
    ta = json.loads((a.results / "trace.json").read_text())
    tb = json.loads((b.results / "trace.json").read_text())
    assert len(ta) == len(tb) == 1 and len(ta[0]) > 20
    first = next((i for i, (x, y) in enumerate(zip(ta[0], tb[0])) if x != y), None)
    assert first is None and len(ta[0]) == len(tb[0]), \
        f"event {first}: per-edge {ta[0][first] if first is not None else '-'} vs throughput " \
        f"{tb[0][first] if first is not None else '-'} ({len(ta[0])} / {len(tb[0])} events)"
    assert b.summary["transactions"] == len(tb[0]) and b.summary["programs"] == 1
    if txns:
        assert b.summary["run_cycles"] > 1500


@pytest.mark.sim
@pytest.mark.parametrize("sim", SIMULATORS)
def test_the_negative_twin_fails_naming_event_cycle_and_fields(sim):
    """A fabric checked with the wrong ALU latency fails: the first message names the
    episode and its seed, the event index, the cycle, both events' fields and a replay."""
    res = run("sched_random_mutant_tp", sim, seed=4)
    assert res.ok and not res.passed and res.summary["mismatches"] > 0
    first = res.summary["errors"][0]
    assert re.match(r"episode 0 \(program seed 4\): trace event \d+ \(of \d+ expected, \d+ recorded\) differs at "
                    r"cycle \d+: recorded cycle \d+ write: tile \d source 3 addr 0x[0-9a-f]+ value 0x[0-9a-f]+; "
                    r"golden cycle \d+ write", first), first
    assert "replay: make sim TEST=sched_random_mutant_tp SEED=4 WAVES=1 WINDOW=" in first


def _stub(tmp_path: Path) -> Path:
    """A wrong sched_ring with the record's ports: nothing happens and no tile halts."""
    tb = TESTBENCHES["sched_random_tp"]
    rec = json.loads(generate_rtl(tb).read_text())
    decl = ",\n".join(f"  {'input' if p['dir'] == 'in' else 'output'} wire [{p['width'] - 1}:0] {n}"
                      for n, p in rec["ports"].items())
    outs = "\n".join(f"  assign {n} = {p['width']}'d0;" for n, p in rec["ports"].items() if p["dir"] == "out")
    path = tmp_path / "stub.v"
    path.write_text(f"module sched_ring (\n{decl}\n);\n{outs}\nendmodule\n")
    return path


@pytest.mark.sim
@pytest.mark.parametrize("sim", SIMULATORS)
def test_a_fabric_that_never_halts_ends_with_the_watchdog(tmp_path, sim):
    """An implementation that never halts (and whose counter stands still) ends with the
    harness's watchdog, reported with the halted flags, and the counter check fires."""
    res = run("sched_random_tp", sim, seed=2, rtl=_stub(tmp_path), opts={"programs": 2, "txns": 20})
    assert not res.passed
    errors = res.summary["errors"]
    assert any(re.search(r"episode 0 \(program seed 2\): watchdog: the fabric ran \d+ cycles without every tile "
                         r"halting \(halted \[False, False, False\]", e) for e in errors), errors
    assert any("chip count is 0, expected 1" in e for e in errors), errors
    assert res.summary["programs"] == 1   # the run stops at the first timeout


@pytest.mark.sim
def test_raw_run_checks_its_programs():
    """The raw run (no cocotb: make bench's limit) runs the throughput test's programs,
    counts load and run cycles as it does, and checks every event: the quick tier's
    fabric passes, and its negative twin's golden (a 3-cycle ALU) finds mismatches."""
    from lockstep.verif.raw import run_raw

    ok = run_raw("sched_random_tp", "icarus", seed=1, opts={"programs": 2})
    tp = run("sched_random_tp", "icarus", seed=1, opts={"programs": 2})
    assert ok.mismatches == 0 and ok.transactions == tp.summary["transactions"] > 100
    assert ok.cycles == tp.summary["cycles"]
    bad = run_raw("sched_random_mutant_tp", "icarus", seed=1, opts={"programs": 1})
    assert bad.mismatches > 0
