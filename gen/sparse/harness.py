"""The throughput harness of the STU's test top (``stu_top``), generated from its port record.

The per-edge testbench (:mod:`lockstep.verif.sparse.stu_env`) loads each job's data
entries and weights (or FC matrix) through the load port, drives ``cfg_*``, pulses
``start``, takes the output stream with the job's back-pressure and samples ``busy``,
``done``, the output handshake and the ``acc_we``/``acc_addr`` (and ``fifo_occ``) taps on
every clock edge from Python. The harness ``tp_stu_top`` does all of that in HDL, so a
whole stream of jobs runs at simulator speed and Python wakes once per job:

* **clock and reset** in HDL (a 10 ns clock). The first job starts with ``rst`` high for
  two edges and one idle edge (the per-edge ``start``); after that the top keeps its
  memories, its accumulator and its sticky ``err`` from job to job, as in the per-edge
  run (a CONV job's weights stay for a following FC job, ``emit = 0`` keeps the sum).
* **job files**, one set per job (an *episode*) ``e`` in the simulator's working folder:

  - ``tp_cfg_<e>.txt``: ``n_load max_cycles poke reset_at bp_seed bp_thr cfg`` (decimal,
    ``cfg`` hex). ``max_cycles`` is the watchdog in run cycles (0: none); ``poke`` (0:
    none) drives ``start`` again in run cycle ``poke`` (a start while busy);
    ``reset_at`` (0: none) drives ``rst`` high in run cycle ``reset_at`` (one edge: a
    job cut short) -- both in the cycles the per-edge driver's waits give (its
    ``ClockCycles(2)`` right after a ``ClockCycles`` ends one edge early; the
    stream-equality test holds both modes to the same cycles);
    ``bp_seed``/``bp_thr`` are the job's back-pressure generator (below); ``cfg`` is
    the concatenation of every ``cfg_*`` input in port-record order (first port in the
    top bits);
  - ``tp_load_<e>.hex`` (read with ``$readmemh``): ``n_load`` words ``{ld_sel, ld_addr,
    ld_data}`` (the record's widths), written through the load port one per clock. At
    most :func:`load_depth` per job (the data memory plus the larger of the weight and
    FC memories: the writer refuses more, naming the job).
* **the run**: the edge that writes the last load word drives ``cfg_*`` and ``start``:
  the clock period after it is *run cycle 0*; cycle ``c`` is the period after the
  ``c``-th edge from there, and its values are recorded at the edge that ends it. The
  run ends in the first cycle ``c >= 1`` with ``done`` high, or (a job with
  ``reset_at``) in cycle ``reset_at + 1`` (the per-edge driver reads the cleared state
  there), or at the watchdog.
* **back-pressure in HDL**: ``o_ready`` is high in cycle 0 and between jobs; in cycle
  ``k >= 1`` it is low when ``xs32^(k-1)(bp_seed) >> 16 < bp_thr`` (xorshift32 13/17/5,
  stepped once per cycle; ``bp_thr = round(bp * 65536)``). The per-edge sink's twin is
  :class:`lockstep.verif.sparse.stu_env.JobPauses` (option ``pauses=cycle``), so both
  modes of one seed see the identical stream.
* **a recorder** in ``tp_rec_<e>.log``, one line per event, hex fields, cycle first::

      B c busy                 busy in cycle 0 and at every change
      D c                      done high in cycle c
      O c data                 an output beat (o_valid and o_ready) in cycle c
      S c                      a stall (o_valid and not o_ready) in cycle c
      Q c data                 o_data nonzero while o_valid is low (it must be 0)
      A c we addr [occ]        acc_we, acc_addr (and fifo_occ) in a cycle where acc_we
                               (or fifo_occ) is nonzero; every other cycle reads 0
      P c busy                 the second start of a start while busy, and busy then
      U c                      a tap holds X or Z bits (Icarus)
      E reason c err busy cyc_compute cyc_drain n_rounds n_mults n_deferred nnz_out start edges

  The ``E`` line ends the file: ``reason`` is ``done``, ``reset`` or ``timeout``, ``c``
  the cycle the run ended in, then ``err``, ``busy`` and the six counters in that
  cycle, ``start`` the harness edge count at the start edge (the waves window's origin)
  and ``edges`` the clock edges of the whole episode (reset, loads and run). The
  episode counter ``ep`` then advances (the event the cocotb testbench wakes on);
  after the last episode ``tp_end.log`` gets ``edges episodes status`` (status ``ok``,
  ``timeout``, ``window`` or ``missing:<file>``) and ``ended`` rises.

Settings are registers the cocotb testbench writes (``n_jobs``; ``n_ready``: the harness
does not start episode ``e`` before ``n_ready > e``; ``go``), or plusargs for a run
without cocotb: ``+tp_jobs=N`` (all files written beforehand), ``+tp_go``,
``+tp_finish``; ``+tp_waves=<file> +tp_wstart= +tp_wstop=`` dumps harness edges
``[wstart, wstop)`` (counted from ``go``: the ``start`` of the ``E`` line plus a run
cycle) and ends the run at ``wstop`` (``+tp_dump_late`` for Verilator).

As for the other harnesses, MyHDL converts no file I/O or delays, so this is text from
the record (every width and memory size is the record's), linted like every generated
file (``verilator --lint-only -Wall --timing``, ``iverilog -g2012``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockstep.gen.harness import (
    clock_line, episode_finish_task, harness_name, open_episode_task, settings_decl, start_block, wait_states,
    waves_window, write_harness,
)
from lockstep.models.sparse.params import SparseParams

__all__ = ["COUNTERS", "REASONS", "StuPorts", "emit_stu_harness", "load_depth", "stu_harness", "stu_ports_of"]

#: End reasons of an episode (``E`` line), by the code the harness keeps.
REASONS = ("done", "reset", "timeout")
#: The STU's counter outputs, in the order of the ``E`` line.
COUNTERS = SparseParams.COUNTERS

#: Ports the harness drives or reads (besides ``cfg_*`` and the optional ``fifo_occ``).
_NEEDED = {
    "clk": "in", "rst": "in", "ld_we": "in", "ld_sel": "in", "ld_addr": "in", "ld_data": "in", "start": "in",
    "o_ready": "in", "busy": "out", "done": "out", "err": "out", "o_valid": "out", "o_data": "out",
    "acc_we": "out", "acc_addr": "out", **{c: "out" for c in COUNTERS},
}


@dataclass(frozen=True)
class StuPorts:
    """What the harness needs of ``stu_top``, read from its record.

    Attributes:
        module: the top's module name.
        widths: port name -> width, as the record gives them.
        cfg: ``(port, width)`` of every ``cfg_*`` input, in record order (the order of
            the fields of a settings file's ``cfg`` word, first in the top bits).
        fifo: the top has ``fifo_occ`` (u = 2).
        depth: load words one job may write (:func:`load_depth` of the record's
            parameters).
    """

    module: str
    widths: dict[str, int]
    cfg: tuple[tuple[str, int], ...]
    fifo: bool
    depth: int

    def w(self, port: str) -> int:
        """Width of ``port``."""
        return self.widths[port]

    @property
    def cfg_bits(self) -> int:
        """Bits of the ``cfg`` word."""
        return sum(w for _, w in self.cfg)


def load_depth(params: dict[str, Any]) -> int:
    """Load words one job may write: the data memory (``depth``) plus the larger of the
    weight memory (``kmax**2``) and the FC matrix (``nmax_out * wmax``)."""
    return int(params["depth"]) + max(int(params["kmax"]) ** 2, int(params["nmax_out"]) * int(params["wmax"]))


def stu_ports_of(record: dict[str, Any]) -> StuPorts:
    """The test top a record describes, checked.

    Raises:
        ValueError: a port the harness needs is missing or has the wrong direction, an
            input the harness does not know, a 1-bit control that is wider, or no
            ``depth``/``kmax``/``nmax_out``/``wmax`` parameters (naming them).
    """
    name = record.get("module", "?")
    ports = record.get("ports", {})
    for port, d in _NEEDED.items():
        if port not in ports or ports[port]["dir"] != d:
            raise ValueError(f"{name}: the STU harness needs an {d}put port {port!r} (a stu_top record)")
    widths = {n: int(s["width"]) for n, s in ports.items()}
    cfg = tuple((n, widths[n]) for n, s in ports.items() if n.startswith("cfg_") and s["dir"] == "in")
    unknown = [n for n, s in ports.items() if s["dir"] == "in" and n not in _NEEDED and not n.startswith("cfg_")]
    if unknown:
        raise ValueError(f"{name}: inputs the STU harness does not drive: {unknown}")
    if not cfg:
        raise ValueError(f"{name}: no cfg_* inputs (a stu_top record)")
    bad = [f"{n} is [{widths[n]}], not 1" for n in ("clk", "rst", "ld_we", "start", "o_ready", "busy", "done",
                                                    "o_valid") if widths[n] != 1]
    if "fifo_occ" in ports and ports["fifo_occ"]["dir"] != "out":
        bad.append("fifo_occ is not an output")
    if bad:
        raise ValueError(f"{name}: the record's ports disagree: " + "; ".join(bad))
    try:
        depth = load_depth(record["params"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{name}: the record has no depth/kmax/nmax_out/wmax parameters") from exc
    return StuPorts(name, widths, cfg, "fifo_occ" in ports, depth)


def _bits(n: int) -> int:
    """Bits of an index into ``n`` entries."""
    return max(1, (n - 1).bit_length())


def stu_harness(record: dict[str, Any]) -> str:
    """The harness Verilog of the test top ``record`` describes (see the module docstring)."""
    sp = stu_ports_of(record)
    mod = sp.module
    top = harness_name(mod)
    sw, ab, db = sp.w("ld_sel"), sp.w("ld_addr"), sp.w("ld_data")
    lw = sw + ab + db
    cb = sp.cfg_bits
    ib = _bits(sp.depth)
    ins = {n for n, s in record["ports"].items() if s["dir"] == "in"}
    conns = ",\n".join(f"    .{n}({n})" for n in record["ports"])
    decl_out = "\n".join(f"  wire [{w - 1}:0] {n};" for n, w in sp.widths.items() if n not in ins)
    decl_cfg = "\n".join(f"  reg [{w - 1}:0] {n};" for n, w in sp.cfg)
    init_cfg = "".join(f"    {n} = {w}'d0;\n" for n, w in sp.cfg)
    cfg_cat = "{" + ", ".join(n for n, _ in sp.cfg) + "}"
    fifo = sp.fifo
    taps = " || ".join(f"$isunknown({n})" for n in ("busy", "done", "o_valid", "acc_we", "acc_addr",
                                                      *(("fifo_occ",) if fifo else ())))
    tap_on = "acc_we != 0" + (" || fifo_occ != 0" if fifo else "")
    tap_fmt = "A %0h %0h %0h" + (" %0h" if fifo else "")
    tap_args = "cycle, acc_we, acc_addr" + (", fifo_occ" if fifo else "")
    cnt_fmt = " ".join(["%0h"] * len(COUNTERS))
    cnt_args = ", ".join(COUNTERS)
    reason_str = " : ".join(f"why == 2'd{i} ? \"{r}\"" for i, r in enumerate(REASONS[:-1])) + f" : \"{REASONS[-1]}\""
    start = start_block(top, '    if ($value$plusargs("tp_jobs=%d", n_jobs)) n_ready = n_jobs;\n')
    clock = clock_line()
    settings_regs = settings_decl("  reg [31:0] n_jobs;   // jobs (episodes) in the run\n"
                                  "  reg [31:0] n_ready;  // jobs whose files are written\n")
    open_task = open_episode_task(
        "settings, the load image, the record",
        ("%d %d %d %d %d %d %h", "n_load, max_cycles, poke, reset_at, bp_seed, bp_thr, cfgw", "n_load > DEPTH"),
        [("load", "limg", "n_load")], [("rec", "fr")])
    finish_task = episode_finish_task("ended", "      if (fr != 0) $fclose(fr);\n      fr = 0;\n")
    wait = wait_states("n_jobs", "          ep_t0 <= total;\n          li <= 32'd0;\n",
                       "if (ep == 32'd0) begin\n"
                       "            rst <= 1'b1;\n"
                       "            rcnt <= 2'd0;\n"
                       "            state <= S_RESET;\n"
                       "          end else state <= S_LOAD;")
    wopen, wstop = waves_window(top, "ended")
    return f"""\
// Generated by lockstep.gen.sparse.harness from the record of {mod}: do not edit.
// Throughput harness: HDL clock and reset, job files loaded through the load port, cfg and
// start, HDL back-pressure, every beat and tap event recorded with its cycle, the end state.
`timescale 1ns/1ps
module {top};
  localparam integer DEPTH = {sp.depth};   // load words per job
  localparam [2:0] S_IDLE = 3'd0, S_WAIT = 3'd1, S_RESET = 3'd2, S_LOAD = 3'd3, S_RUN = 3'd4, S_DONE = 3'd5;

  reg clk;
  reg rst;
{settings_regs}
  reg ld_we;
  reg [{sw - 1}:0] ld_sel;
  reg [{ab - 1}:0] ld_addr;
  reg [{db - 1}:0] ld_data;
  reg start;
  reg o_ready;
{decl_cfg}
{decl_out}

  {mod} dut (
{conns}
  );

  reg [{lw - 1}:0] limg [0:DEPTH-1];   // {{ld_sel, ld_addr, ld_data}}
  reg [{cb - 1}:0] cfgw;               // the job's cfg_* values
  reg [2:0] state;
  reg [31:0] ep;          // episode: the job being run (the testbench's event)
  reg [31:0] n_load;
  reg [31:0] li;          // next load word
  reg [63:0] max_cycles;  // the watchdog, 0 = none
  reg [63:0] poke;        // a second start in this run cycle, 0 = none
  reg [63:0] reset_at;    // rst in this run cycle, 0 = none
  reg [31:0] bp_seed;     // the job's back-pressure generator
  reg [16:0] bp_thr;
  reg [31:0] bp_s;
  reg [63:0] cycle;       // run cycle (cycle 0 follows the start edge)
  reg [63:0] total;       // clock edges since go
  reg [63:0] ep_t0;       // total when the episode started
  reg [63:0] t_start;     // total at the start edge
  reg [1:0] rcnt;
  reg busy_q;
  reg ended;
  reg missing;
  integer fr = 0;
  reg [8*64:1] fname;
  reg [8*64:1] mfile;

  function automatic [31:0] xs32(input [31:0] x);
    reg [31:0] y;
    begin
      y = x ^ (x << 13);
      y = y ^ (y >> 17);
      xs32 = y ^ (y << 5);
    end
  endfunction

{open_task}
  // The end of the run: tp_end.log gets the clock edges since go, the episodes whose
  // records are complete and the status.
{finish_task}
  // The end of a job's run, reason why ({", ".join(f"{i} {r}" for i, r in enumerate(REASONS))}): the E line, the record closed.
  task automatic end_job(input [1:0] why);
    begin
      $fwrite(fr, "E %0s %0h %0h %0h {cnt_fmt} %0h %0h\\n", {reason_str}, cycle, err, busy, {cnt_args},
              t_start, total + 64'd1 - ep_t0);
      $fclose(fr);
      fr = 0;
    end
  endtask

  initial begin
    // State: set here, not in declarations (the always block owns it afterwards).
    clk = 1'b0;
    rst = 1'b1;
    ld_we = 1'b0;
    ld_sel = {sw}'d0;
    ld_addr = {ab}'d0;
    ld_data = {db}'d0;
    start = 1'b0;
    o_ready = 1'b1;
{init_cfg}    state = S_IDLE;
    ep = 32'd0;
    cycle = 64'd0;
    total = 64'd0;
    ended = 1'b0;
    missing = 1'b0;
    busy_q = 1'b0;
    bp_s = 32'd1;
{start}{clock}  end

  always @(posedge clk) begin
    if (!ended) total <= total + 64'd1;
{wopen}{wstop}case (state)
{wait}      S_RESET: begin  // rst high on two edges, then one idle edge (the per-edge start)
        rcnt <= rcnt + 2'd1;
        if (rcnt == 2'd1) rst <= 1'b0;
        if (rcnt == 2'd2) state <= S_LOAD;
      end
      S_LOAD: begin  // one word per edge through the load port; then cfg and start (cycle 0)
        if (li < n_load) begin
          ld_we <= 1'b1;
          {{ld_sel, ld_addr, ld_data}} <= limg[li[{ib - 1}:0]];
          li <= li + 32'd1;
        end else begin
          ld_we <= 1'b0;
          ld_sel <= {sw}'d0;
          ld_addr <= {ab}'d0;
          ld_data <= {db}'d0;
          {cfg_cat} <= cfgw;
          start <= 1'b1;
          o_ready <= 1'b1;
          bp_s <= bp_seed;
          cycle <= 64'd0;
          t_start <= total;
          state <= S_RUN;
        end
      end
      S_RUN: begin  // the values of cycle `cycle`, recorded at the edge that ends it
        if ({taps} || $isunknown(o_data)) $fwrite(fr, "U %0h\\n", cycle);
        if (cycle == 64'd0 || busy != busy_q) $fwrite(fr, "B %0h %0h\\n", cycle, busy);
        busy_q <= busy;
        if (done) $fwrite(fr, "D %0h\\n", cycle);
        if (o_valid && o_ready) $fwrite(fr, "O %0h %0h\\n", cycle, o_data);
        else if (o_valid) $fwrite(fr, "S %0h\\n", cycle);
        else if (o_data != 0) $fwrite(fr, "Q %0h %0h\\n", cycle, o_data);
        if ({tap_on}) $fwrite(fr, "{tap_fmt}\\n", {tap_args});
        if (poke != 64'd0 && cycle == poke) $fwrite(fr, "P %0h %0h\\n", cycle, busy);
        // the next cycle's inputs: back-pressure, a start while busy, a reset in the job
        o_ready <= !({{1'b0, bp_s[31:16]}} < bp_thr);
        bp_s <= xs32(bp_s);
        start <= poke != 64'd0 && cycle + 64'd1 == poke;
        rst <= reset_at != 64'd0 && cycle + 64'd1 == reset_at;
        if (reset_at != 64'd0 ? cycle == reset_at + 64'd1 : (done && cycle != 64'd0)) begin
          end_job(reset_at != 64'd0 ? 2'd1 : 2'd0);
          o_ready <= 1'b1;
          start <= 1'b0;
          rst <= 1'b0;
          ep <= ep + 32'd1;
          state <= S_WAIT;
        end else if (max_cycles != 64'd0 && cycle == max_cycles) begin
          end_job(2'd2);
          o_ready <= 1'b1;
          start <= 1'b0;
          rst <= 1'b0;
          ep <= ep + 32'd1;
          state <= S_DONE;
          finish_run(3'd1, ep + 32'd1);
        end else cycle <= cycle + 64'd1;
      end
      default: ;
    endcase
  end
endmodule
"""


def emit_stu_harness(record_path: Path | str, outdir: Path | str | None = None) -> Path:
    """Write the harness of the STU test top whose JSON record is ``record_path`` as
    ``<outdir>/tp_<module>.v`` (default: beside the record).

    The runner calls it for a throughput testbench whose ``harness`` option names it.

    Args:
        record_path: the ``stu_top`` JSON record.
        outdir: the folder to write into.

    Returns:
        The harness's path.
    """
    return write_harness(record_path, outdir, stu_harness)
