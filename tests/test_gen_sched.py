"""``sched`` generators (counter-timed tiles, spec 000; contract docs/sched.md): lint for
many parameter sets, determinism, records, the no-handshake structural check, and
directed Icarus simulations of the generated ring (and mesh) whose expected events are
worked out by hand from the contract (not from the golden model)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lockstep.gen.common import check_name
from lockstep.gen.sched import (
    OPCODES,
    counter_ports,
    emit_counter,
    emit_mesh,
    emit_ring,
    emit_tile,
    ring_ports,
    tile_ports,
)
from lockstep.gen.sched.parts import field_lsb, ld_addr_width, tile_sel_width
from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams
from lockstep.verif.runner import check_rtl_ports

#: Parameter sets every generator must lint clean for (verilator -Wall, iverilog -g2012).
LINT_SETS = {
    "defaults": {},
    "cw8": {"cw": 8},
    "cw32": {"cw": 32},
    "nt2": {"nt": 2},
    "nt4": {"nt": 4},
    "aw4": {"aw": 4},
    "dw32": {"dw": 32},
    "hop3": {"hop_lat": 3},
    "buf1": {"buf_d": 1},
    "alu1": {"l_alu": 1},
    "alu4": {"l_alu": 4},
    "nobus": {"bus": False},
    "sd4": {"sd": 4},
    "odd": {"cw": 8, "aw": 10, "sd": 100, "buf_d": 3, "nt": 5},  # P > 2**cw, non-power-of-2 sizes
}

#: MAC-array sets (docs/sched.md section 11): every k in {2, 4, 8} and every secondary
#: set appear (the full k x set product is linted outside the suite: see the report).
MAC_LINT_SETS = {
    "k2": {"k": 2},
    "k4_dw8": {"k": 4, "dw": 8, "accw": 16},
    "k8_dw32": {"k": 8, "dw": 32, "accw": 64},
    "k2_nt2": {"k": 2, "nt": 2},
    "k4_hop3": {"k": 4, "hop_lat": 3},
    "k8_alu1": {"k": 8, "l_alu": 1},
    "k2_vpu3": {"k": 2, "vpu_shift": 3},
}
LINT_SETS.update(MAC_LINT_SETS)

#: The configuration of the directed simulations (small memories: quick to build).
SIM = FabricParams(cw=16, nt=3, dw=16, aw=6, sd=16, hop_lat=1, buf_d=4, l_alu=2, bus=True)
#: ... with a 2 x 2 MAC array, 32-bit partial sums and a VPU shift of 2.
SIMK = FabricParams(cw=16, nt=3, dw=16, aw=6, sd=16, hop_lat=1, buf_d=4, l_alu=2, bus=True, k=2, accw=32,
                    vpu_shift=2)

HANDSHAKE = re.compile(r"(^|_)(ready|rdy|ack|stall|credit|busy|irq|grant)(_|$)", re.I)
ERR = {name: 1 << i for i, name in enumerate(FabricParams.ERR_NAMES)}
NEED_ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog not on PATH")


def enc(fmt: FabricParams, t: int = 0, op: str | int = "NOP", port: int = 0, unit: int = 0, a: int = 0,
        b: int = 0, d: int = 0, n: int = 1) -> int:
    """Encode one schedule entry (``n`` = element count; LEN = n - 1; PERIODIC: reps)."""
    ops = {**OPCODES, **FabricParams.MAC_OPCODES}
    vals = {"t": t, "op": ops[op] if isinstance(op, str) else op, "port": port, "unit": unit,
            "a": a, "b": b, "d": d, "len": n - 1}
    word = 0
    for f, (lo, w) in field_lsb(fmt).items():
        assert 0 <= vals[f] < 1 << w, (f, vals[f])
        word |= vals[f] << lo
    return word


def retime(fmt: FabricParams, word: int, t: int) -> int:
    """``word`` with its T field replaced (an expanded body entry)."""
    lo, w = field_lsb(fmt)["t"]
    return (word & ~(((1 << w) - 1) << lo)) | (t << lo)


def module_ports(verilog: Path, module: str) -> list[str]:
    """Port names of ``module``'s header in a generated file."""
    m = re.search(rf"module {module} \(([^)]*)\);", verilog.read_text())
    assert m, module
    return [p.strip() for p in m.group(1).split(",")]


# ---------------------------------------------------------------------------------------
# generation, lint, records


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Emit (once per module) the three generators for a parameter-set key."""
    cache: dict[str, dict] = {}
    root = tmp_path_factory.mktemp("sched_gen")

    def get(key: str) -> dict:
        if key not in cache:
            fmt = FabricParams(**LINT_SETS[key])
            out = root / key
            cache[key] = {"fmt": fmt, "tile": emit_tile(fmt, out), "ring": emit_ring(fmt, out),
                          "counter": emit_counter(fmt, out)}
        return cache[key]

    return get


@pytest.mark.parametrize("key", LINT_SETS)
def test_lint_clean(key, generated, lint):
    """Tile, ring and counter pass verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    g = generated(key)
    for kind in ("tile", "ring", "counter"):
        assert lint(g[kind].verilog) == [], (key, kind)


@pytest.mark.parametrize("key", ["defaults", "nobus"])
def test_records_match_the_verilog(key, generated):
    """Each JSON record's params, ports (checked against the Verilog) and timing."""
    g = generated(key)
    fmt = g["fmt"]
    for kind, ports_of, module in (("tile", tile_ports, "sched_tile"), ("ring", ring_ports, "sched_ring"),
                                   ("counter", counter_ports, "sched_counter")):
        rec = json.loads(g[kind].sidecar.read_text())
        assert rec["module"] == module and rec["family"] == "sched"
        assert FabricParams.from_dict(rec["params"]) == fmt
        assert rec["ports"] == json.loads(json.dumps(ports_of(fmt)))
        check_rtl_ports(g[kind].verilog, module, rec)
    tile = json.loads(g["tile"].sidecar.read_text())
    assert tile["ports"]["ld_data"]["width"] == fmt.ew == 64
    assert tile["ports"]["issue_entry"]["width"] == fmt.ew
    assert tile["ports"]["err"]["width"] == len(FabricParams.ERR_NAMES)
    assert tile["ports"]["ld_addr"]["width"] == ld_addr_width(fmt)
    tim = tile["timing"]
    assert (tim["p_send"], tim["p_recv"], tim["fetch_lead"]) == (1, 1, FabricParams.FETCH_LEAD)
    assert tim["l_path"] == fmt.l_path(1) and tim["l_alu"] == fmt.l_alu
    assert tim["l_bus"] == (fmt.l_bus if fmt.bus else None)
    ring = json.loads(g["ring"].sidecar.read_text())
    assert ring["ports"]["issue_entry"]["width"] == fmt.nt * fmt.ew
    assert ring["ports"]["tile_count"]["width"] == fmt.nt * fmt.cw
    assert ring["ports"]["ld_tile"]["width"] == tile_sel_width(fmt)
    assert ring["timing"]["l_path_hops"]["1"] == fmt.l_path(1)


