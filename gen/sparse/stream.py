"""The raster-side blocks of the sparse family (docs/sparse.md section 9): ``sp_encoder``,
``sp_decoder`` and ``nnz_profiler``, plus the small helpers the memory units share.

All three are *jobs*: ``start`` (while ``busy`` is low) samples ``cfg_h``/``cfg_w`` (and
the decoder's ``cfg_nnz``), the job walks the ``H x W`` raster in row-major order, and
``done`` pulses for one cycle when the job is over. A ``start`` whose size is outside
``1..hmax`` x ``1..wmax`` is refused: nothing is consumed, ``done`` pulses in the next
cycle and the sticky ``err`` bit ``CFG`` is set. ``start`` while ``busy`` is ignored.

Streams are ``<name>_valid/_ready/_data`` and may stall at any cycle; the data stream
word is ``{LAST, ROW[rb], COL[cb], VAL[dw]}`` (docs/sparse.md section 2).

* ``sp_encoder`` accepts one raster value per cycle (``in_ready`` is low in the raster
  phase only while its output register is full and not taken), so the raster takes
  ``H*W`` cycles without back-pressure. It holds the latest non-zero back until the next
  one arrives or the raster ends (only then is its LAST bit known). ``done`` pulses the
  cycle after the LAST word is taken, or after the last raster value when the map is all
  zero (``nnz = 0``, no word). ``nnz`` counts the job's non-zeros (final at ``done``).
* ``sp_decoder`` emits ``H*W`` values in raster order: at each position the next word's
  value when it sits there, else 0. It needs the next word (or the end of the stream:
  ``cfg_nnz`` words or LAST consumed) to decide, so input bubbles stall it. A word out of
  range or not ahead of the current position is consumed and dropped (``err`` bit
  ``DROP``); words after the end stay on the stream. ``done`` pulses the cycle after the
  last value is taken.
* ``nnz_profiler`` sinks the raster at one value per cycle (``in_ready = busy``) and
  counts non-zeros per row, per column and in total; ``done`` pulses the cycle after the
  last value. The counts (cleared at ``start``) are read combinationally:
  ``rd_data = rd_sel ? col_cnt[rd_addr] : row_cnt[rd_addr]`` (0 beyond ``H``/``W``).
"""

from __future__ import annotations

from pathlib import Path

from myhdl import Signal, always_comb, always_seq, block, concat, intbv

from lockstep.models.sparse.params import SparseParams

from ..common import Emitted, check_record, emit_stream_unit, flat_signal, lane, mem_read, resize

__all__ = [
    "DEC_ERR_NAMES",
    "ENC_ERR_NAMES",
    "NNZ_BITS",
    "PROF_ERR_NAMES",
    "check_sparse",
    "decoder_ports",
    "emit_decoder",
    "emit_encoder",
    "emit_profiler",
    "encoder_ports",
    "mux2",
    "part",
    "profiler_ports",
    "sp_decoder",
    "sp_encoder",
    "nnz_profiler",
]

#: Width of the ``nnz`` / ``total`` / ``cfg_nnz`` counts: the descriptor's NNZ field.
NNZ_BITS = SparseParams.NNZ_BITS
#: Sticky error bits of the raster blocks, bit 0 first (module docstring).
ENC_ERR_NAMES = ("CFG",)
DEC_ERR_NAMES = ("CFG", "DROP")
PROF_ERR_NAMES = ("CFG",)


def check_sparse(fmt: object, who: str) -> SparseParams:
    """Refuse anything but a :class:`SparseParams` (the message names the type)."""
    return check_record(fmt, SparseParams, who)


def size_bits(fmt: SparseParams) -> tuple[int, int]:
    """Widths of ``cfg_h`` and ``cfg_w``: they hold ``hmax``/``wmax`` and values beyond
    (which the blocks refuse)."""
    return (fmt.hmax + 1).bit_length(), (fmt.wmax + 1).bit_length()


@block
def mux2(sel, a, b, y):
    """``y = b if sel else a`` (equal widths)."""

    @always_comb
    def pick():
        if sel:
            y.next = b
        else:
            y.next = a

    return pick


@block
def part(bus, lo: int, width: int, out):
    """``out = bus[lo +: width]`` (:func:`~lockstep.gen.common.lane`), or a plain
    connection when that is the whole bus (a 1-bit bus is a bool: no slice)."""
    if lo == 0 and width == len(bus):
        return resize(bus, out)
    return lane(bus, lo, width, out)


