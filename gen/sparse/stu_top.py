"""``stu_top``: the STU's unit-test top (docs/sparse.md section 9): one :func:`~.stu.stu`
with simple register-array memories behind its read ports and a bulk load port, so the
STU's testbench does not depend on the write-side timing of ``fm_mem_unit`` and ``w_mem``.

* Load port: ``ld_we`` writes ``ld_data`` at ``ld_addr`` of memory ``ld_sel`` at the end
  of the cycle: 0 = data entries (the data stream word ``{LAST, ROW, COL, VAL}``; LAST is
  ignored), 1 = conv weights (the weight stream word ``{LAST, A, B, W}``), 2 = the FC
  matrix (``W[o][i]`` at ``o * wmax + i``, low ``ww`` bits). ``rst`` clears them.
* Reads are combinational, as the real memories': group ``g`` returns entries
  ``g*p + l`` with ``rd_lane_valid = g*p + l < cfg_nnz``, weight read lane ``i``
  returns entry ``j`` with ``w_rd_valid = j < cfg_wnz`` (the memories hold exactly the
  job's ``q`` entries and ``WNZ`` weights), the gather returns ``W[o][idx]``.

Every other port is the STU's own.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import Signal, always, always_comb, block

from lockstep.models.record import clog2
from lockstep.models.sparse.params import SparseParams

from ..common import Emitted, cat_lanes, emit_stream_unit, lane, new_bool, new_vec, resize, wire
from .stu import _acc_read
from .stu import stu, stu_check, stu_ports, stu_timing, stu_widths

__all__ = ["LD_SEL", "emit_stu_top", "ld_bits", "stu_top", "stu_top_ports"]

#: ``ld_sel`` codes of the load port.
LD_SEL = {"data": 0, "weights": 1, "fc": 2}
#: The STU ports the top's memories drive or read.
_MEM_PORTS = ("rd_group", "rd_row", "rd_col", "rd_val", "rd_lane_valid", "w_rd_idx", "w_rd_a", "w_rd_b", "w_rd_w",
              "w_rd_valid", "fc_rd_row", "fc_rd_idx", "fc_rd_w")


def ld_bits(fmt: SparseParams) -> tuple[int, int]:
    """Widths of ``ld_addr`` (the largest memory) and ``ld_data`` (the widest word)."""
    words = max(fmt.depth, fmt.kmax * fmt.kmax, fmt.nmax_out * fmt.wmax)
    return max(1, clog2(words)), max(fmt.data_bits, fmt.weight_bits, fmt.ww)


@block
def _ram(clk, rst, we, addr, din, mem):
    """``mem[addr] <= din`` when ``we`` (``addr < len(mem)``, checked by the caller); ``rst``
    clears every word."""
    n = len(mem)

    @always(clk.posedge)
    def write():
        if rst:
            for i in range(n):
                mem[i].next = 0
        elif we:
            mem[addr].next = din

    return write


@block
def _ld_decode(ld_we, ld_sel, ld_addr, ld_data, sel: int, size: int, we, addr, din):
    """Load-port write enable and fields of memory ``sel`` (``size`` words)."""
    ab = len(ld_addr)
    insts = [resize(ld_addr, addr), resize(ld_data, din)]
    sc = sel
    if size == 1 << ab:

        @always_comb
        def en_all():
            we.next = ld_we and ld_sel == sc

        insts.append(en_all)
    else:

        @always_comb
        def en():
            we.next = ld_we and ld_sel == sc and ld_addr < size

        insts.append(en)
    return insts


@block
def _last_bits(ld_data, n: int):
    """The top ``n`` bits of ``ld_data`` (a stream word's LAST) are not stored."""
    last_unused = new_vec(n)
    lo = len(ld_data) - n

    @always_comb
    def sink():
        last_unused.next = ld_data[len(ld_data):lo]

    return sink


@block
def _data_lane(mem, rd_group, cfg_nnz, l: int, row, col, val, valid, fmt: SparseParams):
    """Data read lane ``l``: entry ``e = g*p + l``; ``valid = e < cfg_nnz`` (0 beyond)."""
    p, depth, rb, cb, dw = fmt.p, fmt.depth, fmt.rb, fmt.cb, fmt.dw
    wd = stu_widths(fmt)
    inside = (p << len(rd_group)) <= depth  # every group's entries are in the memory: no guard
    ei = new_vec(max(1, clog2(depth)))
    ew = max(len(ei), len(cfg_nnz)) if inside else wd.eb + len(rd_group) + 1
    gx, qx, e = new_vec(ew), new_vec(ew), new_vec(ew)
    word = new_vec(rb + cb + dw)
    lc = l

    @always_comb
    def addr():
        e.next = gx * p + lc

    if inside:

        @always_comb
        def rd():
            word.next = mem[ei]
            valid.next = e < qx

    else:

        @always_comb
        def rd():
            if e < depth:
                word.next = mem[ei]
                valid.next = e < qx
            else:
                word.next = 0
                valid.next = 0

    return (resize(rd_group, gx), resize(cfg_nnz, qx), addr, resize(e, ei), rd, lane(word, cb + dw, rb, row),
            lane(word, dw, cb, col), lane(word, 0, dw, val))


@block
def _weight_lane(mem, idx, cfg_wnz, a, b, w, valid, fmt: SparseParams):
    """Weight read lane: entry ``j = idx``; ``valid = j < cfg_wnz`` (0 beyond the memory)."""
    kb, ww = fmt.kb, fmt.ww
    xw = max(len(idx), len(cfg_wnz))
    jx, zx = new_vec(xw), new_vec(xw)
    word = new_vec(2 * kb + ww)
    inr = new_bool()

    @always_comb
    def ok():
        valid.next = inr and jx < zx

    return (resize(idx, jx), resize(cfg_wnz, zx), _acc_read(mem, idx, word, len(mem), inr), ok,
            lane(word, kb + ww, kb, a), lane(word, ww, kb, b), lane(word, 0, ww, w))


@block
def _fc_lane(mem, row, idx, w, fmt: SparseParams):
    """FC gather lane: ``w = W[row][idx]`` at ``row * wmax + idx`` (0 when ``idx >= wmax``)."""
    wmax, n = fmt.wmax, fmt.nmax_out * fmt.wmax
    aw = max(1, clog2(n))
    inside = (1 << len(idx)) <= wmax and (1 << len(row)) <= fmt.nmax_out  # every index pair is in the matrix
    xw = aw if inside else aw + len(row) + len(idx) + 1
    rx, ix, a = new_vec(xw), new_vec(xw), new_vec(xw)
    ai = new_vec(aw)

    @always_comb
    def addr():
        a.next = rx * wmax + ix

    if inside:

        @always_comb
        def rd():
            w.next = mem[ai]

    else:

        @always_comb
        def rd():
            if ix < wmax and a < n:
                w.next = mem[ai]
            else:
                w.next = 0

    return resize(row, rx), resize(idx, ix), addr, resize(a, ai), rd


@block
def stu_top(clk, rst, ld_we, ld_sel, ld_addr, ld_data, start, cfg_k, cfg_h, cfg_w, cfg_nnz, cfg_wnz, cfg_mode,
            cfg_n_out, cfg_emit, cfg_relu, cfg_pool, cfg_shift, cfg_dense, busy, done, err, o_valid, o_ready, o_data,
            cyc_compute, cyc_drain, n_rounds, n_mults, n_deferred, nnz_out, acc_we, acc_addr, fmt: SparseParams,
            fifo_occ=None):
    """The STU with register-array memories and a load port. Ports: :func:`stu_top_ports`."""
    fmt = stu_check(fmt, "stu_top")
    ports = dict(start=start, cfg_k=cfg_k, cfg_h=cfg_h, cfg_w=cfg_w, cfg_nnz=cfg_nnz, cfg_wnz=cfg_wnz,
                 cfg_mode=cfg_mode, cfg_n_out=cfg_n_out, cfg_emit=cfg_emit, cfg_relu=cfg_relu, cfg_pool=cfg_pool,
                 cfg_shift=cfg_shift, cfg_dense=cfg_dense, busy=busy, done=done, err=err, o_valid=o_valid,
                 o_ready=o_ready, o_data=o_data, cyc_compute=cyc_compute, cyc_drain=cyc_drain, n_rounds=n_rounds,
                 n_mults=n_mults, n_deferred=n_deferred, nnz_out=nnz_out, acc_we=acc_we, acc_addr=acc_addr)
    if fifo_occ is not None:
        ports["fifo_occ"] = fifo_occ
    wd = stu_widths(fmt)
    p, u, rb, cb, dw, kb, ww = fmt.p, fmt.u, fmt.rb, fmt.cb, fmt.dw, fmt.kb, fmt.ww
    insts = []
    sp = stu_ports(fmt)
    sig = {n: (Signal(bool(0)) if sp[n]["width"] == 1 else new_vec(sp[n]["width"])) for n in _MEM_PORTS}

    # memories and their load decode
    nd, nw, nf = fmt.depth, fmt.kmax * fmt.kmax, fmt.nmax_out * fmt.wmax
    dmem = [new_vec(rb + cb + dw) for _ in range(nd)]
    wmem = [new_vec(2 * kb + ww) for _ in range(nw)]
    fmem = [new_vec(ww) for _ in range(nf)]
    for sel, mem, width in ((LD_SEL["data"], dmem, rb + cb + dw), (LD_SEL["weights"], wmem, 2 * kb + ww),
                            (LD_SEL["fc"], fmem, ww)):
        m_we, m_addr, m_din = new_bool(), new_vec(max(1, clog2(len(mem)))), new_vec(width)
        insts += [_ld_decode(ld_we, ld_sel, ld_addr, ld_data, sel, len(mem), m_we, m_addr, m_din),
                  _ram(clk, rst, m_we, m_addr, m_din, mem)]
    if len(ld_data) > max(rb + cb + dw, 2 * kb + ww, ww):  # a stream word's LAST bit
        insts.append(_last_bits(ld_data, len(ld_data) - max(rb + cb + dw, 2 * kb + ww, ww)))

    # data reads
    rows, cols, vals, valids = ([new_vec(rb) for _ in range(p)], [new_vec(cb) for _ in range(p)],
                                [new_vec(dw) for _ in range(p)], [new_bool() for _ in range(p)])
    insts += [_data_lane(dmem, sig["rd_group"], ports["cfg_nnz"], l, rows[l], cols[l], vals[l], valids[l], fmt)
              for l in range(p)]
    insts += [cat_lanes(rows, sig["rd_row"]), cat_lanes(cols, sig["rd_col"]), cat_lanes(vals, sig["rd_val"]),
              cat_lanes(valids, sig["rd_lane_valid"])]

    # weight reads (u lanes)
    idxs = [new_vec(wd.jb) for _ in range(u)]
    was, wbs, wws, wvs = ([new_vec(kb) for _ in range(u)], [new_vec(kb) for _ in range(u)],
                          [new_vec(ww) for _ in range(u)], [new_bool() for _ in range(u)])
    for i in range(u):
        insts.append(lane(sig["w_rd_idx"], i * wd.jb, wd.jb, idxs[i]) if u > 1 else wire(sig["w_rd_idx"], idxs[i]))
        insts.append(_weight_lane(wmem, idxs[i], ports["cfg_wnz"], was[i], wbs[i], wws[i], wvs[i], fmt))
    insts += [cat_lanes(was, sig["w_rd_a"]), cat_lanes(wbs, sig["w_rd_b"]), cat_lanes(wws, sig["w_rd_w"]),
              cat_lanes(wvs, sig["w_rd_valid"])]

    # FC gather
    fidx, fws = [new_vec(wd.ib) for _ in range(p)], [new_vec(ww) for _ in range(p)]
    for l in range(p):
        insts.append(lane(sig["fc_rd_idx"], l * wd.ib, wd.ib, fidx[l]) if p > 1 else wire(sig["fc_rd_idx"], fidx[l]))
        insts.append(_fc_lane(fmem, sig["fc_rd_row"], fidx[l], fws[l], fmt))
    insts.append(cat_lanes(fws, sig["fc_rd_w"]))

    insts.append(stu(clk, rst, fmt=fmt, **ports, **sig))
    return insts


def stu_top_ports(fmt: SparseParams) -> dict[str, dict]:
    """Port list of :func:`stu_top`: the load port and the STU's ports but the memory reads."""
    ab, db = ld_bits(fmt)
    sp = stu_ports(fmt)
    out = {n: sp[n] for n in ("clk", "rst")}
    out.update({
        "ld_we": {"dir": "in", "width": 1, "doc": "load-port write enable"},
        "ld_sel": {"dir": "in", "width": 2, "doc": "0 data entries, 1 conv weights, 2 FC matrix (W[o][i] at o*wmax+i)"},
        "ld_addr": {"dir": "in", "width": ab, "doc": "load address"},
        "ld_data": {"dir": "in", "width": db, "doc": "load word (a data or weight stream word, or an FC weight)"},
    })
    out.update({n: v for n, v in sp.items() if n not in _MEM_PORTS and n not in ("clk", "rst")})
    return out


def emit_stu_top(fmt: SparseParams, outdir: Path | str, name: str = "stu_top") -> Emitted:
    """Write the STU test top for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: as :func:`~.stu.emit_stu`.
    """
    stu_check(fmt, name)
    return emit_stream_unit(stu_top, fmt, SparseParams, stu_top_ports, outdir, name, family="sparse",
                            timing=stu_timing(fmt),
                            doc="STU unit-test top: the STU, register-array data / weight / FC memories, a load port")