def test_no_handshake_ports(generated):
    """No port between blocks is ready/ack/stall/credit/busy/irq/grant (parsed from the
    generated port lists); links carry valid + data only."""
    for key in ("defaults", "nobus", "nt4"):
        g = generated(key)
        for kind, module in (("tile", "sched_tile"), ("ring", "sched_ring"), ("counter", "sched_counter")):
            names = module_ports(g[kind].verilog, module)
            assert names, module
            bad = [n for n in names if HANDSHAKE.search(n)]
            assert bad == [], (module, bad)
        link = [n for n in module_ports(g["tile"].verilog, "sched_tile") if n.startswith(("in_", "out_"))]
        assert sorted(link) == ["in_data", "in_valid", "out_data", "out_valid"]


def test_deterministic(tmp_path, generated):
    """Same parameters, byte-identical Verilog and record; no date line."""
    g = generated("defaults")
    fmt = g["fmt"]
    for kind, emit in (("tile", emit_tile), ("ring", emit_ring), ("counter", emit_counter)):
        again = emit(fmt, tmp_path / kind)
        assert again.verilog.read_bytes() == g[kind].verilog.read_bytes(), kind
        assert again.sidecar.read_bytes() == g[kind].sidecar.read_bytes(), kind
        assert "Date" not in again.verilog.read_text()


def test_deterministic_across_hash_seeds(tmp_path, generated):
    """A process with another string-hash seed writes the same bytes (gen/common.py
    converts under PYTHONHASHSEED=0)."""
    code = ("import sys; from lockstep.gen.sched import emit_tile; "
            "from lockstep.models.sched import FabricParams; emit_tile(FabricParams(), sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True,
                   env={**os.environ, "PYTHONHASHSEED": "7"})
    assert (tmp_path / "sched_tile.v").read_bytes() == generated("defaults")["tile"].verilog.read_bytes()


@pytest.mark.parametrize("emit", [emit_tile, emit_ring, emit_counter])
def test_refusals(emit, tmp_path):
    """Wrong parameter type and keyword names are refused; FabricParams names bad fields."""
    with pytest.raises(ParamError, match="FabricParams"):
        emit(FabricParams().to_dict(), tmp_path)
    with pytest.raises(ParamError, match="keyword"):
        emit(FabricParams(), tmp_path, name="logic")
    for field, bad in (("cw", 7), ("nt", 1), ("aw", 11), ("buf_d", 0), ("l_alu", 5), ("hop_lat", 0)):
        with pytest.raises(ParamError, match=rf"FabricParams\.{field}="):
            FabricParams(**{field: bad})
    assert check_name("sched_tile") == "sched_tile"


# ---------------------------------------------------------------------------------------
# directed simulations (Icarus)


def ring_tb(fmt: FabricParams, loads: list[tuple[int, int, int, int]], cycles: int) -> str:
    """A plain Verilog testbench: reset, load (tile, sel, addr, word) one per cycle, run
    ``cycles`` cycles printing every event of the cycle at its closing edge, then the
    final err/err_cnt/halted and every non-zero data word (debug port)."""
    ew, cw, dw, aw, nt, eb = fmt.ew, fmt.cw, fmt.dw, fmt.aw, fmt.nt, fmt.err_bits
    ns, kw = 4 + fmt.k, fmt.k * fmt.accw  # write sources per tile; psum bits per tile
    psum_decl = f"wire [{nt - 1}:0] psum_valid;\nwire [{nt * kw - 1}:0] psum_data;\n" if fmt.k else ""
    psum_conn = ", .psum_valid(psum_valid), .psum_data(psum_data)" if fmt.k else ""
    psum_show = ""
    if fmt.k:  # psum events: every lane of a valid psum_out; data without valid is an X
        lanes = "".join(f", psum_data[t*{kw} + {c * fmt.accw} +: {fmt.accw}]" for c in range(fmt.k))
        psum_show = (f'    if (psum_valid[t]) $display("P %0d %0d{" %0h" * fmt.k}", count, t{lanes});\n'
                     f'    else if (psum_data[t*{kw} +: {kw}] != 0) $display("X %0d %0d", count, t);\n')
    ld = "\n".join(f"  ld_we = 1; ld_tile = {t}; ld_sel = {s}; ld_addr = {a}; ld_data = {ew}'h{w:x}; @(posedge clk); #1;"
                   for t, s, a, w in loads)
    return f"""`timescale 1ns/1ps
module tb;
reg clk = 0, rst = 1, run = 0, ld_we = 0, ld_sel = 0;
reg [{tile_sel_width(fmt) - 1}:0] ld_tile = 0, dbg_tile = 0;
reg [{ld_addr_width(fmt) - 1}:0] ld_addr = 0;
reg [{ew - 1}:0] ld_data = 0;
reg [{aw - 1}:0] dbg_addr = 0;
wire [{cw - 1}:0] count, bus_err_cnt;
wire [{nt * cw - 1}:0] tile_count, err_cnt;
wire [{nt - 1}:0] issue, halted;
wire [{nt * ew - 1}:0] issue_entry;
wire [{nt * ns - 1}:0] wr_en;
wire [{nt * ns * aw - 1}:0] wr_addr;
wire [{nt * ns * dw - 1}:0] wr_data;
wire [{nt * eb - 1}:0] err;
wire [{nt * 3 - 1}:0] out_valid;
wire [{nt * 3 * dw - 1}:0] out_data;
wire bus_valid;
wire [{dw - 1}:0] bus_data, dbg_rdata;
wire [{eb - 1}:0] bus_err;
{psum_decl}{"sched_mesh" if fmt.rows > 1 else "sched_ring"} dut(.clk(clk), .rst(rst), .run(run), .count(count), .ld_we(ld_we), .ld_tile(ld_tile),
  .ld_sel(ld_sel), .ld_addr(ld_addr), .ld_data(ld_data), .tile_count(tile_count), .issue(issue),
  .issue_entry(issue_entry), .wr_en(wr_en), .wr_addr(wr_addr), .wr_data(wr_data), .err(err),
  .err_cnt(err_cnt), .halted(halted), .out_valid(out_valid), .out_data(out_data), .bus_valid(bus_valid),
  .bus_data(bus_data), .bus_err(bus_err), .bus_err_cnt(bus_err_cnt), .dbg_tile(dbg_tile),
  .dbg_addr(dbg_addr), .dbg_rdata(dbg_rdata){psum_conn});
always #5 clk = ~clk;
integer t, p, s, a;
always @(posedge clk) if (run) begin
  for (t = 0; t < {nt}; t = t + 1) begin
    if (tile_count[t*{cw} +: {cw}] != count) $display("X %0d %0d", count, t);
    if (issue[t]) $display("I %0d %0d %0h", count, t, issue_entry[t*{ew} +: {ew}]);
    for (p = 0; p < 3; p = p + 1)
      if (out_valid[t*3+p]) $display("W %0d %0d %0d %0h", count, t, p, out_data[(t*3+p)*{dw} +: {dw}]);
      else if (out_data[(t*3+p)*{dw} +: {dw}] != 0) $display("X %0d %0d", count, t);
    for (s = 0; s < {ns}; s = s + 1)
      if (wr_en[t*{ns}+s]) $display("M %0d %0d %0d %0h %0h", count, t, s, wr_addr[(t*{ns}+s)*{aw} +: {aw}],
                                 wr_data[(t*{ns}+s)*{dw} +: {dw}]);
{psum_show}  end
  if (bus_valid) $display("B %0d %0h", count, bus_data);
end
initial begin
  @(posedge clk); @(posedge clk); #1;
  rst = 0;
{ld}
  ld_we = 0;
  run = 1;
  repeat ({cycles}) @(posedge clk);
  #1 run = 0;
  for (t = 0; t < {nt}; t = t + 1)
    $display("F %0d %0h %0d %0d", t, err[t*{eb} +: {eb}], err_cnt[t*{cw} +: {cw}], halted[t]);
  $display("G %0h %0d", bus_err, bus_err_cnt);
  for (t = 0; t < {nt}; t = t + 1)
    for (a = 0; a < {fmt.words}; a = a + 1) begin
      dbg_tile = t; dbg_addr = a; #1;
      if (dbg_rdata != 0) $display("D %0d %0h %0h", t, a, dbg_rdata);
    end
  $finish;
end
endmodule
"""