@block
def _raster(clk, rst, cfg_h, cfg_w, start, busy, step, r, c, hm1, wm1, cfg_ok, at_end, fmt: SparseParams):
    """The raster walk every raster block shares: the size check and the position.

    Ports:
        cfg_h, cfg_w: the job's size (sampled at an accepted ``start``).
        start: start pulse; accepted when ``cfg_ok`` and the caller is not ``busy``.
        busy: the caller's job is running (``start`` ignored).
        step: advance to the next raster position at the end of this cycle.
        r, c: the current position (row ``rb`` bits, column ``cb`` bits).
        hm1, wm1: ``H - 1`` and ``W - 1`` of the running job.
        cfg_ok: ``cfg_h``/``cfg_w`` within ``1..hmax``/``1..wmax`` (combinational).
        at_end: the current position is the last one, ``(H-1, W-1)``.
    """
    rb, cb = fmt.rb, fmt.cb
    hb, wb = size_bits(fmt)
    hmax, wmax = fmt.hmax, fmt.wmax
    # cfg - 1 in the cfg width; resize() keeps the low rb/cb bits, where an accepted size's
    # H - 1 < hmax <= 2**rb fits, so the high bits are unused on purpose.
    hm1_in_unused, wm1_in_unused = flat_signal(hb), flat_signal(wb)
    hm1_f, wm1_f = flat_signal(rb), flat_signal(cb)

    @always_comb
    def size():
        hm1_in_unused.next = cfg_h - 1
        wm1_in_unused.next = cfg_w - 1
        cfg_ok.next = cfg_h != 0 and cfg_h <= hmax and cfg_w != 0 and cfg_w <= wmax

    @always_comb
    def end():
        at_end.next = r == hm1 and c == wm1

    @always_seq(clk.posedge, reset=rst)
    def walk():
        if start and not busy:
            r.next = 0
            c.next = 0
            hm1.next = hm1_f
            wm1.next = wm1_f
        elif step:
            if c == wm1:
                c.next = 0
                r.next = r + 1
            else:
                c.next = c + 1

    return resize(hm1_in_unused, hm1_f), resize(wm1_in_unused, wm1_f), size, end, walk


@block
def sp_encoder(clk, rst, cfg_h, cfg_w, start, in_valid, in_ready, in_data, out_valid, out_ready, out_data,
               nnz, busy, done, err, fmt: SparseParams):
    """Dense raster -> data stream (compress block 1375). Ports: :func:`encoder_ports`;
    behaviour: the module docstring."""
    check_sparse(fmt, "sp_encoder")
    rb, cb, dw = fmt.rb, fmt.cb, fmt.dw
    top = fmt.data_bits - 1
    job, feeding, flush = (Signal(bool(0)) for _ in range(3))
    r, c, hm1, wm1 = flat_signal(rb), flat_signal(cb), flat_signal(rb), flat_signal(cb)
    cfg_ok, at_end, take = (Signal(bool(0)) for _ in range(3))
    pend_v, out_v = Signal(bool(0)), Signal(bool(0))
    pend = flat_signal(rb + cb + dw)  # {ROW, COL, VAL} of the latest non-zero, LAST unknown
    out_reg = flat_signal(fmt.data_bits)

    walk = _raster(clk, rst, cfg_h, cfg_w, start, job, take, r, c, hm1, wm1, cfg_ok, at_end, fmt)

    @always_comb
    def handshake():
        in_ready.next = feeding and (not out_v or out_ready)
        take.next = feeding and in_valid and (not out_v or out_ready)
        out_valid.next = out_v
        out_data.next = out_reg
        busy.next = job

    @always_seq(clk.posedge, reset=rst)
    def run():
        done.next = 0
        if out_v and out_ready:
            out_v.next = 0
            if out_reg[top]:
                done.next = 1
                job.next = 0
        if start and not job:
            if cfg_ok:   # (pend_v is 0 here: every end of a raster empties it)
                job.next = 1
                feeding.next = 1
                nnz.next = 0
            else:
                err.next = 1
                done.next = 1
                nnz.next = 0
        elif take:
            if in_data != 0:
                nnz.next = nnz + 1
            if at_end:
                feeding.next = 0
                if in_data != 0 and pend_v:
                    out_reg.next = concat(False, pend)
                    out_v.next = 1
                    pend.next = concat(r, c, in_data)
                    flush.next = 1
                elif in_data != 0:
                    out_reg.next = concat(True, r, c, in_data)
                    out_v.next = 1
                elif pend_v:
                    out_reg.next = concat(True, pend)
                    out_v.next = 1
                    pend_v.next = 0
                else:
                    done.next = 1
                    job.next = 0
            elif in_data != 0:
                if pend_v:
                    out_reg.next = concat(False, pend)
                    out_v.next = 1
                pend.next = concat(r, c, in_data)
                pend_v.next = 1
        elif flush and (not out_v or out_ready):
            out_reg.next = concat(True, pend)
            out_v.next = 1
            pend_v.next = 0
            flush.next = 0

    return walk, handshake, run


