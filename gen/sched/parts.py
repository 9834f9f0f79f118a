"""Shared pieces of the ``sched`` generators: opcodes, the entry layout and widths. The
small MyHDL helper blocks every family uses (``new_vec``, ``wire``, ``ring_fifo``...) are
in :mod:`lockstep.gen.common`.

The entry layout (field order and widths) is :class:`~lockstep.models.sched.params.FabricParams`'
(``ENTRY_FIELDS``, ``field_width``); this module only turns it into bit offsets.
"""

from __future__ import annotations

from lockstep.models.record import ParamError, clog2
from lockstep.models.sched.params import FabricParams

from ..common import check_record

__all__ = [
    "ALU_OPS",
    "OPCODES",
    "OP",
    "PREFETCH_DEPTH",
    "check_fabric",
    "err_index",
    "field_lsb",
    "ld_addr_width",
    "tile_sel_width",
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
    check_record(fmt, FabricParams, who)
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
    return max(fmt.aw, clog2(fmt.sd))


def tile_sel_width(fmt: FabricParams) -> int:
    """Width of ``ld_tile`` / ``dbg_tile`` (at least one bit)."""
    return max(1, clog2(fmt.nt))