class Trace:
    """Events printed by :func:`ring_tb`, as sets of int tuples."""

    def __init__(self, text: str):
        rows = [ln.split() for ln in text.splitlines() if ln[:2] in {f"{k} " for k in "IWMBFGDX"}]
        #: ``psum`` events: (cycle, tile, lanes) with the lanes as accw-bit values
        self.psum = {(int(r[1]), int(r[2]), tuple(int(v, 16) for v in r[3:]))
                     for r in (ln.split() for ln in text.splitlines() if ln.startswith("P "))}
        conv = {"I": (10, 10, 16), "W": (10, 10, 10, 16), "M": (10, 10, 10, 16, 16), "B": (10, 16),
                "F": (10, 16, 10, 10), "G": (16, 10), "D": (10, 16, 16), "X": (10, 10)}
        self.ev: dict[str, set] = {k: set() for k in conv}
        for r in rows:
            self.ev[r[0]].add(tuple(int(v, b) for v, b in zip(r[1:], conv[r[0]])))

    def issues(self, tile: int) -> list[tuple[int, int]]:
        return sorted((c, w) for c, t, w in self.ev["I"] if t == tile)

    def final(self, tile: int) -> tuple[int, int, int]:
        return next((e, c, h) for t, e, c, h in self.ev["F"] if t == tile)


@pytest.fixture(scope="module")
def sim_ring(tmp_path_factory):
    """Run a program on a generated ring, or a mesh when ``rows > 1`` (one RTL per
    parameter set, one TB per run)."""
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog not on PATH")
    root = tmp_path_factory.mktemp("sched_sim")
    rtl: dict[FabricParams, Path] = {}
    runs = [0]

    def run(fmt: FabricParams, program: dict[int, list[int]], data: dict[int, dict[int, int]] | None = None,
            cycles: int = 30) -> Trace:
        if fmt not in rtl:
            rtl[fmt] = (emit_mesh if fmt.rows > 1 else emit_ring)(fmt, root / f"rtl{len(rtl)}").verilog
        loads = [(t, 0, i, w) for t, ws in program.items() for i, w in enumerate(ws)]
        loads += [(t, 1, a, v) for t, m in (data or {}).items() for a, v in m.items()]
        runs[0] += 1
        work = root / f"run{runs[0]}"
        work.mkdir()
        (work / "tb.v").write_text(ring_tb(fmt, loads, cycles))
        subprocess.run(["iverilog", "-g2012", "-o", str(work / "sim.vvp"), "-s", "tb", str(work / "tb.v"),
                        str(rtl[fmt])], check=True, capture_output=True, text=True)
        out = subprocess.run(["vvp", "-n", str(work / "sim.vvp")], check=True, capture_output=True, text=True).stdout
        tr = Trace(out)
        assert tr.ev["X"] == set(), "a local counter differs from the chip counter, or out_data without valid"
        return tr

    return run


