"""The throughput mode: its generated harness, its file formats, its Python twins, its bulk
coverage, and (simulation) the same stream and verdict as the per-edge mode."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest

from lockstep.gen.harness import CHUNK, HarnessPorts, emit_harness, harness_name, harness_ports, stream_harness
from lockstep.gen.lint import lint_file
from lockstep.verif.coverage import Covergroup
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import generate_rtl, rtl_dir, run
from lockstep.verif.columns import Outs, ints, lanes, parse_hex_lines, signed
from lockstep.verif.stream_env import sticky_beats
from lockstep.verif.throughput import StimulusError, read_records, write_chunk
from lockstep.verif.twin import CyclePauses, pause_threshold, xs32

# the streaming units' harness (lockstep.gen.harness); a family that names its own
# (opts["harness"]: the sched fabric) tests it in its own file (tests/test_sched_throughput.py)
TP = sorted(n for n, tb in TESTBENCHES.items() if tb.mode == "throughput" and "harness" not in tb.opts)
QUICK_TP = [n for n in TP if TESTBENCHES[n].tier == "quick"]
# one harness per DUT configuration (testbenches of one module and parameters share it):
# the quick tier's in make test, every one with TIER=full
HARNESSES = sorted({rtl_dir(TESTBENCHES[n]): n for n in TP
                    if TESTBENCHES[n].tier == "quick" or os.environ.get("TIER") == "full"}.values())


def test_every_bfp_unit_has_a_quick_throughput_testbench():
    """Each streaming unit of the BFP family runs in throughput mode in make test, with the
    quick tier's depth (100,000 transactions on Verilator, 10,000 on Icarus)."""
    units = {TESTBENCHES[n].toplevel for n in QUICK_TP}
    assert units >= {"bfp_quantize", "bfp_dot", "bfp_renorm", "bfp_stats", "bfp_to_float", "bfp_mx_quantize"}
    for n in QUICK_TP:
        tb = TESTBENCHES[n]
        if not tb.expect_fail:
            assert tb.opts["blocks"] >= 100_000 and tb.opts["by_sim"]["icarus"]["blocks"] >= 10_000, n
    assert any(TESTBENCHES[n].expect_fail for n in QUICK_TP), "a throughput testbench must be shown to fail"


@pytest.mark.parametrize("name", HARNESSES)
def test_a_run_opens_with_a_transaction_that_raises_no_flag(name, tmp_path):
    """draw() (every mode's stimulus) swaps a flag-free transaction to the front of the
    run, so an err bit the first block sets whatever its flags shows at beat 0; the rest
    of the stream is the unit's own draw, in the same order, and later chunks are as drawn."""
    from lockstep.verif.context import TbContext
    from lockstep.verif.runner import run_opts
    from lockstep.verif.throughput import unit_class

    tb = TESTBENCHES[name]
    o = run_opts(tb, "icarus")
    record = json.loads(generate_rtl(tb).read_text())
    params = tb.tb_params.to_dict() if tb.tb_params else record["params"]
    make = unit_class(o["unit"])

    def unit():
        return make(TbContext(record, params, o, tmp_path, 7), make.params_type.from_dict(params))

    a, b = unit(), unit()
    ra, rb = np.random.default_rng(7), np.random.default_rng(7)
    drawn, plain = [a.draw(ra, 300), a.draw(ra, 300)], [b.items(rb, 300), b.items(rb, 300)]
    enc = [[a.encode(it) for it in part] for part in drawn]
    raw = [[b.encode(it) for it in part] for part in plain]
    assert enc[1] == raw[1]                              # only the run's first chunk is touched
    k = b.quiet(plain[0])
    if k is None:                                        # no flag-free transaction: left as drawn
        assert enc[0] == raw[0]
        return
    assert enc[0][0] == raw[0][k] and enc[0][k] == raw[0][0]
    assert [e for i, e in enumerate(enc[0]) if i not in (0, k)] == [e for i, e in enumerate(raw[0]) if i not in (0, k)]
    assert unit().quiet(drawn[0][:1]) == 0               # alone after reset, it raises no flag


