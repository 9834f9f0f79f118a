"""Parameter record of the ``sched`` family (spec 000; docs/sched.md section 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..record import ParamError, Record, show

__all__ = ["FabricParams"]


@dataclass(frozen=True)
class FabricParams(Record):
    """Counter-timed tile fabric parameters (spec 000; the contract is docs/sched.md).

    Attributes:
        cw: counter width; the count wraps modulo ``2**cw`` (the patent: 24 or 32).
        nt: tiles on the ring (or the mesh).
        dw: data word width; arithmetic wraps modulo ``2**dw``.
        aw: data-memory address width (``2**aw`` words per tile).
        sd: schedule-memory entries per tile.
        hop_lat: conveyor flip-flops per ring hop (the patent: one per tile).
        buf_d: input-buffer depth per port.
        l_alu: ALU latency in cycles.
        bus: a shared bus (port 2) joins every tile.
        k: MAC array size (``k x k`` weight-stationary cells per tile); 0 = no MAC array
            (LDW, SWPW, MATVEC, VPU, MATVR then raise OPCODE). docs/sched.md section 11.
        accw: partial-sum width of the MAC array and its psum chain.
        vpu_shift: right shift of the VPU and MATVR operations (after bias and ReLU).
        comm: tile 0 gets the communication interface: the external FIFO (its RECV port
            3) and CHECK (suspend or pad). docs/sched.md section 11.
        fifo_d: depth of the external FIFO (``comm`` only).
        rows: 1 = the ring; ``>= 2``: a ``rows x (nt // rows)`` torus mesh of the same
            tiles (docs/sched.md section 4.1). The links are :meth:`link_dest`.

    Raises:
        ParamError: on a value that cannot work, naming the field.
    """

    cw: int = 24
    nt: int = 3
    rows: int = 1
    dw: int = 16
    aw: int = 8
    sd: int = 64
    hop_lat: int = 1
    buf_d: int = 8
    l_alu: int = 2
    bus: bool = True
    k: int = 0
    accw: int = 32
    vpu_shift: int = 0
    comm: bool = False
    fifo_d: int = 16

    #: A word is on ``out`` the cycle after its read (send pipeline).
    P_SEND: ClassVar[int] = 1
    #: An arrived word can be popped the cycle after it is pushed (receive pipeline).
    P_RECV: ClassVar[int] = 1
    #: The first entry may issue no earlier than this count (fetch start-up).
    FETCH_LEAD: ClassVar[int] = 2
    #: Largest body of a periodic block.
    BODY_MAX: ClassVar[int] = 16
    #: Ports: 0 = prev, 1 = next (ring), 2 = bus.
    PORTS: ClassVar[int] = 3
    #: Mnemonic -> opcode (docs/sched.md section 3); the other codes are reserved and
    #: raise OPCODE. The model, the assembler and the generators all read this table.
    OPCODES: ClassVar[dict[str, int]] = {
        "NOP": 0x0, "SEND": 0x1, "RECV": 0x2, "TAP": 0x3, "VADD": 0x4, "VMUL": 0x5, "DOT": 0x6,
        "FWD": 0xB, "HALT": 0xE, "PERIODIC": 0xF,
    }
    #: MAC-array and VPU opcodes (docs/sched.md section 11): legal only when ``k > 0``.
    MAC_OPCODES: ClassVar[dict[str, int]] = {"LDW": 0x7, "SWPW": 0x8, "MATVEC": 0x9, "VPU": 0xA, "MATVR": 0xD}
    #: Communication-interface opcode (section 11): legal only on tile ``COMM_TILE`` with ``comm``.
    COMM_OPCODES: ClassVar[dict[str, int]] = {"CHECK": 0xC}
    #: The tile that holds the communication interface, and the port number of its FIFO.
    COMM_TILE: ClassVar[int] = 0
    P_FIFO: ClassVar[int] = 3
    #: MATVEC latency: read and multiply, then add (section 11).
    L_MM: ClassVar[int] = 2
    #: Fields of an entry, most significant first, with widths as functions of self.
    ENTRY_FIELDS: ClassVar[tuple[str, ...]] = ("t", "op", "port", "unit", "a", "b", "d", "len")
    #: Error-vector bit names, bit 0 first (docs/sched.md section 6).
    ERR_NAMES: ClassVar[tuple[str, ...]] = (
        "MISSED", "OPCODE", "BUSY", "UNDERFLOW", "OVERFLOW", "COLLISION", "WCONF", "DECOMP",
        "LATE_SCHED", "DESYNC", "TAP_IDLE", "FIFO_OVF",
    )

    _RANGES: ClassVar[dict[str, tuple[int, int]]] = {
        "cw": (8, 32), "nt": (2, 16), "dw": (4, 32), "aw": (4, 10), "sd": (4, 1024),
        "hop_lat": (1, 8), "buf_d": (1, 64), "l_alu": (1, 4), "accw": (8, 64), "vpu_shift": (0, 15),
        "fifo_d": (1, 256),
    }

    def __post_init__(self) -> None:
        for f, (lo, hi) in self._RANGES.items():
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ParamError(f"FabricParams.{f}={show(v)}: must be an int")
            if not lo <= v <= hi:
                raise ParamError(f"FabricParams.{f}={show(v)}: must be in [{lo}, {hi}]")
        for f in ("bus", "comm"):
            if not isinstance(getattr(self, f), bool):
                raise ParamError(f"FabricParams.{f}={show(getattr(self, f))}: must be a bool")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not (self.k == 0 or 2 <= self.k <= 8):
            raise ParamError(f"FabricParams.k={show(self.k)}: must be 0 (no MAC array) or in [2, 8]")
        if self.k and self.accw < 2 * self.dw:
            raise ParamError(f"FabricParams.accw={self.accw}: must hold a dw x dw product ({2 * self.dw} bits)")
        if self.k and self.k * self.k > self.words:
            raise ParamError(f"FabricParams.k={self.k}: a k x k weight block must fit in 2**aw = {self.words} words")
        if not isinstance(self.rows, int) or isinstance(self.rows, bool) or self.rows < 1 or self.nt % self.rows \
                or (self.rows > 1 and self.nt // self.rows < 2):
            raise ParamError(f"FabricParams.rows={show(self.rows)}: must be 1 (ring) or a divisor of nt = {self.nt} "
                             "with rows >= 2 and nt // rows >= 2 columns (mesh)")

    # ---- derived quantities: the only place these formulas are written -------------
    def field_width(self, name: str) -> int:
        """Bits of entry field ``name`` (see :attr:`ENTRY_FIELDS`)."""
        return {"t": self.cw, "op": 4, "port": 2, "unit": 2, "a": self.aw, "b": self.aw, "d": self.aw,
                "len": 8}[name]

    @property
    def ew(self) -> int:
        """Schedule entry width: ``cw + 16 + 3*aw`` (64 for cw=24, aw=8)."""
        return sum(self.field_width(f) for f in self.ENTRY_FIELDS)

    @property
    def words(self) -> int:
        """Data-memory words per tile, ``2**aw``."""
        return 1 << self.aw

    @property
    def half(self) -> int:
        """Half the counter range, ``2**(cw-1)``: the modular ordering window."""
        return 1 << (self.cw - 1)

    @property
    def sources(self) -> int:
        """Write sources per tile: ports 0..2, the ALU, ``k`` MAC lanes and, with ``comm``,
        the FIFO's RECV (``4 + k``; on tile ``COMM_TILE`` only, idle elsewhere)."""
        return 4 + self.k + (1 if self.comm else 0)

    @property
    def err_bits(self) -> int:
        """Width of the sticky error vector."""
        return len(self.ERR_NAMES)

    def l_path(self, hops: int = 1) -> int:
        """Ring path latency: a SEND at T is poppable at T + l_path + i (word i)."""
        return self.P_SEND + hops * self.hop_lat + self.P_RECV

    @property
    def l_bus(self) -> int:
        """Bus path latency (one bus register stage)."""
        return self.P_SEND + 1 + self.P_RECV

    # ---- topology (docs/sched.md sections 4 and 4.1): the only place the links are written
    @property
    def cols(self) -> int:
        """Tiles per mesh row, ``nt // rows`` (``nt`` on the ring)."""
        return self.nt // self.rows

    def link_dest(self, t: int, port: int) -> tuple[int, int]:
        """Where tile ``t``'s ``out[port]`` (port 0 or 1) arrives: ``(tile, in port)``.

        Ring (``rows == 1``): ``out[1]`` reaches ``(t+1) % nt``'s ``in[0]``, ``out[0]``
        reaches ``(t-1) % nt``'s ``in[1]``. Mesh (tile ``t = r*cols + c``): ``out[1]``
        goes east to ``(r, (c+1) % cols)``'s ``in[0]``, ``out[0]`` south to
        ``((r+1) % rows, c)``'s ``in[1]``. In both, ``out[p]`` arrives on ``in[1-p]``.
        """
        r, c = divmod(t, self.cols)
        if port == 1:
            return r * self.cols + (c + 1) % self.cols, 0
        if self.rows == 1:
            return (t - 1) % self.nt, 1
        return (r + 1) % self.rows * self.cols + c, 1

    def link_src(self, t: int, port: int) -> tuple[int, int]:
        """Whose ``out`` drives tile ``t``'s ``in[port]`` (port 0 or 1): ``(tile, out
        port)``, the inverse of :meth:`link_dest`."""
        return next((s, 1 - port) for s in range(self.nt) if self.link_dest(s, 1 - port) == (t, port))

    def psum_dest(self, t: int) -> int:
        """The tile whose ``psum_in`` tile ``t``'s ``psum_out`` reaches: the same
        neighbour as ``out[1]`` (the next tile on the ring, east on a mesh row)."""
        return self.link_dest(t, 1)[0]

    def psum_src(self, t: int) -> int:
        """The tile whose ``psum_out`` reaches tile ``t``'s ``psum_in``."""
        return self.link_src(t, 0)[0]