def test_sim_legal_ring(sim_ring):
    """A legal three-tile program: back-to-back issue, SEND -> RECV at T + l_path, the bus
    (two TAPs at T + l_bus - 1: the bus input is unbuffered), VADD/DOT write cycles, a P = 1 periodic block right after HDR_GAP and
    an entry right after the block; no error anywhere."""
    f = SIM
    lp, lb, la = f.l_path(1), f.l_bus, f.l_alu
    t0 = [enc(f, 2, "SEND", port=1, a=0x10, n=3), enc(f, 3, "VADD", a=0x10, b=0x14, d=0x20, n=2),
          enc(f, 4, "SEND", port=2, a=0x18), enc(f, 5, "HALT")]
    body = enc(f, 0, "SEND", port=1, a=0)
    t1 = [enc(f, 2 + lp, "RECV", port=0, d=0, n=3), enc(f, 4 + lb - 1, "TAP", port=2, d=8),
          enc(f, 8, "DOT", a=0, b=0, d=0x30, n=3), enc(f, 10, "PERIODIC", a=1, b=1, n=4), body,
          enc(f, 14, "HALT")]
    t2 = [enc(f, 4 + lb - 1, "TAP", port=2, d=5), enc(f, 10 + lp, "RECV", port=0, d=0x10, n=4),
          enc(f, 20, "HALT")]
    data = {0: {0x10: 5, 0x11: 6, 0x12: 7, 0x14: 100, 0x15: 200, 0x18: 0xBEEF}}
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2}, data)

    assert tr.issues(0) == [(w >> field_lsb(f)["t"][0], w) for w in t0]  # T = 2, 3, 4, 5 back to back
    assert tr.issues(1) == [(5, t1[0]), (6, t1[1]), (8, t1[2])] + [(10 + r, retime(f, body, 10 + r))
                                                                     for r in range(4)] + [(14, t1[5])]
    assert tr.issues(2) == [(6, t2[0]), (13, t2[1]), (20, t2[2])]
    words = {(3, 0, 1, 5), (4, 0, 1, 6), (5, 0, 1, 7), (5, 0, 2, 0xBEEF)}
    words |= {(11 + r, 1, 1, 5) for r in range(4)}  # SEND at 10+r, word i=0 on out during 10+r+1
    assert tr.ev["W"] == words
    assert tr.ev["B"] == {(6, 0xBEEF)}  # out[2] in 5 -> bus register in 6
    writes = {(3 + la - 1, 0, 3, 0x20, 105), (4 + la - 1, 0, 3, 0x21, 206)}  # VADD: end of n+i+l_alu-1
    writes |= {(5, 1, 0, 0, 5), (6, 1, 0, 1, 6), (7, 1, 0, 2, 7), (6, 1, 2, 8, 0xBEEF)}
    writes |= {(8 + 3 - 1 + la - 1, 1, 3, 0x30, 25 + 36 + 49)}  # DOT: end of n+N-1+l_alu-1
    writes |= {(6, 2, 2, 5, 0xBEEF)} | {(13 + i, 2, 0, 0x10 + i, 5) for i in range(4)}
    assert tr.ev["M"] == writes
    for t in range(3):
        assert tr.final(t) == (0, 0, 1)  # no error, halted by HALT
    assert tr.ev["G"] == {(0, 0)}
    assert {(0, 0x20, 105), (0, 0x21, 206), (1, 0x30, 110), (1, 8, 0xBEEF), (2, 0x13, 5)} <= tr.ev["D"]


def test_sim_sustained_issue(sim_ring):
    """One issue per cycle indefinitely: eight ordinary entries, then (HDR_GAP) a P = 1
    block of 256 repetitions and an entry right after it; P = 2 and P = 3 bodies that tile
    every count, one of them starting the program at FETCH_LEAD + 1 (header read)."""
    f = SIM
    t0 = [enc(f, 2 + k) for k in range(8)] + [enc(f, 11, "PERIODIC", a=1, b=1, n=256), enc(f, 0),
                                               enc(f, 11 + 256, "HALT")]
    t1 = [enc(f, f.FETCH_LEAD + 1, "PERIODIC", a=2, b=2, n=10), enc(f, 0), enc(f, 1), enc(f, 23, "HALT")]
    t2 = [enc(f, 2), enc(f, 4, "PERIODIC", a=3, b=3, n=5), enc(f, 0), enc(f, 1), enc(f, 2), enc(f, 19, "HALT")]
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2}, cycles=280)
    assert [c for c, _ in tr.issues(0)] == list(range(2, 10)) + list(range(11, 11 + 257))
    assert [c for c, _ in tr.issues(1)] == list(range(3, 24))
    assert [c for c, _ in tr.issues(2)] == [2] + list(range(4, 20))
    assert tr.issues(2)[5] == (8, retime(f, t2[3], 8))  # rep 1, d = 1: 4 + 3 + 1
    for t in range(3):
        assert tr.final(t) == (0, 0, 1)


def test_sim_missed_decomp_opcode(sim_ring):
    """An out-of-order entry raises MISSED in the cycle after its predecessor issues
    (expansion T = base + r*P + d before it); a bad header becomes a poison entry
    (DECOMP at T = base); a reserved opcode raises OPCODE; neither is issued; all halt."""
    f = SIM
    t0 = [enc(f, 2, "PERIODIC", a=6, b=2, n=3), enc(f, 1), enc(f, 4), enc(f, 19), enc(f, 17), enc(f, 30, "HALT")]
    t1 = [enc(f, 3, "PERIODIC", a=0, b=1, n=1), enc(f, 6), enc(f, 9, "HALT")]
    t2 = [enc(f, 4, 7), enc(f, 8, "HALT")]
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2})
    exp0 = [(2 + r * 6 + d, retime(f, w, 2 + r * 6 + d)) for r in range(3) for d, w in ((1, t0[1]), (4, t0[2]))]
    assert tr.issues(0) == exp0 + [(19, t0[3])]
    assert tr.final(0) == (ERR["MISSED"], 20, 1)  # head T=17 is past in cycle 20
    assert tr.issues(1) == []
    assert tr.final(1) == (ERR["DECOMP"], 3, 1)
    assert tr.issues(2) == []
    assert tr.final(2) == (ERR["OPCODE"], 4, 1)


def test_sim_busy_underflow_bad_body(sim_ring):
    """BUSY (not issued), UNDERFLOW on an empty buffer (the word arrives one cycle later),
    and a bad body entry (d >= P) poisoning its own T after the good entries before it."""
    f = SIM
    t0 = [enc(f, 2, "SEND", port=1, a=0, n=4), enc(f, 4, "SEND", port=1, a=0), enc(f, 9, "HALT")]
    t1 = [enc(f, 2 + f.l_path(1) - 1, "RECV", port=0, d=0), enc(f, 9, "HALT")]
    t2 = [enc(f, 3, "PERIODIC", a=4, b=2, n=3), enc(f, 0), enc(f, 4), enc(f, 12, "HALT")]
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2})
    assert tr.issues(0) == [(2, t0[0])]
    assert tr.final(0) == (ERR["BUSY"], 4, 1)
    assert {w for w in tr.ev["W"] if w[1] == 0} == {(3 + i, 0, 1, 0) for i in range(4)}  # runs to completion
    early = 2 + f.l_path(1) - 1  # one cycle before word 0 can be popped
    assert tr.issues(1) == [(early, t1[0])]
    assert tr.final(1) == (ERR["UNDERFLOW"], early, 1)
    assert tr.issues(2) == [(3, retime(f, t2[1], 3))]
    assert tr.final(2) == (ERR["DECOMP"], 3 + 4, 1)  # poison at base + 0*P + d


