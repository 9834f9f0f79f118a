"""Parameter records shared by generators, golden models and testbenches.

One frozen dataclass per block family. The generator (``lockstep.gen``), the golden
model (``lockstep.models``) and the testbench (``lockstep.verif``) all read the same
record, so a width or a derived quantity is written down exactly once, here.

Only the standard library is imported: this module must load in a user's testbench
that has neither cocotb nor a simulator installed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["BfpFormat", "FabricParams", "MX_ELEMENTS", "MxElement", "MxParams", "PATENT", "ParamError", "params_hash"]


class ParamError(ValueError):
    """A parameter value that cannot work; the message names the parameter."""


@dataclass(frozen=True)
class MxElement:
    """An OCP Microscaling (MX) v1.0 element data type.

    Attributes:
        name: the ``elem`` name used by :func:`lockstep.models.mx.mx_quantize`.
        bits: storage bits per element code.
        ebits: exponent bits (0 for the integer type).
        mbits: explicit mantissa (fraction) bits; for ``int8`` the magnitude bits.
        emax: exponent of the largest normal value (OCP MX Table 1, "emax").
        has_inf: the type encodes +-Inf (only FP8 E5M2).
        has_nan: the type encodes NaN (FP8 E4M3 with S.1111.111, FP8 E5M2).
        max_normal: largest finite magnitude, as an exact float.
    """

    name: str
    bits: int
    ebits: int
    mbits: int
    emax: int
    has_inf: bool
    has_nan: bool
    max_normal: float

    @property
    def bias(self) -> int:
        """Exponent bias of the floating-point element (0 for ``int8``)."""
        return (1 << (self.ebits - 1)) - 1 if self.ebits else 0

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal value (``1 - bias``)."""
        return 1 - self.bias


#: The six OCP MX v1.0 element types (spec section 5.3, Table 1). MXINT8 is an 8-bit
#: two's-complement integer with an implicit scale of 2^-6 (largest 1.984375).
MX_ELEMENTS: dict[str, MxElement] = {
    "int8": MxElement("int8", 8, 0, 7, 0, False, False, 127 / 64),
    "fp8_e4m3": MxElement("fp8_e4m3", 8, 4, 3, 8, False, True, 448.0),
    "fp8_e5m2": MxElement("fp8_e5m2", 8, 5, 2, 15, True, True, 57344.0),
    "fp6_e2m3": MxElement("fp6_e2m3", 6, 2, 3, 2, False, False, 7.5),
    "fp6_e3m2": MxElement("fp6_e3m2", 6, 3, 2, 4, False, False, 28.0),
    "fp4_e2m1": MxElement("fp4_e2m1", 4, 2, 1, 2, False, False, 6.0),
}


