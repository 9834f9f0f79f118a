"""The throughput harness of a streaming unit, generated from the unit's port record.

A streaming unit (``lockstep.gen.stream``) has ``clk``, ``rst``, ``in_valid/in_ready``
with payload ``in_*``, ``out_valid/out_ready`` with payload ``out_*`` and, when it
reports flags, the sticky ``err``. :func:`stream_harness` writes a top module
``tp_<unit>`` around it that runs the unit at simulator speed, with no Python on any
clock edge:

* **clock and reset** in HDL (a 10 ns clock; ``rst`` high on the first two edges, so
  the first edge with ``rst`` low is *cycle 0* of every cycle stamp);
* **a stimulus player** over two banks of ``CH`` stimulus words (one word is the
  concatenation of the ``in_*`` fields in port-record order, first field in the top
  bits). Chunk ``k`` of the stream is the file ``tp_stim_<k>.bin`` in the simulator's
  working folder: ``CH`` words read by ``$fread``, each ``ceil(bits / 8)`` bytes
  big-endian (binary: ``$readmemh``'s hex parsing cost more than the design itself
  in Verilator), the last chunk padded. A short file ends the simulation. Chunks 0
  and 1 load when ``go`` rises; when the player presents the first word of chunk
  ``k >= 1`` it loads chunk ``k + 1`` into the bank chunk ``k - 1`` held, and sets
  ``chunk = k``: the one event a testbench wakes on. Whoever writes the files (the
  cocotb testbench on that event, or a script before a raw run) keeps two chunks ahead.
* **idle cycles and back-pressure** from two xorshift32 generators stepped on every
  cycle from cycle 0: cycle ``c`` pauses when the top 16 bits of the state are below
  the threshold (``round(p * 65536)`` for a pause probability ``p``). The player
  decides as the per-edge source does (:class:`lockstep.verif.agents.stream.StreamSource`):
  when it holds no word, or its word is taken on this edge, it offers the next word
  unless cycle ``c`` is idle; ``out_ready`` after edge ``c`` is ``not bp(c)``, as the
  per-edge sink drives it. :class:`lockstep.verif.twin.CyclePauses` is the
  Python twin, so both modes can run the identical stream.
* **a recorder**: every accepted input's cycle to ``tp_acc_<k>.log`` and every output
  beat as ``cycle first_valid_cycle field... [err]`` (hex, fields in port-record order,
  then the sticky ``err`` in the cycle the beat is taken, when the unit has one) to
  ``tp_out_<k>.log``, where ``k`` is the chunk being presented; each pair of files is
  closed when chunk ``k + 1`` starts, so a reader never sees half a file. After the
  last output (and ``latency + 2`` more cycles, so a stray extra output shows), the
  last files close, ``tp_end.log`` gets ``cycle err accepted presented chunk`` and ``done``
  rises; with ``+tp_finish`` the simulation ends there.

Settings are registers the cocotb testbench writes before raising ``go``, or plusargs
for a run without cocotb: ``+tp_n=`` transactions, ``+tp_idle_seed= +tp_idle_thr=
+tp_bp_seed= +tp_bp_thr=``, ``+tp_max_cycles=`` (a watchdog: ``tp_end.log`` then says
``timeout``), ``+tp_go``, ``+tp_finish``; ``+tp_waves=<file> +tp_wstart= +tp_wstop=``
dumps waves only over cycles ``[wstart, wstop)`` and ends the run at ``wstop`` (a replay
of a failure stops after it; Verilator ignores ``$dumpoff``, so with ``+tp_dump_late``
the dump starts at ``wstart`` instead).

MyHDL converts no file I/O, plusargs or delays into Verilog that both simulators take,
and the harness is little else, so it is written here as text from the port record
(the record is the only input: no width is restated). It is linted like every
generated file (``verilator --lint-only -Wall --timing``, ``iverilog -g2012``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CHUNK", "HarnessPorts", "clock_line", "emit_harness", "harness_name", "harness_ports", "open_episode_task",
           "start_block", "settings_decl", "episode_finish_task", "stream_harness", "wait_states", "waves_window",
           "write_harness"]

#: Transactions per stimulus bank (and chunk file). The issue's floor is 1,024.
CHUNK = 1024

#: Half the clock period (ns).
_HALF_NS = 5


@dataclass(frozen=True)
class HarnessPorts:
    """The streaming unit's payload, read from its port record.

    Attributes:
        inputs: ``(field, width)`` of every ``in_*`` payload port, in record order (the
            order of the fields in a stimulus word, first field in the top bits).
        outputs: ``(field, width)`` of every ``out_*`` payload port, in record order
            (the order of the fields in an output record line).
        err: width of the sticky ``err`` port, or 0 when the unit has none.
        latency: cycles from acceptance to output (the record's ``timing.latency``).
    """

    inputs: tuple[tuple[str, int], ...]
    outputs: tuple[tuple[str, int], ...]
    err: int
    latency: int

    @property
    def word_bits(self) -> int:
        """Bits of one stimulus word."""
        return sum(w for _, w in self.inputs)


_CONTROL = {"clk", "rst", "in_valid", "in_ready", "out_valid", "out_ready", "err"}


def harness_ports(record: dict[str, Any]) -> HarnessPorts:
    """The payload of the unit a record describes.

    Raises:
        ValueError: the record is not a streaming unit's (a control port is missing or
            has the wrong direction or width, a port is neither ``in_*`` nor ``out_*``,
            or there is no timing latency).
    """
    ports = record.get("ports", {})
    name = record.get("module", "?")
    want = {"clk": "in", "rst": "in", "in_valid": "in", "in_ready": "out", "out_valid": "out", "out_ready": "in"}
    for p, d in want.items():
        if p not in ports or ports[p]["dir"] != d or ports[p]["width"] != 1:
            raise ValueError(f"{name}: a throughput harness needs a 1-bit {d}put port {p!r} (a streaming unit)")
    ins, outs = [], []
    for p, spec in ports.items():
        if p in _CONTROL:
            continue
        if p.startswith("in_") and spec["dir"] == "in":
            ins.append((p[3:], int(spec["width"])))
        elif p.startswith("out_") and spec["dir"] == "out":
            outs.append((p[4:], int(spec["width"])))
        else:
            raise ValueError(f"{name}: port {p!r} ({spec['dir']}) is not a stream payload port (in_* in, out_* out)")
    if not ins or not outs:
        raise ValueError(f"{name}: a streaming unit has in_* and out_* payload ports")
    try:
        latency = int(record["timing"]["latency"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{name}: the record has no timing.latency") from exc
    err = int(ports["err"]["width"]) if "err" in ports else 0
    return HarnessPorts(tuple(ins), tuple(outs), err, latency)


def harness_name(module: str) -> str:
    """Module name of the harness of ``module``."""
    return f"tp_{module}"


def stream_harness(record: dict[str, Any], chunk: int = CHUNK) -> str:
    """The harness Verilog of the unit ``record`` describes (see the module docstring)."""
    if chunk < 2 or chunk & (chunk - 1):
        raise ValueError(f"chunk {chunk}: must be a power of two >= 2")
    hp = harness_ports(record)
    mod = record["module"]
    top = harness_name(mod)
    sw = hp.word_bits
    sw_bytes = (sw + 7) // 8
    cb = chunk.bit_length() - 1  # bits of an index inside a chunk
    decl_in = "\n".join(f"  reg [{w - 1}:0] in_{f};" for f, w in hp.inputs)
    init_in = "".join(f"    in_{f} = {w}'d0;\n" for f, w in hp.inputs)
    decl_out = "\n".join(f"  wire [{w - 1}:0] out_{f};" for f, w in hp.outputs)
    decl_err = f"  wire [{hp.err - 1}:0] err;" if hp.err else ""
    conns = ["clk", "rst", "in_valid", "in_ready", *(f"in_{f}" for f, _ in hp.inputs), "out_valid", "out_ready",
             *(f"out_{f}" for f, _ in hp.outputs)] + (["err"] if hp.err else [])
    inst = ",\n".join(f"    .{c}({c})" for c in conns)
    unpack = "{" + ", ".join(f"in_{f}" for f, _ in hp.inputs) + "}"
    out_fmt = " ".join(["%h", "%h"] + ["%h"] * (len(hp.outputs) + bool(hp.err)))
    out_args = ", ".join(["cycle", "(pend ? fv : cycle)"] + [f"out_{f}" for f, _ in hp.outputs] + (["err"] if hp.err else []))
    err_arg = "err" if hp.err else "1'b0"
    tail = hp.latency + 2
    settings = "    // Settings: from plusargs when given (a run without cocotb), else the testbench's.\n" + "".join(
        f'    if ($value$plusargs("tp_{arg}=%d", {var})) ;\n'
        for arg, var in (("n", "n_total"), ("idle_seed", "idle_s"), ("idle_thr", "idle_thr"), ("bp_seed", "bp_s"),
                         ("bp_thr", "bp_thr"), ("max_cycles", "max_cycles")))
    start, clock = start_block(top, settings), clock_line()
    settings_regs = settings_decl("".join(f"  reg [{w}:0] {v};\n" for w, v in (
        (31, "n_total"), (31, "idle_s"), (31, "bp_s"), (16, "idle_thr"), (16, "bp_thr"), (63, "max_cycles"))))
    return f"""\
