"""The throughput harness of the schedule-driven fabric, generated from its port record.

The per-edge testbench (:mod:`lockstep.verif.sched.env`) loads a program through the
load port, raises ``run`` and samples every tap on every clock edge from Python. The
harness ``tp_<module>`` (around ``sched_ring`` or ``sched_mesh``: the same ports) does
all of that in HDL, so a whole program runs at simulator speed:

* **clock and reset** in HDL (a 10 ns clock). Each program (an *episode*) starts with
  ``rst`` high for two edges and one idle edge, as the per-edge ``start`` does.
* **program images from files**, one set per episode ``e`` in the simulator's working
  folder, read with ``$readmemh`` and written by the harness itself through the fabric's
  load port, one word per clock, tile by tile (schedule image, then data image) -- the
  same words in the same order as the per-edge loader, so both modes start cycle 0
  from the same state:

  - ``tp_cfg_<e>.txt``: ``stop_at max_cycles`` (decimal). ``stop_at = 0`` runs to halt;
    otherwise exactly ``stop_at`` cycles (a program the golden run leaves running).
    ``max_cycles`` is the watchdog (0: none);
  - ``tp_sched_<e>.hex``: ``nt * sd`` schedule words (hex, tile 0 first);
  - ``tp_data_<e>.hex``: ``nt * 2**aw`` data words (hex, tile 0 first);
  - ``tp_ext_<e>.txt`` (``comm`` only): ``cycle value`` lines (hex, increasing
    cycles): the external word of each cycle, on ``ext_valid``/``ext_data`` from the
    edge that starts that cycle, as the per-edge driver drives them.

  Why the load port and not hierarchical backdoor writes: MyHDL flattens the fabric
  into one module whose memory names are conversion artefacts, Verilator needs them
  public (and then may still split or rename arrays), and Icarus and Verilator disagree
  on writing into another module's unpacked array from a task. The load port is plain
  synchronous logic both simulators run the same way, it is the path the per-edge test
  uses, and it costs ``nt * (sd + 2**aw)`` cycles per program at simulator speed.
* **run to halt**: ``run`` rises on the edge that writes the last load word; that edge
  starts *cycle 0* (count 0). The run ends when every tile is halted, every external
  word has been driven and nothing happened (no event) for :func:`harness_tail` cycles
  -- longer than anything a halted fabric can still have in flight (a 256-element DOT,
  words on ``hop_lat`` conveyors). ``run`` stays high one more cycle (as in the
  per-edge test) and falls. ``stop_at`` ends it after that many cycles instead, and the
  watchdog ``max_cycles`` ends it as a ``timeout``.
* **a recorder**: every event the per-edge monitor rebuilds, one line per event in
  ``tp_trace_<e>.log``, hex fields, the cycle first (the sampled cycle; an ``E``/``F``
  error bit raised in cycle ``c`` is registered, so it is seen in ``c + 1`` and recorded
  with that cycle)::

      I c t entry            issue of tile t (the issue_entry tap)
      W c t port data        a word on out[port] of tile t
      B c data               the bus register's word
      M c t src addr data    a memory write of tile t by write source src
      P c t lanes            psum_out of tile t (k lanes of accw bits, lane 0 lowest)
      S c entry              tile 0's CHECK suspends (its issue_entry tap)
      D c data               tile 0's FIFO RECV writes a pad word
      E c t bits             error bits of tile t newly set (seen in cycle c)
      F c bits               bus error bits newly set (seen in cycle c)
      Q c what bits          an idle output holds a value other than 0: the data tap
                             with its valid lanes' bits cleared (what: 0 the links,
                             1 / 2 the write ports' data / address, 3 the bus)
      X c count tile_counts  the chip counter is not c mod 2**cw, or a local counter
                             differs from it (the per-edge monitor's counter check)
      U c                    a tap holds X or Z bits (Icarus; Verilator is 2-state)

  Then ``tp_final_<e>.log``: ``R reason run_cycles load_cycles`` (reason ``halt``,
  ``limit``, ``timeout`` or ``window``), one ``T t err err_cnt halted`` line per tile,
  ``B bus_err bus_err_cnt``, and the ``nt * 2**aw`` final data words (``%h``, tile 0
  first) read through the debug port after ``run`` fell. The episode counter ``ep``
  then advances (the event the cocotb testbench wakes on); after the last episode
  ``tp_end.log`` gets ``cycles episodes status`` (status ``ok``, ``timeout``,
  ``window`` or ``missing:<file>``) and ``done`` rises.

Settings are registers the cocotb testbench writes (``n_prog`` programs; ``n_ready``:
the harness does not start episode ``e`` before ``n_ready > e``, so the testbench can
write images as the run goes; ``go``), or plusargs for a run without cocotb:
``+tp_programs=N`` (all images written beforehand), ``+tp_go``, ``+tp_finish``;
``+tp_waves=<file> +tp_wstart= +tp_wstop=`` dumps the run cycles ``[wstart, wstop)`` of
the first episode and ends the run there (``+tp_dump_late`` for Verilator, which
ignores ``$dumpoff``, as in :mod:`lockstep.gen.harness`).

As for the streaming units' harness, MyHDL converts no file I/O or delays, so this is
text from the record (every width is the record's; the parameters are checked against
them), linted like every generated file (``verilator --lint-only -Wall --timing``,
``iverilog -g2012``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockstep.gen.harness import (
    clock_line, episode_finish_task, harness_name, open_episode_task, settings_decl, start_block, wait_states,
    write_harness,
)
from lockstep.models.sched.params import FabricParams

__all__ = ["FabricPorts", "fabric_ports", "harness_name", "harness_tail", "sched_harness", "emit_sched_harness",
           "QUIET", "REASONS", "quiet_shape"]

#: End reasons of an episode (``R`` line), by the code the harness keeps.
REASONS = ("halt", "limit", "timeout", "window")

#: The quiet outputs (docs/sched.md section 9), numbered as the ``Q`` records number
#: them: ``(name, data tap, valid tap)``; the bus (3) is one lane.
QUIET = (("link", "out_data", "out_valid"), ("write data", "wr_data", "wr_en"),
         ("write address", "wr_addr", "wr_en"), ("bus", "bus_data", "bus_valid"))


def quiet_shape(p: FabricParams, what: int) -> tuple[int, int, int]:
    """``(lanes, lanes per tile, lane width)`` of quiet output ``QUIET[what]`` (the bus:
    one lane, of the fabric, not of a tile)."""
    per, w = ((p.PORTS, p.dw), (p.sources, p.dw), (p.sources, p.aw), (1, p.dw))[what]
    return (1 if what == 3 else p.nt * per), per, w

#: Ports the harness drives or reads on every fabric (the taps of docs/sched.md section 9).
_NEEDED = {
    "clk": "in", "rst": "in", "run": "in", "count": "out", "ld_we": "in", "ld_tile": "in", "ld_sel": "in",
    "ld_addr": "in", "ld_data": "in", "tile_count": "out", "issue": "out", "issue_entry": "out", "wr_en": "out",
    "wr_addr": "out", "wr_data": "out", "err": "out", "err_cnt": "out", "halted": "out", "out_valid": "out",
    "out_data": "out", "bus_valid": "out", "bus_data": "out", "bus_err": "out", "bus_err_cnt": "out",
    "dbg_tile": "in", "dbg_addr": "in", "dbg_rdata": "out",
}
_COMM = {"ext_valid": "in", "ext_data": "in", "susp": "out", "pad": "out"}
_MAC = {"psum_valid": "out", "psum_data": "out"}


@dataclass(frozen=True)
class FabricPorts:
    """What the harness needs of a fabric, read from its record.

    Attributes:
        module: the fabric's module (``sched_ring`` or ``sched_mesh``).
        params: the record's parameters (checked against every port width).
        widths: port name -> width, as the record gives them.
    """

    module: str
    params: FabricParams
    widths: dict[str, int]

    def w(self, port: str) -> int:
        """Width of ``port``."""
        return self.widths[port]


def harness_tail(p: FabricParams) -> int:
    """Quiet cycles that end a run once every tile is halted: more than the longest a
    halted fabric can stay silent with work in flight (a DOT of 256 elements writes only
    after its last read and ``l_alu``; a word crosses ``hop_lat`` flip-flops per hop;
    the MAC pipeline ``L_MM``), with a margin."""
    return 256 + p.l_alu + p.L_MM + p.hop_lat * p.nt + 32


def fabric_ports(record: dict[str, Any]) -> FabricPorts:
    """The fabric a record describes, checked.

    Raises:
        ValueError: a port the harness needs is missing or has the wrong direction, the
            record has no parameters, or a width differs from what its parameters give
            (naming the port and both widths).
    """
    name = record.get("module", "?")
    ports = record.get("ports", {})
    if "params" not in record:
        raise ValueError(f"{name}: the record has no params")
    p = FabricParams.from_dict(record["params"])
    need = dict(_NEEDED)
    if p.comm:
        need.update(_COMM)
    if p.k:
        need.update(_MAC)
    for port, d in need.items():
        if port not in ports or ports[port]["dir"] != d:
            raise ValueError(f"{name}: the sched harness needs an {d}put port {port!r} (a sched_ring/sched_mesh record)")
    widths = {n: int(s["width"]) for n, s in ports.items()}
    nt, ns = p.nt, p.sources
    want = {
        "clk": 1, "rst": 1, "run": 1, "ld_we": 1, "ld_sel": 1, "count": p.cw, "ld_data": p.ew,
        "tile_count": nt * p.cw, "issue": nt, "issue_entry": nt * p.ew, "wr_en": nt * ns, "wr_addr": nt * ns * p.aw,
        "wr_data": nt * ns * p.dw, "err": nt * p.err_bits, "err_cnt": nt * p.cw, "halted": nt,
        "out_valid": nt * p.PORTS, "out_data": nt * p.PORTS * p.dw, "bus_valid": 1, "bus_data": p.dw,
        "bus_err": p.err_bits, "bus_err_cnt": p.cw, "dbg_addr": p.aw, "dbg_rdata": p.dw,
        "ld_tile": widths["dbg_tile"],
    }
    if p.comm:
        want.update(ext_valid=1, ext_data=p.dw, susp=1, pad=1)
    if p.k:
        want.update(psum_valid=nt, psum_data=nt * p.k * p.accw)
    if (1 << widths["ld_addr"]) < max(p.sd, p.words) or (1 << widths["dbg_tile"]) < nt:
        raise ValueError(f"{name}: ld_addr [{widths['ld_addr']}] / dbg_tile [{widths['dbg_tile']}] cannot address "
                         f"sd={p.sd}, 2**aw={p.words}, nt={nt}")
    bad = [f"{n} is [{widths[n]}], its params give [{v}]" for n, v in want.items() if widths[n] != v]
    if bad:
        raise ValueError(f"{name}: the record's ports and params disagree: " + "; ".join(bad))
    return FabricPorts(name, p, widths)


def _bits(n: int) -> int:
    """Bits of an index into ``n`` entries."""
    return max(1, (n - 1).bit_length())


def _recorder(fp: FabricPorts) -> str:
    """The unrolled per-cycle recorder (one ``$fwrite`` per event; see the module docstring)."""
    p = fp.params
    nt, ns, ew, dw, aw, eb = p.nt, p.sources, p.ew, p.dw, p.aw, p.err_bits
    lines = []
    for t in range(nt):
        lines.append(f"if (issue[{t}]) $fwrite(ft, \"I %0h {t:x} %0h\\n\", cycle, issue_entry[{t * ew} +: {ew}]);")
    for t in range(nt):
        for q in range(p.PORTS):
            j = t * p.PORTS + q
            lines.append(f"if (out_valid[{j}]) $fwrite(ft, \"W %0h {t:x} {q:x} %0h\\n\", cycle, "
                         f"out_data[{j * dw} +: {dw}]);")
    lines.append("if (bus_valid) $fwrite(ft, \"B %0h %0h\\n\", cycle, bus_data);")
    if p.k:
        pw = p.k * p.accw
        for t in range(nt):
            lines.append(f"if (psum_valid[{t}]) $fwrite(ft, \"P %0h {t:x} %0h\\n\", cycle, psum_data[{t * pw} +: {pw}]);")
    if p.comm:
        t0 = p.COMM_TILE
        j = t0 * ns + 4 + p.k
        lines.append(f"if (susp) $fwrite(ft, \"S %0h %0h\\n\", cycle, issue_entry[{t0 * ew} +: {ew}]);")
        lines.append(f"if (pad) $fwrite(ft, \"D %0h %0h\\n\", cycle, wr_data[{j * dw} +: {dw}]);")
    for t in range(nt):
        for s in range(ns):
            j = t * ns + s
            lines.append(f"if (wr_en[{j}]) $fwrite(ft, \"M %0h {t:x} {s:x} %0h %0h\\n\", cycle, "
                         f"wr_addr[{j * aw} +: {aw}], wr_data[{j * dw} +: {dw}]);")
    for t in range(nt):
        sl = f"[{t * eb} +: {eb}]"
        lines.append(f"if ((err{sl} & ~err_q{sl}) != {eb}'d0) $fwrite(ft, \"E %0h {t:x} %0h\\n\", cycle, "
                     f"err{sl} & ~err_q{sl});")
    lines.append(f"if ((bus_err & ~bus_err_q) != {eb}'d0) $fwrite(ft, \"F %0h %0h\\n\", cycle, bus_err & ~bus_err_q);")
    # the quiet outputs (data, and a write port's address, 0 while idle): each data tap
    # with its valid lanes' bits cleared, recorded whole when not 0
    for what, (_, tap, valid) in enumerate(QUIET):
        lanes, _, w = quiet_shape(p, what)
        mask = "{" + ", ".join(f"{{{w}{{{valid}{'' if lanes == 1 else f'[{j}]'}}}}}" for j in reversed(range(lanes))) + "}"
        lines.append(f"if (({tap} & ~{mask}) != 0) $fwrite(ft, \"Q %0h {what} %0h\\n\", cycle, {tap} & ~{mask});")
    return "\n".join("          " + ln for ln in lines)


def sched_harness(record: dict[str, Any]) -> str:
    """The harness Verilog of the fabric ``record`` describes (see the module docstring)."""
    fp = fabric_ports(record)
    p = fp.params
    mod = fp.module
    top = harness_name(mod)
    nt, ew, dw, aw, cw, eb, sd, words = p.nt, p.ew, p.dw, p.aw, p.cw, p.err_bits, p.sd, p.words
    tw, law = fp.w("dbg_tile"), fp.w("ld_addr")
    siw, diw = _bits(nt * sd), _bits(nt * words)
    tail = harness_tail(p)
    ins = {n for n, s in record["ports"].items() if s["dir"] == "in"}
    conns = ",\n".join(f"    .{n}({n})" for n in record["ports"])
    decl_out = "\n".join(f"  wire [{w - 1}:0] {n};" for n, w in fp.widths.items() if n not in ins)
    act = ["issue", "out_valid", "bus_valid", "wr_en", "(err & ~err_q)", "(bus_err & ~bus_err_q)"]
    taps = ["count", "tile_count", "issue", "issue_entry", "out_valid", "out_data", "bus_valid", "bus_data", "wr_en",
            "wr_addr", "wr_data", "err", "bus_err", "halted"]
    if p.k:
        act.append("psum_valid")
        taps += ["psum_valid", "psum_data"]
    if p.comm:
        act += ["susp", "pad"]
        taps += ["susp", "pad"]
    act_expr = "|{" + ", ".join(act) + "}"
    # one $isunknown per tap: Icarus 11 answers 1 for a concatenation of known values
    taps_expr = " || ".join(f"$isunknown({t})" for t in taps)
    ld_data = f"{{{ew - dw}'d0, dimg[dp]}}" if ew > dw else "dimg[dp]"
    comm_decl = comm_init = comm_open = comm_run0 = comm_step = comm_stop = comm_close = ""
    ext_done = "1'b1"
    if p.comm:
        comm_decl = f"""
  reg ext_valid;
  reg [{dw - 1}:0] ext_data;
  reg [63:0] ext_c;  // cycle of the next external word
  reg [{dw - 1}:0] ext_v;
  reg ext_have;      // a word is still to be driven
  integer fx = 0;