@pytest.mark.parametrize("name", HARNESSES)
def test_harness_lints_clean(name):
    """verilator -Wall --timing and iverilog -g2012 accept each harness with its DUT."""
    tb = TESTBENCHES[name]
    record = generate_rtl(tb)
    path = emit_harness(record)
    assert path.name == f"{harness_name(tb.toplevel)}.v"
    assert lint_file(path, extra=(record.with_suffix(".v"),), timing=True) == []


def _record(ports: dict, latency: int = 1) -> dict:
    return {"module": "u", "ports": ports, "timing": {"latency": latency}}


_STREAM = {"clk": ("in", 1), "rst": ("in", 1), "in_valid": ("in", 1), "in_ready": ("out", 1),
           "in_a": ("in", 5), "out_valid": ("out", 1), "out_ready": ("in", 1), "out_y": ("out", 7)}


def _ports(d: dict) -> dict:
    return {k: {"dir": v[0], "width": v[1]} for k, v in d.items()}


def test_harness_ports_reads_the_record():
    hp = harness_ports(_record(_ports({**_STREAM, "err": ("out", 3)}), latency=2))
    assert hp == HarnessPorts((("a", 5),), (("y", 7),), 3, 2) and hp.word_bits == 5


@pytest.mark.parametrize("broken,match", [
    ({"in_ready": ("in", 1)}, "in_ready"),
    ({"out_valid": None}, "out_valid"),
    ({"side": ("in", 4)}, "not a stream payload port"),
    ({"in_a": None}, "in_\\* and out_\\*"),
])
def test_harness_refuses_a_record_that_is_not_a_stream(broken, match):
    ports = {**_STREAM, **broken}
    with pytest.raises(ValueError, match=match):
        harness_ports(_record(_ports({k: v for k, v in ports.items() if v is not None})))


def test_harness_refuses_a_bad_chunk_and_a_missing_latency():
    rec = _record(_ports(_STREAM))
    for chunk in (0, 1, 3, 1000):
        with pytest.raises(ValueError, match="power of two"):
            stream_harness(rec, chunk)
    del rec["timing"]
    with pytest.raises(ValueError, match="latency"):
        harness_ports(rec)


def test_write_chunk_packs_fields_in_record_order():
    """Every field, lane layout and width lands where the harness's concatenation reads it."""
    rng = random.Random(2)
    for _ in range(150):
        ins = tuple((f"f{i}", rng.choice([1, 2, 3, 5, 8, 13, 16, 31, 32, 33, 64, 100, 128]))
                    for i in range(rng.randint(1, 4)))
        hp = HarnessPorts(ins, (("o", 1),), 0, 1)
        words = [{f: rng.randrange(1 << w) for f, w in ins} for _ in range(rng.randint(1, 8))]
        cols = {}
        for f, w in ins:
            if w % 4 == 0 and rng.random() < 0.5:  # four lanes, lane 0 lowest
                lw = w // 4
                cols[f] = np.array([[(x[f] >> (i * lw)) & ((1 << lw) - 1) for i in range(4)] for x in words],
                                   dtype=np.int64 if lw <= 62 else object)
            else:
                cols[f] = np.array([x[f] for x in words], dtype=np.int64 if w <= 62 and rng.random() < 0.5 else object)
        path = Path("/tmp") / f"lockstep-chunk-{id(hp)}.bin"
        write_chunk(path, cols, hp, 0, chunk=8)
        data, nb = path.read_bytes(), (hp.word_bits + 7) // 8
        path.unlink()
        assert len(data) == 8 * nb
        for k, w in enumerate(words):
            ref = 0
            for f, wd in ins:
                ref = (ref << wd) | w[f]
            assert int.from_bytes(data[k * nb:(k + 1) * nb], "big") == ref
        assert not any(data[len(words) * nb:])


