"""Parameter records of the ``bfp`` family: the BFP block format and the OCP MX presets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..record import ParamError, Record, clog2, show

__all__ = ["BfpFormat", "MX_ELEMENTS", "MxElement", "MxParams", "PATENT"]


@dataclass(frozen=True)
class MxElement:
    """An OCP Microscaling (MX) v1.0 element data type.

    Attributes:
        name: the ``elem`` name used by :func:`lockstep.models.bfp.mx_quantize`.
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


@dataclass(frozen=True)
class BfpFormat(Record):
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
            return ParamError(f"BfpFormat.{field}={show(getattr(self, field))}: {why}")

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
        return 2 * self.w + clog2(self.n)

    @property
    def acc_bits(self) -> int:
        """Accumulator width in use (``acc`` or :attr:`acc_min`)."""
        return self.acc if self.acc is not None else self.acc_min

    @property
    def e_sum_bits(self) -> int:
        """Bits of ``e1 + e2`` (one more than ``e``, so the sum never wraps)."""
        return self.e + 1

    @property
    def e_sum_min(self) -> int:
        """Smallest ``e_sum_bits`` two's-complement exponent sum, ``-2**e``."""
        return -(1 << self.e)

    @property
    def e_sum_max(self) -> int:
        """Largest ``e_sum_bits`` two's-complement exponent sum, ``2**e - 1``."""
        return (1 << self.e) - 1

    @property
    def bits_per_element(self) -> float:
        """Storage cost: ``w + e / n`` bits per element."""
        return self.w + self.e / self.n


@dataclass(frozen=True)
class MxParams(Record):
    """OCP MX v1.0 block parameters: element type and block size.

    A block holds ``block`` elements sharing one E8M0 scale; each element is a code of
    the type ``MX_ELEMENTS[elem]``. The semantics are :mod:`lockstep.models.bfp.mx`'s.

    Attributes:
        elem: element type, a key of :data:`MX_ELEMENTS`
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
            return ParamError(f"MxParams.{field}={show(getattr(self, field))}: {why}")

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


#: The patent's configuration (claim 29: 16-bit mantissa, 5-bit exponent).
PATENT = BfpFormat(w=16, e=5, n=16)
