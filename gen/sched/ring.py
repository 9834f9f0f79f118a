"""The ring top of the ``sched`` family: ``nt`` tiles, the ring links, the shared bus
and the chip counter (docs/sched.md sections 4, 6 and 9).

* Tile ``t``'s ``out[1]`` (next) reaches tile ``(t+1) % nt``'s ``in[0]`` (prev), and its
  ``out[0]`` reaches tile ``(t-1) % nt``'s ``in[1]``, each through ``hop_lat``
  flip-flops carrying valid + data together (the conveyor elements). The wiring reads
  ``FabricParams.link_dest`` and ``psum_dest``, so the same top also builds the mesh
  (``rows >= 2``, docs/sched.md section 4.1; :mod:`lockstep.gen.sched.mesh`).
* The bus (port 2) is one register: at the end of cycle ``c`` it takes the word of the
  lowest-numbered tile with ``out_valid[2]`` high (valid = any driver; data 0 when
  none) and drives every tile's ``in[2]`` during ``c+1``. Two or more drivers in ``c``
  raise COLLISION at ``c``: ``bus_err`` is an ``err_bits``-wide sticky vector (only the
  COLLISION bit, ``ERR_NAMES`` order, so it reads like a tile's ``err``) and
  ``bus_err_cnt`` the chip count of the first collision.
* The chip counter and every tile's local counter share ``rst`` and ``run``;
  ``tile_count`` exports the local counters so a testbench can check they are equal.
* ``ld_tile`` routes the load port (``ld_we`` only reaches tile ``ld_tile``; a value
  ``>= nt`` reaches none); ``dbg_tile`` selects whose ``dbg_rdata`` is returned (0 for
  a value ``>= nt``).
* With ``k > 0`` (docs/sched.md section 11) tile ``t``'s ``psum_out`` reaches tile
  ``(t+1) % nt``'s ``psum_in`` through ``hop_lat`` flip-flops (valid + data, like a ring
  link), and ``psum_valid``/``psum_data`` export every tile's ``psum_out`` registers.
* Per-tile taps are packed by tile (tile ``t`` in the ``t``-th slice). Besides the
  contract's taps the ring exports every tile's ``out_valid``/``out_data`` (``word``
  trace events): tile ``t`` port ``p`` at bit ``3t+p`` / ``[(3t+p)*dw +: dw]``.

With ``bus = False`` the bus hardware is still built but no tile drives ``out[2]``
(port 2 raises OPCODE) or listens to ``in[2]``, so ``bus_valid``/``bus_data`` stay 0 and
``bus_err`` stays clear. The bus has no input buffers (the tiles only TAP/FWD it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from myhdl import ConcatSignal, always_comb, always_seq, block

from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams

from ..common import Emitted, bit_of, const0, emit_stream_unit, flop, lane, new_bool, new_vec, wire
from .counter import counter_core
from .parts import check_fabric, err_index, ld_addr_width, tile_sel_width
from .tile import sched_tile, tile_ports, tile_timing

__all__ = ["emit_ring", "ring_ports", "sched_ring"]

COMM_TILE = FabricParams.COMM_TILE


@block
def _link(clk, rst, vi, di, vo, do_, hops: int):
    """``hops`` conveyor flip-flops from ``(vi, di)`` to ``(vo, do_)``."""
    insts = []
    v, d = vi, di
    for k in range(hops):
        nv, nd = (vo, do_) if k == hops - 1 else (new_bool(), new_vec(len(di)))
        insts.append(flop(clk, rst, v, d, nv, nd))
        v, d = nv, nd
    return insts


@block
def _bus_stage(any_i, coll_i, d_i, v_t, d_t, any_o, coll_o, d_o):
    """One step of the bus priority chain (tiles in increasing order): the first driver
    wins; a driver after an earlier one is a collision."""

    @always_comb
    def step():
        any_o.next = any_i or v_t
        coll_o.next = coll_i or (any_i and v_t)
        if any_i:
            d_o.next = d_i
        elif v_t:
            d_o.next = d_t
        else:
            d_o.next = 0

    return step


@block
def _bus_first(v_t, d_t, any_o, coll_o, d_o):
    """Head of the bus priority chain (tile 0)."""

    @always_comb
    def step0():
        any_o.next = v_t
        coll_o.next = 0
        if v_t:
            d_o.next = d_t
        else:
            d_o.next = 0

    return step0


@block
def _bus_reg(clk, rst, count, any_, coll, d, bus_valid, bus_data, bus_err, bus_err_cnt, bit: int):
    """The bus register and its sticky COLLISION flag."""

    @always_seq(clk.posedge, reset=rst)
    def reg_():
        bus_valid.next = any_
        bus_data.next = d
        if coll:
            bus_err.next[bit] = 1
            if bus_err == 0:
                bus_err_cnt.next = count

    return reg_


@block
def _dbg_stage(sel, t: int, d_t, d_i, d_o):
    """``d_o = d_t`` when ``sel == t``, else ``d_i`` (debug read mux chain)."""

    @always_comb
    def pick():
        if sel == t:
            d_o.next = d_t
        else:
            d_o.next = d_i

    return pick


@block
def _dbg_first(sel, d_t, d_o):
    """Head of the debug mux chain: tile 0's word when ``sel == 0``, else 0."""

    @always_comb
    def pick0():
        if sel == 0:
            d_o.next = d_t
        else:
            d_o.next = 0

    return pick0