"""
        comm_init = f"    ext_valid = 1'b0;\n    ext_data = {dw}'d0;\n    ext_have = 1'b0;\n"
        comm_open = """
      $sformat(fname, "tp_ext_%0d.txt", e);
      fx = $fopen(fname, "r");
      if (fx == 0) missing = 1'b1;
      else ext_next;
"""
        comm_run0 = "          drive_ext(64'd0);\n"
        comm_step = "          drive_ext(cycle + 64'd1);\n"
        comm_stop = f"          ext_valid <= 1'b0;\n          ext_data <= {dw}'d0;\n"
        comm_close = "      if (fx != 0) $fclose(fx);\n      fx = 0;\n"
        ext_done = "!ext_have"
    ext_tasks = ""
    if p.comm:
        ext_tasks = f"""
  // The next external word from tp_ext_<e>.txt (ext_have falls at the end of the file).
  task automatic ext_next;
    integer got;
    begin
      got = $fscanf(fx, "%h %h\\n", ext_c, ext_v);
      ext_have = got == 2;
    end
  endtask

  // Drive the word of cycle c (from the edge that starts c), and read the next one.
  task automatic drive_ext(input [63:0] c);
    begin
      if (ext_have && ext_c == c) begin
        ext_valid <= 1'b1;
        ext_data <= ext_v;
        ext_next;
      end else begin
        ext_valid <= 1'b0;
        ext_data <= {dw}'d0;
      end
    end
  endtask