@pytest.mark.parametrize("cols,match", [
    ({"a": np.array([32])}, r"transaction 7: in_a=32 does not fit its 5-bit port"),
    ({"a": np.array([1, -1])}, r"transaction 8: in_a=-1"),
    ({"a": np.array([1 << 70], dtype=object)}, r"transaction 7: in_a="),
    ({"b": np.array([1])}, r"not the port record's"),
    ({"a": np.array([[1, 2, 3]])}, r"3 lanes do not divide its 5-bit port"),
])
def test_write_chunk_refuses_stimulus_that_does_not_fit(tmp_path, cols, match):
    """A stimulus that does not match the port record is an error naming the transaction."""
    with pytest.raises(StimulusError, match=match):
        write_chunk(tmp_path / "c.bin", cols, HarnessPorts((("a", 5),), (("y", 7),), 0, 1), 7, chunk=8)


def test_read_records_parses_fixed_width_lines_and_refuses_x(tmp_path):
    hp = HarnessPorts((("a", 5),), (("y", 7), ("z", 70)), 0, 1)
    (tmp_path / "tp_acc_3.log").write_text("0000000000000005\n0000000000000009\n")
    z = (1 << 69) + 5
    line = f"{12:016x} {10:016x} {0x41:02x} {z:018x}"
    line2 = f"{13:016x} {13:016x} {0x7f:02x} {0:018x}"
    (tmp_path / "tp_out_3.log").write_text(line + "\n" + line2 + "\n")
    acc, cyc, fv, outs = read_records(tmp_path, 3, hp, keep=True)
    assert acc.tolist() == [5, 9] and cyc.tolist() == [12, 13] and fv.tolist() == [10, 13]
    assert outs.rows() == [{"y": 0x41, "z": z}, {"y": 0x7F, "z": 0}]
    assert ints(outs, "y").tolist() == [0x41, 0x7F] and signed(outs, "y", 7).tolist() == [0x41 - 128, -1]
    assert lanes(outs, "z", 5, 14).tolist()[0] == [(z >> (5 * i)) & 31 for i in range(14)]
    (tmp_path / "tp_out_3.log").write_text(line.replace(" 41 ", " 4x ") + "\n")
    with pytest.raises(AssertionError, match="line 1: out_y is '4x': X or Z"):
        read_records(tmp_path, 3, hp, keep=True)
    (tmp_path / "tp_out_3.log").write_text(line + "\n" + line2[:-1] + "\n")
    with pytest.raises(AssertionError, match="line 2 has 54 characters, not 55"):
        read_records(tmp_path, 3, hp)


def test_read_records_takes_the_sticky_err_after_the_fields(tmp_path):
    hp = HarnessPorts((("a", 5),), (("y", 7), ("flags", 5)), 5, 1)
    (tmp_path / "tp_acc_0.log").write_text("0000000000000005\n0000000000000009\n")
    (tmp_path / "tp_out_0.log").write_text(f"{12:016x} {10:016x} 41 04 04\n{13:016x} {13:016x} 7f 01 05\n")
    *_, outs = read_records(tmp_path, 0, hp, keep=True)
    assert outs.rows() == [{"y": 0x41, "flags": 4, "err": 4}, {"y": 0x7F, "flags": 1, "err": 5}]
    assert sticky_beats(outs) == ([], 5)
    (tmp_path / "tp_out_0.log").write_text(f"{12:016x} {10:016x} 41 04\n")   # a recorder without err
    with pytest.raises(AssertionError, match="line 1 has 39 characters, not 42"):
        read_records(tmp_path, 0, hp)


@pytest.mark.parametrize("flags,err,carry,base,msg", [
    ([1, 0, 4, 0], [1, 1, 5, 5], 0, 0, None),
    ([1, 0, 4], [1, 1, 5], 2, 7, "sticky err=0x1 at output beat 7, the OR of the flags of beats 0..7 is 0x3 \\(3 beat"),
    ([0, 0, 4, 0], [4, 4, 4, 4], 0, 0, "sticky err=0x4 at output beat 0, .* is 0x0 \\(2 beat\\(s\\) of 4"),  # raised early
    ([0, 2, 0], [0, 0, 2], 0, 0, "at output beat 1, .* is 0x2 \\(1 beat"),                            # raised late
    ([1, 0, 0], [1, 0, 0], 0, 0, "at output beat 1, .* is 0x1 \\(2 beat"),                            # dropped
])
def test_sticky_beats_wants_the_or_of_the_flags_so_far(flags, err, carry, base, msg):
    outs = [{"flags": f, "err": e} for f, e in zip(flags, err)]
    errors, out = sticky_beats(outs, carry, base)
    assert out == carry | np.bitwise_or.reduce(flags)
    assert (errors == []) if msg is None else (len(errors) == 1 and re.search(msg, errors[0])), errors