@block
def _ld_route(ld_we, ld_tile, t: int, we_t):
    """``we_t = ld_we and ld_tile == t``."""

    @always_comb
    def route():
        we_t.next = ld_we and ld_tile == t

    return route


@block
def _wire2(a, b, x, y):
    """``x = a``, ``y = b``."""

    @always_comb
    def wires():
        x.next = a
        y.next = b

    return wires


@block
def _pack(parts, out):
    """``out = {parts[n-1], ..., parts[0]}`` (part 0 in the low bits)."""
    cat = ConcatSignal(*reversed(parts))

    @always_comb
    def packed():
        out.next = cat

    return packed


@block
def sched_ring(clk, rst, run, count, ld_we, ld_tile, ld_sel, ld_addr, ld_data,
               tile_count, issue, issue_entry, wr_en, wr_addr, wr_data, err, err_cnt, halted,
               out_valid, out_data, bus_valid, bus_data, bus_err, bus_err_cnt, dbg_tile, dbg_addr, dbg_rdata,
               fmt: FabricParams, psum_valid=None, psum_data=None, ext_valid=None, ext_data=None, susp=None,
               pad=None):
    """``nt`` tiles on a ring with a shared bus and the chip counter. Ports: :func:`ring_ports`."""
    check_fabric(fmt, "sched_ring")
    nt, dw = fmt.nt, fmt.dw
    tp = tile_ports(fmt)
    insts = []

    wrap_unused = new_bool()  # the chip counter's wrap pulse is not exported by the ring
    insts.append(counter_core(clk, rst, run, count, wrap_unused, fmt))

    sig = [{n: (new_bool() if p["width"] == 1 else new_vec(p["width"])) for n, p in tp.items()
            if n not in ("clk", "rst", "run", "ld_sel", "ld_addr", "ld_data", "dbg_addr")} for _ in range(nt)]
    comm_io = ("ext_valid", "ext_data", "hold_out", "susp", "pad")
    for t in range(nt):  # only the interface's tile uses its external input and drives these
        if fmt.comm and t != COMM_TILE:
            sig[t].update({n: const0(tp[n]["width"]) for n in comm_io})
    for t in range(nt):
        s = sig[t]
        insts.append(_ld_route(ld_we, ld_tile, t, s["ld_we"]))
        extra = {n: s[n] for n in ("psum_in_valid", "psum_in", "psum_out_valid", "psum_out", "hold", "ext_valid",
                                   "ext_data", "hold_out", "susp", "pad") if n in s}
        if fmt.comm:
            extra["comm_here"] = t == COMM_TILE
        insts.append(sched_tile(clk, rst, run, s["ld_we"], ld_sel, ld_addr, ld_data, s["in_valid"], s["in_data"],
                                s["out_valid"], s["out_data"], s["count"], s["issue"], s["issue_entry"],
                                s["wr_en"], s["wr_addr"], s["wr_data"], s["err"], s["err_cnt"], s["halted"],
                                dbg_addr, s["dbg_rdata"], fmt, **extra))
    if fmt.comm:  # the communication interface on COMM_TILE: external input, time-base broadcast
        c = sig[COMM_TILE]
        insts += [wire(ext_valid, c["ext_valid"]), wire(ext_data, c["ext_data"]), wire(c["susp"], susp),
                  wire(c["pad"], pad)]
        insts += [wire(c["hold_out"], sig[t]["hold"]) for t in range(nt)]
    if fmt.k:  # partial-sum chain: tile t -> fmt.psum_dest(t) through hop_lat flip-flops
        for t in range(nt):
            nxt = sig[fmt.psum_dest(t)]
            insts.append(_link(clk, rst, sig[t]["psum_out_valid"], sig[t]["psum_out"], nxt["psum_in_valid"],
                               nxt["psum_in"], fmt.hop_lat))
        insts.append(_pack([sig[t]["psum_out_valid"] for t in range(nt)], psum_valid))
        insts.append(_pack([sig[t]["psum_out"] for t in range(nt)], psum_data))

    # per-tile output ports as separate signals
    ov = [[new_bool() for _ in range(3)] for _ in range(nt)]
    od = [[new_vec(dw) for _ in range(3)] for _ in range(nt)]
    for t in range(nt):
        for p in range(3):
            insts += [bit_of(sig[t]["out_valid"], p, ov[t][p]), lane(sig[t]["out_data"], p * dw, dw, od[t][p])]

    # links: out[q] of tile t -> fmt.link_dest(t, q) (the ring's, or a mesh's: section 4.1)
    iv = [[new_bool() for _ in range(3)] for _ in range(nt)]
    idt = [[new_vec(dw) for _ in range(3)] for _ in range(nt)]
    for t in range(nt):
        for q in (1, 0):
            d, dq = fmt.link_dest(t, q)
            insts.append(_link(clk, rst, ov[t][q], od[t][q], iv[d][dq], idt[d][dq], fmt.hop_lat))

    # the bus: priority chain over tiles 0..nt-1, then one register
    b_any = [new_bool() for _ in range(nt)]
    b_coll = [new_bool() for _ in range(nt)]
    b_d = [new_vec(dw) for _ in range(nt)]
    insts.append(_bus_first(ov[0][2], od[0][2], b_any[0], b_coll[0], b_d[0]))
    for t in range(1, nt):
        insts.append(_bus_stage(b_any[t - 1], b_coll[t - 1], b_d[t - 1], ov[t][2], od[t][2],
                                b_any[t], b_coll[t], b_d[t]))
    insts.append(_bus_reg(clk, rst, count, b_any[-1], b_coll[-1], b_d[-1], bus_valid, bus_data, bus_err,
                          bus_err_cnt, err_index(fmt, "COLLISION")))
    for t in range(nt):
        insts.append(_wire2(bus_valid, bus_data, iv[t][2], idt[t][2]))
        insts.append(_pack(iv[t], sig[t]["in_valid"]))
        insts.append(_pack(idt[t], sig[t]["in_data"]))

    # debug read: a mux chain over the tiles (0 for dbg_tile >= nt)
    chain = [new_vec(dw) for _ in range(nt)]
    insts.append(_dbg_first(dbg_tile, sig[0]["dbg_rdata"], chain[0]))
    for t in range(1, nt):
        insts.append(_dbg_stage(dbg_tile, t, sig[t]["dbg_rdata"], chain[t - 1], chain[t]))
    insts.append(wire(chain[-1], dbg_rdata))

    # packed taps
    for name, out in (("count", tile_count), ("issue", issue), ("issue_entry", issue_entry), ("wr_en", wr_en),
                      ("wr_addr", wr_addr), ("wr_data", wr_data), ("err", err), ("err_cnt", err_cnt),
                      ("halted", halted), ("out_valid", out_valid), ("out_data", out_data)):
        insts.append(_pack([sig[t][name] for t in range(nt)], out))
    return insts