"""
    rec = _recorder(fp)
    final_tiles = "".join(f'          $fwrite(ff, "T {t:x} %0h %0h %0h\\n", err[{t * eb} +: {eb}], '
                          f'err_cnt[{t * cw} +: {cw}], halted[{t}]);\n' for t in range(nt))
    reason_str = " : ".join(f"why == 2'd{i} ? \"{r}\"" for i, r in enumerate(REASONS[:-1])) + f" : \"{REASONS[-1]}\""
    start = start_block(top, '    if ($value$plusargs("tp_programs=%d", n_prog)) n_ready = n_prog;\n')
    clock = clock_line()
    settings_regs = settings_decl("  reg [31:0] n_prog;   // programs (episodes) in the run\n"
                                  "  reg [31:0] n_ready;  // programs whose files are written\n")
    open_task = open_episode_task("settings, images, external words, the trace",
                                  ("%d %d", "stop_at, max_cycles", ""), [("sched", "simg", ""), ("data", "dimg", "")],
                                  [("trace", "ft")], comm_open)
    finish_task = episode_finish_task("done")
    wait = wait_states("n_prog", "", "begin\n"
                                     "            rst <= 1'b1;\n"
                                     "            rcnt <= 2'd0;\n"
                                     "            state <= S_RESET;\n"
                                     "          end")
    return f"""\
