"""The throughput harness of the host family's test top ``host_top``, generated from its
port record.

The per-edge testbench (:mod:`lockstep.verif.host.top_env`) resets ``host_top``, writes
the test-port registers and the CSRs, loads the device memory through the DMA port,
submits the scenario's descriptors (waiting while the SQ is full), consumes the CQ on the
``cq_nonempty`` pin, then reads the counters and the whole memory back -- from Python, on
clock edges. The harness ``tp_host_top`` does all of that in HDL, so a long stream of
tasks runs at simulator speed and Python wakes once per *episode* (one scenario run: a
batch of tasks on a freshly reset top):

* **clock and reset** in HDL (a 10 ns clock). Every episode starts with ``rst`` high for
  two edges and one idle edge (the per-edge ``start``).
* **episode files**, one set per episode ``e`` in the simulator's working folder:

  - ``tp_cfg_<e>.txt``: ``n_mem n_ops max_cycles`` (decimal): the words of the memory
    image, the words of the script, the episode's watchdog in harness edges (0: none);
  - ``tp_mem_<e>.hex``: ``n_mem`` 32-bit words (``$readmemh``), the device memory from
    word 0, written through the DMA port (one word per edge) by the script's ``LOAD``;
  - ``tp_ops_<e>.hex``: the *CSR script*, ``n_ops`` words ``{op[3:0], addr, data[31:0]}``
    (``addr`` has the ``csr_addr`` width; the test port takes its low bits), played in
    order. ``op`` is one of :data:`OPS`:

    ====== ===============================================================================
    END    the episode's end (the last op)
    WR     write CSR ``addr`` with ``data`` (one edge)
    TPW    write test-port register ``addr`` with ``data`` (one edge)
    RD     read CSR ``addr``, recorded as an ``R`` line
    TPR    read test-port register ``addr``, recorded as a ``P`` line
    GAP    ``data`` idle edges
    LOAD   the memory image through the DMA port, word ``i`` to word address ``i``
    SUBMIT a batch of ``data`` descriptors (1 .. depth): the next ``8 * data`` words are
           ``DESC`` ops holding their words. The harness reads SQ_HEAD; when the SQ has room
           for the whole batch it writes the words into the slots from its SQ_TAIL and rings
           the doorbell (SQ_TAIL) once, recorded as a ``D`` line; otherwise it waits (for
           ``sq_full`` to fall when it is high, else ``4 * depth`` edges) and tries again
    STOP   stop consuming completions (and read PERF_CQ_STALL)
    RESUME poll STATUS and PERF_CQ_STALL every 32 edges (at most 400 times) until the CQ is
           full (STATUS bit 3) and a completion waited (PERF_CQ_STALL moved since the STOP:
           a counter back at its value counts on while the completion waits, so a later
           poll sees it; the value at the STOP, not 0, since an earlier STOP counted too),
           recorded as an ``F`` line (``N`` when it never happened); then consume again
    WAIT   poll CSR ``addr`` every 16 edges until bit ``data[4:0]`` equals ``data[8]``, at
           most ``data[31:16]`` times (``N`` when it never did)
    DRAIN  wait until ``data`` completions have been consumed
    DUMP   read the whole memory image back through the DMA port (``dma_re`` high)
    ====== ===============================================================================

  At most ``OPS_DEPTH`` script words (a generator argument) and ``mem_words`` image words
  per episode: the writer refuses more, naming the episode.
* **a CQ consumer** in HDL, as the per-edge :class:`~lockstep.verif.host.top_env.CqMonitor`
  on the pin: whenever consuming is on, ``cq_nonempty`` is high and the script is between
  ops or waiting (GAP, room for a batch, a poll, DRAIN; never inside a batch's writes or a
  load), it reads CQ_TAIL, every entry from its CQ_HEAD (two words each) and writes CQ_HEAD
  once past them.
* **a recorder** in ``tp_trace_<e>.log``, one line per event, hex fields, the first the
  harness edge count since ``go`` (the cycle stamp ``WINDOW=`` takes)::

      C c w0 w1         a CQ entry consumed (its two words)
      R c addr value    a CSR read of the script
      P c addr value    a test-port read of the script
      D c occ k waits   a doorbell for k descriptors; occ the most SQ occupancy read while
                        waiting for room, waits the times it found no room
      F c               the host saw the CQ full (a RESUME's condition, or the consumer
                        reading CQ_TAIL - CQ_HEAD = depth)
      N c op            a RESUME or WAIT gave up
      U c               a status pin (cq_nonempty, sq_full, irq, busy, k_busy) holds X or Z
      B c k n           kernel k's busy pin ``k_busy[k]`` fell after n busy edges (the
                        task's whole exec cycles; its completion reads them modulo
                        ``2**cnt_bits``)
* **the end state** in ``tp_final_<e>.log``: the ``DUMP``'s words (``%h``, one per line),
  then ``E reason edges t0 sq_tail cq_head`` (reason ``ok``, ``timeout`` or ``badop``;
  ``edges`` the clock edges of the whole episode; ``t0`` the edge count at its start;
  the harness's own SQ_TAIL and CQ_HEAD copies). On the watchdog the episode ends where
  it is (its final file holds what was dumped so far, if anything, and the ``E`` line) and
  so does the run (``tp_end.log``: ``timeout``). The episode counter ``ep`` then advances (the
  testbench's event).

Settings are registers the cocotb testbench writes (``n_eps``, ``n_ready``: episodes
whose files are written, so it can write them as the run goes; ``go``), or plusargs for
a run without cocotb: ``+tp_eps=N`` (all files written beforehand), ``+tp_go``,
``+tp_finish``; ``+tp_waves=<file> +tp_wstart= +tp_wstop=`` dumps harness edges
``[wstart, wstop)`` and ends the run at ``wstop`` (``+tp_dump_late`` for Verilator, which
ignores ``$dumpoff``). ``tp_end.log`` is :func:`lockstep.gen.harness.episode_finish_task`'s.

Memory back-pressure and latency are the top's own (its LFSR, seeded through the test
port by the script, as the per-edge testbench seeds it). The errors scenario (mid-run
CSR pokes whose values depend on pointers read at run time, an IRQ-driven consumer) is
per-edge only.

As for the other harnesses, MyHDL converts no file I/O or delays, so this is text from
the record (every width and the SQ depth are the record's), linted like every generated
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
from lockstep.models.host import CQ_BASE, CSR, SQ_BASE

__all__ = ["OPS", "OPS_DEPTH", "REASONS", "HostPorts", "host_ports_of", "host_harness", "emit_host_harness"]

#: Script op codes (``tp_ops_<e>.hex``, see the module docstring).
OPS = {"END": 0, "WR": 1, "TPW": 2, "RD": 3, "TPR": 4, "GAP": 5, "LOAD": 6, "SUBMIT": 7, "DESC": 8, "STOP": 9,
       "RESUME": 10, "WAIT": 11, "DRAIN": 12, "DUMP": 13}
#: Script words one episode may hold (the default of :func:`host_harness`).
OPS_DEPTH = 4096
#: End reasons of an episode (``E`` line), by the code the harness keeps.
REASONS = ("ok", "timeout", "badop")

#: Ports the harness drives or reads, with their direction.
_NEEDED = {
    "clk": "in", "rst": "in", "csr_we": "in", "csr_addr": "in", "csr_wdata": "in", "csr_raddr": "in",
    "csr_rdata": "out", "k_busy": "out", "irq": "out", "busy": "out", "cq_nonempty": "out", "sq_full": "out",
    "dma_we": "in", "dma_addr": "in", "dma_wdata": "in", "dma_re": "in", "dma_raddr": "in", "dma_rdata": "out",
    "tp_we": "in", "tp_addr": "in", "tp_wdata": "in", "tp_raddr": "in", "tp_rdata": "out",
}


@dataclass(frozen=True)
class HostPorts:
    """What the harness needs of ``host_top``, read from its record.

    Attributes:
        module: the top's module name.
        widths: port name -> width, as the record gives them.
        depth: SQ and CQ slots (the record's ``params.depth``).
        mem_words: 32-bit words of the device memory (``2 ** dma_addr`` width).
    """

    module: str
    widths: dict[str, int]
    depth: int
    mem_words: int

    def w(self, port: str) -> int:
        """Width of ``port``."""
        return self.widths[port]

    @property
    def op_bits(self) -> int:
        """Bits of one script word: ``4 + csr_addr + 32``."""
        return 4 + self.w("csr_addr") + 32


def host_ports_of(record: dict[str, Any]) -> HostPorts:
    """The test top a record describes, checked.

    Raises:
        ValueError: a port the harness needs is missing or has the wrong direction, the
            record has no ``params.depth``, or ports disagree in width (naming them).
    """
    name = record.get("module", "?")
    ports = record.get("ports", {})
    for port, d in _NEEDED.items():
        if port not in ports or ports[port]["dir"] != d:
            raise ValueError(f"{name}: the host harness needs an {d}put port {port!r} (a host_top record)")
    try:
        depth = int(record["params"]["depth"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{name}: the record has no params.depth") from exc
    widths = {n: int(s["width"]) for n, s in ports.items()}
    bad = [f"{a} [{widths[a]}] vs {b} [{widths[b]}]" for a, b in
           (("dma_addr", "dma_raddr"), ("csr_addr", "csr_raddr"), ("tp_addr", "tp_raddr"))
           if widths[a] != widths[b]]
    bad += [f"{n} is [{widths[n]}], not 32" for n in ("csr_wdata", "csr_rdata", "dma_wdata", "dma_rdata", "tp_wdata",
                                                       "tp_rdata") if widths[n] != 32]
    bad += [f"{n} is [{widths[n]}], not 1" for n in ("clk", "rst", "csr_we", "dma_we", "dma_re", "tp_we", "irq", "busy",
                                                      "cq_nonempty", "sq_full") if widths[n] != 1]
    if depth < 2 or depth & (depth - 1):
        bad.append(f"depth {depth} is not a power of two >= 2")
    if widths["tp_addr"] > widths["csr_addr"]:
        bad.append(f"tp_addr [{widths['tp_addr']}] is wider than csr_addr [{widths['csr_addr']}]")
    if (1 << widths["csr_addr"]) <= max(CQ_BASE + 8 * depth, SQ_BASE + 32 * depth, max(CSR.values())):
        bad.append(f"csr_addr [{widths['csr_addr']}] cannot address the SQ and CQ windows of depth {depth}")
    if bad:
        raise ValueError(f"{name}: the record's ports disagree: " + "; ".join(bad))
    return HostPorts(name, widths, depth, 1 << widths["dma_addr"])


def _bits(n: int) -> int:
    """Bits of an index into ``n`` entries."""
    return max(1, (n - 1).bit_length())


def host_harness(record: dict[str, Any], ops_depth: int = OPS_DEPTH) -> str:
    """The harness Verilog of the test top ``record`` describes (see the module docstring).

    Args:
        record: the ``host_top`` JSON record.
        ops_depth: script words an episode may hold (a power of two).

    Raises:
        ValueError: the record is not a ``host_top``'s (:func:`host_ports_of`), or
            ``ops_depth`` is not a power of two >= 16.
    """
    if ops_depth < 16 or ops_depth & (ops_depth - 1):
        raise ValueError(f"ops_depth {ops_depth}: must be a power of two >= 16")
    hp = host_ports_of(record)
    mod = hp.module
    top = harness_name(mod)
    ca, ma, ta = hp.w("csr_addr"), hp.w("dma_addr"), hp.w("tp_addr")
    depth = hp.depth
    pb = depth.bit_length()          # pointer bits: index and wrap
    ow = hp.op_bits
    ob = _bits(ops_depth)
    nw = hp.mem_words
    conns = ",\n".join(f"    .{n}({n})" for n in record["ports"])
    ins = {n for n, s in record["ports"].items() if s["dir"] == "in"}
    decl_out = "\n".join(f"  wire [{w - 1}:0] {n};" for n, w in hp.widths.items() if n not in ins)
    reason_str = " : ".join(f"why == 2'd{i} ? \"{r}\"" for i, r in enumerate(REASONS[:-1])) + f" : \"{REASONS[-1]}\""
    start = start_block(top, '    if ($value$plusargs("tp_eps=%d", n_eps)) n_ready = n_eps;\n')
    clock = clock_line()
    settings_regs = settings_decl("  reg [31:0] n_eps;    // episodes in the run\n"
                                  "  reg [31:0] n_ready;  // episodes whose files are written\n")
    open_task = open_episode_task(
        "settings, image, script, the records",
        ("%d %d %d", "n_mem, n_ops, max_cycles", "n_ops == 32'd0 || n_ops > OPSD || n_mem > NW"),
        [("mem", "mimg", "n_mem"), ("ops", "ops", "n_ops")], [("trace", "ft"), ("final", "ff")])
    finish_task = episode_finish_task("ended", "".join(
        f"      {ln}\n" for ln in ("if (ft != 0) $fclose(ft);", "if (ff != 0) $fclose(ff);", "ft = 0;", "ff = 0;")))
    op = {k: f"4'd{v}" for k, v in OPS.items()}
    csr = {k: f"{ca}'h{v:x}" for k, v in CSR.items()}
    p2 = f"{pb}'d"
    dmask = f"{pb}'d{2 * depth - 1}"
    taps = "$isunknown(cq_nonempty) || $isunknown(sq_full) || $isunknown(irq) || $isunknown(busy) || $isunknown(k_busy)"
    nkb = hp.w("k_busy")
    brun_decl = "".join(f"  reg [31:0] brun{k};          // kernel {k}'s busy edges so far (a B line when it falls)\n"
                        for k in range(nkb))
    brun_init = "".join(f"    brun{k} = 32'd0;\n" for k in range(nkb))
    brun_step = "".join(
        f"    if (rst || !running) brun{k} <= 32'd0;\n"
        f"    else if (k_busy[{k}] === 1'b1) brun{k} <= brun{k} + 32'd1;\n"
        f"    else if (brun{k} != 32'd0) begin\n"
        f"      $fwrite(ft, \"B %0h %0h %0h\\n\", total, {k}, brun{k});\n"
        f"      brun{k} <= 32'd0;\n"
        f"    end\n" for k in range(nkb))
    # the state codes
    names = ["IDLE", "WAIT", "RESET", "FETCH", "RD", "GAP", "LOAD", "SUBH", "SUBW", "ROOMW", "POLL", "POLL2",
             "POLLW", "WB", "WBW", "DRAIN", "C0", "C1", "C2", "CEND", "DUMP", "END", "DONE", "STOP"]
    sb = _bits(len(names))
    states = ", ".join(f"S_{n} = {sb}'d{i}" for i, n in enumerate(names))
    # may the consumer take the port in this state (a wait, or between ops)?
    wait = wait_states("n_eps", "          ep_t0 <= total;\n",
                       "begin\n" + "".join(f"            {a} <= {v};\n" for a, v in (
                           ("rst", "1'b1"), ("rcnt", "2'd0"), ("pc", "32'd0"), ("sq_tail", f"{p2}0"),
                           ("cq_head", f"{p2}0"), ("n_cons", "32'd0"), ("cons_on", "1'b1"), ("why", "2'd0"),
                           ("ux", "1'b0"), ("running", "1'b1"), ("state", "S_RESET")))
                       + "          end")
    wopen, wstop = waves_window(top, "ended")
    return f"""\
// Generated by lockstep.gen.host.harness from the record of {mod}: do not edit.
// Throughput harness: HDL clock and reset, episode files (memory image, CSR script),
// the descriptors submitted and the CQ consumed in HDL, every event recorded with its
// cycle, the registers and the whole memory read back (see the generator).
`timescale 1ns/1ps
module {top};
  localparam integer NW = {nw};        // memory image words
  localparam integer OPSD = {ops_depth};     // script words per episode
  localparam [{sb - 1}:0] {states};

  reg clk;
  reg rst;
{settings_regs}
  reg csr_we;
  reg [{ca - 1}:0] csr_addr;
  reg [31:0] csr_wdata;
  reg [{ca - 1}:0] csr_raddr;
  reg dma_we;
  reg [{ma - 1}:0] dma_addr;
  reg [31:0] dma_wdata;
  reg dma_re;
  reg [{ma - 1}:0] dma_raddr;
  reg tp_we;
  reg [{ta - 1}:0] tp_addr;
  reg [31:0] tp_wdata;
  reg [{ta - 1}:0] tp_raddr;
{decl_out}

  {mod} dut (
{conns}
  );

  reg [31:0] mimg [0:NW-1];          // the memory image
  reg [{ow - 1}:0] ops [0:OPSD-1];    // the script: {{op, addr, data}}
  reg [{sb - 1}:0] state;
  reg [{sb - 1}:0] ret;            // where the consumer returns
  reg [31:0] ep;            // episode: the one being run (the testbench's event)
  reg [31:0] n_mem;
  reg [31:0] n_ops;
  reg [63:0] max_cycles;    // the episode's watchdog, 0 = none
  reg [63:0] total;         // clock edges since go
  reg [63:0] ep_t0;         // total when the episode started
  reg [31:0] pc;            // next script word
  reg [31:0] sub_pc;        // the SUBMIT being played
  reg [31:0] wi;            // next descriptor word of the batch
  reg [31:0] li;            // next image word (LOAD, DUMP)
  reg [31:0] wait_n;        // edges left to wait
  reg [31:0] npoll;         // polls done
  reg [31:0] waits;         // times a batch found no room
  reg [31:0] n_cons;        // completions consumed
  reg [{pb - 1}:0] sq_tail;       // the harness's SQ_TAIL
  reg [{pb - 1}:0] cq_head;       // the harness's CQ_HEAD
  reg [{pb - 1}:0] ctail;         // CQ_TAIL as the consumer read it
  reg [{pb}:0] occ_max;       // most SQ occupancy read while waiting for room
  reg [31:0] w0;
  reg [{ca + 31}:0] arg;     // the script word being played (addr, data)
  reg [1:0] rcnt;
  reg [1:0] why;            // end reason: {", ".join(f"{i} {r}" for i, r in enumerate(REASONS))}
  reg rd_tp;                // the pending script read is the test port's
  reg room_pin;             // waiting for room on the sq_full pin
  reg st_full;              // STATUS bit 3 of a RESUME poll
  reg [31:0] stall0;        // PERF_CQ_STALL read at the STOP
  reg cons_on;              // consuming completions
  reg running;
  reg ux;                   // a U line written this episode
{brun_decl}  reg ended;
  reg missing;
  integer ft = 0;
  integer ff = 0;
  reg [8*64:1] fname;
  reg [8*64:1] mfile;

  wire [{ow - 1}:0] cur = ops[pc[{ob - 1}:0]];
  wire [3:0] cur_op = cur[{ow - 1}:{ow - 4}];
  wire [{ca - 1}:0] cur_addr = cur[{ca + 31}:32];
  wire [31:0] cur_data = cur[31:0];
  wire [31:0] dword = ops[sub_pc[{ob - 1}:0] + {ob}'d1 + wi[{ob - 1}:0]][31:0];
  wire [31:0] nbatch = arg[31:0];
  wire [{pb - 1}:0] head_rd = csr_rdata[{pb - 1}:0];
  wire [{pb}:0] occ_rd = {{1'b0, (sq_tail - head_rd) & {dmask}}};
  wire [{pb - 1}:0] wslot = sq_tail + wi[{pb + 2}:3];
  wire [{pb - 1}:0] cq_next = cq_head + {p2}1;
  wire cons_want = cons_on && cq_nonempty === 1'b1;
  wire timed_out = running && max_cycles != 64'd0 && total - ep_t0 >= max_cycles;

{open_task}
  // The episode's records are complete.
  task automatic close_records;
    begin
      $fclose(ft);
      $fclose(ff);
      ft = 0;
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
    csr_we = 1'b0;
    csr_addr = {ca}'d0;
    csr_wdata = 32'd0;
    csr_raddr = {ca}'d0;
    dma_we = 1'b0;
    dma_addr = {ma}'d0;
    dma_wdata = 32'd0;
    dma_re = 1'b0;
    dma_raddr = {ma}'d0;
    tp_we = 1'b0;
    tp_addr = {ta}'d0;
    tp_wdata = 32'd0;
    tp_raddr = {ta}'d0;
    state = S_IDLE;
    ret = S_FETCH;
    ep = 32'd0;
    total = 64'd0;
    ep_t0 = 64'd0;
    running = 1'b0;
    cons_on = 1'b1;
    ended = 1'b0;
    missing = 1'b0;
    ux = 1'b0;
    why = 2'd0;
{brun_init}{start}{clock}  end

  always @(posedge clk) begin
    if (!ended) total <= total + 64'd1;
    csr_we <= 1'b0;
    dma_we <= 1'b0;
    dma_re <= 1'b0;
    tp_we <= 1'b0;
{wopen}    if (running && !rst && !ux && ({taps})) begin
      $fwrite(ft, "U %0h\\n", total);
      ux <= 1'b1;
    end
{brun_step}{wstop}if (timed_out && state != S_END) begin  // the watchdog: end the episode and the run
      why <= 2'd1;
      running <= 1'b0;
      state <= S_END;
    end else case (state)
{wait}      S_RESET: begin  // rst high on two edges, then one idle edge (the per-edge start)
        rcnt <= rcnt + 2'd1;
        if (rcnt == 2'd1) rst <= 1'b0;
        if (rcnt == 2'd2) state <= S_FETCH;
      end
      S_FETCH: begin  // one script op per edge; the consumer first when it has work
        if (cons_want) begin
          ret <= S_FETCH;
          csr_raddr <= {csr["CQ_TAIL"]};
          state <= S_C0;
        end else begin
          pc <= pc + 32'd1;
          arg <= cur[{ca + 31}:0];
          case (cur_op)
            {op["END"]}: state <= S_END;
            {op["WR"]}: begin
              csr_we <= 1'b1;
              csr_addr <= cur_addr;
              csr_wdata <= cur_data;
            end
            {op["TPW"]}: begin
              tp_we <= 1'b1;
              tp_addr <= cur_addr[{ta - 1}:0];
              tp_wdata <= cur_data;
            end
            {op["RD"]}: begin
              csr_raddr <= cur_addr;
              rd_tp <= 1'b0;
              state <= S_RD;
            end
            {op["TPR"]}: begin
              tp_raddr <= cur_addr[{ta - 1}:0];
              rd_tp <= 1'b1;
              state <= S_RD;
            end
            {op["GAP"]}: if (cur_data != 32'd0) begin
              wait_n <= cur_data;
              state <= S_GAP;
            end
            {op["LOAD"]}: begin
              li <= 32'd0;
              state <= S_LOAD;
            end
            {op["SUBMIT"]}: if (cur_data == 32'd0 || cur_data > 32'd{depth}) begin
              why <= 2'd2;  // a batch of 1 .. depth descriptors
              state <= S_END;
            end else begin
              sub_pc <= pc;
              occ_max <= {pb + 1}'d0;
              waits <= 32'd0;
              csr_raddr <= {csr["SQ_HEAD"]};
              state <= S_SUBH;
            end
            {op["STOP"]}: begin
              cons_on <= 1'b0;
              csr_raddr <= {csr["PERF_CQ_STALL"]};
              state <= S_STOP;
            end
            {op["RESUME"]}: begin
              npoll <= 32'd0;
              csr_raddr <= {csr["STATUS"]};
              state <= S_POLL;
            end
            {op["WAIT"]}: begin
              npoll <= 32'd0;
              csr_raddr <= cur_addr;
              state <= S_WB;
            end
            {op["DRAIN"]}: state <= S_DRAIN;
            {op["DUMP"]}: begin
              li <= 32'd0;
              state <= S_DUMP;
            end
            default: begin  // DESC outside a batch, or an unknown op
              why <= 2'd2;
              state <= S_END;
            end
          endcase
        end
      end
      S_RD: begin  // the value of the read issued on the edge before
        if (rd_tp) $fwrite(ft, "P %0h %0h %h\\n", total, tp_raddr, tp_rdata);
        else $fwrite(ft, "R %0h %0h %h\\n", total, csr_raddr, csr_rdata);
        state <= S_FETCH;
      end
      S_GAP: begin
        if (cons_want) begin
          ret <= S_GAP;
          csr_raddr <= {csr["CQ_TAIL"]};
          state <= S_C0;
        end else if (wait_n <= 32'd1) state <= S_FETCH;
        else wait_n <= wait_n - 32'd1;
      end
      S_LOAD: begin  // one word per edge through the DMA port
        if (li < n_mem) begin
          dma_we <= 1'b1;
          dma_addr <= li[{ma - 1}:0];
          dma_wdata <= mimg[li[{ma - 1}:0]];
          li <= li + 32'd1;
        end else state <= S_FETCH;
      end
      S_SUBH: begin  // SQ_HEAD read: room for the whole batch?
        if (occ_rd > occ_max) occ_max <= occ_rd;
        if (occ_rd + nbatch[{pb}:0] <= {pb + 1}'d{depth}) begin
          wi <= 32'd0;
          state <= S_SUBW;
        end else begin
          waits <= waits + 32'd1;
          room_pin <= sq_full;
          wait_n <= 32'd{4 * depth};
          state <= S_ROOMW;
        end
      end
      S_ROOMW: begin  // no room: sleep on sq_full, or a while; the consumer may run
        if (cons_want) begin
          ret <= S_ROOMW;
          csr_raddr <= {csr["CQ_TAIL"]};
          state <= S_C0;
        end else if (room_pin ? !sq_full : wait_n <= 32'd1) begin
          csr_raddr <= {csr["SQ_HEAD"]};
          state <= S_SUBH;
        end else if (!room_pin) wait_n <= wait_n - 32'd1;
      end
      S_SUBW: begin  // the batch's words, one per edge, then the doorbell
        csr_we <= 1'b1;
        if (wi < {{nbatch[28:0], 3'd0}}) begin
          csr_addr <= {ca}'h{SQ_BASE:x} + {{{ca - pb - 5}'d0, wslot & {p2}{depth - 1}, 5'd0}} + {{{ca - 5}'d0, wi[2:0], 2'd0}};
          csr_wdata <= dword;
          wi <= wi + 32'd1;
        end else begin
          csr_addr <= {csr["SQ_TAIL"]};
          csr_wdata <= {{{32 - pb}'d0, (sq_tail + nbatch[{pb - 1}:0]) & {dmask}}};
          sq_tail <= (sq_tail + nbatch[{pb - 1}:0]) & {dmask};
          $fwrite(ft, "D %0h %0h %0h %0h\\n", total, occ_max, nbatch, waits);
          pc <= sub_pc + 32'd1 + {{nbatch[28:0], 3'd0}};
          state <= S_FETCH;
        end
      end
      S_STOP: begin  // STOP: PERF_CQ_STALL as the host stops (RESUME waits for it to move)
        stall0 <= csr_rdata;
        state <= S_FETCH;
      end
      S_POLL: begin  // RESUME: STATUS read; now PERF_CQ_STALL
        st_full <= csr_rdata[3];
        csr_raddr <= {csr["PERF_CQ_STALL"]};
        state <= S_POLL2;
      end
      S_POLL2: begin
        if (st_full && csr_rdata != stall0) begin
          $fwrite(ft, "F %0h\\n", total);
          cons_on <= 1'b1;
          state <= S_FETCH;
        end else if (npoll + 32'd1 >= 32'd400) begin
          $fwrite(ft, "N %0h %0h\\n", total, {op["RESUME"]});
          cons_on <= 1'b1;
          state <= S_FETCH;
        end else begin
          npoll <= npoll + 32'd1;
          wait_n <= 32'd32;
          state <= S_POLLW;
        end
      end
      S_POLLW: begin
        if (wait_n <= 32'd1) begin
          csr_raddr <= {csr["STATUS"]};
          state <= S_POLL;
        end else wait_n <= wait_n - 32'd1;
      end
      S_WB: begin  // WAIT: the polled CSR's value (the script word is pc - 1)
        if (csr_rdata[arg[4:0]] == arg[8]) state <= S_FETCH;
        else if (npoll + 32'd1 >= {{16'd0, arg[31:16]}}) begin
          $fwrite(ft, "N %0h %0h\\n", total, {op["WAIT"]});
          state <= S_FETCH;
        end else begin
          npoll <= npoll + 32'd1;
          wait_n <= 32'd16;
          state <= S_WBW;
        end
      end
      S_WBW: begin
        if (cons_want) begin
          ret <= S_WBW;
          csr_raddr <= {csr["CQ_TAIL"]};
          state <= S_C0;
        end else if (wait_n <= 32'd1) begin
          csr_raddr <= arg[{ca + 31}:32];
          state <= S_WB;
        end else wait_n <= wait_n - 32'd1;
      end
      S_DRAIN: begin
        if (cons_want) begin
          ret <= S_DRAIN;
          csr_raddr <= {csr["CQ_TAIL"]};
          state <= S_C0;
        end else if (n_cons >= arg[31:0]) state <= S_FETCH;
      end
      S_C0: begin  // the consumer: CQ_TAIL read
        ctail <= csr_rdata[{pb - 1}:0];
        if (((csr_rdata[{pb - 1}:0] - cq_head) & {dmask}) == {p2}{depth}) $fwrite(ft, "F %0h\\n", total);
        if (csr_rdata[{pb - 1}:0] == cq_head) state <= ret;
        else begin
          csr_raddr <= {ca}'h{CQ_BASE:x} + {{{ca - pb - 3}'d0, cq_head & {p2}{depth - 1}, 3'd0}};
          state <= S_C1;
        end
      end
      S_C1: begin  // word 0 of the entry
        w0 <= csr_rdata;
        csr_raddr <= csr_raddr + {ca}'d4;
        state <= S_C2;
      end
      S_C2: begin  // word 1: the entry is recorded; the next one, or CQ_HEAD past them
        $fwrite(ft, "C %0h %h %h\\n", total, w0, csr_rdata);
        n_cons <= n_cons + 32'd1;
        cq_head <= cq_next & {dmask};
        if ((cq_next & {dmask}) != ctail) begin
          csr_raddr <= {ca}'h{CQ_BASE:x} + {{{ca - pb - 3}'d0, cq_next & {p2}{depth - 1}, 3'd0}};
          state <= S_C1;
        end else begin
          csr_we <= 1'b1;
          csr_addr <= {csr["CQ_HEAD"]};
          csr_wdata <= {{{32 - pb}'d0, cq_next & {dmask}}};
          state <= S_CEND;
        end
      end
      S_CEND: state <= ret;  // the CQ_HEAD write lands on this edge
      S_DUMP: begin  // the memory image back, one word per edge; a value is written an edge after its address
        if (li != 32'd0) $fwrite(ff, "%h\\n", dma_rdata);
        if (li < n_mem) begin
          dma_re <= 1'b1;
          dma_raddr <= li[{ma - 1}:0];
        end
        if (li == n_mem) state <= S_FETCH;
        else li <= li + 32'd1;
      end
      S_END: begin
        $fwrite(ff, "E %0s %0h %0h %0h %0h\\n", {reason_str}, total + 64'd1 - ep_t0, ep_t0, sq_tail, cq_head);
        close_records;
        running <= 1'b0;
        ep <= ep + 32'd1;
        if (why == 2'd1) begin
          state <= S_DONE;
          finish_run(3'd1, ep + 32'd1);
        end else state <= S_WAIT;
      end
      default: ;
    endcase
  end
endmodule
"""


def emit_host_harness(record_path: Path | str, outdir: Path | str | None = None) -> Path:
    """Write the harness of the test top whose JSON record is ``record_path`` as
    ``<outdir>/tp_<module>.v`` (default: beside the record).

    The runner calls it for a throughput testbench whose ``harness`` option names it.

    Args:
        record_path: the ``host_top`` JSON record.
        outdir: the folder to write into.

    Returns:
        The harness's path.
    """
    return write_harness(record_path, outdir, host_harness)