def ring_ports(fmt: FabricParams) -> dict[str, dict]:
    """Port list of :func:`sched_ring` (name -> dir, width, doc); docs/sched.md section 9."""
    nt, cw, dw, aw, ew = fmt.nt, fmt.cw, fmt.dw, fmt.aw, fmt.ew
    tw = tile_sel_width(fmt)
    tp = tile_ports(fmt)

    def per_tile(name: str, doc: str, out_name: str | None = None) -> tuple[str, dict]:
        return out_name or name, {"dir": "out", "width": nt * tp[name]["width"],
                                  "doc": f"{doc}; tile t at [t*{tp[name]['width']} +: {tp[name]['width']}]"}

    ports = {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset"},
        "run": {"dir": "in", "width": 1, "doc": "count, fetch and issue (all tiles and the chip counter)"},
        "count": {"dir": "out", "width": cw, "doc": "chip counter"},
        "ld_we": {"dir": "in", "width": 1, "doc": "load-port write enable"},
        "ld_tile": {"dir": "in", "width": tw, "doc": "tile the load port writes"},
        "ld_sel": {"dir": "in", "width": 1, "doc": "0 = schedule memory, 1 = data memory"},
        "ld_addr": {"dir": "in", "width": ld_addr_width(fmt), "doc": "load address"},
        "ld_data": {"dir": "in", "width": ew, "doc": "load word (data loads use the low dw bits)"},
    }
    for name, doc, out_name in (
        ("count", "local counters", "tile_count"),
        ("issue", "issue taps", None),
        ("issue_entry", "issued entry words", None),
        ("wr_en", "write enables per source", None),
        ("wr_addr", "write addresses per source", None),
        ("wr_data", "write data per source", None),
        ("err", "sticky error vectors", None),
        ("err_cnt", "counts of the first errors", None),
        ("halted", "halted flags", None),
        ("out_valid", "link/bus output valids (port p of tile t at bit 3t+p)", None),
        ("out_data", "link/bus output data", None),
    ):
        k, v = per_tile(name, doc, out_name)
        ports[k] = v
    ports.update({
        "bus_valid": {"dir": "out", "width": 1, "doc": "bus register valid (drives every in[2])"},
        "bus_data": {"dir": "out", "width": dw, "doc": "bus register data"},
        "bus_err": {"dir": "out", "width": fmt.err_bits, "doc": "sticky bus errors (COLLISION bit only)"},
        "bus_err_cnt": {"dir": "out", "width": cw, "doc": "chip count of the first collision"},
        "dbg_tile": {"dir": "in", "width": tw, "doc": "debug read: tile"},
        "dbg_addr": {"dir": "in", "width": aw, "doc": "debug read: data-memory address"},
        "dbg_rdata": {"dir": "out", "width": dw, "doc": "debug read data (combinational)"},
    })
    if fmt.comm:
        ports.update({
            "ext_valid": {"dir": "in", "width": 1, "doc": "external word valid: pushed into tile 0's FIFO (no ready)"},
            "ext_data": {"dir": "in", "width": dw, "doc": "external word"},
            "susp": {"dir": "out", "width": 1, "doc": "tile 0's CHECK suspends in this cycle (time base held)"},
            "pad": {"dir": "out", "width": 1, "doc": "tile 0's FIFO RECV writes the pad word in this cycle"},
        })
    if fmt.k:
        kw = fmt.k * fmt.accw
        ports["psum_valid"] = {"dir": "out", "width": nt, "doc": "psum_out_valid of tile t at bit t"}
        ports["psum_data"] = {"dir": "out", "width": nt * kw,
                              "doc": f"psum_out of tile t at [t*{kw} +: {kw}] (lane c at +c*accw)"}
    return ports