@pytest.mark.parametrize("width,count", [(4, 3), (7, 5), (16, 4), (32, 3), (1, 9), (40, 1)])
def test_columnar_outputs_unpack_like_the_per_edge_beats(width, count):
    """Outs.lanes / ints / signed (from hex digits) give what unpack_rows gives from the
    per-edge monitor's integers, for lane widths that do and do not fill whole digits."""
    rng = np.random.default_rng(width * 100 + count)
    bits = width * count
    vals = [int(rng.integers(0, 1 << min(bits, 62))) | (int(rng.integers(0, 2)) << (bits - 1)) for _ in range(50)]
    d = (bits + 3) // 4
    data = "".join(f"{v:0{d}x}\n" for v in vals).encode()
    (nib,) = parse_hex_lines(data, [d], ["bus"], "t")
    outs = Outs({"bus": nib}, {"bus": bits})
    rows = [{"bus": v} for v in vals]
    for sgn in (False, True):
        assert lanes(outs, "bus", width, count, sgn).tolist() == lanes(rows, "bus", width, count, sgn).tolist()
    if bits <= 62:
        assert ints(outs, "bus").tolist() == vals
        assert signed(outs, "bus", bits).tolist() == signed(rows, "bus", bits).tolist()
    assert outs[3:5].rows() == rows[3:5] and Outs.concat([outs[:2], outs[2:]]).rows() == rows


def test_cycle_pauses_follow_the_harness_generator():
    """The twin pauses cycle c exactly when xs32^c(seed) >> 16 < round(p * 65536), from the
    first edge out of reset, whatever cycles it is asked about."""

    class Counter:
        cycle = 0

    ctr, seed, p = Counter(), 0x1234567, 0.3
    cp = CyclePauses(ctr, seed, p, reset_cycles=2)
    state, want = seed, []
    for _ in range(400):
        want.append((state >> 16) < pause_threshold(p))
        state = xs32(state)
    got = {}
    for c in sorted(random.Random(1).sample(range(403), 150)):
        ctr.cycle = c
        got[c] = next(cp)
    assert all(v == (want[c - 3] if c >= 3 else False) for c, v in got.items())
    assert 0.2 < np.mean(want) < 0.4
    assert xs32(1) == 0x42021 and xs32(0xFFFFFFFF) == 0x0003E01F  # the shifts are 13, 17, 5
    with pytest.raises(ValueError, match="probability"):
        pause_threshold(1.0)


def test_sample_columns_counts_what_sampling_one_by_one_counts():
    rng = random.Random(3)
    txns = [{"a": rng.randint(0, 5), "b": rng.random() < 0.1, "k": rng.choice("xy")} for _ in range(3000)]
    groups = []
    for name in ("tp_cov_one", "tp_cov_cols"):
        cg = Covergroup(name)
        cg.point("a", lambda t: t["a"], [0, 1, 2, 3, 4])
        cg.point("k", lambda t: t["k"], ["x", "y", "z"])
        cg.point("cond", lambda t: t["k"] if t["a"] > 2 else t["b"], ["x", "y", False, True])  # reads vary
        cg.point("cross", lambda t: (t["a"], t["k"]), [(a, k) for a in range(6) for k in "xy"])
        groups.append(cg)
    for t in txns:
        groups[0].sample(t)
    groups[1].sample_columns({k: np.array([t[k] for t in txns]) for k in "abk"})
    a, b = groups[0].summary(), groups[1].summary()
    assert list(a["cover_points"].values()) == list(b["cover_points"].values())
    assert a["functional_coverage"] == b["functional_coverage"] < 100


