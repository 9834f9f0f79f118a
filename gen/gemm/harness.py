"""The throughput harness of the GEMM tile's test top, generated from its port record.

The per-edge testbench (:mod:`lockstep.verif.gemm.tile_env`) loads each job's memory
words through the load port, writes the CSRs and START, samples ``tr_*``, ``busy`` and
``done`` on every clock edge from Python and reads every CSR and the job's memory
regions back. The harness ``tp_gemm_top`` does all of that in HDL, so a whole stream of
jobs runs at simulator speed and Python wakes once per job:

* **clock and reset** in HDL (a 10 ns clock). The first job, and every job the builder
  marks ``reset_before``, starts with ``rst`` high for two edges and one idle edge (the
  per-edge ``start`` and ``GemmBfm.reset``); otherwise the tile keeps its cache, its
  sticky ``ERR`` and the flat memory from the job before, as in the per-edge run.
* **job files**, one set per job (an *episode*) ``e`` in the simulator's working folder,
  read with ``$readmemh`` (hex):

  - ``tp_cfg_<e>.txt``: ``n_load n_csr n_rb max_cycles busy_at reset_at reset_before``
    (decimal). ``max_cycles`` is the watchdog (0: none); ``busy_at`` (0: none) writes
    the last CSR word (the START) again in the cycle after cycle ``busy_at`` (a start
    while busy); ``reset_at`` (0: none) raises ``rst`` for one edge after cycle
    ``reset_at`` (an abandoned job) -- both exactly as the per-edge capture loop does;
  - ``tp_load_<e>.hex``: ``n_load`` words ``{element, value}`` (``ld_addr`` bits, then
    ``ld_data`` bits), written through the load port one per clock;
  - ``tp_csr_<e>.hex``: ``n_csr`` words ``{address, value}`` (``csr_addr`` bits, then
    ``csr_wdata`` bits), written through the CSR port one per clock; the edge that
    writes the last one (CTRL with START) ends *cycle 0*;
  - ``tp_rb_<e>.hex``: ``n_rb`` element indices read back after the job.

  At most :func:`load_depth` load words and read-back indices per job (the generator
  refuses more, naming the job).
* **run to done**: cycle ``c`` (1, 2, ...) is the clock period after the ``c``-th edge
  from the START edge; its values are recorded at the edge that ends it. The run ends
  in the cycle ``done`` is high, at ``reset_at``'s reset, or at the watchdog.
* **a recorder** in ``tp_trace_<e>.log``, one line per event, hex fields, cycle first::

      T c kind addr bytes     a request (tr_valid) in cycle c
      Y c busy                busy in cycle 1 and at every change
      U c                     a tap (tr_*, busy, done) holds X or Z bits (Icarus)

* **the end state** in ``tp_final_<e>.log``: every CSR read address ``0 .. 2**w - 1``
  (``csr_rdata``, ``%h``, one per line), then the ``n_rb`` elements (``rb_data``, ``%h``),
  then ``R reason run_cycles start edges`` (reason ``done``, ``reset`` or ``timeout``;
  ``run_cycles`` the cycle it ended in; ``start`` the harness edge count at the START
  edge; ``edges`` the clock edges of the whole episode, reset, loads, CSR writes, run
  and read-back). The reads start on the edge after the one that ended the run (the
  per-edge BFM waits that edge too). The episode counter ``ep`` then advances (the
  event the cocotb testbench wakes on); after the last episode ``tp_end.log`` gets
  ``edges episodes status`` (status ``ok``, ``timeout``, ``window`` or
  ``missing:<file>``) and ``done`` rises.

Settings are registers the cocotb testbench writes (``n_jobs``; ``n_ready``: the harness
does not start episode ``e`` before ``n_ready > e``, so the testbench can write files as
the run goes; ``go``), or plusargs for a run without cocotb: ``+tp_jobs=N`` (all files
written beforehand), ``+tp_go``, ``+tp_finish``; ``+tp_waves=<file> +tp_wstart=
+tp_wstop=`` dumps harness edges ``[wstart, wstop)`` (counted from ``go``, the
``start`` of the ``R`` line plus a run cycle) and ends the run at ``wstop``
(``+tp_dump_late`` for Verilator, which ignores ``$dumpoff``).

Every scenario of :mod:`lockstep.verif.gemm.jobs` runs here except ``sweep``, whose jobs
do not capture the trace and whose 1 MiB memory would give the harness's load and
read-back images a million entries; it stays per-edge only.

As for the other harnesses, MyHDL converts no file I/O or delays, so this is text from
the record (every width is the record's), linted like every generated file
(``verilator --lint-only -Wall --timing``, ``iverilog -g2012``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockstep.gen.harness import (
    clock_line, episode_finish_task, harness_name, open_episode_task, settings_decl, start_block, wait_states,
    waves_window, write_harness,
)

__all__ = ["TopPorts", "top_ports_of", "gemm_harness", "emit_gemm_harness", "load_depth", "REASONS"]

#: End reasons of an episode (``R`` line), by the code the harness keeps.
REASONS = ("done", "reset", "timeout")

#: Ports the harness drives or reads, with their direction.
_NEEDED = {
    "clk": "in", "rst": "in", "csr_we": "in", "csr_addr": "in", "csr_wdata": "in", "csr_raddr": "in",
    "csr_rdata": "out", "tr_valid": "out", "tr_kind": "out", "tr_addr": "out", "tr_bytes": "out", "done": "out",
    "busy": "out", "ld_we": "in", "ld_addr": "in", "ld_data": "in", "rb_addr": "in", "rb_data": "out",
}


@dataclass(frozen=True)
class TopPorts:
    """What the harness needs of ``gemm_top``, read from its record.

    Attributes:
        module: the top's module name.
        widths: port name -> width, as the record gives them.
        mem_elems: elements of the flat memory (the record's ``timing.mem_elems``).
    """

    module: str
    widths: dict[str, int]
    mem_elems: int

    def w(self, port: str) -> int:
        """Width of ``port``."""
        return self.widths[port]


def load_depth(mem_elems: int) -> int:
    """Load words (and read-back indices) one job may use: twice the memory (a job's
    regions may overlap on purpose, OVERLAP errors)."""
    return 2 * mem_elems


def top_ports_of(record: dict[str, Any]) -> TopPorts:
    """The test top a record describes, checked.

    Raises:
        ValueError: a port the harness needs is missing or has the wrong direction, the
            record has no ``timing.mem_elems``, or the load, read-back and CSR ports
            disagree in width (naming them).
    """
    name = record.get("module", "?")
    ports = record.get("ports", {})
    for port, d in _NEEDED.items():
        if port not in ports or ports[port]["dir"] != d:
            raise ValueError(f"{name}: the gemm harness needs an {d}put port {port!r} (a gemm_top record)")
    try:
        mem_elems = int(record["timing"]["mem_elems"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{name}: the record has no timing.mem_elems") from exc
    widths = {n: int(s["width"]) for n, s in ports.items()}
    bad = [f"{a} [{widths[a]}] vs {b} [{widths[b]}]" for a, b in
           (("ld_addr", "rb_addr"), ("ld_data", "rb_data"), ("csr_addr", "csr_raddr"), ("csr_wdata", "csr_rdata"))
           if widths[a] != widths[b]]
    bad += [f"{n} is [{widths[n]}], not 1" for n in ("clk", "rst", "csr_we", "ld_we", "tr_valid", "done", "busy")
            if widths[n] != 1]
    if (1 << widths["ld_addr"]) < mem_elems:
        bad.append(f"ld_addr [{widths['ld_addr']}] cannot address {mem_elems} elements")
    if bad:
        raise ValueError(f"{name}: the record's ports disagree: " + "; ".join(bad))
    return TopPorts(name, widths, mem_elems)


def _bits(n: int) -> int:
    """Bits of an index into ``n`` entries."""
    return max(1, (n - 1).bit_length())


def gemm_harness(record: dict[str, Any]) -> str:
    """The harness Verilog of the test top ``record`` describes (see the module docstring)."""
    tp = top_ports_of(record)
    mod = tp.module
    top = harness_name(mod)
    ma, ew, ca, cw = tp.w("ld_addr"), tp.w("ld_data"), tp.w("csr_addr"), tp.w("csr_wdata")
    depth = load_depth(tp.mem_elems)
    ncsr = 1 << ca
    ab = _bits(depth)   # bits of an index into the load and read-back images
    ins = {n for n, s in record["ports"].items() if s["dir"] == "in"}
    conns = ",\n".join(f"    .{n}({n})" for n in record["ports"])
    decl_out = "\n".join(f"  wire [{w - 1}:0] {n};" for n, w in tp.widths.items() if n not in ins)
    taps = "$isunknown(tr_valid) || $isunknown(busy) || $isunknown(done)"
    taps_v = "$isunknown(tr_kind) || $isunknown(tr_addr) || $isunknown(tr_bytes)"
    reason_str = " : ".join(f"why == 2'd{i} ? \"{r}\"" for i, r in enumerate(REASONS[:-1])) + f" : \"{REASONS[-1]}\""
    start = start_block(top, '    if ($value$plusargs("tp_jobs=%d", n_jobs)) n_ready = n_jobs;\n')
    clock = clock_line()
    settings_regs = settings_decl("  reg [31:0] n_jobs;   // jobs (episodes) in the run\n"
                                  "  reg [31:0] n_ready;  // jobs whose files are written\n")
    open_task = open_episode_task(
        "settings, images, the trace",
        ("%d %d %d %d %d %d %d", "n_load, n_csr, n_rb, max_cycles, busy_at, reset_at, rst_before",
         "n_csr == 32'd0 || n_csr > NCSR || n_load > DEPTH || n_rb > DEPTH"),
        [("load", "limg", "n_load"), ("csr", "cimg", "n_csr"), ("rb", "rimg", "n_rb")], [("trace", "ft")])
    finish_task = episode_finish_task("ended", "".join(f"      {l}\n" for l in ("if (ft != 0) $fclose(ft);", "if (ff != 0) $fclose(ff);", "ft = 0;", "ff = 0;")))
    wait = wait_states("n_jobs", "          ep_t0 <= total;\n          li <= 32'd0;\n          ci <= 32'd0;\n",
                       "if (rst_before || ep == 32'd0) begin\n"
                       "            rst <= 1'b1;\n"
                       "            rcnt <= 2'd0;\n"
                       "            state <= S_RESET;\n"
                       "          end else state <= S_LOAD;")
    wopen, wstop = waves_window(top, "ended")
    return f"""\
// Generated by lockstep.gen.gemm.harness from the record of {mod}: do not edit.
// Throughput harness: HDL clock and reset, job files loaded through the load and CSR
// ports, run to done, every request recorded with its cycle, CSRs and memory read back.
`timescale 1ns/1ps
module {top};
  localparam integer DEPTH = {depth};   // load words and read-back indices per job
  localparam integer NCSR = {ncsr};     // CSR read addresses
  localparam [3:0] S_IDLE = 4'd0, S_WAIT = 4'd1, S_RESET = 4'd2, S_LOAD = 4'd3, S_CSR = 4'd4, S_RUN = 4'd5,
                   S_RSTP = 4'd6, S_POST = 4'd7, S_READ = 4'd8, S_DONE = 4'd9;

  reg clk;
  reg rst;
{settings_regs}
  reg csr_we;
  reg [{ca - 1}:0] csr_addr;
  reg [{cw - 1}:0] csr_wdata;
  reg [{ca - 1}:0] csr_raddr;
  reg ld_we;
  reg [{ma - 1}:0] ld_addr;
  reg [{ew - 1}:0] ld_data;
  reg [{ma - 1}:0] rb_addr;
{decl_out}

  {mod} dut (
{conns}
  );

  reg [{ma + ew - 1}:0] limg [0:DEPTH-1];   // {{element, value}}
  reg [{ca + cw - 1}:0] cimg [0:NCSR-1];    // {{address, value}}
  reg [{ma - 1}:0] rimg [0:DEPTH-1];        // element indices to read back
  reg [3:0] state;
  reg [31:0] ep;          // episode: the job being run (the testbench's event)
  reg [31:0] n_load;
  reg [31:0] n_rb;
  reg [31:0] n_csr;
  reg [63:0] max_cycles;  // the watchdog, 0 = none
  reg [63:0] busy_at;     // a second START after this cycle, 0 = none
  reg [63:0] reset_at;    // rst after this cycle, 0 = none
  reg rst_before;         // rst before the job (a cold cache)
  reg [63:0] cycle;       // run cycle (cycle 1 follows the START edge)
  reg [63:0] total;       // clock edges since go
  reg [63:0] ep_t0;       // total when the episode started
  reg [63:0] t_start;     // total at the START edge
  reg [31:0] li;          // next load word
  reg [31:0] ci;          // next CSR word
  reg [31:0] ri;          // read-back step
  reg [1:0] rcnt;
  reg [1:0] why;          // end reason: {", ".join(f"{i} {r}" for i, r in enumerate(REASONS))}
  reg busy_q;
  reg ended;
  reg missing;
  integer ft = 0;
  integer ff = 0;
  reg [8*64:1] fname;
  reg [8*64:1] mfile;

{open_task}
  // The end of the run: tp_end.log gets the clock edges since go, the episodes whose
  // files are complete and the status.
{finish_task}
  // The run ended (reason why): close the trace, open the end state.
  task automatic open_final(input [31:0] e);
    begin
      $fclose(ft);
      ft = 0;
      $sformat(fname, "tp_final_%0d.log", e);
      ff = $fopen(fname, "w");
    end
  endtask

  task automatic close_final;
    begin
      $fclose(ff);
      ff = 0;
    end
  endtask

  initial begin
    // State: set here, not in declarations (the always block owns it afterwards).
    clk = 1'b0;
    rst = 1'b1;
    csr_we = 1'b0;
    csr_addr = {ca}'d0;
    csr_wdata = {cw}'d0;
    csr_raddr = {ca}'d0;
    ld_we = 1'b0;
    ld_addr = {ma}'d0;
    ld_data = {ew}'d0;
    rb_addr = {ma}'d0;
    state = S_IDLE;
    ep = 32'd0;
    cycle = 64'd0;
    total = 64'd0;
    ended = 1'b0;
    missing = 1'b0;
    busy_q = 1'b0;
{start}{clock}  end

  always @(posedge clk) begin
    if (!ended) total <= total + 64'd1;
{wopen}{wstop}case (state)
{wait}      S_RESET: begin  // rst high on two edges, then one idle edge (the per-edge reset)
        rcnt <= rcnt + 2'd1;
        if (rcnt == 2'd1) rst <= 1'b0;
        if (rcnt == 2'd2) state <= S_LOAD;
      end
      S_LOAD: begin  // one element per edge through the load port, then the first CSR word
        if (li < n_load) begin
          ld_we <= 1'b1;
          {{ld_addr, ld_data}} <= limg[li[{ab - 1}:0]];
          li <= li + 32'd1;
        end else begin
          ld_we <= 1'b0;
          ld_addr <= {ma}'d0;
          ld_data <= {ew}'d0;
          csr_we <= 1'b1;
          {{csr_addr, csr_wdata}} <= cimg[0];
          ci <= 32'd1;
          state <= S_CSR;
        end
      end
      S_CSR: begin  // one CSR word per edge; the edge that writes the last (START) ends cycle 0
        if (ci < n_csr) begin
          {{csr_addr, csr_wdata}} <= cimg[ci[{ca - 1}:0]];
          ci <= ci + 32'd1;
        end else begin
          csr_we <= 1'b0;
          cycle <= 64'd1;
          t_start <= total;
          state <= S_RUN;
        end
      end
      S_RUN: begin  // the values of cycle `cycle`, recorded at the edge that ends it
        if ({taps} || (tr_valid === 1'b1 && ({taps_v}))) $fwrite(ft, "U %0h\\n", cycle);
        if (tr_valid) $fwrite(ft, "T %0h %0h %0h %0h\\n", cycle, tr_kind, tr_addr, tr_bytes);
        if (cycle == 64'd1 || busy != busy_q) $fwrite(ft, "Y %0h %0h\\n", cycle, busy);
        busy_q <= busy;
        if (done) begin
          why <= 2'd0;
          open_final(ep);
          ri <= 32'd0;
          state <= S_READ;
        end else begin
          if (busy_at != 64'd0 && cycle == busy_at) begin  // a start while busy: the START word again
            csr_we <= 1'b1;
            {{csr_addr, csr_wdata}} <= cimg[n_csr[{ca - 1}:0] - {ca}'d1];
          end else csr_we <= 1'b0;
          if (reset_at != 64'd0 && cycle == reset_at) begin
            rst <= 1'b1;
            why <= 2'd1;
            state <= S_RSTP;
          end else if (max_cycles != 64'd0 && cycle == max_cycles) begin
            why <= 2'd2;
            open_final(ep);
            ri <= 32'd0;
            state <= S_READ;
          end else cycle <= cycle + 64'd1;
        end
      end
      S_RSTP: begin  // rst high on one edge
        rst <= 1'b0;
        csr_we <= 1'b0;
        state <= S_POST;
      end
      S_POST: begin  // one idle edge, as the per-edge BFM waits after its reset
        open_final(ep);
        ri <= 32'd0;
        state <= S_READ;
      end
      S_READ: begin  // every CSR, then the read-back elements; a value is written an edge after its address
        csr_we <= 1'b0;
        if (ri != 32'd0) begin
          if (ri <= NCSR) $fwrite(ff, "%h\\n", csr_rdata);
          else $fwrite(ff, "%h\\n", rb_data);
        end
        if (ri < NCSR) csr_raddr <= ri[{ca - 1}:0];
        else if (ri < NCSR + n_rb) rb_addr <= rimg[ri[{ab - 1}:0] - NCSR[{ab - 1}:0]];
        if (ri == NCSR + n_rb) begin
          $fwrite(ff, "R %0s %0h %0h %0h\\n", {reason_str}, cycle, t_start, total + 64'd1 - ep_t0);
          close_final;
          ep <= ep + 32'd1;
          if (why == 2'd2) begin
            state <= S_DONE;
            finish_run(3'd1, ep + 32'd1);
          end else state <= S_WAIT;
        end else ri <= ri + 32'd1;
      end
      default: ;
    endcase
  end
endmodule
"""


def emit_gemm_harness(record_path: Path | str, outdir: Path | str | None = None) -> Path:
    """Write the harness of the test top whose JSON record is ``record_path`` as
    ``<outdir>/tp_<module>.v`` (default: beside the record).

    The runner calls it for a throughput testbench whose ``harness`` option names it.

    Args:
        record_path: the ``gemm_top`` JSON record.
        outdir: the folder to write into.

    Returns:
        The harness's path.
    """
    return write_harness(record_path, outdir, gemm_harness)