def emit_ring(fmt: FabricParams, outdir: Path | str, name: str = "sched_ring") -> Emitted:
    """Write the ring as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a :class:`FabricParams`, ``name`` is a keyword, or
            ``fmt.rows != 1`` (a mesh: :func:`~lockstep.gen.sched.emit_mesh`).
    """
    check_fabric(fmt, name)
    if fmt.rows != 1:
        raise ParamError(f"{name}: FabricParams.rows={fmt.rows} describes a mesh; emit it with emit_mesh")
    return emit_top(sched_ring, fmt, outdir, name, fmt.nt - 1, {},
                    f"ring of {fmt.nt} counter-timed tiles with hop_lat={fmt.hop_lat} conveyor flip-flops per hop, "
                    "a shared bus register and the chip counter; no flow control")


def emit_top(top: Any, fmt: FabricParams, outdir: Path | str, name: str, max_hops: int, timing: dict[str, Any],
             doc: str) -> Emitted:
    """:func:`emit_stream_unit` of a top with the ring's ports (:func:`ring_ports`): the
    tile's timing, ``nt``, the bus register and ``l_path`` for 1..``max_hops`` hops,
    plus ``timing``."""
    tim = dict(tile_timing(fmt))
    tim.update({"nt": fmt.nt, "bus_register": 1,
                "l_path_hops": {str(h): fmt.l_path(h) for h in range(1, max_hops + 1)}}, **timing)
    return emit_stream_unit(top, fmt, FabricParams, ring_ports, outdir, name, family="sched", timing=tim, doc=doc)