class _Record:
    """JSON round trip shared by every parameter record."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON-safe)."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        extra = set(d) - names
        if extra:
            raise ParamError(f"{cls.__name__}: unknown field(s) {sorted(extra)}")
        return cls(**d)


def _clog2(v: int) -> int:
    """Smallest k with 2**k >= v (0 for v <= 1)."""
    return max(0, (v - 1).bit_length())


@dataclass(frozen=True)
class BfpFormat(_Record):
    """Block-floating-point family parameters (spec 004, section 4.1).

    A block holds ``n`` elements that share one exponent. Each element is a signed
    ``w``-bit two's-complement mantissa (sign included); the shared exponent is an
    ``e``-bit two's-complement integer, and an element's value is ``m * 2**exp``.

    Attributes:
        w: mantissa bits including the sign (claim 29 uses 16).
        e: shared-exponent bits, two's complement (claim 29 uses 5).
        n: elements per block (one block per clock on the streaming units).
        rounding: ``"trunc"`` (toward zero on the magnitude) or ``"rne"`` (round half
            to even). The patent leaves rounding open.
        overflow: ``"sat"`` (symmetric, to +-(2**(w-1)-1)) or ``"wrap"`` (keep the low
            ``w`` bits, which reproduces the patent's Table 2).
        acc: dot-product accumulator bits; ``None`` means the minimum that cannot
            overflow, :attr:`acc_min`. A smaller value is refused.
        k_sigma: confidence multiple for the statistics-mode exponent selector.
        stat_log2_win: the statistics window holds ``2**stat_log2_win`` values, so the
            mean is a shift (patent [0092]).
        stat_policy: on an overflow in statistics mode, ``"sat"`` saturates the vector;
            ``"reshift"`` re-selects the exponent from the vector's maximum and clears
            the running sums (claims 30-31).

    Raises:
        ParamError: on a value that cannot work, naming the field.
    """

    w: int = 16
    e: int = 5
    n: int = 16
    rounding: str = "trunc"
    overflow: str = "sat"
    acc: int | None = None
    k_sigma: int = 3
    stat_log2_win: int = 10
    stat_policy: str = "sat"

    ROUNDINGS: ClassVar[tuple[str, ...]] = ("trunc", "rne")
    OVERFLOWS: ClassVar[tuple[str, ...]] = ("sat", "wrap")
    STAT_POLICIES: ClassVar[tuple[str, ...]] = ("sat", "reshift")

    def __post_init__(self) -> None:
        def bad(field: str, why: str) -> ParamError:
            return ParamError(f"BfpFormat.{field}={getattr(self, field)!r}: {why}")

        for f in ("w", "e", "n", "k_sigma", "stat_log2_win"):
            if not isinstance(getattr(self, f), int) or isinstance(getattr(self, f), bool):
                raise bad(f, "must be an int")
        if not 3 <= self.w <= 24:
            raise bad("w", "mantissa width must be in [3, 24] (sign included)")
        if not 2 <= self.e <= 10:
            raise bad("e", "exponent width must be in [2, 10]")
        if not 1 <= self.n <= 1024:
            raise bad("n", "block size must be in [1, 1024]")
        if self.rounding not in self.ROUNDINGS:
            raise bad("rounding", f"must be one of {self.ROUNDINGS}")
        if self.overflow not in self.OVERFLOWS:
            raise bad("overflow", f"must be one of {self.OVERFLOWS}")
        if self.stat_policy not in self.STAT_POLICIES:
            raise bad("stat_policy", f"must be one of {self.STAT_POLICIES}")
        if self.acc is not None:
            if not isinstance(self.acc, int) or isinstance(self.acc, bool):
                raise bad("acc", "must be an int or None")
            if self.acc < self.acc_min:
                raise bad(
                    "acc",
                    f"a sum of n={self.n} products of {self.w}-bit mantissas needs at least "
                    f"{self.acc_min} bits",
                )
            if self.acc > 64:
                raise bad("acc", "accumulator wider than 64 bits is not supported")
        if not 0 <= self.k_sigma <= 15:
            raise bad("k_sigma", "must be in [0, 15]")
        if not 0 <= self.stat_log2_win <= 16:
            raise bad("stat_log2_win", "window is 2**k values with k in [0, 16]")

    # ---- derived quantities: the only place these formulas are written -------------
    @property
    def e_min(self) -> int:
        """Smallest shared exponent, ``-2**(e-1)``."""
        return -(1 << (self.e - 1))

    @property
    def e_max(self) -> int:
        """Largest shared exponent, ``2**(e-1) - 1``."""
        return (1 << (self.e - 1)) - 1

    @property
    def m_max(self) -> int:
        """Largest mantissa magnitude kept by saturation, ``2**(w-1) - 1``."""
        return (1 << (self.w - 1)) - 1

    @property
    def acc_min(self) -> int:
        """Accumulator bits that hold any sum of ``n`` products: ``2w + ceil(log2 n)``."""
        return 2 * self.w + _clog2(self.n)

    @property
    def acc_bits(self) -> int:
        """Accumulator width in use (``acc`` or :attr:`acc_min`)."""
        return self.acc if self.acc is not None else self.acc_min

    @property
    def e_sum_bits(self) -> int:
        """Bits of ``e1 + e2`` (one more than ``e``, so the sum never wraps)."""
        return self.e + 1

    @property
    def bits_per_element(self) -> float:
        """Storage cost: ``w + e / n`` bits per element."""
        return self.w + self.e / self.n



@dataclass(frozen=True)
class MxParams(_Record):
    """OCP MX v1.0 block parameters: element type and block size.

    A block holds ``block`` elements sharing one E8M0 scale; each element is a code of
    the type ``MX_ELEMENTS[elem]``. The semantics are :mod:`lockstep.models.mx`'s.

    Attributes:
        elem: element type, a key of :data:`~lockstep.models.formats.MX_ELEMENTS`
            (``"int8"``, ``"fp8_e4m3"``, ``"fp8_e5m2"``, ``"fp6_e2m3"``, ``"fp6_e3m2"``,
            ``"fp4_e2m1"``).
        block: elements per block (OCP uses 32); one block per clock on the streaming
            units, so the range is kept to ``[1, 64]``.

    Raises:
        ParamError: on a value that cannot work, naming the field.
    """

    elem: str
    block: int = 32

    BLOCK_MAX: ClassVar[int] = 64

    def __post_init__(self) -> None:
        def bad(field: str, why: str) -> ParamError:
            return ParamError(f"MxParams.{field}={getattr(self, field)!r}: {why}")

        if not isinstance(self.elem, str) or self.elem not in MX_ELEMENTS:
            raise bad("elem", f"unknown MX element type; expected one of {sorted(MX_ELEMENTS)}")
        if not isinstance(self.block, int) or isinstance(self.block, bool):
            raise bad("block", "must be an int")
        if not 1 <= self.block <= self.BLOCK_MAX:
            raise bad("block", f"block size must be in [1, {self.BLOCK_MAX}]")

    @property
    def element(self) -> MxElement:
        """The element type's record (bits, ebits, mbits, emax, max_normal, ...)."""
        return MX_ELEMENTS[self.elem]

    @property
    def bits_per_element(self) -> float:
        """Storage cost: ``bits + 8 / block`` bits per element."""
        return self.element.bits + 8 / self.block


@dataclass(frozen=True)
class FabricParams(_Record):
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
                raise ParamError(f"FabricParams.{f}={v!r}: must be an int")
            if not lo <= v <= hi:
                raise ParamError(f"FabricParams.{f}={v!r}: must be in [{lo}, {hi}]")
        for f in ("bus", "comm"):
            if not isinstance(getattr(self, f), bool):
                raise ParamError(f"FabricParams.{f}={getattr(self, f)!r}: must be a bool")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not (self.k == 0 or 2 <= self.k <= 8):
            raise ParamError(f"FabricParams.k={self.k!r}: must be 0 (no MAC array) or in [2, 8]")
        if self.k and self.accw < 2 * self.dw:
            raise ParamError(f"FabricParams.accw={self.accw}: must hold a dw x dw product ({2 * self.dw} bits)")
        if self.k and self.k * self.k > self.words:
            raise ParamError(f"FabricParams.k={self.k}: a k x k weight block must fit in 2**aw = {self.words} words")
        if not isinstance(self.rows, int) or isinstance(self.rows, bool) or self.rows < 1 or self.nt % self.rows \
                or (self.rows > 1 and self.nt // self.rows < 2):
            raise ParamError(f"FabricParams.rows={self.rows!r}: must be 1 (ring) or a divisor of nt = {self.nt} "
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


@dataclass(frozen=True)
class SparseParams(_Record):
    """Sparse CNN engine parameters (spec 001; the contract is docs/sparse.md).

    One record sizes the encoder/decoder, the non-zero profiler, the feature-map memory
    unit, the weight memory, the sparse tensor compute unit (STU) and the cluster, and
    feeds the golden models and the testbenches.

    Attributes:
        p: multipliers per STU; also the read width of the feature-map memory unit.
        kmax: largest kernel size K (square kernels, ``1 <= K <= kmax``).
        hmax: largest sub-feature-map height H.
        wmax: largest sub-feature-map width W.
        dw: data (activation) bits, signed two's complement.
        ww: weight bits, signed two's complement.
        accw: accumulator bits (at least :attr:`acc_min`).
        ow: output value bits after the drain stage's shift and saturation.
        u: unique weights per STU round: 1 (STU 1300) or 2 (STU 1400, collision FIFO).
        m: compute units in the cluster.
        depth: entries per bank of a feature-map memory unit (two banks, ping-pong).
        cmax: channel jobs the accumulator must add without overflow (sizes :attr:`acc_min`).
        nmax_out: most output neurons of the fully-connected mode.

    Raises:
        ParamError: on a value that cannot work, naming the field.
    """

    p: int = 4
    kmax: int = 3
    hmax: int = 8
    wmax: int = 8
    dw: int = 8
    ww: int = 8
    accw: int = 32
    ow: int = 8
    u: int = 1
    m: int = 4
    depth: int = 64
    cmax: int = 16
    nmax_out: int = 16

    #: Sticky error bits, bit 0 first (docs/sparse.md section 7): the feature-map memory
    #: unit's (data stream), the weight memory's (weight stream) and the STU's.
    MEM_ERR_NAMES: ClassVar[tuple[str, ...]] = ("DESC", "IDX_OOB", "ORDER", "ZERO", "NNZ", "OVERFLOW")
    W_ERR_NAMES: ClassVar[tuple[str, ...]] = ("W_IDX_OOB", "W_DUP", "W_ZERO", "W_OVERFLOW")
    STU_ERR_NAMES: ClassVar[tuple[str, ...]] = ("CFG", "START_BUSY", "ACC_OVF", "FIFO_OVF")
    #: Cycles of the STU's multiply/accumulate pipeline between its last compute round
    #: and its first drain cycle (docs/sparse.md section 8).
    STU_PIPE: ClassVar[int] = 2
    #: Pool modes of the drain stage.
    POOL_MODES: ClassVar[tuple[str, ...]] = ("none", "max", "sum", "avg")
    #: Bits of the sub-feature-map descriptor fields, MSB first (docs/sparse.md section 2).
    DESC_FIELDS: ClassVar[tuple[tuple[str, int], ...]] = (
        ("org_row", 12), ("org_col", 12), ("h", 8), ("w", 8), ("nnz", 16), ("rsvd", 8),
    )

    _RANGES: ClassVar[dict[str, tuple[int, int]]] = {
        "p": (1, 16), "kmax": (1, 7), "hmax": (1, 64), "wmax": (1, 64), "dw": (2, 16), "ww": (2, 16),
        "accw": (1, 64), "ow": (2, 64), "u": (1, 2), "m": (1, 8), "depth": (1, 4096), "cmax": (1, 1024),
        "nmax_out": (1, 256),
    }

    def __post_init__(self) -> None:
        for f, (lo, hi) in self._RANGES.items():
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ParamError(f"SparseParams.{f}={v!r}: must be an int")
            if not lo <= v <= hi:
                raise ParamError(f"SparseParams.{f}={v!r}: must be in [{lo}, {hi}]")
        if self.accw < self.acc_min:
            raise ParamError(f"SparseParams.accw={self.accw}: must be >= acc_min = {self.acc_min} "
                             f"(dw + ww - 1 + clog2(max(cmax * kmax**2, hmax * wmax)))")
        if self.ow > self.accw + 2:
            raise ParamError(f"SparseParams.ow={self.ow}: at most accw + 2 = {self.accw + 2} (a SUM pool)")
        if self.hmax + self.kmax - 1 > 255 or self.wmax + self.kmax - 1 > 255:
            raise ParamError("SparseParams: hmax + kmax - 1 and wmax + kmax - 1 must fit the 8-bit H/W fields")

    # ---- derived quantities: the only place these formulas are written -------------
    @property
    def acc_min(self) -> int:
        """Accumulator bits that cannot overflow: ``dw + ww - 1`` for one product plus
        ``clog2`` of the most products one output can sum (``cmax * kmax**2`` in conv
        mode, ``hmax * wmax`` in FC mode)."""
        return self.dw + self.ww - 1 + _clog2(max(self.cmax * self.kmax * self.kmax, self.hmax * self.wmax, 2))

    @property
    def fh_max(self) -> int:
        """Largest output footprint height, ``hmax + kmax - 1`` (full correlation)."""
        return self.hmax + self.kmax - 1

    @property
    def fw_max(self) -> int:
        """Largest output footprint width, ``wmax + kmax - 1``."""
        return self.wmax + self.kmax - 1

    @property
    def rb(self) -> int:
        """Row-index bits of the data and output streams (covers the footprint)."""
        return max(1, _clog2(self.fh_max))

    @property
    def cb(self) -> int:
        """Column-index bits of the data and output streams (covers the footprint)."""
        return max(1, _clog2(self.fw_max))

    @property
    def kb(self) -> int:
        """Kernel-index bits of the weight stream (``a, b < kmax``)."""
        return max(1, _clog2(self.kmax))

    @property
    def fifo_d(self) -> int:
        """Collision-FIFO depth of the ``u = 2`` STU, ``p - 1``."""
        return max(1, self.p - 1)

    @property
    def data_bits(self) -> int:
        """Data stream word ``{LAST, ROW[rb], COL[cb], VAL[dw]}``."""
        return 1 + self.rb + self.cb + self.dw

    @property
    def weight_bits(self) -> int:
        """Weight stream word ``{LAST, A[kb], B[kb], W[ww]}``."""
        return 1 + 2 * self.kb + self.ww

    @property
    def out_bits(self) -> int:
        """Output stream word ``{LAST, ROW[rb], COL[cb], VAL[ow]}``."""
        return 1 + self.rb + self.cb + self.ow



def _pow2(v: int) -> bool:
    return v >= 1 and v & (v - 1) == 0


@dataclass(frozen=True)
class GemmParams(_Record):
    """GEMM tile with leading-dimension conflict avoidance (spec 003; the contract is
    docs/gemm.md).

    One record sizes the cache model, the conflict detector, the kernel selector, the
    address generator, the inline-copy engine, the microkernel and the flat memory of the
    test top, and feeds the golden models and the testbenches.

    Attributes:
        sets: cache sets S (a power of two).
        ways: cache ways W (1 = direct-mapped).
        line: cache line bytes L (a power of two).
        eb: bytes per matrix element (1, 2 or 4); elements are signed ``8*eb``-bit ints.
        v: vector lanes V in elements (a power of two): the K-block and the N-vector.
        accw: accumulator bits; every product and sum wraps modulo ``2**accw``.
        m_max: most kernel rows m (microkernel accumulator rows).
        z_max: most output vectors z per row (a power of two).
        r_hw: vector registers: a kernel needs ``(m+1)*z + 1 <= r_hw``.
        l_hw: FMA latency to hide: a kernel needs ``m*z > l_hw``.
        pri_num, pri_den: priori ratio ``pri_num/pri_den`` of the ways kept in place.
        ncores: cores the N-blocks are shared over (the selector's task balance).
        miss_pen: extra cycles per missing line.
        aw: byte-address bits.
        dimw: bits of M, N and K.
        mem_aw: element-address bits of the flat memory of the test top.

    Raises:
        ParamError: on a value that cannot work, naming the field.
    """

    sets: int = 64
    ways: int = 8
    line: int = 64
    eb: int = 4
    v: int = 16
    accw: int = 32
    m_max: int = 30
    z_max: int = 8
    r_hw: int = 32
    l_hw: int = 13
    pri_num: int = 4
    pri_den: int = 5
    ncores: int = 4
    miss_pen: int = 10
    aw: int = 32
    dimw: int = 16
    mem_aw: int = 14

    #: Sticky error bits of the tile, bit 0 first (docs/gemm.md section 7).
    ERR_NAMES: ClassVar[tuple[str, ...]] = (
        "BAD_DIM", "BAD_LD", "MISALIGNED", "BAD_BLOCK", "BUF_OVF", "OOB", "OVERLAP", "START_BUSY")
    #: Request kinds of the address trace, by code (docs/gemm.md section 4).
    KINDS: ClassVar[tuple[str, ...]] = ("A_LD", "B_LD", "BUF_LD", "COPY_RD", "COPY_WR", "C_WR")
    #: Kernel programs of the selector, by code (docs/gemm.md section 3).
    PROGS: ClassVar[tuple[str, ...]] = ("NORMAL", "NO_COPY", "OVERFLOW_COPY")
    #: The tile's counters, in CSR order from address 32 (docs/gemm.md section 10).
    COUNTERS: ClassVar[tuple[str, ...]] = (
        ("cycles", "sel_cycles", "n_fma", "n_mem_wr")
        + tuple(f"{k}_{q}" for k in ("A_LD", "B_LD", "BUF_LD", "COPY_RD", "COPY_WR", "C_WR")
                for q in ("req", "lookups", "hits", "misses"))
        + ("n_evict",))

    _RANGES: ClassVar[dict[str, tuple[int, int]]] = {
        "sets": (1, 4096), "ways": (1, 16), "line": (4, 256), "eb": (1, 4), "v": (1, 64), "accw": (8, 64),
        "m_max": (1, 64), "z_max": (1, 16), "r_hw": (3, 256), "l_hw": (0, 255), "pri_num": (0, 64),
        "pri_den": (1, 64), "ncores": (1, 64), "miss_pen": (0, 255), "aw": (12, 32), "dimw": (4, 24),
        "mem_aw": (4, 22),
    }

    def __post_init__(self) -> None:
        for f, (lo, hi) in self._RANGES.items():
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ParamError(f"GemmParams.{f}={v!r}: must be an int")
            if not lo <= v <= hi:
                raise ParamError(f"GemmParams.{f}={v!r}: must be in [{lo}, {hi}]")
        for f in ("sets", "line", "v", "z_max"):
            if not _pow2(getattr(self, f)):
                raise ParamError(f"GemmParams.{f}={getattr(self, f)}: must be a power of two")
        if self.eb not in (1, 2, 4):
            raise ParamError(f"GemmParams.eb={self.eb}: must be 1, 2 or 4")
        if self.line % self.eb:
            raise ParamError(f"GemmParams.line={self.line}: must be a multiple of eb = {self.eb}")
        if self.accw < 8 * self.eb:
            raise ParamError(f"GemmParams.accw={self.accw}: must be >= 8*eb = {8 * self.eb}")
        if self.pri_num > self.pri_den:
            raise ParamError(f"GemmParams.pri_num={self.pri_num}: the priori ratio must be <= 1")
        if (self.mem_aw + _clog2(self.eb)) > self.aw:
            raise ParamError(f"GemmParams.mem_aw={self.mem_aw}: the flat memory must fit aw = {self.aw} byte bits")
        if self.aw <= _clog2(self.sets) + _clog2(self.line):
            raise ParamError(f"GemmParams.aw={self.aw}: must exceed log2(sets) + log2(line)")
        if not self.candidates:
            raise ParamError("GemmParams: no kernel (m, z) satisfies (m+1)*z + 1 <= r_hw, m*z > l_hw, "
                             "m <= m_max, z <= z_max")

    # ---- derived quantities: the only place these formulas are written -------------
    @property
    def way_bytes(self) -> int:
        """Bytes of one cache way, ``sets * line``."""
        return self.sets * self.line

    @property
    def budget(self) -> int:
        """Lines per set the A column may use: ``max(1, floor(ways * pri_num / pri_den))``."""
        return max(1, self.ways * self.pri_num // self.pri_den)

    @property
    def tag_bits(self) -> int:
        """Tag bits of the cache model, ``aw - log2(sets) - log2(line)``."""
        return self.aw - _clog2(self.sets) - _clog2(self.line)

    @property
    def ew(self) -> int:
        """Element bits, ``8 * eb``."""
        return 8 * self.eb

    @property
    def mem_elems(self) -> int:
        """Elements of the flat memory of the test top, ``2**mem_aw``."""
        return 1 << self.mem_aw

    @property
    def candidates(self) -> tuple[tuple[int, int], ...]:
        """The selector's kernel ROM, in ROM order (docs/gemm.md section 3): for each
        power-of-two ``z <= z_max``, from the largest, the largest ``m <= m_max`` with
        ``(m+1)*z + 1 <= r_hw``, kept when ``m >= 1`` and ``m*z > l_hw``."""
        out = []
        z = self.z_max
        while z >= 1:
            m = min(self.m_max, (self.r_hw - 1) // z - 1)
            if m >= 1 and m * z > self.l_hw:
                out.append((m, z))
            z //= 2
        return tuple(out)


@dataclass(frozen=True)
class HostParams(_Record):
    """Host task pipeline and command queue (spec 002; the contract is docs/host.md).

    One record sizes the front end (SQ/CQ rings, pointers), the kernels (MAC lanes, row
    and weight buffers, accumulators), the device memory of the test top, and feeds the
    golden models, the host library and the testbenches.

    Attributes:
        depth: SQ and CQ slots (a power of two; the patent's batch is 8).
        n_kernels: kernels behind the front end (1 or 2).
        m_max: most rows M of a task.
        k_max: most inner dimension K (a multiple of 4).
        n_max: most columns N, the MAC lanes (a multiple of 4).
        mem_aw: byte-address bits of the device memory.
        mem_lat: cycles from an accepted memory request to its response, at least.
        mem_q: requests the device memory holds in flight.

    Raises:
        ParamError: on a value that cannot work, naming the field.
    """

    depth: int = 8
    n_kernels: int = 1
    m_max: int = 32
    k_max: int = 64
    n_max: int = 16
    mem_aw: int = 16
    mem_lat: int = 2
    mem_q: int = 8

    #: Completion status codes, by code (docs/host.md section 5; the check order).
    STATUS: ClassVar[tuple[str, ...]] = (
        "OK", "BAD_MAGIC", "BAD_CHECKSUM", "BAD_SEQ", "BAD_OPCODE", "BAD_DTYPE", "RSVD_NONZERO", "BAD_DIMS",
        "ADDR_RANGE", "WGT_RANGE", "MEM_ERR", "ABORTED")

    _RANGES: ClassVar[dict[str, tuple[int, int]]] = {
        "depth": (2, 32), "n_kernels": (1, 2), "m_max": (1, 256), "k_max": (4, 256), "n_max": (4, 64),
        "mem_aw": (8, 24), "mem_lat": (1, 8), "mem_q": (2, 32),
    }

    def __post_init__(self) -> None:
        for f, (lo, hi) in self._RANGES.items():
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ParamError(f"HostParams.{f}={v!r}: must be an int")
            if not lo <= v <= hi:
                raise ParamError(f"HostParams.{f}={v!r}: must be in [{lo}, {hi}]")
        if not _pow2(self.depth):
            raise ParamError(f"HostParams.depth={self.depth}: must be a power of two")
        for f in ("k_max", "n_max"):
            if getattr(self, f) % 4:
                raise ParamError(f"HostParams.{f}={getattr(self, f)}: must be a multiple of 4 (rows are whole words)")

    # ---- derived quantities: the only place these formulas are written -------------
    @property
    def idx_bits(self) -> int:
        """SQ/CQ index bits, ``log2(depth)``."""
        return _clog2(self.depth)

    @property
    def ptr_bits(self) -> int:
        """SQ/CQ pointer bits: the index and a wrap bit."""
        return self.idx_bits + 1

    @property
    def acc_bits(self) -> int:
        """Accumulator bits: an int16 x int16 product summed over ``k_max`` terms never
        overflows, ``32 + clog2(k_max)``."""
        return 32 + _clog2(self.k_max)

    @property
    def mem_bytes(self) -> int:
        """Bytes of the device memory, ``2**mem_aw``."""
        return 1 << self.mem_aw

    @property
    def mem_words(self) -> int:
        """32-bit words of the device memory."""
        return self.mem_bytes // 4

    @property
    def aww(self) -> int:
        """Word-address bits, ``mem_aw - 2``."""
        return self.mem_aw - 2


#: The patent's configuration (claim 29: 16-bit mantissa, 5-bit exponent).
PATENT = BfpFormat(w=16, e=5, n=16)


def params_hash(obj: Any) -> str:
    """Stable short hash of a parameter record (or any JSON-able value)."""
    d = obj.to_dict() if hasattr(obj, "to_dict") else obj
    blob = json.dumps({"type": type(obj).__name__, "fields": d}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