def _job_ports(fmt: SparseParams, nnz_in: bool = False) -> dict[str, dict]:
    hb, wb = size_bits(fmt)
    ports = {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset"},
        "cfg_h": {"dir": "in", "width": hb, "doc": "map height H (1..hmax), sampled at start"},
        "cfg_w": {"dir": "in", "width": wb, "doc": "map width W (1..wmax), sampled at start"},
    }
    if nnz_in:
        ports["cfg_nnz"] = {"dir": "in", "width": NNZ_BITS, "doc": "words in the data stream, sampled at start"}
    ports["start"] = {"dir": "in", "width": 1, "doc": "start a job (ignored while busy)"}
    return ports


def _status_ports(names: tuple[str, ...]) -> dict[str, dict]:
    return {
        "busy": {"dir": "out", "width": 1, "doc": "a job is running"},
        "done": {"dir": "out", "width": 1, "doc": "one-cycle pulse: the job is over"},
        "err": {"dir": "out", "width": len(names), "doc": "sticky errors " + ",".join(names) + " (bit 0 first)"},
    }


def _stream(prefix: str, sink: bool, width: int, doc: str) -> dict[str, dict]:
    d_in, d_out = ("in", "out") if sink else ("out", "in")
    return {
        f"{prefix}_valid": {"dir": d_in, "width": 1, "doc": f"{doc}: valid"},
        f"{prefix}_ready": {"dir": d_out, "width": 1, "doc": f"{doc}: ready"},
        f"{prefix}_data": {"dir": d_in, "width": width, "doc": doc},
    }


def encoder_ports(fmt: SparseParams) -> dict[str, dict]:
    """Port list of :func:`sp_encoder` (name -> direction, width, doc)."""
    return {
        **_job_ports(fmt),
        **_stream("in", True, fmt.dw, "raster values (signed dw bits), row-major"),
        **_stream("out", False, fmt.data_bits, "data stream {LAST, ROW, COL, VAL}"),
        "nnz": {"dir": "out", "width": NNZ_BITS, "doc": "non-zeros of the job so far (final at done)"},
        **_status_ports(ENC_ERR_NAMES),
    }


