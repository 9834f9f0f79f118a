"""The STU's throughput mode: its generated harness, its file formats, its records rebuilt
into the per-edge observation, and (simulation) the same stream as the per-edge mode,
failures named."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from lockstep.gen.lint import lint_file
from lockstep.gen.harness import harness_name
from lockstep.gen.sparse.harness import COUNTERS, emit_stu_harness, load_depth, stu_harness, stu_ports_of
from lockstep.models import sparse
from lockstep.verif.context import TbContext
from lockstep.verif.episodes import RecordError
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import generate_rtl, run
from lockstep.verif.sparse.stu_env import LD_DATA, LD_FC, LD_WEIGHTS, JobPauses, StuUnit, job_pause_seed, load_words
from lockstep.verif.sparse.stu_jobs import acc_after, make_jobs
from lockstep.verif.sparse.tp_env import (
    End, Record, build_jobs, cfg_word, observation, read_record, stream_entry, write_job,
)
from lockstep.verif.twin import pause_threshold, xs32

STU_TP = sorted(n for n, tb in TESTBENCHES.items() if tb.family == "sparse" and tb.mode == "throughput")


def test_random_and_mixed_stu_testbenches_have_a_throughput_version():
    """Every random or mixed per-edge STU testbench registered before the full tier's
    sweep (and the errors scenario) has a ``<name>_tp`` twin on the same top, parameters,
    scenario and expectation; the random STU 1300 and STU 1400 run in the quick tier with
    the negative twin on the STU 1300's build, deep enough (100,000 cycles on Verilator,
    10,000 on Icarus: a random job has at least 40 harness edges on average over 2,600
    jobs and 37 over 300, see the registry's comment; seed 1's stall-free edges, a lower
    bound the raw-run test holds against a simulation, are counted here)."""
    edge = ["sparse_stu_random", "sparse_stu_random_p3", "sparse_stu_u2", "sparse_stu_u2_p3", "sparse_stu_u2_mixed",
            "sparse_stu_wide", "sparse_stu_u2_wide", "sparse_stu_mutant", "sparse_stu_errors"]
    for n in edge:
        tp, tb = TESTBENCHES[f"{n}_tp"], TESTBENCHES[n]
        assert (tp.toplevel, tp.params, tp.tb_params, tp.expect_fail, tp.opts["scenario"]) == (
            tb.toplevel, tb.params, tb.tb_params, tb.expect_fail, tb.opts["scenario"]), n
        assert tp.mode == "throughput" and tp.opts["harness"] == "lockstep.gen.sparse.harness:emit_stu_harness", n
        assert tp.opts["raw"] == "lockstep.verif.sparse.raw:run_raw_stu" and tp.test_module.endswith("test_tp")
    quick = {n for n in STU_TP if TESTBENCHES[n].tier == "quick"}
    assert quick == {"sparse_stu_random_tp", "sparse_stu_u2_tp", "sparse_stu_mutant_tp"}
    assert TESTBENCHES["sparse_stu_mutant_tp"].params == TESTBENCHES["sparse_stu_random_tp"].params
    for n in ("sparse_stu_random_tp", "sparse_stu_u2_tp"):
        o = TESTBENCHES[n].opts
        assert o["jobs"] * 40 >= 100_000 and o["by_sim"]["icarus"]["jobs"] * 37 >= 10_000, n
        assert _edges_at_least(n, 1, o["jobs"]) >= 100_000 and _edges_at_least(n, 1, o["by_sim"]["icarus"]["jobs"]) \
            >= 10_000, n


def _edges_at_least(name: str, seed: int, jobs: int) -> int:
    """Harness edges of a throughput run without stalls (a lower bound): per job one
    edge to open it, its load words, the start edge and the cycles to done (to the
    reset's read for a cut job), plus the first job's reset."""
    tb = TESTBENCHES[name]
    w = {n: int(s["width"]) for n, s in _record(name)["ports"].items()}
    p = tb.tb_params or tb.params
    total = 3
    for j in build_jobs(p, seed, {**tb.opts, "jobs": jobs}, w):
        d = j.reset_at + 1 if j.reset_at is not None else sparse.cycles(j.golden)
        total += 1 + len(load_words(j, p)) + 1 + d + 1
    return total


# ---- the harness ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sparse_stu_random_tp", "sparse_stu_u2_tp", "sparse_stu_u2_wide_tp"])
def test_harness_lints_clean(name, tmp_path):
    """verilator --lint-only -Wall --timing and iverilog -g2012 accept the harness with
    its top (u = 1; u = 2 with fifo_occ; p = 8 with 16-bit values), with no waiver."""
    tb = TESTBENCHES[name]
    record = generate_rtl(tb)
    path = emit_stu_harness(record, tmp_path)
    assert path.name == f"{harness_name(tb.toplevel)}.v"
    assert "lint_off" not in path.read_text()
    assert lint_file(path, extra=(record.with_suffix(".v"),), timing=True) == []


def _record(name: str = "sparse_stu_random_tp") -> dict:
    return json.loads(generate_rtl(TESTBENCHES[name]).read_text())


def test_harness_takes_every_width_from_the_record():
    """The load image's words and the cfg word are the record's widths, its depth the
    record's memories; fifo_occ is recorded only when the top has it; a missing port, a
    wrong direction, an unknown input or a wide control is refused, naming it."""
    rec = _record()
    sp = stu_ports_of(rec)
    p = rec["params"]
    assert sp.depth == load_depth(p) == p["depth"] + max(p["kmax"] ** 2, p["nmax_out"] * p["wmax"])
    text = stu_harness(rec)
    lw = rec["ports"]["ld_sel"]["width"] + rec["ports"]["ld_addr"]["width"] + rec["ports"]["ld_data"]["width"]
    assert f"reg [{lw - 1}:0] limg [0:DEPTH-1];" in text and f"localparam integer DEPTH = {sp.depth};" in text
    cb = sum(s["width"] for n, s in rec["ports"].items() if n.startswith("cfg_"))
    assert f"reg [{cb - 1}:0] cfgw;" in text and cb == sp.cfg_bits and "fifo_occ" not in text
    assert "fifo_occ" in stu_harness(_record("sparse_stu_u2_tp")) and stu_ports_of(_record("sparse_stu_u2_tp")).fifo
    for change, match in [(lambda r: r["ports"].pop("acc_we"), "'acc_we'"),
                          (lambda r: r["ports"]["done"].update(dir="in"), "'done'"),
                          (lambda r: r["ports"].update(extra={"dir": "in", "width": 1}), r"\['extra'\]"),
                          (lambda r: r["ports"]["busy"].update(width=2), r"busy is \[2\], not 1"),
                          (lambda r: r["params"].pop("depth"), "no depth")]:
        bad = json.loads(json.dumps(rec))
        change(bad)
        with pytest.raises(ValueError, match=match):
            stu_harness(bad)


# ---- the file formats -----------------------------------------------------------------------
P = TESTBENCHES["sparse_stu_random"].params
P2 = TESTBENCHES["sparse_stu_u2"].params


def _unit(tmp_path: Path, name: str = "sparse_stu_random_tp", seed: int = 1) -> StuUnit:
    tb = TESTBENCHES[name]
    p = tb.tb_params or tb.params
    return StuUnit(TbContext(_record(name), p.to_dict(), dict(tb.opts), tmp_path, seed), p)


def test_load_words_are_the_per_edge_loads():
    """The packed data entries from 0, then the packed weights from 0 and a copy of the
    last past them when the memory has room (CONV), or the FC matrix at o * wmax, masked
    to ww bits; nothing for a refused start."""
    w = {n: int(s["width"]) for n, s in _record()["ports"].items()}
    conv = next(j for j in make_jobs("random", P, np.random.default_rng(2), 6, w) if j.data and j.weights)
    words = load_words(conv, P)
    nd = len(conv.data)
    assert words[:nd] == [(LD_DATA, a, x) for a, x in enumerate(sparse.pack_data(conv.data, P))]
    packed = sparse.pack_weights(conv.weights, P)
    poison = [(LD_WEIGHTS, len(packed), packed[-1])] if len(packed) < P.kmax ** 2 else []  # past WNZ: never read
    assert words[nd:] == [(LD_WEIGHTS, a, x) for a, x in enumerate(packed)] + poison
    fc = next(j for j in make_jobs("fc", P, np.random.default_rng(2), 6, w) if j.cfg.n_out > 1 and (j.weights < 0).any())
    fw = [x for x in load_words(fc, P) if x[0] == LD_FC]
    Wm = np.asarray(fc.weights)
    assert fw == [(LD_FC, o * P.wmax + i, int(Wm[o, i]) & ((1 << P.ww) - 1)) for o in range(Wm.shape[0])
                  for i in range(Wm.shape[1])]
    refused = next(j for j in make_jobs("errors", P, np.random.default_rng(1), 30, w) if j.refused)
    assert load_words(refused, P) == []


def test_write_job_writes_what_the_harness_reads(tmp_path):
    """The load words as {sel, addr, data}, then the settings line: load count, watchdog,
    the second start, the reset, the job's back-pressure generator and the cfg word in
    record order; a job the harness cannot hold is refused naming it."""
    unit = _unit(tmp_path)
    sp = stu_ports_of(_record())
    jobs = make_jobs("errors", P, np.random.default_rng(1), 30, unit.widths)
    poke = next(j for j in jobs if j.poke is not None)
    poke.bp = 0.3
    write_job(tmp_path, 5, poke, sp, unit, 7, 777)
    ab, db = sp.w("ld_addr"), sp.w("ld_data")
    got = [int(x, 16) for x in (tmp_path / "tp_load_5.hex").read_text().split()]
    assert [(x >> (ab + db), (x >> db) & ((1 << ab) - 1), x & ((1 << db) - 1)) for x in got] == load_words(poke, P)
    cfg = (tmp_path / "tp_cfg_5.txt").read_text().split()
    assert cfg[:6] == [str(len(got)), "777", str(poke.poke), "0", str(job_pause_seed(7, 5)), str(pause_threshold(0.3))]
    word, k = int(cfg[6], 16), 0
    for name, width in reversed(sp.cfg):
        assert (word >> k) & ((1 << width) - 1) == unit.cfg(poke)[name], name
        k += width
    assert cfg_word(unit.cfg(poke), sp) == word
    cut = next(j for j in jobs if j.reset_at is not None)
    write_job(tmp_path, 6, cut, sp, unit, 7, 9)
    assert (tmp_path / "tp_cfg_6.txt").read_text().split()[3] == str(cut.reset_at)
    big = dataclasses.replace(poke, data=poke.data * (sp.depth // max(1, len(poke.data)) + 2))
    with pytest.raises(ValueError, match=r"job 8 \(busy-.*\): \d+ load words; the harness holds"):
        write_job(tmp_path, 8, big, sp, unit, 7, 9)
    wide = dataclasses.replace(poke, cfg=dataclasses.replace(poke.cfg, shift=1 << sp.w("cfg_shift")))
    with pytest.raises(ValueError, match=r"job 9 .*cfg_shift = \d+ does not fit"):
        write_job(tmp_path, 9, wide, sp, unit, 7, 9)


def test_job_pauses_follow_the_harness_generator():
    """The per-edge twin answers for cycle k = trace samples since the start cycle:
    never before cycle 1, then xs32^(k-1)(seed) >> 16 < round(bp * 65536)."""

    class Bfm:
        now = 40

    bfm = Bfm()
    tw = JobPauses(bfm, 12345, 0.6)
    got = []
    for k in range(0, 200):
        bfm.now = 40 + k
        got.append(next(tw))
    s, want = 12345, [False]
    for _ in range(1, 200):
        want.append((s >> 16) < pause_threshold(0.6))
        s = xs32(s)
    assert got == want and 60 < sum(got) < 180
    assert not any(next(JobPauses(bfm, 99, 0.0)) for _ in range(50))
    assert len({job_pause_seed(3, e) for e in range(100)}) == 100 and job_pause_seed(0, 0) != 0


def test_read_record_parses_and_refuses_malformed_or_x_lines(tmp_path):
    """Busy changes, done, beats with their data, stalls, taps, the second start, X/Z
    taps as problems and the end line; a line that does not parse, an X field, a flag
    that is not a bit, a cycle going back, a line after E or no E is a RecordError naming
    the file, the line and its text (never a silent drop)."""
    f = tmp_path / "tp_rec_0.log"
    e_line = "E done 9 2 0 4 5 6 7 1 3 100 140"
    f.write_text(f"B 0 0\nB 1 1\nA 2 5 1f 1\nS 3\nO 4 1abc\nP 4 1\nU 5\nB 9 0\nD 9\n{e_line}\n")
    r = read_record(f, fifo=True)
    assert r.busy == [(0, 0), (1, 1), (9, 0)] and r.done == [9] and r.beats == [(4, 0x1ABC)] and r.stalls == [3]
    assert r.taps == [(2, 5, 0x1F, 1)] and r.poke == (4, 1) and len(r.problems) == 1 and "cycle 5" in r.problems[0]
    assert r.end == End("done", 9, 2, 0, dict(zip(COUNTERS, (4, 5, 6, 7, 1, 3))), 0x100, 0x140)
    for body, match in [("O 4 1x", r"line 2: field 2 is '1x': X or Z"), ("Q 4", r"line 2 does not parse"),
                        ("A 2 5 1f", r"line 2 does not parse: 'A 2 5 1f'"), ("", r"line 2 does not parse: ''"),
                        ("B 2 2", r"busy is 2, not 0 or 1"), ("P 3 z", r"field 2 is 'z'"),
                        (f"D 7\nD 5\n{e_line}", r"line 3: cycle 5 after cycle 7"),
                        (f"{e_line}\nD 10", r"line 3: a line after the E line"),
                        ("D 9", r"no E line \(the record is cut short\)"),
                        ("E ended 9 0 0 0 0 0 0 0 0 0 0", r"end reason 'ended'"),
                        ("E done 9 x 0 0 0 0 0 0 0 0 0", r"E field 3 is 'x'")]:
        f.write_text(f"B 0 0\n{body}\n")
        with pytest.raises(RecordError, match=match):
            read_record(f, fifo=True)
    f.write_text(f"D 9\n{e_line}\n")
    with pytest.raises(RecordError, match="no busy value for cycle 0"):
        read_record(f, fifo=False)
    with pytest.raises(RecordError, match="no such record file"):
        read_record(tmp_path / "missing.log", fifo=False)


def _golden_record(job, p, sticky: int, stalls: tuple[int, ...] = ()) -> Record:
    """What a correct harness writes for ``job`` (its golden run, no taps): busy from
    cycle 1 to d - 1, done in cycle d, the golden words in the cycles before done (a
    stall delays done by one cycle)."""
    g = job.golden
    d = sparse.cycles(g, len(stalls))
    words = sparse.pack_out(g.out_entries, p)
    beats = [(d - len(words) + i, w) for i, w in enumerate(words)]
    r = Record(busy=[(0, 0), (1, 1), (d, 0)] if d > 1 else [(0, 0)], done=[d], beats=beats, stalls=list(stalls))
    r.end = End("done", d, sticky, 0, {n: getattr(g, n) + (len(stalls) if n == "cyc_drain" else 0) for n in COUNTERS},
                100, d + 50)
    return r


def test_observation_feeds_the_per_edge_check(tmp_path):
    """Records rebuilt into the per-edge Observation pass StuUnit.check for correct
    records (the sticky err carried from job to job); a wrong word, a stall the cycle
    count does not show, two lanes on one address, or a FIFO beyond fifo_d fail with the
    per-edge messages."""
    unit = _unit(tmp_path)
    jobs = make_jobs("random", P, np.random.default_rng(3), 6, unit.widths)
    sticky = 0
    for job in jobs:
        sticky |= job.golden.errors
        obs = observation(job, _golden_record(job, P, sticky), fifo=False)
        assert unit.check(job, obs) == [], job
        assert len(obs.trace["busy"]) == obs.last + 1 and stream_entry(obs)["done"] == [obs.last]
    job = next(j for j in jobs if j.golden.out_entries)
    rec = _golden_record(job, P, unit.sticky)
    rec.beats[0] = (rec.beats[0][0], rec.beats[0][1] ^ 1)
    assert any("first difference at word 0" in e for e in unit.check(job, observation(job, rec, fifo=False)))
    rec = _golden_record(job, P, unit.sticky)
    rec.stalls = [rec.beats[0][0]]   # a stall, but done as without one
    errs = unit.check(job, observation(job, rec, fifo=False))
    assert any(e.startswith("start to done took") for e in errs) and any(e.startswith("cyc_drain") for e in errs)
    rec = _golden_record(job, P, unit.sticky)
    ab = unit.ab
    rec.taps = [(3, 0b11, (7 << ab) | 7)]   # lanes 0 and 1 both add to address 7 in cycle 3
    assert "cycle +3: two lanes add to one accumulator address [7, 7]" in unit.check(job, observation(job, rec, False))
    u2 = _unit(tmp_path, "sparse_stu_u2_tp")
    j2 = make_jobs("random", P2, np.random.default_rng(3), 3, u2.widths)[-1]
    rec = _golden_record(j2, P2, j2.golden.errors)
    assert u2.check(j2, observation(j2, rec, fifo=True)) == []
    rec.taps = [(2, 0, 0, P2.fifo_d + 1)]
    assert f"cycle +2: collision FIFO holds {P2.fifo_d + 1} items, fifo_d = {P2.fifo_d}" in u2.check(
        j2, observation(j2, rec, fifo=True))


def test_build_jobs_is_the_per_edge_builder():
    """Same scenario, parameters, seed and count: the per-edge testbench's jobs."""
    w = {n: int(s["width"]) for n, s in _record()["ports"].items()}
    a = build_jobs(P, 9, {"scenario": "mixed", "jobs": 8}, w)
    b = make_jobs("mixed", P, np.random.default_rng(9), 8, w)
    assert [repr(j) for j in a] == [repr(j) for j in b] and all(
        x.golden.out_entries == y.golden.out_entries for x, y in zip(a, b))
    assert len(build_jobs(P, 9, {"scenario": "random"}, w)) == StuUnit.default_jobs


def test_streamed_jobs_chain_the_accumulator():
    """A streamed run's jobs: the first repetition is ``make_jobs``'s; each next one
    starts from the accumulator the last job left (an ``emit = 0`` job keeps it), as the
    hardware does -- each job's golden result is the model's from that accumulator."""
    w = {n: int(s["width"]) for n, s in _record()["ports"].items()}
    it = build_jobs(P, 4, {"scenario": "mixed", "jobs": 5}, w, stream=True)
    got = [next(it) for _ in range(40)]
    first = make_jobs("mixed", P, np.random.default_rng(4), 5, w)
    assert [repr(j) for j in got[:len(first)]] == [repr(j) for j in first]
    acc, kept = None, 0
    for j in got:
        assert (j.acc_in is None) == (acc is None) and (acc is None or (j.acc_in == acc).all())
        want = sparse.stu_job(j.cfg, j.data, j.weights, P, acc=acc)
        assert want.out_entries == j.golden.out_entries and want.errors == j.golden.errors
        kept += acc is not None
        acc = acc_after(j)
    assert kept, "no job started from a kept accumulator: the chaining was not exercised"


# ---- simulation ---------------------------------------------------------------------------
def _edge_stream(monkeypatch, edge: str) -> str:
    """Register (for this test only) the per-edge testbench ``edge`` with the module that
    also writes its observations (lockstep.verif.sparse.test_tp on the bare top)."""
    name = f"{edge}_stream"
    monkeypatch.setitem(TESTBENCHES, name, dataclasses.replace(
        TESTBENCHES[edge], name=name, test_module="lockstep.verif.sparse.test_tp"))
    return name


#: (per-edge testbench, seed, jobs, simulator): the quick tier's STU 1300 and STU 1400 on
#: both simulators; the errors scenario (a second start while busy, a reset in a job,
#: refused starts) and the mixed STU 1400 (FC after CONV, channels, dense) on Verilator.
EQUIV = [("sparse_stu_random", 3, 8, "icarus"), ("sparse_stu_random", 12, 8, "verilator"),
         ("sparse_stu_u2", 5, 8, "verilator"), ("sparse_stu_u2", 12, 8, "icarus")] + [("sparse_stu_errors", 1, 30, "verilator"), ("sparse_stu_u2_mixed", 7, 24, "verilator")]


@pytest.mark.sim
@pytest.mark.parametrize("edge,seed,jobs,sim", EQUIV)
def test_both_modes_see_the_identical_stream(edge, seed, jobs, sim, monkeypatch):
    """For one seed, the per-edge BFM (with the harness's back-pressure) and the
    throughput harness see the very same stream, job by job: cycles from start to done,
    busy in every cycle, done, every output word with its cycle, every stall, the
    counters, err (the state after a reset, the second start's busy) and every
    accumulator-write tap; both pass against the golden model and report the same
    coverage."""
    a = run(_edge_stream(monkeypatch, edge), sim, seed=seed, opts={"jobs": jobs})
    b = run(f"{edge}_tp", sim, seed=seed, opts={"jobs": jobs, "cycles": 0, "dump_stream": True})
    assert a.ok and b.ok, (a.line(), b.line(), a.summary.get("errors"), b.summary.get("errors"))
    sa = json.loads((a.results / "stream.json").read_text())
    sb = json.loads((b.results / "stream.json").read_text())
    assert len(sa) == len(sb) == b.summary["jobs"] >= jobs
    for i, (x, y) in enumerate(zip(sa, sb)):
        diff = {k: (str(x[k])[:200], str(y[k])[:200]) for k in x if x[k] != y[k]}
        assert not diff, f"job {i}: per-edge vs throughput: {diff}"
    assert sum(len(x["out"]) for x in sa) > 20 and sum(len(x["taps"]) for x in sa) > 20
    assert b.summary["transactions"] == sum(x["n_out"] for x in sb) + len(sb)
    # the same cover points hit as often (sampled from the same observations), the same
    # u = 2 round coverage and cycles per job
    for key in ("cover_points", "rounds_coverage", "perf"):
        assert a.summary.get(key) == b.summary.get(key), key
    assert b.summary["cover_points"] and b.summary["perf"] and ("rounds_coverage" in b.summary) == ("u2" in edge)
    if edge != "sparse_stu_errors":
        assert sum(len(x["stalls"]) for x in sa) > 0   # the back-pressure did stall the output
    else:   # the mid-job controls ran: a second start while busy, a job cut by a reset
        assert any("poked" in x["read"] for x in sb) and any("after_reset" in x["read"] for x in sb)
        assert any(x["read"].get("err", 0) & sparse.STU_ERR["START_BUSY"] for x in sb)


@pytest.mark.sim
def test_the_negative_twin_fails_naming_job_and_replay():
    """An STU 1300 checked as an STU 1400 fails: the first message names the job and a
    replay (throughput with a waves window, and per-edge with the harness's pauses)."""
    res = run("sparse_stu_mutant_tp", "verilator", seed=4)
    assert res.ok and not res.passed and res.summary["mismatches"] > 0
    errors = res.summary["errors"]
    assert re.match(r"job \d+ \(\w+: K=\d .*\): .*\n    replay: make sim TEST=sparse_stu_mutant_tp SEED=4 WAVES=1 "
                    r"WINDOW=\d+:\d+; per-edge: python -m lockstep.verif.runner sparse_stu_mutant --seed 4 "
                    r"--opt jobs=4 --opt pauses=cycle$", errors[0]), errors[0]


def _stub(tmp_path: Path) -> Path:
    """A wrong stu_top with the record's ports: every output 0, so done never rises."""
    rec = _record()
    decl = ",\n".join(f"  {'input' if p['dir'] == 'in' else 'output'} wire [{p['width'] - 1}:0] {n}"
                      for n, p in rec["ports"].items())
    outs = "\n".join(f"  assign {n} = {p['width']}'d0;" for n, p in rec["ports"].items() if p["dir"] == "out")
    path = tmp_path / "stub.v"
    path.write_text(f"module stu_top (\n{decl}\n);\n{outs}\nendmodule\n")
    return path


@pytest.mark.sim
def test_a_top_that_never_finishes_ends_with_the_watchdog(tmp_path):
    """An implementation whose done never rises ends with the harness's watchdog on the
    first job, reported with a 'no done' message for that job."""
    res = run("sparse_stu_random_tp", "icarus", seed=2, rtl=_stub(tmp_path), opts={"jobs": 2})
    assert not res.passed
    errors = res.summary["errors"]
    assert errors[0].startswith("the harness's watchdog ended the run in job 0"), errors
    assert any(re.match(r"job 0 \(\w+: .*\): no done within \d+ cycles", e) for e in errors), errors
    assert res.summary["jobs"] == 1


@pytest.mark.sim
def test_raw_run_checks_its_jobs_and_a_missing_file_is_an_error_status():
    """The raw run (no cocotb: make bench's limit) runs the throughput test's jobs,
    counts cycles as it does (the stall-free edges plus the stalls: the depth test's
    lower bound is exact), and checks every job: the quick tier's STU passes, its
    negative twin's golden (u = 2) finds mismatches; a job whose files are missing ends
    the run with status missing:<file>."""
    from lockstep.verif.raw import build_raw, execute
    from lockstep.verif.runner import run_opts
    from lockstep.verif.sparse.raw import run_raw_stu

    tb = TESTBENCHES["sparse_stu_random_tp"]
    exe = build_raw(tb, "icarus")
    ok = run_raw_stu(tb, "icarus", exe, 1, run_opts(tb, "icarus", {"jobs": 12}))
    tp = run("sparse_stu_random_tp", "icarus", seed=1, opts={"jobs": 12, "dump_stream": True})
    assert ok.mismatches == 0 and ok.transactions == tp.summary["transactions"] > 50
    stalls = sum(len(x["stalls"]) for x in json.loads((tp.results / "stream.json").read_text()))
    assert ok.cycles == tp.summary["cycles"] == _edges_at_least("sparse_stu_random_tp", 1, 12) + stalls and stalls
    bad_tb = TESTBENCHES["sparse_stu_mutant_tp"]
    bad = run_raw_stu(bad_tb, "icarus", build_raw(bad_tb, "icarus"), 1, run_opts(bad_tb, "icarus"))
    assert bad.mismatches > 0
    for f in ok.folder.glob("tp_*"):
        f.unlink()
    unit = StuUnit(TbContext(_record(), P.to_dict(), {}, ok.folder, 1), P)
    job = build_jobs(P, 1, {"jobs": 1}, unit.widths)[0]
    write_job(ok.folder, 0, job, stu_ports_of(_record()), unit, 1, 1000)
    _, end = execute(exe, "icarus", ["+tp_jobs=2", "+tp_go", "+tp_finish"], ok.folder, tb.name)
    assert end[1:] == ["1", "missing:tp_cfg_1.txt"], end
