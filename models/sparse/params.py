"""Parameter record of the ``sparse`` family (spec 001; docs/sparse.md section 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..record import ParamError, Record, clog2, show

__all__ = ["SparseParams"]


@dataclass(frozen=True)
class SparseParams(Record):
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
        cnt_bits: bits of every event counter (the STU's :attr:`COUNTERS` and the
            cluster's ``cluster_cycles``): each wraps modulo ``2**cnt_bits``.

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
    cnt_bits: int = 32

    #: Sticky error bits, bit 0 first (docs/sparse.md section 7): the feature-map memory
    #: unit's (data stream), the weight memory's (weight stream) and the STU's.
    MEM_ERR_NAMES: ClassVar[tuple[str, ...]] = ("DESC", "IDX_OOB", "ORDER", "ZERO", "NNZ", "OVERFLOW")
    W_ERR_NAMES: ClassVar[tuple[str, ...]] = ("W_IDX_OOB", "W_DUP", "W_ZERO", "W_OVERFLOW")
    STU_ERR_NAMES: ClassVar[tuple[str, ...]] = ("CFG", "START_BUSY", "ACC_OVF", "FIFO_OVF")
    #: Cycles of the STU's multiply/accumulate pipeline between its last compute round
    #: and its first drain cycle (docs/sparse.md section 8).
    STU_PIPE: ClassVar[int] = 2
    #: The STU's event counters, final at ``done`` (docs/sparse.md section 8), in the
    #: order of the ports and of the throughput harness's ``E`` line.
    COUNTERS: ClassVar[tuple[str, ...]] = ("cyc_compute", "cyc_drain", "n_rounds", "n_mults", "n_deferred", "nnz_out")
    #: Pool modes of the drain stage.
    POOL_MODES: ClassVar[tuple[str, ...]] = ("none", "max", "sum", "avg")
    #: Bits of the sub-feature-map descriptor fields, MSB first (docs/sparse.md section 2).
    DESC_FIELDS: ClassVar[tuple[tuple[str, int], ...]] = (
        ("org_row", 12), ("org_col", 12), ("h", 8), ("w", 8), ("nnz", 16), ("rsvd", 8),
    )
    #: Bits of the NNZ field: every non-zero count (``cfg_nnz``, ``nnz``, ``total``) is this wide.
    NNZ_BITS: ClassVar[int] = dict(DESC_FIELDS)["nnz"]

    _RANGES: ClassVar[dict[str, tuple[int, int]]] = {
        "p": (1, 16), "kmax": (1, 7), "hmax": (1, 64), "wmax": (1, 64), "dw": (2, 16), "ww": (2, 16),
        "accw": (1, 64), "ow": (2, 64), "u": (1, 2), "m": (1, 8), "depth": (1, 4096), "cmax": (1, 1024),
        "nmax_out": (1, 256), "cnt_bits": (8, 32),
    }

    def __post_init__(self) -> None:
        for f, (lo, hi) in self._RANGES.items():
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ParamError(f"SparseParams.{f}={show(v)}: must be an int")
            if not lo <= v <= hi:
                raise ParamError(f"SparseParams.{f}={show(v)}: must be in [{lo}, {hi}]")
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
        return self.dw + self.ww - 1 + clog2(max(self.cmax * self.kmax * self.kmax, self.hmax * self.wmax, 2))

    @property
    def cnt_mask(self) -> int:
        """What an event counter reads of a count: ``count & cnt_mask`` (``2**cnt_bits - 1``)."""
        return (1 << self.cnt_bits) - 1

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
        return max(1, clog2(self.fh_max))

    @property
    def cb(self) -> int:
        """Column-index bits of the data and output streams (covers the footprint)."""
        return max(1, clog2(self.fw_max))

    @property
    def kb(self) -> int:
        """Kernel-index bits of the weight stream (``a, b < kmax``)."""
        return max(1, clog2(self.kmax))

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