# ---- simulation ---------------------------------------------------------------------------
#: (per-edge testbench, seed, simulator): each seed on one simulator, both simulators
#: for the quantizer (each case on both cost twice as much and found nothing more).
EQUIV = [("bfp_quantize_patent", 3, "icarus"), ("bfp_quantize_patent", 11, "verilator"),
         ("bfp_mx_fp8_e4m3", 5, "verilator"), ("bfp_dot_patent", 7, "icarus")]


@pytest.mark.sim
@pytest.mark.parametrize("edge,seed,sim", EQUIV)
def test_both_modes_see_the_identical_stream(edge, seed, sim):
    """For one seed, the per-edge environment (with the harness's pause pattern) and the
    throughput harness drive and record the very same transactions on the very same
    cycles: inputs, accept cycles, outputs, output cycles and first-valid cycles, across
    three chunks with idle cycles and back-pressure."""
    opts = {"blocks": 2 * CHUNK + 300, "dump_stream": True, "idle": 0.25, "backpressure": 0.35}
    a = run(edge, sim, seed=seed, opts={**opts, "pauses": "cycle"})
    b = run(f"{edge}_tp", sim, seed=seed, opts=opts)
    assert a.ok and b.ok, (a.line(), b.line())
    sa = json.loads((a.results / "stream.json").read_text())
    sb = json.loads((b.results / "stream.json").read_text())
    assert len(sa) == len(sb) == opts["blocks"]
    first = next((i for i, (x, y) in enumerate(zip(sa, sb)) if x != y), None)
    assert first is None, f"transaction {first}: per-edge {sa[first]} vs throughput {sb[first]}"
    assert a.cycles > opts["blocks"] * 1.3  # the pauses did stretch the run


@pytest.mark.sim
def test_throughput_failure_names_transaction_cycle_and_replay():
    """A wrong DUT fails the throughput scoreboard with the transaction, its cycles, its
    fields and a replay command whose waves cover a window around it; the window dump
    holds only that window."""
    res = run("bfp_quantize_mutant_tp", "verilator", seed=4)
    assert res.ok and not res.passed
    first = res.summary["errors"][0]
    assert "transaction " in first and "accepted at cycle" in first and "out {" in first
    assert "make sim TEST=bfp_quantize_mutant_tp SEED=4 WAVES=1 WINDOW=" in first
    window = first.split("WINDOW=")[1].split()[0]
    lo, hi = (int(v) for v in window.split(":"))
    assert lo <= int(first.split("out at cycle ")[1].split(")")[0]) < hi
    # A replay dumps [start, stop) only and ends there; the failure is still reported.
    lo, hi = 500, 560
    for sim in ("verilator", "icarus"):
        waved = run("bfp_quantize_mutant_tp", sim, seed=4, waves=True, opts={"window": [lo, hi], "blocks": 2048})
        assert waved.ok and not waved.passed and waved.cycles == hi, waved.line()
        assert waved.summary["transactions"] < 2048
        if sim == "icarus":
            assert waved.waves.suffix == ".fst" and 0 < waved.waves.stat().st_size < 100_000
            continue
        text = waved.waves.read_text(errors="replace")
        stamps = [int(t[1:]) for t in text.split() if t.startswith("#") and t[1:].isdigit()]
        assert 0 < len(stamps) <= 2 * (hi - lo) + 10, f"{len(stamps)} time stamps for a window of {hi - lo} cycles"
        assert min(stamps) >= lo * 10_000, "waves dumped before the window"