// Generated by lockstep.gen.sched.harness from the record of {mod}: do not edit.
// Throughput harness: HDL clock and reset, program images loaded from files through the
// load port, run to halt, every event recorded with its cycle (see the generator).
`timescale 1ns/1ps
module {top};
  localparam integer NT = {nt};
  localparam integer SD = {sd};           // schedule words per tile
  localparam integer WORDS = {words};     // data words per tile
  localparam integer TAIL = {tail};       // quiet cycles after every tile halted
  localparam [2:0] S_IDLE = 3'd0, S_WAIT = 3'd1, S_RESET = 3'd2, S_LOAD = 3'd3, S_RUN = 3'd4, S_STOP = 3'd5,
                   S_DUMP = 3'd6, S_DONE = 3'd7;

  reg clk;
  reg rst;
{settings_regs}
  reg run;
  reg ld_we;
  reg [{tw - 1}:0] ld_tile;
  reg ld_sel;
  reg [{law - 1}:0] ld_addr;
  reg [{ew - 1}:0] ld_data;
  reg [{tw - 1}:0] dbg_tile;
  reg [{aw - 1}:0] dbg_addr;{comm_decl}
{decl_out}

  {mod} dut (
{conns}
  );

  reg [{ew - 1}:0] simg [0:NT*SD-1];
  reg [{dw - 1}:0] dimg [0:NT*WORDS-1];
  reg [2:0] state;
  reg [31:0] ep;          // episode: the program being run (the testbench's event)
  reg [63:0] stop_at;     // from tp_cfg_<e>.txt: 0 = run to halt
  reg [63:0] max_cycles;  // from tp_cfg_<e>.txt: the watchdog, 0 = none
  reg [63:0] cycle;       // run cycle (count 0 = cycle 0)
  reg [63:0] total;       // clock edges since go
  reg [31:0] load_n;      // load words written
  reg [1:0] rcnt;
  reg [31:0] ld_t;        // tile being loaded
  reg [31:0] ld_j;        // word of that tile: schedule 0..SD-1, then data
  reg [{siw - 1}:0] sp;
  reg [{diw - 1}:0] dp;
  reg [31:0] di;          // final dump: next data word
  reg [31:0] quiet;       // cycles without an event
  reg [1:0] why;          // end reason: {", ".join(f"{i} {r}" for i, r in enumerate(REASONS))}
  reg [{nt * eb - 1}:0] err_q;
  reg [{eb - 1}:0] bus_err_q;
  reg done;
  reg missing;
  integer ft = 0;
  integer ff = 0;
  reg [8*64:1] fname;
  reg [8*64:1] mfile;

{open_task}{ext_tasks}
  // The end of an episode's run: the reason and the cycle counts, then the end state.
  task automatic open_final(input [31:0] e);
    begin
      $fclose(ft);
      ft = 0;
{comm_close}      $sformat(fname, "tp_final_%0d.log", e);
      ff = $fopen(fname, "w");
      $fwrite(ff, "R %0s %0h %0h\\n", {reason_str}, cycle, load_n);
    end
  endtask

  task automatic close_final;
    begin
      $fclose(ff);
      ff = 0;
    end
  endtask

  // The end of the run: tp_end.log gets the clock edges since go, the episodes whose
  // files are complete and the status.
{finish_task}
  initial begin
    // State: set here, not in declarations (the always block owns it afterwards).
    clk = 1'b0;
    rst = 1'b1;
    run = 1'b0;
    ld_we = 1'b0;
    ld_tile = {tw}'d0;
    ld_sel = 1'b0;
    ld_addr = {law}'d0;
    ld_data = {ew}'d0;
    dbg_tile = {tw}'d0;
    dbg_addr = {aw}'d0;
{comm_init}    state = S_IDLE;
    ep = 32'd0;
    cycle = 64'd0;
    total = 64'd0;
    done = 1'b0;
    missing = 1'b0;
    err_q = {nt * eb}'d0;
    bus_err_q = {eb}'d0;
{start}{clock}  end

  always @(posedge clk) begin
    if (!done) total <= total + 64'd1;
    case (state)
{wait}      S_RESET: begin  // rst high on two edges, then one idle edge (the per-edge start)
        rcnt <= rcnt + 2'd1;
        if (rcnt == 2'd1) rst <= 1'b0;
        if (rcnt == 2'd2) begin
          state <= S_LOAD;
          load_n <= 32'd0;
          ld_t <= 32'd0;
          ld_j <= 32'd0;
          sp <= {siw}'d0;
          dp <= {diw}'d0;
        end
      end
      S_LOAD: begin  // one word per edge: tile t's schedule image, then its data image
        if (ld_t == NT) begin
          // this edge writes the last word: run rises, cycle 0 starts
          ld_we <= 1'b0;
          ld_sel <= 1'b0;
          ld_addr <= {law}'d0;
          ld_data <= {ew}'d0;
          ld_tile <= {tw}'d0;
          run <= 1'b1;
          cycle <= 64'd0;
          quiet <= 32'd0;
          err_q <= {nt * eb}'d0;
          bus_err_q <= {eb}'d0;
{comm_run0}          state <= S_RUN;
        end else begin
          ld_we <= 1'b1;
          ld_tile <= ld_t[{tw - 1}:0];
          load_n <= load_n + 32'd1;
          if (ld_j < SD) begin
            ld_sel <= 1'b0;
            ld_addr <= ld_j[{law - 1}:0];
            ld_data <= simg[sp];
            sp <= sp + {siw}'d1;
          end else begin
            ld_sel <= 1'b1;
            ld_addr <= ld_j[{law - 1}:0] - SD[{law - 1}:0];
            ld_data <= {ld_data};
            dp <= dp + {diw}'d1;
          end
          if (ld_j == SD + WORDS - 1) begin
            ld_j <= 32'd0;
            ld_t <= ld_t + 32'd1;
          end else ld_j <= ld_j + 32'd1;
        end
      end
      S_RUN: begin  // the values of cycle `cycle`, recorded at the edge that ends it
        if ({taps_expr}) $fwrite(ft, "U %0h\\n", cycle);
        if (count != cycle[{cw - 1}:0] || tile_count != {{NT{{count}}}})
          $fwrite(ft, "X %0h %0h %0h\\n", cycle, count, tile_count);
        if ({act_expr}) begin
{rec}
          quiet <= 32'd0;
        end else quiet <= quiet + 32'd1;
        err_q <= err;
        bus_err_q <= bus_err;
        cycle <= cycle + 64'd1;
{comm_step}        if (waves && ep == 32'd0 && wstart != 64'd0 && cycle + 64'd1 == wstart) begin
          if (late) $dumpvars(0, {top});
          else $dumpon;
        end
        if (waves && ep == 32'd0 && wstop != 64'd0 && cycle + 64'd1 == wstop) begin
          why <= 2'd3;
          state <= S_STOP;
        end else if (stop_at != 64'd0 ? cycle + 64'd1 == stop_at
                     : (&halted && {ext_done} && ({act_expr} ? 32'd0 : quiet + 32'd1) >= TAIL[31:0])) begin
          why <= stop_at != 64'd0 ? 2'd1 : 2'd0;
          state <= S_STOP;
        end else if (max_cycles != 64'd0 && cycle + 64'd1 == max_cycles) begin
          why <= 2'd2;
          state <= S_STOP;
        end
      end
      S_STOP: begin  // run stays high one more cycle (unrecorded), as in the per-edge test
        run <= 1'b0;
{comm_stop}        open_final(ep);
        di <= 32'd0;
        state <= S_DUMP;
      end
      S_DUMP: begin  // err vectors after run fell, then every data word through dbg
        if (di == 32'd0) begin
{final_tiles}          $fwrite(ff, "B %0h %0h\\n", bus_err, bus_err_cnt);
        end else $fwrite(ff, "%h\\n", dbg_rdata);
        if (di == NT * WORDS) begin
          close_final;
          ep <= ep + 32'd1;
          if (why == 2'd2 || why == 2'd3) begin
            state <= S_DONE;
            finish_run(why == 2'd2 ? 3'd1 : 3'd3, ep + 32'd1);
          end else state <= S_WAIT;
        end else begin
          dbg_tile <= di[{aw} +: {tw}];
          dbg_addr <= di[{aw - 1}:0];
          di <= di + 32'd1;
        end
      end
      default: ;
    endcase
  end
endmodule
"""


def emit_sched_harness(record_path: Path | str, outdir: Path | str | None = None) -> Path:
    """Write the harness of the fabric whose JSON record is ``record_path`` as
    ``<outdir>/tp_<module>.v`` (default: beside the record); returns its path. The
    runner calls it for a throughput testbench whose ``harness`` option names it."""
    return write_harness(record_path, outdir, sched_harness)
