"""Parameter record of the ``gemm`` family (spec 003; docs/gemm.md section 7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..record import ParamError, Record, clog2, pow2, show

__all__ = ["GemmParams"]


@dataclass(frozen=True)
class GemmParams(Record):
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
        cnt_bits: bits of every event counter (the cache's per-kind lookups, hits and
            misses, its evictions, and the tile's counters of docs/gemm.md section 10):
            each wraps modulo ``2**cnt_bits`` and reads zero-extended to 32 bits. 32 by
            default; a narrow one wraps within a simulation (the quick tier's tiles).

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
    cnt_bits: int = 32

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
        "mem_aw": (4, 22), "cnt_bits": (8, 32),
    }

    def __post_init__(self) -> None:
        for f, (lo, hi) in self._RANGES.items():
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ParamError(f"GemmParams.{f}={show(v)}: must be an int")
            if not lo <= v <= hi:
                raise ParamError(f"GemmParams.{f}={show(v)}: must be in [{lo}, {hi}]")
        for f in ("sets", "line", "v", "z_max"):
            if not pow2(getattr(self, f)):
                raise ParamError(f"GemmParams.{f}={getattr(self, f)}: must be a power of two")
        if self.eb not in (1, 2, 4):
            raise ParamError(f"GemmParams.eb={self.eb}: must be 1, 2 or 4")
        if self.line % self.eb:
            raise ParamError(f"GemmParams.line={self.line}: must be a multiple of eb = {self.eb}")
        if self.accw < 8 * self.eb:
            raise ParamError(f"GemmParams.accw={self.accw}: must be >= 8*eb = {8 * self.eb}")
        if self.pri_num > self.pri_den:
            raise ParamError(f"GemmParams.pri_num={self.pri_num}: the priori ratio pri_num/pri_den must be <= 1 "
                             f"(pri_den = {self.pri_den})")
        if (self.mem_aw + clog2(self.eb)) > self.aw:
            raise ParamError(f"GemmParams.mem_aw={self.mem_aw}: the flat memory must fit aw = {self.aw} byte bits")
        if self.aw <= clog2(self.sets) + clog2(self.line):
            raise ParamError(f"GemmParams.aw={self.aw}: must exceed log2(sets) + log2(line)")
        if not self.candidates:
            raise ParamError("GemmParams: no kernel (m, z) satisfies (m+1)*z + 1 <= r_hw, m*z > l_hw, "
                             "m <= m_max, z <= z_max")

    # ---- derived quantities: the only place these formulas are written -------------
    @property
    def cnt_mask(self) -> int:
        """What a counter keeps of a count, ``2**cnt_bits - 1`` (it wraps modulo ``2**cnt_bits``)."""
        return (1 << self.cnt_bits) - 1

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
        return self.aw - clog2(self.sets) - clog2(self.line)

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