def _stub(tmp_path: Path, in_ready: str, out_valid: str) -> Path:
    """A wrong implementation of bfp_quantize with the record's ports: constant handshakes."""
    tb = TESTBENCHES["bfp_quantize_patent_tp"]
    rec = json.loads(generate_rtl(tb).read_text())
    decl = ",\n".join(f"  {'input' if p['dir'] == 'in' else 'output'} wire [{p['width'] - 1}:0] {n}"
                      for n, p in rec["ports"].items())
    outs = "\n".join(f"  assign {n} = {p['width']}'d0;" for n, p in rec["ports"].items()
                     if p["dir"] == "out" and n not in ("in_ready", "out_valid"))
    path = tmp_path / "stub.v"
    path.write_text(f"module bfp_quantize (\n{decl}\n);\n  assign in_ready = {in_ready};\n"
                    f"  assign out_valid = {out_valid};\n{outs}\nendmodule\n")
    return path


@pytest.mark.sim
@pytest.mark.parametrize("sim", ["icarus", "verilator"])
@pytest.mark.parametrize("in_ready,out_valid,match", [
    ("1'b1", "1'b0", "watchdog: .* no transaction came out"),  # swallows every input: a hang
    ("1'b0", "1'b1", "output beat\\(s\\) with no input"),       # invents outputs
])
def test_a_hang_or_an_invented_output_is_an_error(tmp_path, sim, in_ready, out_valid, match):
    """An implementation that never answers ends with the watchdog naming the last
    transaction out; one that emits outputs nobody asked for is refused."""
    res = run("bfp_quantize_patent_tp", sim, seed=1, rtl=_stub(tmp_path, in_ready, out_valid),
              opts={"blocks": 3000})
    assert not res.passed
    assert any(re.search(match, e) for e in res.summary["errors"]), res.summary["errors"]


@pytest.mark.sim
@pytest.mark.parametrize("tb,sim", [("bfp_quantize_patent_tp", "verilator"), ("bfp_quantize_patent", "icarus")])
def test_a_sticky_err_bit_raised_early_fails_at_its_beat(tmp_path, tb, sim):
    """err[4] (EXP_LO) set by the first block accepted, whatever its flags: by the end of
    the run some block has raised it, so the end-of-run OR agrees; the check at every
    output beat names the first beat where err is not the OR of the flags so far."""
    src = generate_rtl(TESTBENCHES[tb]).with_suffix(".v").read_text()
    good = "err <= (err | stream_register0_flags);"
    assert src.count(good) == 1
    bad = tmp_path / "bfp_quantize.v"
    bad.write_text(src.replace(good, "err <= (err | stream_register0_flags | 7'h10);"))
    res = run(tb, sim, seed=3, rtl=bad, opts={"blocks": 1500})
    assert not res.passed and res.summary.get("transactions") == 1500, res.line()
    errs = res.summary["errors"]
    assert any(re.match(r"sticky err=0x1\w at output beat 0, the OR of the flags of beats 0..0 is 0x\w", e)
               for e in errs), errs
    assert not any("golden OR of flags" in e for e in errs), errs   # the end-of-run OR could not see it


@pytest.mark.sim
@pytest.mark.parametrize("tb", ["bfp_quantize_patent_tp", "bfp_quantize_patent"])
def test_a_register_rst_leaves_alone_fails_even_where_a_taken_output_would_clear_it(tmp_path, tb):
    """out_valid's register with its reset branch made unreachable (rst == 2): with
    out_ready high through reset the 'else if (out_ready)' branch cleared it at the
    first edge and the mutant survived; both modes now hold ready low through reset,
    so the register stays unknown and the reset check names it (Icarus)."""
    src = generate_rtl(TESTBENCHES[tb]).with_suffix(".v").read_text().split("\n")
    i = next(k for k, line in enumerate(src) if "stream_register0_valid_reg" in line)
    assert src[i + 1].strip() == "if (rst == 1) begin"
    src[i + 1] = src[i + 1].replace("rst == 1", "rst == 2")
    bad = tmp_path / "bfp_quantize.v"
    bad.write_text("\n".join(src))
    res = run(tb, "icarus", seed=2, rtl=bad, opts={"blocks": 500})
    assert not res.passed
    assert "not at their reset value" in (res.results / "sim.log").read_text()