@block
def sp_decoder(clk, rst, cfg_h, cfg_w, cfg_nnz, start, in_valid, in_ready, in_data, out_valid, out_ready,
               out_data, busy, done, err, fmt: SparseParams):
    """Data stream -> dense raster (a verification aid). Ports: :func:`decoder_ports`;
    behaviour: the module docstring."""
    check_sparse(fmt, "sp_decoder")
    rb, cb, dw = fmt.rb, fmt.cb, fmt.dw
    job, walking, ended = (Signal(bool(0)) for _ in range(3))
    r, c = flat_signal(rb), flat_signal(cb)
    hm1, wm1 = flat_signal(rb), flat_signal(cb)
    cfg_ok, at_end, emit, last_out = (Signal(bool(0)) for _ in range(4))
    consume, drop = Signal(bool(0)), Signal(bool(0))
    left = flat_signal(NNZ_BITS)  # words still expected (cfg_nnz minus consumed)
    wrow, wcol, wval = flat_signal(rb), flat_signal(cb), flat_signal(dw)
    wlast = Signal(bool(0))
    out_v = Signal(bool(0))
    out_reg = flat_signal(dw)
    top = fmt.data_bits - 1

    walk = _raster(clk, rst, cfg_h, cfg_w, start, job, emit, r, c, hm1, wm1, cfg_ok, at_end, fmt)

    @always_comb
    def fields():
        wlast.next = in_data[top]
        wrow.next = in_data[top : dw + cb]
        wcol.next = in_data[dw + cb : dw]
        wval.next = in_data[dw:]

    @always_comb
    def decide():
        # One raster position per cycle while the output register can take a value.
        free = walking and (not out_v or out_ready)
        out_of_range = wrow > hm1 or wcol > wm1
        behind = wrow < r or (wrow == r and wcol < c)
        here = wrow == r and wcol == c
        emit.next = 0
        consume.next = 0
        drop.next = 0
        if free:
            if ended:
                emit.next = 1
            elif in_valid:
                if out_of_range or behind:
                    consume.next = 1
                    drop.next = 1
                else:
                    emit.next = 1
                    consume.next = here
        in_ready.next = free and not ended and (out_of_range or behind or here)
        out_valid.next = out_v
        out_data.next = out_reg
        busy.next = job

    @always_seq(clk.posedge, reset=rst)
    def run():
        done.next = 0
        if out_v and out_ready:
            out_v.next = 0
            if last_out:
                done.next = 1
                job.next = 0
        if start and not job:
            if cfg_ok:
                job.next = 1
                walking.next = 1
                left.next = cfg_nnz
                ended.next = cfg_nnz == 0
                last_out.next = 0
            else:
                err.next = err | 1
                done.next = 1
        else:
            if consume:
                left.next = left - 1
                if wlast or left == 1:
                    ended.next = 1
            if drop:
                err.next = err | 2
            if emit:
                out_v.next = 1
                if consume:
                    out_reg.next = wval
                else:
                    out_reg.next = 0
                if at_end:
                    walking.next = 0
                    last_out.next = 1

    return walk, fields, decide, run


def decoder_ports(fmt: SparseParams) -> dict[str, dict]:
    """Port list of :func:`sp_decoder` (name -> direction, width, doc)."""
    return {
        **_job_ports(fmt, nnz_in=True),
        **_stream("in", True, fmt.data_bits, "data stream {LAST, ROW, COL, VAL}"),
        **_stream("out", False, fmt.dw, "raster values (signed dw bits), row-major"),
        **_status_ports(DEC_ERR_NAMES),
    }


def count_bits(fmt: SparseParams) -> int:
    """Width of a per-row or per-column count (at most ``max(hmax, wmax)``)."""
    return max(fmt.hmax, fmt.wmax).bit_length()


def profiler_addr_bits(fmt: SparseParams) -> int:
    """Width of ``rd_addr``: it indexes rows (``rb`` bits) and columns (``cb`` bits)."""
    return max(fmt.rb, fmt.cb)


@block
def _counters(clk, rst, clear, inc, idx, rd_addr, rd_data, size: int):
    """``size`` counters (``size`` a power of two, ``idx`` and ``rd_addr`` exactly
    ``log2(size)`` bits): ``cnt[idx] += 1`` when ``inc``, all 0 when ``clear``;
    ``rd_data = cnt[rd_addr]`` (combinational)."""
    mem = [Signal(intbv(0)[len(rd_data):]) for _ in range(size)]

    @always_seq(clk.posedge, reset=rst)
    def count():
        if clear:
            for i in range(size):
                mem[i].next = 0
        elif inc:
            mem[idx].next = mem[idx] + 1

    return count, mem_read(mem, rd_addr, rd_data)