def test_sim_collision_wconf_overflow_tapidle(sim_ring):
    """Two bus drivers (COLLISION on the bus, lowest tile wins), a TAP and the ALU writing
    one address in one cycle (WCONF, ALU wins), a word reaching a full buffer (OVERFLOW,
    after the tile halted), a TAP of an idle input (TAP_IDLE)."""
    f = SIM
    t0 = [enc(f, 2, "SEND", port=2, a=0), enc(f, 5, "TAP", port=0, d=9), enc(f, 20, "HALT")]
    t1 = [enc(f, 2, "SEND", port=2, a=0), enc(f, 3, "SEND", port=1, a=1, n=f.buf_d + 1), enc(f, 20, "HALT")]
    t2 = [enc(f, 3, "VADD", a=0, b=0, d=5), enc(f, 4, "TAP", port=2, d=5), enc(f, 20, "HALT")]
    data = {0: {0: 0x1111}, 1: {0: 0x2222, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5}, 2: {0: 7}}
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2}, data)
    assert tr.ev["B"] == {(4, 0x1111)}
    assert tr.ev["G"] == {(ERR["COLLISION"], 3)}
    assert {m for m in tr.ev["M"] if m[1] == 2} == {(4, 2, 2, 5, 0x1111), (4, 2, 3, 5, 14)}
    assert (2, 5, 14) in tr.ev["D"]
    # word i of tile 1's SEND at 3 is on tile 2's in[0] in 3 + 1 + hop_lat + i; the
    # (buf_d+1)-th finds the buffer full
    assert tr.final(2) == (ERR["WCONF"] | ERR["OVERFLOW"], 4, 1)
    assert tr.final(0) == (ERR["TAP_IDLE"], 5, 1)
    assert tr.final(1) == (0, 0, 1)


def test_sim_other_parameters(sim_ring):
    """nt = 2, hop_lat = 3, l_alu = 1, no bus: RECV exactly at T + l_path, ALU writes at
    the end of the read cycle, and the bus port raises OPCODE."""
    f = FabricParams(cw=8, nt=2, dw=8, aw=4, sd=8, hop_lat=3, buf_d=2, l_alu=1, bus=False)
    lp = f.l_path(1)
    t0 = [enc(f, 2, "SEND", port=0, a=1, n=2), enc(f, 3, "VMUL", a=1, b=2, d=3, n=2), enc(f, 9, "SEND", port=2),
          enc(f, 12, "HALT")]
    t1 = [enc(f, 2 + lp, "RECV", port=1, d=0, n=2), enc(f, 12, "HALT")]
    tr = sim_ring(f, {0: t0, 1: t1}, {0: {1: 3, 2: 5, 3: 7}}, cycles=20)
    assert {(c, t, s, a, v) for c, t, s, a, v in tr.ev["M"]} == {
        (3, 0, 3, 3, 15), (4, 0, 3, 4, 75), (2 + lp, 1, 1, 0, 3), (3 + lp, 1, 1, 1, 5)}  # 75 = 5 * mem[3] (= 15)
    assert tr.ev["W"] == {(3, 0, 0, 3), (4, 0, 0, 5)}
    assert tr.issues(0) == [(2, t0[0]), (3, t0[1])]
    assert tr.final(0) == (ERR["OPCODE"], 9, 1)
    assert tr.final(1) == (0, 0, 1)
    assert tr.ev["B"] == set() and tr.ev["G"] == {(0, 0)}


@NEED_ICARUS
def test_sim_counter_wrap(tmp_path):
    """CW = 8: count + 1 per run cycle, holds while run = 0, one wrap pulse per 2**8."""
    f = FabricParams(cw=8)
    em = emit_counter(f, tmp_path)
    tb = f"""`timescale 1ns/1ps
module tb;
reg clk = 0, rst = 1, run = 0;
wire [7:0] count;
wire wrap;
integer k;
sched_counter dut(.clk(clk), .rst(rst), .run(run), .count(count), .wrap(wrap));
always #5 clk = ~clk;
always @(posedge clk) if (!rst) $display("C %0d %0d %0d", k, count, wrap);
initial begin
  k = 0;
  @(posedge clk); #1 rst = 0; run = 1;
  while (k < 600) begin @(posedge clk); #1 k = k + 1; run = !(k >= 300 && k < 303); end
  $finish;
end
endmodule
"""
    (tmp_path / "tb.v").write_text(tb)
    subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "c.vvp"), "-s", "tb", str(tmp_path / "tb.v"),
                    str(em.verilog)], check=True)
    rows = [tuple(map(int, ln.split()[1:])) for ln in subprocess.run(
        ["vvp", "-n", str(tmp_path / "c.vvp")], check=True, capture_output=True, text=True).stdout.splitlines()
        if ln.startswith("C ")]
    ref, prev, wraps = 0, None, []
    for k, count, wrap in rows:
        assert count == ref % 256, k
        assert wrap == int(prev == 255 and count == 0), k
        if wrap:
            wraps.append(k)
        prev = count
        ref += 0 if 300 <= k < 303 else 1
    assert wraps == [256, 515]  # the second wrap is 3 cycles late: run was low 3 cycles


def test_sim_forward(sim_ring):
    """FWD relays in[prev] to out[next] one cycle later (valid included, idle samples send
    nothing); forwarded words are not pushed into the relay's buffer (a later RECV
    underflows)."""
    f = SIM
    t0 = [enc(f, 2, "SEND", port=1, a=0, n=3), enc(f, 9, "HALT")]
    at1 = 2 + f.P_SEND + f.hop_lat  # word 0 on tile 1's in[0]
    t1 = [enc(f, at1, "FWD", port=1, b=0, n=4), enc(f, 10, "RECV", port=0, d=0), enc(f, 12, "HALT")]
    at2 = at1 + 1 + f.hop_lat  # word 0 on tile 2's in[0]
    t2 = [enc(f, at2 + f.P_RECV, "RECV", port=0, d=0x20, n=3), enc(f, 20, "HALT")]
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2}, {0: {0: 11, 1: 12, 2: 13}})
    assert {w for w in tr.ev["W"] if w[1] == 1} == {(at1 + 1 + i, 1, 1, 11 + i) for i in range(3)}
    assert {m for m in tr.ev["M"] if m[1] == 2} == {(at2 + 1 + i, 2, 0, 0x20 + i, 11 + i) for i in range(3)}
    assert tr.final(1) == (ERR["UNDERFLOW"], 10, 1)
    assert tr.final(2) == (0, 0, 1)


