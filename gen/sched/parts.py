"""Shared pieces of the ``sched`` generators: opcodes, the entry layout, widths, and
small MyHDL helper blocks whose structure is chosen in Python (so every generated
expression has explicit, equal operand widths for ``verilator -Wall``).

The entry layout (field order and widths) is :class:`~lockstep.models.formats.FabricParams`'
(``ENTRY_FIELDS``, ``field_width``); this module only turns it into bit offsets.
"""

from __future__ import annotations

from myhdl import Signal, always, always_comb, always_seq, block, intbv
from myhdl._Signal import Constant

from lockstep.models.formats import FabricParams, ParamError, _clog2

from ..common import lane, resize

__all__ = [
    "ALU_OPS",
    "OPCODES",
    "OP",
    "PREFETCH_DEPTH",
    "bit_of",
    "check_fabric",
    "err_index",
    "field_lsb",
    "flop",
    "lane",
    "ld_addr_width",
    "new_bool",
    "new_vec",
    "resize",
    "tile_sel_width",
    "wire",
]

#: Opcodes of docs/sched.md section 3 (the reserved ones raise OPCODE); one table,
#: ``FabricParams.OPCODES``, shared with the golden model and the assembler.
OPCODES: dict[str, int] = dict(FabricParams.OPCODES)
OP = OPCODES
#: ALU operation codes stored inside the ALU unit (not entry opcodes).
ALU_OPS = {"VADD": 0, "VMUL": 1, "DOT": 2, "VPU": 3}

#: Depth of the tile's prefetch queue of expanded entries (see gen/sched/fetch.py).
PREFETCH_DEPTH = 2


def check_fabric(fmt: object, who: str) -> FabricParams:
    """Refuse anything but a :class:`FabricParams` (the message names the type)."""
    if not isinstance(fmt, FabricParams):
        raise ParamError(f"{who}: params must be a FabricParams, got {type(fmt).__name__}")
    if fmt.ENTRY_FIELDS[0] != "t":
        # The fetch path rebuilds an expanded entry as concat(T, rest of the word).
        raise ParamError(f"{who}: FabricParams.ENTRY_FIELDS must start with the T field")
    return fmt


def field_lsb(fmt: FabricParams) -> dict[str, tuple[int, int]]:
    """Entry field name -> (lsb, width), from ``ENTRY_FIELDS`` (MSB first)."""
    out: dict[str, tuple[int, int]] = {}
    pos = fmt.ew
    for f in fmt.ENTRY_FIELDS:
        w = fmt.field_width(f)
        pos -= w
        out[f] = (pos, w)
    return out


def err_index(fmt: FabricParams, name: str) -> int:
    """Bit of error ``name`` in the sticky vector (``ERR_NAMES`` order)."""
    return fmt.ERR_NAMES.index(name)


def ld_addr_width(fmt: FabricParams) -> int:
    """Width of ``ld_addr``: it addresses the schedule memory (``sd`` words) and the
    data memory (``words``), whichever needs more bits."""
    return max(fmt.aw, _clog2(fmt.sd))


def tile_sel_width(fmt: FabricParams) -> int:
    """Width of ``ld_tile`` / ``dbg_tile`` (at least one bit)."""
    return max(1, _clog2(fmt.nt))


@block
def wire(a, y):
    """``y = a``: a connection the flattened design needs as a real signal."""

    @always_comb
    def connect():
        y.next = a

    return connect


@block
def ring_fifo(clk, rst, push, pop, din, head, occ, depth: int):
    """A ``depth``-word FIFO in a circular buffer: ``head`` is the oldest word
    (combinational), ``occ`` the occupancy (the caller's width); ``pop`` drops the head
    and ``push`` writes ``din`` at the end of the cycle. The caller keeps both legal."""
    pw_ = max(1, _clog2(depth))
    last_slot = depth - 1
    rp, wp = new_vec(pw_), new_vec(pw_)
    fifo = [Signal(intbv(0)[len(din):]) for _ in range(depth)]

    @always_comb
    def fifo_read():
        head.next = fifo[rp]

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if pop:
            if rp == last_slot:
                rp.next = 0
            else:
                rp.next = rp + 1
        if push:
            if wp == last_slot:
                wp.next = 0
            else:
                wp.next = wp + 1
        if push and not pop:
            occ.next = occ + 1
        elif pop and not push:
            occ.next = occ - 1

    @always(clk.posedge)
    def fifo_write():
        if push:
            fifo[wp].next = din

    return fifo_read, regs, fifo_write


def const0(width: int) -> Constant:
    """A constant 0 of ``width`` bits (converted to a localparam): a signal this instance
    never drives, e.g. the communication-interface outputs of the other tiles."""
    return Constant(bool(0)) if width == 1 else Constant(intbv(0)[width:])


@block
def bit_of(bus, i, out):
    """``out = bus[i]`` (a bool signal)."""

    @always_comb
    def pick():
        out.next = bus[i]

    return pick


@block
def flop(clk, rst, vi, di, vo, do_):
    """One conveyor flip-flop: ``(vo, do_) <= (vi, di)`` (reset to 0)."""

    @always_seq(clk.posedge, reset=rst)
    def stage():
        vo.next = vi
        do_.next = di

    return stage


def new_bool() -> Signal:
    """A fresh 1-bit signal."""
    return Signal(bool(0))


def new_vec(width: int) -> Signal:
    """A fresh unsigned vector signal."""
    return Signal(intbv(0)[width:])