// Generated by lockstep.gen.harness from the port record of {mod}: do not edit.
// Throughput harness: HDL clock and reset, stimulus banks loaded from tp_stim_<k>.bin,
// xorshift32 idle/back-pressure, every beat recorded with its cycle (see the generator).
`timescale 1ns/1ps
module {top};
  localparam integer CH = {chunk};  // transactions per stimulus bank and chunk file
  localparam integer TAIL = {tail};  // cycles recorded after the last output (latency + 2)

  reg clk;
  reg rst;
  reg [1:0] rst_n;  // edges seen in reset
{settings_regs}
  reg in_valid;
  wire in_ready;
{decl_in}
  wire out_valid;
  reg out_ready;
{decl_out}
{decl_err}

  {mod} dut (
{inst}
  );

  reg [{sw - 1}:0] stim [0:2*CH-1];
  reg [63:0] cycle;  // edges since the first edge with rst low
  reg [31:0] n_in;   // words presented
  reg [31:0] n_acc;  // words accepted
  reg [31:0] n_out;  // output beats
  reg [31:0] chunk;  // chunk of the word presented last (the testbench's event)
  reg [63:0] fv;     // first cycle the pending output was valid
  reg pend;
  reg [7:0] tail_n;
  reg ending;
  reg done;
  integer fa = 0;
  integer fo = 0;
  reg [8*64:1] fname;

  function automatic [31:0] xs32(input [31:0] x);
    reg [31:0] y;
    begin
      y = x ^ (x << 13);
      y = y ^ (y >> 17);
      xs32 = y ^ (y << 5);
    end
  endfunction

  task automatic open_records(input [31:0] k);
    begin
      $sformat(fname, "tp_acc_%0d.log", k);
      fa = $fopen(fname, "w");
      $sformat(fname, "tp_out_%0d.log", k);
      fo = $fopen(fname, "w");
      if (fa == 0 || fo == 0) begin
        $display("{top}: cannot open the record files of chunk %0d", k);
        $finish;
      end
    end
  endtask

  task automatic load_chunk(input [31:0] k);
    integer fd, got;
    begin
      $sformat(fname, "tp_stim_%0d.bin", k);
      fd = $fopen(fname, "rb");
      if (fd == 0) begin
        $display("{top}: cannot open %0s", fname);
        $finish;
      end
      got = $fread(stim, fd, k[0] ? CH : 0, CH);
      $fclose(fd);
      if (got != CH * {sw_bytes}) begin
        $display("{top}: %0s holds %0d bytes, not %0d", fname, got, CH * {sw_bytes});
        $finish;
      end
    end
  endtask

  task automatic finish_run(input [1:0] why);  // 0 done, 1 watchdog, 2 end of the waves window
    integer fe;
    begin
      $fclose(fa);
      $fclose(fo);
      fe = $fopen("tp_end.log", "w");
      $fwrite(fe, "%0d %h %0d %0d %0d%s\\n", cycle, {err_arg}, n_acc, n_in, chunk,
              why == 2'd1 ? " timeout" : why == 2'd2 ? " window" : "");
      $fclose(fe);
      done = 1'b1;
      if (finish) $finish;
    end
  endtask

  initial begin
    // State: set here, not in declarations (the always block owns it afterwards).
    clk = 1'b0;
    rst = 1'b1;
    rst_n = 2'd0;
    in_valid = 1'b0;
{init_in}    out_ready = 1'b0;  // low through reset: a register rst leaves alone is not cleared by a taken output
    cycle = 64'd0;
    n_in = 32'd0;
    n_acc = 32'd0;
    n_out = 32'd0;
    chunk = 32'd0;
    fv = 64'd0;
    pend = 1'b0;
    tail_n = 8'd0;
    ending = 1'b0;
    done = 1'b0;
{start}    open_records(0);
    load_chunk(0);
    if (n_total > CH) load_chunk(1);
{clock}  end

  always @(posedge clk) begin
    if (rst) begin
      rst_n <= rst_n + 2'd1;
      if (rst_n == 2'd1) rst <= 1'b0;
    end else if (!done) begin
      cycle <= cycle + 64'd1;
      idle_s <= xs32(idle_s);
      bp_s <= xs32(bp_s);
      if (waves && wstart != 0 && cycle == wstart) begin
        if (late) $dumpvars(0, {top});
        else $dumpon;
      end
      // The recorder first, so this edge's beats go to the files of the current chunk.
      if (in_valid && in_ready) begin
        $fwrite(fa, "%h\\n", cycle);
        n_acc <= n_acc + 32'd1;
      end
      if (out_valid && out_ready) begin
        $fwrite(fo, "{out_fmt}\\n", {out_args});
        n_out <= n_out + 32'd1;
        pend <= 1'b0;
      end else if (out_valid && !pend) begin
        pend <= 1'b1;
        fv <= cycle;
      end
      out_ready <= !({{1'b0, bp_s[31:16]}} < bp_thr);
      // The player: a new word when it holds none or its word is taken now.
      if (!in_valid || in_ready) begin
        if (!({{1'b0, idle_s[31:16]}} < idle_thr) && n_in < n_total) begin
          in_valid <= 1'b1;
          {unpack} <= stim[n_in[{cb}:0]];
          n_in <= n_in + 32'd1;
          if (n_in[{cb - 1}:0] == {cb}'d0 && n_in != 32'd0) begin
            $fclose(fa);
            $fclose(fo);
            open_records(n_in >> {cb});
            if ((n_in >> {cb}) + 32'd1 < (n_total + CH - 32'd1) / CH) load_chunk((n_in >> {cb}) + 32'd1);
            chunk <= n_in >> {cb};
          end
        end else begin
          in_valid <= 1'b0;
        end
      end
      if (!ending && n_out + {{31'd0, out_valid && out_ready}} == n_total && n_total != 32'd0) ending <= 1'b1;
      if (ending) begin
        tail_n <= tail_n + 8'd1;
        if (tail_n == TAIL[7:0] - 8'd1) finish_run(2'd0);
      end
      if (max_cycles != 64'd0 && cycle == max_cycles) finish_run(2'd1);
      if (waves && wstop != 0 && cycle == wstop) finish_run(2'd2);
    end
  end
endmodule
"""


def emit_harness(record_path: Path | str, outdir: Path | str | None = None, chunk: int = CHUNK) -> Path:
    """Write the harness of the unit whose JSON record is ``record_path`` as
    ``<outdir>/tp_<module>.v`` (default: beside the record); returns its path."""
    return write_harness(record_path, outdir, lambda record: stream_harness(record, chunk))


def start_block(top: str, settings: str = "") -> str:
    """The end of a harness's ``initial`` block, the same in every harness: ``finish`` and
    ``waves`` from ``+tp_finish`` and ``+tp_waves=``, the caller's ``settings`` lines
    (plusargs for a run without cocotb), the waves window from ``+tp_wstart=`` and
    ``+tp_wstop=``, ``+tp_go``; then it waits for ``go`` and starts the dump of ``top``
    (at ``wstart``: Verilator ignores ``$dumpoff``, so with ``+tp_dump_late`` the dump
    itself starts late). The clock starts after it."""
    return (
        '    finish = $test$plusargs("tp_finish") != 0;\n'
        '    waves = $value$plusargs("tp_waves=%s", wfile) != 0;\n'
        f"{settings}"
        '    if ($value$plusargs("tp_wstart=%d", wstart)) ;\n'
        '    if ($value$plusargs("tp_wstop=%d", wstop)) ;\n'
        '    if ($test$plusargs("tp_go")) go = 1\'b1;\n'
        "    wait (go);\n"
        "    if (waves) begin\n"
        "      $dumpfile(wfile);\n"
        "      // $dumpoff does nothing in Verilator: there (+tp_dump_late) the dump starts at wstart.\n"
        '      late = $test$plusargs("tp_dump_late") != 0;\n'
        f"      if (!late || wstart == 0) $dumpvars(0, {top});\n"
        "      if (!late && wstart != 0) $dumpoff;\n"
        "    end\n"
    )


def settings_decl(extra: str = "") -> str:
    """The settings registers every harness declares (``go``, ``finish``, the waves window
    and file), with the caller's own settings ``extra`` (declaration lines) after
    ``finish``; :func:`start_block` fills them from plusargs."""
    return (
        "  // Settings: written by the cocotb testbench before go, or from plusargs.\n"
        "  reg go;\n"
        "  reg finish;\n"
        f"{extra}"
        "  reg [63:0] wstart;\n"
        "  reg [63:0] wstop;\n"
        "  reg waves;\n"
        "  reg late;\n"
        "  reg [8*256:1] wfile;\n"
    )


def episode_finish_task(done: str, close: str = "") -> str:
    """The ``finish_run`` task of a harness that runs episodes (programs or jobs): after the
    caller's ``close`` lines (records still open), ``tp_end.log`` gets ``total`` (edges
    since go), the episodes done and the status (``ok``, ``timeout``, ``window`` or
    ``missing:<file>``), then the end flag ``done`` rises and ``+tp_finish`` ends the run."""
    return (
        "  task automatic finish_run(input [2:0] status, input [31:0] n_done);  "
        "// 0 ok, 1 timeout, 3 window, 4 missing\n"
        "    integer fe;\n"
        "    begin\n"
        f"{close}"
        '      fe = $fopen("tp_end.log", "w");\n'
        '      if (status == 3\'d4) $fwrite(fe, "%0d %0d missing:%0s\\n", total, n_done, mfile);\n'
        '      else $fwrite(fe, "%0d %0d %0s\\n", total, n_done, status == 3\'d1 ? "timeout" : '
        'status == 3\'d3 ? "window" : "ok");\n'
        "      $fclose(fe);\n"
        f"      {done} = 1'b1;\n"
        "      if (finish) $finish;\n"
        "    end\n"
        "  endtask\n"
    )


def open_episode_task(what: str, settings: tuple[str, str, str], images: list[tuple[str, str, str]],
                      records: list[tuple[str, str]], extra: str = "") -> str:
    """The ``image`` and ``open_episode`` tasks of a harness that runs episodes: episode
    ``e``'s files are opened in order, and the first that is missing (or a settings line
    that does not parse) sets ``missing`` and leaves its name in ``mfile``.

    Args:
        what: the files, for the task's comment.
        settings: ``tp_cfg_<e>.txt``'s ``$fscanf`` format (one line), its variables
            (comma-separated) and a further refusal condition (Verilog, or ``""``).
        images: ``(kind, memory, count)``: ``tp_<kind>_<e>.hex`` read into ``memory``
            with ``$readmemh``: its first ``count`` words (skipped when ``count`` is
            0), or the whole memory when ``count`` is ``""``.
        records: ``(kind, handle)``: ``tp_<kind>_<e>.log`` opened for writing.
        extra: statements run after the images when nothing is missing (more files).
    """
    n = settings[1].count(",") + 1
    cond = f" || {settings[2]}" if settings[2] else ""
    out = [
        "  // Open a file to check it is there (the last name is kept in fname).",
        "  task automatic image(input [8*64:1] name, output ok);",
        "    integer fd;",
        "    begin",
        '      fd = $fopen(name, "r");',
        "      ok = fd != 0;",
        "      if (ok) $fclose(fd);",
        "    end",
        "  endtask",
        "",
        f"  // Open episode e's files: {what}.",
        "  task automatic open_episode(input [31:0] e);",
        "    integer fd, got;",
        "    reg ok;",
        "    begin",
        "      missing = 1'b0;",
        '      $sformat(fname, "tp_cfg_%0d.txt", e);',
        '      fd = $fopen(fname, "r");',
        "      if (fd == 0) missing = 1'b1;",
        "      else begin",
        f'        got = $fscanf(fd, "{settings[0]}\\n", {settings[1]});',
        "        $fclose(fd);",
        f"        if (got != {n}{cond}) missing = 1'b1;",
        "      end",
    ]
    for kind, mem, count in images:
        out += [f"      if (!missing{f' && {count} != 0' if count else ''}) begin",
                f'        $sformat(fname, "tp_{kind}_%0d.hex", e);',
                "        image(fname, ok);",
                "        if (!ok) missing = 1'b1;",
                f"        else $readmemh(fname, {mem}{f', 0, {count} - 1' if count else ''});",
                "      end"]
    if extra:
        out += ["      if (!missing) begin", *(f"  {line}" if line else line for line in extra.strip("\n").split("\n")),
                "      end"]
    for kind, handle in records:
        out += ["      if (!missing) begin",
                f'        $sformat(fname, "tp_{kind}_%0d.log", e);',
                f'        {handle} = $fopen(fname, "w");',
                f"        if ({handle} == 0) missing = 1'b1;",
                "      end"]
    out += ["      if (missing) mfile = fname;", "    end", "  endtask"]
    return "\n".join(out) + "\n"


def wait_states(count: str, setup: str, start: str) -> str:
    """The ``S_IDLE`` and ``S_WAIT`` states of a harness that runs episodes: the run ends
    (status ``ok``) once ``ep`` reaches ``count``; when ``n_ready > ep`` episode ``ep``'s
    files are opened (:func:`open_episode_task`) with the nonblocking assignments
    ``setup`` (lines), a missing one ends the run (status ``missing``), else ``start``
    runs (the statement after ``else``: one line, or ``begin`` ... ``end``)."""
    return (
        "      S_IDLE: state <= S_WAIT;\n"
        "      S_WAIT: begin\n"
        f"        if (ep >= {count}) begin\n"
        "          state <= S_DONE;\n"
        "          finish_run(3'd0, ep);\n"
        "        end else if (n_ready > ep) begin\n"
        "          open_episode(ep);\n"
        f"{setup}"
        "          if (missing) begin\n"
        "            state <= S_DONE;\n"
        "            finish_run(3'd4, ep);\n"
        f"          end else {start}\n"
        "        end\n"
        "      end\n"
    )


def waves_window(top: str, end_flag: str) -> tuple[str, str]:
    """The lines of an episode harness's clocked block that open the waves window at
    edge ``wstart`` (``$dumpvars`` late for Verilator, else ``$dumpon``) and end the run
    at ``wstop`` (status ``window``) unless ``end_flag`` is already set; the block's
    state machine follows as ``case (state)`` (after ``end else``)."""
    return (
        "    if (waves && wstart != 64'd0 && total + 64'd1 == wstart) begin\n"
        f"      if (late) $dumpvars(0, {top});\n"
        "      else $dumpon;\n"
        "    end\n"
    ), (
        f"    if (waves && wstop != 64'd0 && total + 64'd1 == wstop && !{end_flag}) begin\n"
        "      state <= S_DONE;\n"
        "      finish_run(3'd3, ep);\n"
        "    end else "
    )


def clock_line() -> str:
    """The harness's clock: a 10 ns period from an HDL delay (Verilator needs ``--timing``)."""
    return f"    forever #{_HALF_NS} clk = ~clk;\n"


def write_harness(record_path: Path | str, outdir: Path | str | None, text_of: Any) -> Path:
    """Write ``text_of(record)`` (the record read from ``record_path``) as
    ``<outdir>/tp_<module>.v`` (default: beside the record), unless that file already
    holds exactly it (the runner's build stamp hashes it); returns its path."""
    record_path = Path(record_path)
    record = json.loads(record_path.read_text())
    outdir = Path(outdir) if outdir is not None else record_path.parent
    path = outdir / f"{harness_name(record['module'])}.v"
    text = text_of(record)
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".tmp{id(text)}")
        tmp.write_text(text)
        tmp.replace(path)
    return path