def test_sim_fetch_lead(sim_ring):
    """Start-up: the head is looked at from cycle FETCH_LEAD (FETCH_LEAD + 1 after a
    leading periodic header), so an earlier first T is MISSED right then."""
    f = SIM
    lead = f.FETCH_LEAD
    t0 = [enc(f, lead - 1), enc(f, 9, "HALT")]
    t1 = [enc(f, lead, "PERIODIC", a=4, b=1, n=2), enc(f, 0), enc(f, 9, "HALT")]
    t2 = [enc(f, lead), enc(f, lead + 1), enc(f, lead + 2), enc(f, lead + 3, "PERIODIC", a=4, b=1, n=1), enc(f, 0),
          enc(f, 9, "HALT")]
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2}, cycles=12)
    assert tr.issues(0) == [] and tr.final(0) == (ERR["MISSED"], lead, 1)
    assert tr.issues(1) == [] and tr.final(1) == (ERR["MISSED"], lead + 1, 1)
    # illegal (HDR_GAP): a block whose first entry follows back-to-back issues by one
    # count; the header read makes it one cycle late on this RTL (the golden model does
    # not model that bubble)
    assert [c for c, _ in tr.issues(2)] == [lead, lead + 1, lead + 2]
    assert tr.final(2) == (ERR["MISSED"], lead + 4, 1)


def test_sim_opcode_variants(sim_ring):
    """OPCODE for UNIT != 0 (with BUSY in the same cycle), RECV on the unbuffered bus
    port, and a FWD source port 3; none issues, each tile halts."""
    f = SIM
    t0 = [enc(f, 2, "SEND", port=1, a=0, n=4), enc(f, 3, "SEND", port=1, unit=1), enc(f, 9, "HALT")]
    t1 = [enc(f, 2, "RECV", port=2, d=0), enc(f, 9, "HALT")]
    t2 = [enc(f, 2, "FWD", port=1, b=3), enc(f, 9, "HALT")]
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2}, cycles=12)
    assert tr.issues(0) == [(2, t0[0])] and tr.final(0) == (ERR["OPCODE"] | ERR["BUSY"], 3, 1)
    assert tr.issues(1) == [] and tr.final(1) == (ERR["OPCODE"], 2, 1)
    assert tr.issues(2) == [] and tr.final(2) == (ERR["OPCODE"], 2, 1)


# ---------------------------------------------------------------------------------------
# MAC array, VPU and the partial-sum chain (docs/sched.md section 11)


def s16(v: int) -> int:
    """``v`` as a 16-bit two's complement word (SIMK's dw)."""
    return v & 0xFFFF


def s32(v: int) -> int:
    """``v`` as a 32-bit two's complement partial sum (SIMK's accw)."""
    return v & 0xFFFFFFFF


def weights(w: list[list[int]], base: int, vecs: list[list[int]], xbase: int) -> dict[int, int]:
    """Data words: ``w`` row-major from ``base``, the vectors from ``xbase`` (16-bit)."""
    out = {base + r * len(w) + c: s16(v) for r, row in enumerate(w) for c, v in enumerate(row)}
    out.update({xbase + i * len(x) + r: s16(v) for i, x in enumerate(vecs) for r, v in enumerate(x)})
    return out


@pytest.mark.parametrize("key", ["k2", "k8_dw32"])
def test_mac_records_and_ports(key, generated):
    """With k > 0: write taps widen to 4 + k sources, the tile gets psum_in/psum_out
    (valid + data, no handshake), the ring exports psum_valid/psum_data; records match."""
    g = generated(key)
    fmt = g["fmt"]
    k, kw, nt = fmt.k, fmt.k * fmt.accw, fmt.nt
    for kind, ports_of, module in (("tile", tile_ports, "sched_tile"), ("ring", ring_ports, "sched_ring")):
        rec = json.loads(g[kind].sidecar.read_text())
        assert rec["ports"] == json.loads(json.dumps(ports_of(fmt)))
        check_rtl_ports(g[kind].verilog, module, rec)
        names = module_ports(g[kind].verilog, module)
        assert [n for n in names if HANDSHAKE.search(n)] == []
    tp = tile_ports(fmt)
    assert {n: (tp[n]["dir"], tp[n]["width"]) for n in tp if n.startswith(("wr_", "psum"))} == {
        "wr_en": ("out", 4 + k), "wr_addr": ("out", (4 + k) * fmt.aw), "wr_data": ("out", (4 + k) * fmt.dw),
        "psum_in_valid": ("in", 1), "psum_in": ("in", kw), "psum_out_valid": ("out", 1), "psum_out": ("out", kw)}
    rp = ring_ports(fmt)
    assert (rp["psum_valid"]["width"], rp["psum_data"]["width"]) == (nt, nt * kw)
    assert rp["wr_en"]["width"] == nt * (4 + k)
    assert json.loads(g["tile"].sidecar.read_text())["timing"]["l_mm"] == FabricParams.L_MM
    assert "psum_in" not in tile_ports(FabricParams()) and tile_ports(FabricParams())["wr_en"]["width"] == 4


def test_sim_matvec_writes(sim_ring):
    """LDW (row r read in n+r), SWPW, MATVEC of N = 2 signed vectors: y_i[c] written to
    mem[D + i*k + c] by source 4 + c at the end of n+i+L_MM-1, as signed 16-bit values;
    LDW with LEN != k-1 raises OPCODE; nothing else writes."""
    f = SIMK
    w = [[1, -2], [3, 4]]
    xs = [[5, -1], [-3, 2]]
    t0 = [enc(f, 2, "LDW", a=0, n=2), enc(f, 4, "SWPW"), enc(f, 5, "MATVEC", b=0x10, d=0x20, n=2),
          enc(f, 10, "HALT")]
    t1 = [enc(f, 3, "LDW", a=0, n=3), enc(f, 10, "HALT")]
    tr = sim_ring(f, {0: t0, 1: t1, 2: [enc(f, 10, "HALT")]}, {0: weights(w, 0, xs, 0x10)}, cycles=14)
    assert tr.issues(0) == [(2, t0[0]), (4, t0[1]), (5, t0[2]), (10, t0[3])]
    y = [[sum(x[r] * w[r][c] for r in range(2)) for c in range(2)] for x in xs]
    assert y == [[2, -14], [3, 14]]
    lmm = FabricParams.L_MM
    assert tr.ev["M"] == {(5 + i + lmm - 1, 0, 4 + c, 0x20 + 2 * i + c, s16(y[i][c]))
                          for i in range(2) for c in range(2)}
    assert {(0, 0x21, 0xFFF2), (0, 0x23, 14)} <= tr.ev["D"]
    assert tr.psum == set() and tr.ev["W"] == set()
    assert tr.final(0) == (0, 0, 1)
    assert tr.issues(1) == [] and tr.final(1) == (ERR["OPCODE"], 3, 1)