@pytest.mark.sim
def test_raw_run_checks_its_records():
    """The raw run (no cocotb: make bench's limit) replays the throughput test's stimulus
    and checks every record afterwards: the quick tier's quantizer passes with the same
    transaction and cycle counts as the throughput run of that seed, and the negative
    twin (its build checked as RNE) finds mismatches."""
    from lockstep.verif.raw import run_raw

    ok = run_raw("bfp_quantize_patent_tp", "icarus", seed=1, opts={"blocks": 2000})
    tp = run("bfp_quantize_patent_tp", "icarus", seed=1, opts={"blocks": 2000})
    assert ok.mismatches == 0 and ok.transactions == tp.summary["transactions"] == 2000
    assert ok.cycles == tp.cycles
    bad = run_raw("bfp_quantize_mutant_tp", "icarus", seed=1, opts={"blocks": 2000})
    assert bad.mismatches > 0


def _stats_unit(tmp_path, name: str, **opts):
    from lockstep.verif.context import TbContext
    from lockstep.verif.runner import run_opts
    from lockstep.verif.throughput import unit_class

    tb = TESTBENCHES[name]
    o = {**run_opts(tb, "icarus"), "unit": "lockstep.verif.bfp.renorm_env:StatsUnit", **opts}
    record = json.loads(generate_rtl(tb).read_text())
    make = unit_class(o["unit"])
    return make(TbContext(record, record["params"], o, tmp_path, 7), make.params_type.from_dict(record["params"]))


def test_stats_resets_put_max_mode_where_the_stimulus_wants_it(tmp_path):
    """Option resets (bfp_stats_w4e8n8_reshift, one vector per window): the stream asks
    for a reset before each sweep vector, opening lane edge and flat window; run from a
    fresh selector after each (as the per-edge scoreboard checks them), every sweep
    vector and opening lane edge is in max mode, where without the resets only the
    run's first vector is."""
    from lockstep.models import bfp
    from lockstep.verif.bfp.renorm_env import lop_bins
    from lockstep.verif.stream_env import segments

    unit = _stats_unit(tmp_path, "bfp_stats_w4e8n8_reshift")
    assert unit._stim["resets"]
    items = unit.draw(np.random.default_rng(3), 400)
    c = unit.columns(items)
    parts = segments(unit, items)
    assert len(parts) > 20 and parts[0][0] == 0 and parts[-1][1] == 400
    assert all(a < b for a, b in parts) and all(b == a2 for (_, b), (a2, _) in zip(parts, parts[1:]))

    def before_any_window(acc, e3):   # max mode, not a reshift's (a guarded vector's)
        tr = bfp.StatsSelector(unit.params).run_traced(acc, e3)[3]
        return tr["max_mode"] & ~tr["guard"]

    max_mode = np.concatenate([before_any_window(c["acc"][a:b], c["e3"][a:b]) for a, b in parts])
    fresh = np.char.startswith(c["kind"].astype(str), "sweep") | (c["kind"] == "lane_edge_reset")
    assert fresh.sum() >= len(lop_bins(unit.params)) + 2 * unit.params.n
    assert max_mode[fresh].all()
    assert before_any_window(c["acc"], c["e3"]).sum() == 1


def test_a_stream_with_resets_is_refused_by_the_throughput_modes(tmp_path):
    """The harness resets once: a stream that asks for more is an error naming the option,
    never a run checked against a model that reset where the DUT did not."""
    from lockstep.verif.stream_env import refuse_resets, segments

    unit = _stats_unit(tmp_path, "bfp_stats_w4e8n8_reshift")
    items = unit.draw(np.random.default_rng(1), 200)
    with pytest.raises(ValueError, match="asks for resets mid-stream .option resets.*not the throughput mode"):
        refuse_resets(unit, items, "throughput")
    quiet = _stats_unit(tmp_path, "bfp_stats_w4e8n8_reshift", resets=False)
    plain = quiet.draw(np.random.default_rng(1), 200)
    refuse_resets(quiet, plain, "throughput")      # no reset asked: accepted
    assert segments(quiet, plain) == [(0, 200)]
    assert TESTBENCHES["bfp_stats_w4e8n8_reshift_tp"].opts["resets"] is False