@block
def nnz_profiler(clk, rst, cfg_h, cfg_w, start, in_valid, in_ready, in_data, total, rd_sel, rd_addr, rd_data,
                 busy, done, err, fmt: SparseParams):
    """Per-row / per-column / total non-zero counts of a raster (spec 4.5). Ports:
    :func:`profiler_ports`; behaviour: the module docstring."""
    check_sparse(fmt, "nnz_profiler")
    rb, cb = fmt.rb, fmt.cb
    ab = profiler_addr_bits(fmt)
    job, take, clear, inc = (Signal(bool(0)) for _ in range(4))
    r, c, hm1, wm1 = flat_signal(rb), flat_signal(cb), flat_signal(rb), flat_signal(cb)
    r_a, c_a = flat_signal(ab), flat_signal(ab)
    cfg_ok, at_end = Signal(bool(0)), Signal(bool(0))
    row_q, col_q = flat_signal(len(rd_data)), flat_signal(len(rd_data))  # row_cnt[rd_addr], col_cnt[rd_addr]

    walk = _raster(clk, rst, cfg_h, cfg_w, start, job, take, r, c, hm1, wm1, cfg_ok, at_end, fmt)
    rows = _counters(clk, rst, clear, inc, r_a, rd_addr, row_q, 1 << ab)
    cols = _counters(clk, rst, clear, inc, c_a, rd_addr, col_q, 1 << ab)

    @always_comb
    def comb():
        in_ready.next = job
        take.next = job and in_valid
        clear.next = start and not job and cfg_ok
        inc.next = job and in_valid and in_data != 0
        busy.next = job
        if rd_sel:
            rd_data.next = col_q
        else:
            rd_data.next = row_q

    @always_seq(clk.posedge, reset=rst)
    def run():
        done.next = 0
        if start and not job:
            if cfg_ok:
                job.next = 1
                total.next = 0
            else:
                err.next = 1
                done.next = 1
        elif take:
            if in_data != 0:
                total.next = total + 1
            if at_end:
                job.next = 0
                done.next = 1

    return walk, resize(r, r_a), resize(c, c_a), rows, cols, comb, run


def profiler_ports(fmt: SparseParams) -> dict[str, dict]:
    """Port list of :func:`nnz_profiler` (name -> direction, width, doc)."""
    return {
        **_job_ports(fmt),
        "in_valid": {"dir": "in", "width": 1, "doc": "raster value valid"},
        "in_ready": {"dir": "out", "width": 1, "doc": "high while busy (one value per cycle)"},
        "in_data": {"dir": "in", "width": fmt.dw, "doc": "raster values (signed dw bits), row-major"},
        "total": {"dir": "out", "width": NNZ_BITS, "doc": "non-zeros of the job so far (final at done)"},
        "rd_sel": {"dir": "in", "width": 1, "doc": "read port: 0 = row counts, 1 = column counts"},
        "rd_addr": {"dir": "in", "width": profiler_addr_bits(fmt), "doc": "read port: row or column index"},
        "rd_data": {"dir": "out", "width": count_bits(fmt), "doc": "non-zeros of that row/column (combinational)"},
        **_status_ports(PROF_ERR_NAMES),
    }


def _emit(top, ports_of, fmt: SparseParams, outdir: Path | str, name: str, timing: dict, doc: str) -> Emitted:
    check_sparse(fmt, name)
    return emit_stream_unit(top, fmt, SparseParams, ports_of, outdir, name, family="sparse", timing=timing, doc=doc)


def emit_encoder(fmt: SparseParams, outdir: Path | str, name: str = "sp_encoder") -> Emitted:
    """Write ``sp_encoder`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a SparseParams, or ``name`` is a keyword.
    """
    return _emit(sp_encoder, encoder_ports, fmt, outdir, name, {
        "raster_cycles": "H*W: in_ready is low in the raster only while out_valid and not out_ready",
        "start_to_first_input": 1,
        "done": "1 cycle after the LAST word is taken; 1 cycle after the last raster value when nnz = 0",
        "refused_start_to_done": 1,
    }, "dense raster -> sparse data stream {LAST, ROW, COL, VAL} with nnz and done")


def emit_decoder(fmt: SparseParams, outdir: Path | str, name: str = "sp_decoder") -> Emitted:
    """Write ``sp_decoder`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a SparseParams, or ``name`` is a keyword.
    """
    return _emit(sp_decoder, decoder_ports, fmt, outdir, name, {
        "raster_cycles": "H*W values, one per cycle while the next word (or the stream's end) is known "
                         "and the output is taken; +1 per dropped word",
        "start_to_first_output": 2,
        "done": "1 cycle after the last value is taken",
        "refused_start_to_done": 1,
    }, "sparse data stream -> dense raster (verification aid)")


def emit_profiler(fmt: SparseParams, outdir: Path | str, name: str = "nnz_profiler") -> Emitted:
    """Write ``nnz_profiler`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a SparseParams, or ``name`` is a keyword.
    """
    return _emit(nnz_profiler, profiler_ports, fmt, outdir, name, {
        "raster_cycles": "H*W (in_ready = busy)",
        "done": "1 cycle after the last raster value is accepted",
        "read_latency": 0,
        "refused_start_to_done": 1,
    }, "per-row, per-column and total non-zero counts of a raster")