def test_sim_matvr_bias_relu_shift(sim_ring):
    """MATVR: the MATVEC sum (signed accw bits, here beyond dw = 16 bits) plus the bias
    mem[A+c] (signed dw bits, exact), ReLU, >> vpu_shift (2), low dw bits, written at the
    end of n+i+L_MM-1 by sources 4 + c. Adding the bias after truncating to 16 bits would
    give other values (checked below). MATVR with PORT[1] (psum_out) raises OPCODE."""
    f = SIMK
    lmm = FabricParams.L_MM
    w = [[200, 0], [0, -200]]
    xs = [[200, 200], [-1, -1]]
    bias = [-30000, 30000]
    t0 = [enc(f, 2, "LDW", a=0, n=2), enc(f, 4, "SWPW"), enc(f, 5, "MATVR", a=0x30, b=0x10, d=0x20, n=2),
          enc(f, 10, "HALT")]
    t1 = [enc(f, 2, "LDW", a=0, n=2), enc(f, 4, "SWPW"), enc(f, 5, "MATVR", port=2, a=0x30, b=0x10),
          enc(f, 10, "HALT")]
    data = weights(w, 0, xs, 0x10)
    data.update({0x30: s16(bias[0]), 0x31: s16(bias[1])})
    tr = sim_ring(f, {0: t0, 1: t1, 2: [enc(f, 10, "HALT")]}, {0: data, 1: data}, cycles=14)
    y = [[40000, -40000], [-200, 200]]
    want = [[10000 >> 2, 0], [0, 30200 >> 2]]
    assert [[max(y[i][c] + bias[c], 0) >> 2 for c in range(2)] for i in range(2)] == want
    truncated_first = [[max(((y[i][c] + 0x8000) & 0xFFFF) - 0x8000 + bias[c], 0) >> 2 for c in range(2)]
                       for i in range(2)]
    assert truncated_first != want
    assert tr.ev["M"] == {(5 + i + lmm - 1, 0, 4 + c, 0x20 + 2 * i + c, want[i][c])
                          for i in range(2) for c in range(2)}
    assert tr.final(0) == (0, 0, 1)
    assert [c for c, _ in tr.issues(1)] == [2, 4] and tr.final(1) == (ERR["OPCODE"], 5, 1)


def test_sim_psum_chain(sim_ring):
    """Two chained tiles: tile 0's MATVEC (PORT[1]) puts y_i on psum_out during n+i+L_MM
    (accw-bit signed lanes, no memory write); tile 1's MATVEC, issued hop_lat + 1 later with
    PORT[0], adds the psum it samples in m+i+L_MM-1 and writes; an idle psum_in sampled by
    tile 2 raises TAP_IDLE at its sample cycle and adds 0 (the write still happens)."""
    f = SIMK
    lmm = FabricParams.L_MM
    w0, x0 = [[1, -2], [3, 4]], [[5, -1], [-3, 2]]
    w1, x1 = [[1, 0], [0, 1]], [[10, -20], [7, 0]]
    n0 = 5
    n1 = n0 + f.hop_lat + 1
    t0 = [enc(f, 2, "LDW", a=0, n=2), enc(f, 4, "SWPW"), enc(f, n0, "MATVEC", port=2, b=0x10, d=0x20, n=2),
          enc(f, 14, "HALT")]
    t1 = [enc(f, 2, "LDW", a=0, n=2), enc(f, 4, "SWPW"), enc(f, n1, "MATVEC", port=1, b=0x10, d=0x20, n=2),
          enc(f, 14, "HALT")]
    t2 = [enc(f, 2, "LDW", a=0, n=2), enc(f, 4, "SWPW"), enc(f, 9, "MATVEC", port=1, b=0x10, d=0x30),
          enc(f, 14, "HALT")]
    data = {0: weights(w0, 0, x0, 0x10), 1: weights(w1, 0, x1, 0x10), 2: weights(w1, 0, [[-4, 9]], 0x10)}
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2}, data, cycles=18)
    assert tr.psum == {(n0 + lmm, 0, (2, s32(-14))), (n0 + 1 + lmm, 0, (3, 14))}
    tile1 = {(n1 + i + lmm - 1, 1, 4 + c, 0x20 + 2 * i + c, v)
             for i, ys in enumerate([[12, s16(-34)], [10, 14]]) for c, v in enumerate(ys)}
    tile2 = {(9 + lmm - 1, 2, 4, 0x30, s16(-4)), (9 + lmm - 1, 2, 5, 0x31, 9)}
    assert tr.ev["M"] == tile1 | tile2
    assert tr.final(0) == (0, 0, 1) and tr.final(1) == (0, 0, 1)
    assert tr.final(2) == (ERR["TAP_IDLE"], 9 + lmm - 1, 1)
    assert [c for c, _ in tr.issues(2)] == [2, 4, 9]


def test_sim_vpu_and_busy(sim_ring):
    """VPU: v = max(signed a + signed b, 0) >> vpu_shift, written at the end of n+i+l_alu-1
    by the ALU source (negative sums give 0; 0x7FFF + 0x7FFF = 65534 in dw + 1 bits).
    MATVEC during LDW issues (different units; it uses the old front, here 0); SWPW during
    LDW and MATVEC during MATVEC raise BUSY and are not issued."""
    f = SIMK
    a = [5, -10, 100, -3, 0x7FFF]
    b = [3, 4, -20, 3, 0x7FFF]
    t0 = [enc(f, 2, "VPU", a=0x10, b=0x18, d=0x20, n=5), enc(f, 12, "HALT")]
    t1 = [enc(f, 2, "LDW", a=0, n=2), enc(f, 3, "MATVEC", b=0x10, d=0x20), enc(f, 5, "MATVEC", b=0x10, d=0x20, n=3),
          enc(f, 6, "MATVEC", b=0x10, d=0x30), enc(f, 12, "HALT")]
    t2 = [enc(f, 2, "LDW", a=0, n=2), enc(f, 3, "SWPW"), enc(f, 12, "HALT")]
    data = {0: {0x10 + i: s16(v) for i, v in enumerate(a)} | {0x18 + i: s16(v) for i, v in enumerate(b)},
            1: {0: 1, 1: 2, 2: 3, 3: 4, 0x10: 1, 0x11: 1}}
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2}, data, cycles=14)
    vals = [max(x + y, 0) >> f.vpu_shift for x, y in zip(a, b)]
    assert vals == [2, 0, 20, 0, 0x3FFF]
    assert {m for m in tr.ev["M"] if m[1] == 0} == {(2 + i + f.l_alu - 1, 0, 3, 0x20 + i, v)
                                                    for i, v in enumerate(vals)}
    assert tr.final(0) == (0, 0, 1)
    assert tr.issues(1) == [(2, t1[0]), (3, t1[1]), (5, t1[2])]
    assert {m for m in tr.ev["M"] if m[1] == 1} >= {(4, 1, 4, 0x20, 0), (4, 1, 5, 0x21, 0)}
    assert tr.final(1) == (ERR["BUSY"], 6, 1)
    assert tr.issues(2) == [(2, t2[0])] and tr.final(2) == (ERR["BUSY"], 3, 1)


