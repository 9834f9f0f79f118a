"""``gemm_top``: the GEMM tile's test top (docs/gemm.md section 9): one
:func:`~.tile.gemm_tile` and the flat memory behind its memory port, with a load port and
a read-back port for the testbench.

* The flat memory holds ``mem_elems`` signed ``8*eb``-bit elements in ``V`` banks: element
  ``e`` is row ``e // V`` of bank ``e mod V``, so the tile's ``V``-lane read at any element
  index (lane ``i`` = element ``mem_raddr + i``, modulo ``mem_elems``) and its masked
  ``V``-lane write touch each bank once. The tile's element index is taken modulo
  ``mem_elems`` (a job the tile accepts stays inside the memory: OOB).
* Load port: ``ld_we`` writes ``ld_data`` to element ``ld_addr`` at the end of the cycle
  (use it while the tile is idle; a tile write to the same element in the same cycle
  wins). Read-back: ``rb_data`` = element ``rb_addr`` (combinational).
* ``rst`` clears the memory (and resets the tile).

Every other port is the tile's own.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import always, always_comb, block

from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import ParamError

from ..common import Emitted, cat_lanes, emit_stream_unit, lane, mem_read, new_bool, new_vec, split_low, wire
from .agu import gemm_widths
from .detect import check_gemm
from .tile import gemm_tile, tile_ports, tile_timing

__all__ = ["emit_top", "gemm_top", "top_check", "top_ports"]

#: The tile ports the flat memory drives or reads.
_MEM_PORTS = ("mem_raddr", "mem_rdata", "mem_we", "mem_waddr", "mem_wdata", "mem_wmask")


def top_check(fmt: object, who: str) -> GemmParams:
    """Refuse parameters the test top cannot be built for.

    Raises:
        ParamError: ``fmt`` is not a GemmParams, or the memory has fewer than ``v``
            elements (one row per bank at least).
    """
    fmt = check_gemm(fmt, who)
    if fmt.mem_elems < fmt.v:
        raise ParamError(f"{who}: GemmParams.mem_aw={fmt.mem_aw}: the flat memory needs at least v = {fmt.v} elements")
    return fmt


@block
def _bank(clk, rst, mem, b: int, raddr, rdata, rb_row, rb_q, we, waddr, wlanes, wmask, ld_we, ld_addr, ld_data,
          fmt: GemmParams):
    """Bank ``b``: rows of the elements ``e = b mod V``.

    Ports:
        raddr: the tile's read index ``A``; ``rdata``: element ``A + ((b - A) mod V)``.
        rb_row, rb_q: the read-back row and its element.
        we, waddr, wlanes, wmask: the tile's write; lane ``(b - W) mod V`` lands here.
        ld_*: the load port (element ``ld_addr`` when it is in this bank).
    """
    lg_v = gemm_widths(fmt).lg_v
    ma = fmt.mem_aw
    ra = ma - lg_v
    bc = b
    rrow, wrow, lrow = new_vec(ra), new_vec(ra), new_vec(ra)
    wl = new_vec(lg_v)
    wsel, lsel = new_bool(), new_bool()
    n = len(mem)

    @always_comb
    def addr():
        # a lane below the address's position in its row lies in the next row
        if raddr[lg_v:] > bc:
            rrow.next = raddr[ma:lg_v] + 1
        else:
            rrow.next = raddr[ma:lg_v]
        if waddr[lg_v:] > bc:
            wrow.next = waddr[ma:lg_v] + 1
        else:
            wrow.next = waddr[ma:lg_v]
        wl.next = bc - waddr[lg_v:]
        lrow.next = ld_addr[ma:lg_v]
        lsel.next = ld_we and ld_addr[lg_v:] == bc

    @always_comb
    def wen():
        wsel.next = we and wmask[wl]

    @always(clk.posedge)
    def write():
        if rst:
            for i in range(n):
                mem[i].next = 0
        elif wsel:
            mem[wrow].next = wlanes[wl]
        elif lsel:
            mem[lrow].next = ld_data

    @always_comb
    def read():
        rdata.next = mem[rrow]
        rb_q.next = mem[rb_row]

    return addr, wen, write, read


@block
def _bank1(clk, rst, mem, raddr, rdata, rb_addr, rb_data, we, wdata, waddr, wmask, ld_we, ld_addr, ld_data):
    """``V = 1``: one bank, element ``e`` at row ``e``."""
    n = len(mem)

    @always(clk.posedge)
    def write():
        if rst:
            for i in range(n):
                mem[i].next = 0
        elif we and wmask:
            mem[waddr].next = wdata
        elif ld_we:
            mem[ld_addr].next = ld_data

    @always_comb
    def read():
        rdata.next = mem[raddr]
        rb_data.next = mem[rb_addr]

    return write, read


@block
def _rot_lane(bq, lo, i: int, out, lg_v: int):
    """Read lane ``i``: bank ``(lo + i) mod V``."""
    ic = i
    sel = new_vec(lg_v)

    @always_comb
    def s():
        sel.next = lo + ic

    @always_comb
    def m():
        out.next = bq[sel]

    return s, m


@block
def gemm_top(clk, rst, csr_we, csr_addr, csr_wdata, csr_raddr, csr_rdata, tr_valid, tr_kind, tr_addr, tr_bytes, done,
             busy, ld_we, ld_addr, ld_data, rb_addr, rb_data, fmt: GemmParams):
    """The tile with the flat memory, a load port and a read-back port. Ports:
    :func:`top_ports`."""
    p = top_check(fmt, "gemm_top")
    wd = gemm_widths(p)
    v, ew, ma, lg_v = p.v, p.ew, p.mem_aw, wd.lg_v
    tp = tile_ports(p)
    sig = {n: (new_bool() if tp[n]["width"] == 1 else new_vec(tp[n]["width"])) for n in _MEM_PORTS}
    insts = [gemm_tile(clk, rst, csr_we, csr_addr, csr_wdata, csr_raddr, csr_rdata, tr_valid=tr_valid, tr_kind=tr_kind,
                       tr_addr=tr_addr, tr_bytes=tr_bytes, done=done, busy=busy, fmt=p, **sig)]
    # the tile's element indices modulo mem_elems (an accepted job stays inside: OOB)
    ra, wa = new_vec(ma), new_vec(ma)
    if wd.ea > ma:
        ra_unused, wa_unused = new_vec(wd.ea - ma), new_vec(wd.ea - ma)
        insts += [split_low(sig["mem_raddr"], ra, ra_unused), split_low(sig["mem_waddr"], wa, wa_unused)]
    else:
        insts += [wire(sig["mem_raddr"], ra), wire(sig["mem_waddr"], wa)]
    if v == 1:
        mem = [new_vec(ew) for _ in range(p.mem_elems)]
        insts.append(_bank1(clk, rst, mem, ra, sig["mem_rdata"], rb_addr, rb_data, sig["mem_we"], sig["mem_wdata"], wa,
                            sig["mem_wmask"], ld_we, ld_addr, ld_data))
        return insts
    rows = p.mem_elems // v
    wl = [new_vec(ew) for _ in range(v)]
    insts += [lane(sig["mem_wdata"], i * ew, ew, wl[i]) for i in range(v)]
    bq, rbq = [new_vec(ew) for _ in range(v)], [new_vec(ew) for _ in range(v)]
    rb_row, rb_bank = new_vec(ma - lg_v), new_vec(lg_v)
    insts += [lane(rb_addr, lg_v, ma - lg_v, rb_row), lane(rb_addr, 0, lg_v, rb_bank)]
    for b in range(v):
        mem = [new_vec(ew) for _ in range(rows)]
        insts.append(_bank(clk, rst, mem, b, ra, bq[b], rb_row, rbq[b], sig["mem_we"], wa, wl, sig["mem_wmask"], ld_we,
                           ld_addr, ld_data, p))
    ra_lo = new_vec(lg_v)
    insts.append(lane(ra, 0, lg_v, ra_lo))
    lanes = [new_vec(ew) for _ in range(v)]
    insts += [_rot_lane(bq, ra_lo, i, lanes[i], lg_v) for i in range(v)]
    insts += [cat_lanes(lanes, sig["mem_rdata"]), mem_read(rbq, rb_bank, rb_data)]
    return insts


def top_ports(fmt: GemmParams) -> dict[str, dict]:
    """Port list of :func:`gemm_top`: the tile's ports but the memory port, and the load
    and read-back ports."""
    tp = tile_ports(fmt)
    out = {n: tp[n] for n in tp if n not in _MEM_PORTS}
    out.update({
        "ld_we": {"dir": "in", "width": 1, "doc": "load port: write ld_data to element ld_addr (while idle)"},
        "ld_addr": {"dir": "in", "width": fmt.mem_aw, "doc": "load port: element index"},
        "ld_data": {"dir": "in", "width": fmt.ew, "doc": "load port: the element (signed)"},
        "rb_addr": {"dir": "in", "width": fmt.mem_aw, "doc": "read-back: element index"},
        "rb_data": {"dir": "out", "width": fmt.ew, "doc": "read-back: the element (combinational)"},
    })
    return out


def emit_top(fmt: GemmParams, outdir: Path | str, name: str = "gemm_top") -> Emitted:
    """Write the test top for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: as :func:`top_check`, or ``name`` is a keyword.
    """
    top_check(fmt, name)
    return emit_stream_unit(gemm_top, fmt, GemmParams, top_ports, outdir, name, family="gemm",
                            timing={**tile_timing(fmt), "mem_elems": fmt.mem_elems, "ld_latency": 1, "rb_latency": 0},
                            doc="GEMM tile test top: gemm_tile, a flat memory of V banks, a load and a read-back port")
