"""Parameter record of the ``host`` family (spec 002; docs/host.md section 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..record import ParamError, Record, clog2, pow2, show

__all__ = ["HostParams"]


@dataclass(frozen=True)
class HostParams(Record):
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
        cnt_bits: bits of every counter: the front end's nine PERF counters and each
            kernel's exec-cycles counter, so a completion's ``cycles`` word (CQ word 1).
            Each wraps modulo ``2**cnt_bits`` and reads zero-extended to 32 bits. 32 by
            default; a narrow one wraps within a simulation (the quick tier's configs).

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
    cnt_bits: int = 32

    #: Completion status codes, by code (docs/host.md section 5; the check order).
    STATUS: ClassVar[tuple[str, ...]] = (
        "OK", "BAD_MAGIC", "BAD_CHECKSUM", "BAD_SEQ", "BAD_OPCODE", "BAD_DTYPE", "RSVD_NONZERO", "BAD_DIMS",
        "ADDR_RANGE", "WGT_RANGE", "MEM_ERR", "ABORTED")

    _RANGES: ClassVar[dict[str, tuple[int, int]]] = {
        "depth": (2, 32), "n_kernels": (1, 2), "m_max": (1, 256), "k_max": (4, 256), "n_max": (4, 64),
        "mem_aw": (8, 24), "mem_lat": (1, 8), "mem_q": (2, 32), "cnt_bits": (8, 32),
    }

    def __post_init__(self) -> None:
        for f, (lo, hi) in self._RANGES.items():
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ParamError(f"HostParams.{f}={show(v)}: must be an int")
            if not lo <= v <= hi:
                raise ParamError(f"HostParams.{f}={show(v)}: must be in [{lo}, {hi}]")
        if not pow2(self.depth):
            raise ParamError(f"HostParams.depth={self.depth}: must be a power of two")
        for f in ("k_max", "n_max"):
            if getattr(self, f) % 4:
                raise ParamError(f"HostParams.{f}={getattr(self, f)}: must be a multiple of 4 (rows are whole words)")

    # ---- derived quantities: the only place these formulas are written -------------
    @property
    def cnt_mask(self) -> int:
        """What a counter keeps of a count, ``2**cnt_bits - 1`` (it wraps modulo ``2**cnt_bits``)."""
        return (1 << self.cnt_bits) - 1

    @property
    def idx_bits(self) -> int:
        """SQ/CQ index bits, ``log2(depth)``."""
        return clog2(self.depth)

    @property
    def ptr_bits(self) -> int:
        """SQ/CQ pointer bits: the index and a wrap bit."""
        return self.idx_bits + 1

    @property
    def acc_bits(self) -> int:
        """Accumulator bits: an int16 x int16 product summed over ``k_max`` terms never
        overflows, ``32 + clog2(k_max)``."""
        return 32 + clog2(self.k_max)

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