def test_sim_mac_opcodes_without_array(sim_ring):
    """k = 0: MATVEC, LDW and VPU stay reserved and raise OPCODE at their cycle."""
    f = SIM
    tr = sim_ring(f, {0: [enc(f, 2, "MATVEC", b=0x10), enc(f, 9, "HALT")],
                      1: [enc(f, 3, "LDW", n=2), enc(f, 9, "HALT")],
                      2: [enc(f, 4, "VPU", a=1, b=2, d=3), enc(f, 9, "HALT")]}, cycles=12)
    for t, c in ((0, 2), (1, 3), (2, 4)):
        assert tr.issues(t) == [] and tr.final(t) == (ERR["OPCODE"], c, 1)


# ---------------------------------------------------------------------------------------
# the mesh top (docs/sched.md section 4.1)

MESH_SETS = {"2x2": {"nt": 4, "rows": 2}, "3x3_hop2": {"nt": 9, "rows": 3, "hop_lat": 2},
             "2x3_k2": {"nt": 6, "rows": 2, "k": 2}, "4x2_nobus": {"nt": 8, "rows": 4, "bus": False}}


@pytest.mark.parametrize("key", MESH_SETS)
def test_mesh_lint_ports_and_record(key, tmp_path, lint):
    """sched_mesh lints clean, has exactly sched_ring's ports (none a handshake), and its
    record says so; emit_ring refuses a mesh and emit_mesh the ring."""
    fmt = FabricParams(**MESH_SETS[key])
    em = emit_mesh(fmt, tmp_path)
    assert lint(em.verilog) == []
    rec = json.loads(em.sidecar.read_text())
    assert rec["module"] == "sched_mesh" and FabricParams.from_dict(rec["params"]) == fmt
    assert rec["ports"] == json.loads(json.dumps(ring_ports(fmt)))
    assert (rec["timing"]["rows"], rec["timing"]["cols"]) == (fmt.rows, fmt.cols)
    check_rtl_ports(em.verilog, "sched_mesh", rec)
    names = module_ports(em.verilog, "sched_mesh")
    assert sorted(names) == sorted(ring_ports(fmt)) and [n for n in names if HANDSHAKE.search(n)] == []
    with pytest.raises(ParamError, match="rows=.*emit_mesh"):
        emit_ring(fmt, tmp_path / "ring")
    with pytest.raises(ParamError, match="rows=1"):
        emit_mesh(FabricParams(nt=fmt.nt), tmp_path / "ring")


def test_sim_mesh_links(sim_ring):
    """A 2 x 3 mesh (t = 3r + c, hop_lat = 1: a word on out in c is on the receiver's in
    in c + 1): east and south words, both wraps (east from column 2 to column 0, south
    from row 1 to row 0), and a partial sum east from tile 2 across the row wrap to tile 0
    (a ring would send it to tile 3, and tile 0 would sample an idle psum_in)."""
    f = FabricParams(cw=16, nt=6, rows=2, dw=16, aw=6, sd=16, hop_lat=1, buf_d=4, l_alu=2, k=2)
    lmm = FabricParams.L_MM
    t1 = [enc(f, 2, "SEND", port=1, a=0x10, n=2), enc(f, 3, "SEND", port=0, a=0x12), enc(f, 14, "HALT")]
    t2 = [enc(f, 2, "LDW", a=0x20, n=2), enc(f, 4, "SWPW"), enc(f, 5, "RECV", port=0, d=0, n=2),
          enc(f, 7, "MATVEC", port=2, b=0x28), enc(f, 14, "HALT")]
    t4 = [enc(f, 5, "TAP", port=1, d=3), enc(f, 14, "HALT")]
    t5 = [enc(f, 2, "SEND", port=1, a=0x10), enc(f, 14, "HALT")]
    t3 = [enc(f, 2, "SEND", port=0, a=0x11), enc(f, 4, "TAP", port=0, d=1), enc(f, 14, "HALT")]
    n0 = 7 + f.hop_lat + 1  # the chained MATVEC, hop_lat + 1 after tile 2's
    t0 = [enc(f, 2, "LDW", a=0x20, n=2), enc(f, 4, "SWPW"), enc(f, 6, "RECV", port=1, d=2),
          enc(f, n0, "MATVEC", port=1, b=0x28, d=0x30), enc(f, 14, "HALT")]
    data = {1: {0x10: 0xA1, 0x11: 0xA2, 0x12: 0xA3}, 5: {0x10: 0xB5}, 3: {0x11: 0xC3},
            2: weights([[1, 0], [0, 1]], 0x20, [[3, -4]], 0x28), 0: weights([[2, 0], [0, 2]], 0x20, [[5, 6]], 0x28)}
    tr = sim_ring(f, {0: t0, 1: t1, 2: t2, 3: t3, 4: t4, 5: t5}, data, cycles=18)
    assert tr.ev["W"] == {(3, 1, 1, 0xA1), (4, 1, 1, 0xA2), (4, 1, 0, 0xA3), (3, 5, 1, 0xB5), (3, 3, 0, 0xC3)}
    assert tr.psum == {(7 + lmm, 2, (3, s32(-4)))}
    y0 = [2 * 5 + 3, 2 * 6 - 4]  # tile 0's own product plus tile 2's partial sum
    assert tr.ev["M"] == {
        (5, 2, 0, 0, 0xA1), (6, 2, 0, 1, 0xA2),  # 1 -> east -> 2: in[0] in 4, 5; RECV at 5 (l_path)
        (5, 4, 1, 3, 0xA3),                      # 1 -> south -> 4: TAP in[1] in 5
        (4, 3, 0, 1, 0xB5),                      # 5 -> east, row wrap -> 3: TAP in[0] in 4
        (6, 0, 1, 2, 0xC3),                      # 3 -> south, column wrap -> 0: in[1] in 4, RECV at 6
        (n0 + lmm - 1, 0, 4, 0x30, y0[0]), (n0 + lmm - 1, 0, 5, 0x31, y0[1]),
    }
    for t in range(6):
        assert tr.final(t) == (0, 0, 1), t

