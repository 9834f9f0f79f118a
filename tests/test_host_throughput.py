"""host_top's throughput mode: its generated harness, its script and file formats, its
records checked by the per-edge checks, and (simulation) the same completions and memory
as the per-edge mode for one seed, failures named."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from lockstep.gen.host.harness import OPS, OPS_DEPTH, emit_host_harness, harness_name, host_harness, host_ports_of
from lockstep.gen.lint import lint_file
from lockstep.models import host as hm
from lockstep.verif.host.driver import TP
from lockstep.verif.host.jobs import make_scenario
from lockstep.verif.host.top_env import FINAL_REGS, initial_image, reset_values, submissions
from lockstep.verif.host.tp_env import (
    EDGE_ONLY, Final, RecordError, Trace, build_episode, build_episodes, check_episode, episode_seed, read_final,
    read_trace, stream_entry, write_episode,
)
from lockstep.verif.registry import HOST_TP_QUICK, TESTBENCHES
from lockstep.verif.runner import generate_rtl, run

HOST_TP = sorted(n for n, tb in TESTBENCHES.items() if tb.family == "host" and tb.mode == "throughput")
P = TESTBENCHES["host_top_stream"].params


def _record(name: str = "host_top_stream_tp") -> dict:
    return json.loads(generate_rtl(TESTBENCHES[name]).read_text())


# ---- registration ---------------------------------------------------------------------------
def test_every_top_testbench_but_errors_has_a_throughput_version():
    """Every per-edge host_top testbench but the errors scenario has a ``<name>_tp`` twin
    on the same top, parameters, scenario and expectation; stream, backpressure, two
    kernels and the negative twin run in the quick tier (the negative one on the same
    build as stream)."""
    edge = [n for n, tb in TESTBENCHES.items() if tb.test_module.endswith("host.test_top")]
    assert len(edge) >= 7
    for n in edge:
        tb = TESTBENCHES[n]
        if tb.opts["scenario"] in EDGE_ONLY:
            assert f"{n}_tp" not in TESTBENCHES, n
            continue
        tp = TESTBENCHES[f"{n}_tp"]
        assert (tp.toplevel, tp.params, tp.tb_params, tp.expect_fail, tp.opts["scenario"]) == (
            tb.toplevel, tb.params, tb.tb_params, tb.expect_fail, tb.opts["scenario"]), n
        assert tp.mode == "throughput" and tp.opts["harness"] == "lockstep.gen.host.harness:emit_host_harness", n
        assert tp.opts["raw"] == "lockstep.verif.host.raw:run_raw_host", n
    quick = {n for n in HOST_TP if TESTBENCHES[n].tier == "quick"}
    assert quick == {"host_top_stream_tp", "host_top_backpressure_tp", "host_top_two_tp", "host_top_mutant_tp"}
    mut = TESTBENCHES["host_top_mutant_tp"]
    assert mut.expect_fail and mut.params == TESTBENCHES["host_top_stream_tp"].params


@pytest.mark.parametrize("name", ["host_top_stream_tp", "host_top_two_tp"])
def test_quick_tier_runs_are_long_enough(name):
    """A lower bound of a quick run's harness edges (per episode: the memory load and
    read-back, 2 * mem_words, plus the exec_cycles the model gives its tasks, per kernel)
    is over 100,000 on Verilator and 10,000 on Icarus for every seed tried."""
    tb = TESTBENCHES[name]
    p = tb.params
    for sim, floor in (("verilator", 100_000), ("icarus", 10_000)):
        o = {**{k: v for k, v in tb.opts.items() if k != "by_sim"}, **tb.opts["by_sim"].get(sim, {})}
        assert o["tasks"] == HOST_TP_QUICK["tasks"]
        for seed in (1, 2, 3):
            low = 0.0
            for ep in build_episodes(p, seed, o):
                assert ep.tasks == o["tasks"]   # the layout holds every task
                low += 2 * p.mem_words + sum(hm.exec_cycles(hm.Descriptor.unpack(w), p) for _, w, _ in ep.subs) \
                    / p.n_kernels
            assert low >= floor, (sim, seed, low)


# ---- the harness ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["host_top_stream_tp", "host_top_two_tp"])
def test_harness_lints_clean(name, tmp_path):
    """verilator --lint-only -Wall --timing and iverilog -g2012 accept the harness with
    its top (depth 8 and depth 4 with two kernels), with no waiver."""
    tb = TESTBENCHES[name]
    record = generate_rtl(tb)
    path = emit_host_harness(record, tmp_path)
    assert path.name == f"{harness_name(tb.toplevel)}.v"
    assert "lint_off" not in path.read_text()
    assert lint_file(path, extra=(record.with_suffix(".v"),), timing=True) == []


def test_harness_takes_every_width_from_the_record():
    """Script words, the image and the SQ/CQ pointers follow the record; a missing port,
    a wrong direction, disagreeing widths or no depth are refused, naming what is wrong."""
    rec = _record()
    hp = host_ports_of(rec)
    assert (hp.depth, hp.mem_words, hp.op_bits) == (8, P.mem_words, 4 + 12 + 32)
    text = host_harness(rec)
    assert "reg [47:0] ops [0:OPSD-1];" in text and f"localparam integer NW = {P.mem_words};" in text
    assert "reg [3:0] sq_tail;" in text
    two = host_ports_of(_record("host_top_two_tp"))
    assert two.depth == 4 and "reg [2:0] sq_tail;" in host_harness(_record("host_top_two_tp"))
    assert f"localparam integer OPSD = {OPS_DEPTH};" in text and "OPSD = 64;" in host_harness(rec, 64)
    with pytest.raises(ValueError, match="power of two"):
        host_harness(rec, 100)
    for edit, match in [(lambda r: r["ports"].pop("cq_nonempty"), "'cq_nonempty'"),
                        (lambda r: r["ports"]["sq_full"].update(dir="in"), "'sq_full'"),
                        (lambda r: r["ports"]["dma_raddr"].update(width=11), r"dma_addr \[12\] vs dma_raddr \[11\]"),
                        (lambda r: r["ports"]["csr_rdata"].update(width=16), r"csr_rdata is \[16\], not 32"),
                        (lambda r: r["params"].pop("depth"), "params.depth")]:
        bad = json.loads(json.dumps(rec))
        edit(bad)
        with pytest.raises(ValueError, match=match):
            host_harness(bad)


# ---- the script and the files -----------------------------------------------------------------
def test_episode_is_the_per_edge_run_of_its_seed():
    """Episode e replays the per-edge scenario of seed episode_seed(seed, e) (episode 0:
    the run's seed): its steps, image and stamped descriptors; the errors scenario is
    refused as per-edge only."""
    ep = build_episode(P, "stream", 5, 12, 0)
    assert ep.seed == episode_seed(5, 0) == 5 and episode_seed(5, 2) != 5
    sc = make_scenario("stream", P, 5, 12)
    assert [s.desc for s in ep.sc.steps] == [s.desc for s in sc.steps]
    assert (ep.image == initial_image(P, sc, 5)).all()
    assert [w for _, w, _ in ep.subs] == [w for _, w, _ in submissions(sc)]
    eps = build_episodes(P, 5, {"scenario": "stream", "tasks": 12, "episodes": 3})
    assert [e.seed for e in eps] == [5, 5 + 7919, 5 + 2 * 7919] and eps[0].ops == ep.ops
    with pytest.raises(ValueError, match="errors scenario is per-edge only"):
        build_episode(P, "errors", 1, 12)


def test_script_plays_the_per_edge_accesses_in_order():
    """Reset reads, RO ID, the test port, the set-up with read-backs, the load, PERF_CTRL
    and CTRL, the first depth tasks behind one doorbell then one per doorbell with their
    gaps, DRAIN, the final registers, the DMA counters, DUMP, END."""
    ep = build_episode(P, "stream", 2, 12)
    ops = ep.ops
    names = list(reset_values(P))
    assert ops[:len(names)] == [(OPS["RD"], hm.CSR[n], 0) for n in names]
    k = len(names)
    assert ops[k:k + 2] == [(OPS["WR"], hm.CSR["ID"], 0x12345678), (OPS["RD"], hm.CSR["ID"], 0)]
    tpw = [o for o in ops if o[0] == OPS["TPW"]]
    assert tpw == [(OPS["TPW"], TP["SEED"], 2), (OPS["TPW"], TP["BP_RATE"], 0), (OPS["TPW"], TP["LAT_RATE"], 0),
                   (OPS["TPW"], TP["ERR_LO"], 0), (OPS["TPW"], TP["ERR_HI"], 0)]
    load = ops.index((OPS["LOAD"], 0, 0))
    assert ops[load + 1:load + 3] == [(OPS["WR"], hm.CSR["PERF_CTRL"], 1), (OPS["WR"], hm.CSR["CTRL"], 1)]
    subs = [i for i, o in enumerate(ops) if o[0] == OPS["SUBMIT"]]
    assert [ops[i][2] for i in subs] == [P.depth] + [1] * (12 - P.depth)
    descs = [o[2] for o in ops if o[0] == OPS["DESC"]]
    assert descs == [w for _, w, _ in ep.subs for w in w]
    tail = ops[-(len(FINAL_REGS) + 6):]
    assert tail[:2] == [(OPS["DRAIN"], 0, 12), (OPS["GAP"], 0, 4)]
    assert tail[2:2 + len(FINAL_REGS)] == [(OPS["RD"], hm.CSR[n], 0) for n in FINAL_REGS]
    assert tail[-4:] == [(OPS["TPR"], TP["DMA_WR_BYTES"], 0), (OPS["TPR"], TP["DMA_RD_BYTES"], 0),
                         (OPS["DUMP"], 0, 0), (OPS["END"], 0, 0)]
    bp = build_episode(P, "backpressure", 2, 20)
    kinds = [o[0] for o in bp.ops]
    assert kinds.count(OPS["STOP"]) == kinds.count(OPS["RESUME"]) == 1
    assert [o for o in bp.ops if o[0] == OPS["TPW"]][1][2] == bp.sc.bp_rate > 0
    fl = build_episode(P, "flush", 2, 14)
    wait = [o for o in fl.ops if o[0] == OPS["WAIT"]]
    assert wait == [(OPS["WAIT"], hm.CSR["STATUS"], 10000 << 16 | 7)]


def test_write_episode_writes_what_the_harness_reads(tmp_path):
    """The image as little-endian words, the script as {op, addr, data} words, the
    settings last; an episode the harness cannot hold is refused naming it."""
    ep = build_episode(P, "stream", 3, 10, 0)
    hp = host_ports_of(_record())
    write_episode(tmp_path, ep, hp)
    words = [int(w, 16) for w in (tmp_path / "tp_mem_0.hex").read_text().split()]
    assert len(words) == P.mem_words and np.array(words, "<u4").view(np.uint8).tolist() == ep.image.tolist()
    ops = [int(w, 16) for w in (tmp_path / "tp_ops_0.hex").read_text().split()]
    assert [(w >> 44, w >> 32 & 0xFFF, w & 0xFFFFFFFF) for w in ops] == ep.ops
    assert (tmp_path / "tp_cfg_0.txt").read_text() == f"{P.mem_words} {len(ep.ops)} {ep.max_cycles}\n"
    big = dataclasses.replace(ep, index=4, ops=ep.ops * 40)
    with pytest.raises(ValueError, match=r"episode 4 \(stream seed 3: 10 tasks\): a script of \d+ words; the harness "
                                         r"holds 4096"):
        write_episode(tmp_path, big, hp)
    odd = dataclasses.replace(ep, ops=[(OPS["WR"], 1 << 12, 0)])
    with pytest.raises(ValueError, match="script word 0"):
        write_episode(tmp_path, odd, hp)


def test_read_trace_parses_and_refuses_malformed_or_x_lines(tmp_path):
    """Every kind of line with its fields; a line that does not parse, an X field or a
    cycle going back is a RecordError naming the file, the line and its text."""
    f = tmp_path / "tp_trace_0.log"
    f.write_text("R 6 0 4e4e5031\nD 10 7 1 2\nB 11 0 5f\nC 12 00000100 0000005f\nF 13\nN 14 a\nP 15 5 00004000\n"
                 "U 16\n")
    tr = read_trace(f)
    assert tr.reads == [(6, 0, 0x4E4E5031)] and tr.doorbells == [(16, 7, 1, 2)] and tr.cq == [(18, 0x100, 0x5F)]
    assert tr.busy == [(17, 0, 0x5F)] and tr.runs(2) == {0: [0x5F], 1: []}
    assert tr.full == [19] and tr.gave_up == [(20, 10)] and tr.tp_reads == [(21, 5, 0x4000)]
    assert tr.problems == ["a status pin (cq_nonempty, sq_full, irq, busy, k_busy) holds X or Z bits in cycle 22"]
    for line, match in [("C 30 000001x0 00000001", r"line 2: field 2 is '000001x0': X or Z"),
                        ("Q 30 1", "line 2 does not parse"), ("C 30 1", r"line 2 does not parse: 'C 30 1'"),
                        ("", "line 2 does not parse: ''"), ("R 1 0 0", "cycle 1 after cycle 6")]:
        f.write_text(f"R 6 0 4e4e5031\n{line}\n")
        with pytest.raises(RecordError, match=match):
            read_trace(f)
    with pytest.raises(RecordError, match="no such record file"):
        read_trace(tmp_path / "missing.log")


def test_read_final_refuses_short_or_x(tmp_path):
    f = tmp_path / "tp_final_0.log"
    good = [f"{w:08x}" for w in range(4)] + ["E ok 269c 1 3 2"]
    f.write_text("\n".join(good) + "\n")
    fin = read_final(f, 4)
    assert (fin.reason, fin.edges, fin.t0, fin.sq_tail, fin.cq_head) == ("ok", 0x269C, 1, 3, 2)
    assert fin.mem.view("<u4").tolist() == [0, 1, 2, 3]
    for lines, match in [(good[1:], "3 memory words, not 4"), (good[:1] + ["0000000x"] + good[2:],
                                                                 r"line 2: memory word 1 reads '0000000x'"),
                         (good[:-1] + ["E done 1 2 3 4"], "line 5 does not parse"), (good[:-1], "does not parse"),
                         ([], "empty")]:
        f.write_text("\n".join(lines) + "\n" if lines else "")
        with pytest.raises(RecordError, match=match):
            read_final(f, 4)
    f.write_text("00000000\nE timeout 10 1 0 0\n")
    assert read_final(f, 4).mem is None   # a timed-out episode keeps what it dumped out of the check


# ---- the checks on records built from the golden model ----------------------------------------
def _golden_records(ep, p) -> tuple[Trace, Final]:
    """What a correct harness records for a stream episode, from the golden model alone:
    completions in SQ order with the model's exec_cycles as the CQ reads them (modulo
    2**cnt_bits) and each task's busy run (whole), the model's memory, counters (modulo
    2**cnt_bits) and pointers."""
    sc = ep.sc
    fm = hm.FrontModel(p, ep.image.copy(), sc.wgt_base, sc.wgt_size, sc.mem_limit, 0, sc.err_window)
    tr = Trace()
    busy = rd = wr = 0
    irq = 0
    for k, (_, w, _) in enumerate(ep.subs):
        o = fm.submit(w)
        c = hm.Completion(o.tag, o.status, 0 if o.on_kernel else hm.FE_KERNEL, o.cq_cycles or 0)
        if o.on_kernel:
            tr.busy.append((99 + k, 0, o.cycles))
        tr.cq.append((100 + k, *c.words()))
        busy += o.cycles or 0
        rd, wr = rd + o.rd_words, wr + o.wr_words
        irq |= hm.Descriptor.unpack(w).irq
    n = len(ep.subs) % (2 * p.depth)
    m = p.cnt_mask
    final = {"PERF_DONE": len(ep.subs) & m, "PERF_ERR": 0, "PERF_BUSY": busy & m, "PERF_BUSY1": 0,
             "PERF_RD_BEATS": rd & m, "PERF_WR_BEATS": wr & m, "PERF_CQ_STALL": 0, "PERF_TOTAL": 5,
             "EXP_SEQ": fm.exp_seq, "SQ_HEAD": n,
             "CQ_TAIL": n, "STATUS": 0b10100, "IRQ_STATUS": irq}
    regs = {"reset": reset_values(p), "ro": {"ID": hm.ID_VALUE}, "final": final}
    sets = iter(ep.set_values)
    for why, name in ep.reads:
        tr.reads.append((50 if why != "final" else 9000, hm.CSR[name], next(sets) if why == "set" else regs[why][name]))
    tr.tp_reads = [(9001, TP["DMA_WR_BYTES"], ep.image.size), (9002, TP["DMA_RD_BYTES"], 0)]
    return tr, Final("ok", 13000, 0, n, n, fm.mem.copy())


def test_check_episode_passes_golden_records_and_names_each_break():
    """Records built from the golden model pass every per-edge check; a wrong
    exec_cycles, a wrong busy run, a lost completion, a changed memory byte, a wrong reset
    value, a wrong harness pointer and a timeout each fail with the per-edge message."""
    ep = build_episode(P, "stream", 4, 12)
    tr, fin = _golden_records(ep, P)
    res = check_episode(ep, tr, fin, P)
    assert res.errors == [] and len(res.cq) == 12 and res.counts["ok"] == 12
    entry = stream_entry(res.cq, res.device, res.runs)
    assert entry["cq"][0] == [0, 0x100, 0, res.cq[0].cycles] and entry["busy"][0] == tr.busy[0][2]
    assert P.cnt_bits < 32 and any(b > P.cnt_mask for b in entry["busy"])   # the quick tier's counters wrap

    tr, fin = _golden_records(ep, P)
    c, w0, w1 = tr.cq[3]
    tr.cq[3] = (c, w0, w1 + 1)
    errs = check_episode(ep, tr, fin, P).errors
    tag = f"tag {res.cq[3].tag:#06x} (OK)"   # the fourth task's
    assert any(re.match(rf"{re.escape(tag)}: exec_cycles \d+, model \d+ \(no back-pressure\)", e) for e in errs), errs
    assert any(e.startswith(f"{tag}: exec_cycles ") and "busy cycles seen on k_busy[0]" in e
               for e in errs), errs

    tr, fin = _golden_records(ep, P)
    c, k, n = tr.busy[5]
    tr.busy[5] = (c, k, n + P.cnt_mask + 1)   # the same exec_cycles read, 2**cnt_bits cycles longer
    errs = check_episode(ep, tr, fin, P).errors
    assert len(errs) == 1 and re.fullmatch(rf"tag 0x0[12]\d\d \(OK\): busy cycles {n + P.cnt_mask + 1}, model {n} "
                                           r"\(no back-pressure\)", errs[0]), errs
    del tr.busy[5]
    errs = check_episode(ep, tr, fin, P).errors
    assert "k_busy[0] rose 11 time(s), kernel 0 completed 12 task(s)" in errs, errs

    tr, fin = _golden_records(ep, P)
    del tr.cq[5]
    errs = check_episode(ep, tr, fin, P).errors
    assert "1 submission(s) never completed: SQ positions [5]" in errs, errs

    tr, fin = _golden_records(ep, P)
    d2 = hm.Descriptor.unpack(ep.subs[2][1])   # the third task's result
    lo = hm.task_ranges(d2, ep.sc.wgt_base)["out"][0]
    fin.mem[lo] ^= 1
    errs = check_episode(ep, tr, fin, P).errors
    assert any(e.startswith(f"device memory: 1 byte(s) differ from the model; first at {lo:#x}") and f"{d2.tag:#06x}" in e
               for e in errs), errs

    tr, fin = _golden_records(ep, P)
    tr.reads[0] = (tr.reads[0][0], tr.reads[0][1], 0)   # ID after reset
    fin.sq_tail ^= 1
    errs = check_episode(ep, tr, fin, P).errors
    assert f"reset value of ID = 0x0, expected {hm.ID_VALUE:#x}" in errs
    assert any(e.startswith("the harness's SQ_TAIL/CQ_HEAD are") for e in errs)

    tr, fin = _golden_records(ep, P)
    del tr.reads[7]
    with pytest.raises(RecordError, match="CSR and 2 test-port reads recorded"):
        check_episode(ep, tr, fin, P)

    tr, _ = _golden_records(ep, P)
    errs = check_episode(ep, Trace(cq=tr.cq[:3]), Final("timeout", 5000, 0, 0, 0, None), P).errors
    assert errs == [f"watchdog: 3 of 12 completions after {ep.max_cycles} harness cycles"]


# ---- simulation ---------------------------------------------------------------------------
def _edge_stream(monkeypatch, edge: str) -> str:
    """Register (for this test only) the per-edge testbench ``edge`` with the module that
    also writes its completions and memory (lockstep.verif.host.test_tp on the bare top)."""
    name = f"{edge}_stream"
    monkeypatch.setitem(TESTBENCHES, name, dataclasses.replace(
        TESTBENCHES[edge], name=name, test_module="lockstep.verif.host.test_tp"))
    return name


#: (per-edge testbench, seed, tasks, simulator): the stream scenario, three seeds.
EQUIV = [("host_top_stream", 1, 16, "verilator"), ("host_top_stream", 6, 24, "verilator"),
         ("host_top_stream", 3, 16, "icarus")]


@pytest.mark.sim
@pytest.mark.parametrize("edge,seed,tasks,sim", EQUIV)
def test_both_modes_see_the_identical_stream(edge, seed, tasks, sim, monkeypatch):
    """For one seed, the per-edge test and the throughput harness see the very same
    completions (status, tag, kernel, exec_cycles, in CQ order) and the very same final
    memory, byte for byte; both pass against the golden model."""
    a = run(_edge_stream(monkeypatch, edge), sim, seed=seed, opts={"tasks": tasks})
    b = run(f"{edge}_tp", sim, seed=seed, opts={"tasks": tasks, "episodes": 1, "cycles": 0, "dump_stream": True})
    assert a.ok and b.ok and a.passed and b.passed, (a.line(), b.line(), a.summary.get("errors"),
                                                     b.summary.get("errors"))
    sa = json.loads((a.results / "stream.json").read_text())
    sb = json.loads((b.results / "stream.json").read_text())
    assert len(sa) == len(sb) == 1
    assert len(sa[0]["cq"]) == tasks and sa[0]["cq"] == sb[0]["cq"]
    assert sa[0]["busy"] == sb[0]["busy"] and None not in sa[0]["busy"]   # the busy runs on the pins too
    assert sa[0]["mem"] is not None and sa[0]["mem"] == sb[0]["mem"]
    assert b.summary["transactions"] == tasks and b.summary["episodes"] == 1


@pytest.mark.sim
def test_the_negative_twin_fails_naming_episode_tag_and_replay():
    """A mem_lat = 2 top checked as mem_lat = 3 fails on exec_cycles: the first message
    names the episode, the tag, and a replay (throughput with a waves window around that
    completion, and per-edge with the episode's seed)."""
    res = run("host_top_mutant_tp", "verilator", seed=4)
    assert res.ok and not res.passed and res.summary["mismatches"] > 0
    errors = res.summary["errors"]
    assert re.match(r"episode 0 \(stream seed 4: 4 tasks\): tag 0x0100 \(OK\): exec_cycles \d+, model \d+ "
                    r"\(no back-pressure\)\n    replay: make sim TEST=host_top_mutant_tp SEED=4 WAVES=1 "
                    r"WINDOW=\d+:\d+; per-edge: python -m lockstep.verif.runner host_top_mutant --seed 4 "
                    r"--opt tasks=4$", errors[0]), errors[0]
    assert any(e.startswith(f"episode 1 (stream seed {episode_seed(4, 1)}: 4 tasks): ") for e in errors), errors


def _stub(tmp_path: Path) -> Path:
    """A wrong host_top with the record's ports: every output 0, so nothing completes."""
    rec = _record()
    decl = ",\n".join(f"  {'input' if p['dir'] == 'in' else 'output'} wire [{p['width'] - 1}:0] {n}"
                      for n, p in rec["ports"].items())
    outs = "\n".join(f"  assign {n} = {p['width']}'d0;" for n, p in rec["ports"].items() if p["dir"] == "out")
    path = tmp_path / "stub.v"
    path.write_text(f"module host_top (\n{decl}\n);\n{outs}\nendmodule\n")
    return path


@pytest.mark.sim
def test_a_top_that_never_completes_ends_with_the_watchdog(tmp_path):
    """An implementation that completes nothing ends with the harness's watchdog in the
    first episode, reported with the per-edge 'watchdog' message."""
    res = run("host_top_stream_tp", "verilator", seed=2, rtl=_stub(tmp_path), opts={"tasks": 2, "episodes": 2})
    assert not res.passed
    errors = res.summary["errors"]
    assert errors[0].startswith("the harness's watchdog ended the run in episode 0"), errors
    assert any(re.match(r"episode 0 \(stream seed 2: 2 tasks\): watchdog: 0 of 2 completions after \d+ harness "
                        r"cycles", e) for e in errors), errors
    assert res.summary["episodes"] == 1


@pytest.mark.sim
def test_raw_run_checks_its_episodes():
    """The raw run (no cocotb: make bench's limit) runs the throughput test's episodes,
    counts cycles as it does and checks every episode: stream passes, and the negative
    twin's golden (mem_lat 3) finds mismatches."""
    from lockstep.verif.host.raw import run_raw_host
    from lockstep.verif.raw import build_raw
    from lockstep.verif.runner import run_opts

    tb = TESTBENCHES["host_top_stream_tp"]
    opts = {"tasks": 8, "episodes": 2}
    ok = run_raw_host(tb, "icarus", build_raw(tb, "icarus"), 1, run_opts(tb, "icarus", opts))
    tp = run("host_top_stream_tp", "icarus", seed=1, opts=opts)
    assert ok.mismatches == 0 and ok.transactions == tp.summary["transactions"] == 16
    assert ok.cycles == tp.summary["cycles"]
    bad_tb = TESTBENCHES["host_top_mutant_tp"]
    bad = run_raw_host(bad_tb, "icarus", build_raw(bad_tb, "icarus"), 1, run_opts(bad_tb, "icarus"))
    assert bad.mismatches > 0



@pytest.mark.sim
def test_both_simulators_run_the_identical_episodes():
    """The harness behaves identically on Icarus and Verilator: for the backpressure
    scenario (the top's LFSR back-pressure and latency, a held CQ, a full SQ) the same
    completions, memory and harness edge counts."""
    opts = {"tasks": 20, "episodes": 2, "dump_stream": True}
    ra, rb = (run("host_top_backpressure_tp", sim, seed=7, opts=opts) for sim in ("verilator", "icarus"))
    assert ra.passed and rb.passed, (ra.summary.get("errors"), rb.summary.get("errors"))
    sa, sb = (json.loads((r.results / "stream.json").read_text()) for r in (ra, rb))
    assert sa == sb and len(sa) == 2 and all(len(x["cq"]) == 20 for x in sa)
    assert ra.summary["cycles"] == rb.summary["cycles"] and ra.summary["harness_cycles"] == rb.summary["harness_cycles"]
    eps = build_episodes(P, 7, {"scenario": "backpressure", "tasks": 20, "episodes": 2})
    model = [hm.exec_cycles(hm.Descriptor.unpack(w), P) for ep in eps for _, w, _ in ep.subs]
    got = [b for x in sa for b in x["busy"]]   # one kernel, every task OK: CQ order is SQ order
    assert all(g >= m for g, m in zip(got, model)) and any(g > m for g, m in zip(got, model))  # stalls happened
    assert [c[3] for x in sa for c in x["cq"]] == [g & P.cnt_mask for g in got]   # exec_cycles wrap


@pytest.mark.sim
def test_a_missing_file_or_an_unknown_op_is_an_error(tmp_path):
    """On the bare harness (no cocotb): a missing script file ends the run with the
    status ``missing:<file>``; a script word with an unknown op ends its episode
    ``badop``, which the check reports."""
    from lockstep.verif.raw import build_raw, execute

    tb = TESTBENCHES["host_top_stream_tp"]
    exe = build_raw(tb, "icarus")
    hp = host_ports_of(_record())
    ep = build_episode(P, "stream", 1, 4)
    write_episode(tmp_path, ep, hp)
    (tmp_path / "tp_ops_0.hex").unlink()
    _, end = execute(exe, "icarus", ["+tp_eps=1", "+tp_go", "+tp_finish"], tmp_path, tb.name)
    assert end[1:] == ["0", "missing:tp_ops_0.hex"]
    bad = dataclasses.replace(ep, ops=[(OPS["RD"], hm.CSR["ID"], 0), (15, 0, 0), (OPS["END"], 0, 0)])
    write_episode(tmp_path, bad, hp)
    _, end = execute(exe, "icarus", ["+tp_eps=1", "+tp_go", "+tp_finish"], tmp_path, tb.name)
    assert end[1:] == ["1", "ok"]
    fin = read_final(tmp_path / "tp_final_0.log", P.mem_words)
    tr = read_trace(tmp_path / "tp_trace_0.log")
    assert fin.reason == "badop" and fin.mem is None and tr.reads[0][1:] == (0, hm.ID_VALUE)
    assert check_episode(bad, tr, fin, P).errors == ["the harness met a script word it does not know (badop)"]
