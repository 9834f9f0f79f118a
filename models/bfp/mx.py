"""Golden model of OCP Microscaling (MX) v1.0 quantization.

This module is the specification that the MX RTL is checked against. It is pure numpy,
vectorised and integer-exact: the float32 inputs are taken apart into their bit fields
(sign, integer significand, exponent) and every division by the shared scale and every
rounding step is done on integers. No floating-point arithmetic that could round is
used anywhere on the quantization path.

:func:`mx_quantize_flags` works through the input in cache-sized chunks with int32 bit
manipulation on the float32 patterns (dividing by ``2**X`` is a subtraction from the
exponent field, and the round-to-nearest-even cast to the element is an add and a shift
of the pattern, with a variable shift for element subnormals and ``int8``). Blocks whose
values are all tiny (below ``2**-93`` to ``2**-121``, by element type) go through a
direct transcription of the semantics instead (field decomposition, then the same cast
as :func:`encode_element`).
Both give the same bits; the tests check them against each other and against an
independent scalar reference.

An MX block holds ``block`` consecutive elements of the last axis. It stores one
E8M0 shared scale ``2**X`` (code ``X + 127``) and one element code per value, where the
element type is one of :data:`lockstep.models.bfp.MX_ELEMENTS`. An element decodes
to ``decode(code) * 2**X``.

Semantics (fixed; the RTL is written to them):

* ``X = floor(log2(max |x|)) - emax`` over the finite elements of the block, computed
  exactly from the float32 exponent field (subnormal: ``msb(frac) - 149``). ``X`` is
  clamped to ``>= -127`` (flag :data:`MX_FLAG_SCALE_LO`); ``X > 127`` cannot occur for
  finite float32 inputs.
* A block with any NaN or +-Inf element gets scale ``0xFF`` (the E8M0 NaN, so every
  element of the block decodes to NaN, as in OCP MX v1.0 section 5.2) and all element
  codes 0. This is the project's choice: the non-finite value is not propagated per
  element, the whole block is poisoned.
* A block whose finite elements are all +-0 gets scale code 0 (``X = -127``) and
  signed-zero element codes (``int8`` has no -0, so 0); flag :data:`MX_FLAG_ZERO`.
* Each element is ``cast(x / 2**X)`` with an IEEE-style cast: round to nearest, ties to
  even, on the element's grid (spacing ``2**(max(floor(log2|v|), emin) - mbits)``,
  element subnormals included); magnitudes that round above ``max_normal`` saturate to
  ``+-max_normal`` (flag :data:`MX_FLAG_SAT`); the sign is kept, so a tiny negative
  value becomes -0 in the floating-point types. The cast never produces an Inf or NaN
  code. MXINT8 is ``round_half_even(v * 64)`` saturated to ``[-127, 127]`` in 8-bit
  two's complement.

Example:
    >>> import numpy as np
    >>> s, c = mx_quantize(np.ones((1, 32), np.float32), "fp8_e4m3")
    >>> int(s[0, 0]), hex(int(c[0, 0]))
    (119, '0x78')
    >>> float(mx_dequantize(s, c, "fp8_e4m3")[0, 0])
    1.0
"""

from __future__ import annotations

import math
import threading
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .params import MX_ELEMENTS, MxElement

__all__ = [
    "E8M0_NAN",
    "E8M0_BIAS",
    "MX_FLAG_INF",
    "MX_FLAG_NAMES",
    "MX_FLAG_NAN",
    "MX_FLAG_SAT",
    "MX_FLAG_SCALE_LO",
    "MX_FLAG_SUBN",
    "MX_FLAG_ZERO",
    "decode_element",
    "decode_scale",
    "encode_element",
    "mx_dequantize",
    "mx_quantize",
    "mx_quantize_flags",
]

#: Block has no finite nonzero element (the finite elements are all +-0).
MX_FLAG_ZERO = 1 << 0
#: Block contains a NaN (scale forced to :data:`E8M0_NAN`).
MX_FLAG_NAN = 1 << 1
#: Block contains a +-Inf (scale forced to :data:`E8M0_NAN`).
MX_FLAG_INF = 1 << 2
#: ``floor(log2 max|x|) - emax`` was below -127 and the scale was clamped to 2**-127.
MX_FLAG_SCALE_LO = 1 << 4
#: At least one element magnitude rounded above ``max_normal`` and was saturated.
MX_FLAG_SAT = 1 << 5
#: At least one input element is a float32 subnormal.
MX_FLAG_SUBN = 1 << 6

#: Flag name -> mask, bit order (the RTL's ``out_flags`` layout; bit 3 is unused).
MX_FLAG_NAMES: dict[str, int] = {
    "zero": MX_FLAG_ZERO,
    "nan": MX_FLAG_NAN,
    "inf": MX_FLAG_INF,
    "scale_lo": MX_FLAG_SCALE_LO,
    "sat": MX_FLAG_SAT,
    "subn": MX_FLAG_SUBN,
}

#: E8M0 scale code of NaN.
E8M0_NAN = 0xFF
#: E8M0 exponent bias: code ``c`` means ``2**(c - 127)``.
E8M0_BIAS = 127

_X_MIN = -127  # smallest shared exponent (E8M0 code 0)
_X_MAX = 127  # largest shared exponent (E8M0 code 254)
_NO_EXP = -(1 << 20)  # "minus infinity" stand-in for the exponent of a zero


# ----------------------------------------------------------------------------------
# argument checking
# ----------------------------------------------------------------------------------
def _elem(elem: str | MxElement) -> MxElement:
    """Resolve an element name (or an :class:`MxElement` from the table)."""
    if isinstance(elem, MxElement) and MX_ELEMENTS.get(elem.name) == elem:
        return elem
    if isinstance(elem, str) and elem in MX_ELEMENTS:
        return MX_ELEMENTS[elem]
    raise ValueError(
        f"elem={elem!r}: unknown MX element type; expected one of {sorted(MX_ELEMENTS)}"
    )


def _block(block: int) -> int:
    if not isinstance(block, (int, np.integer)) or isinstance(block, bool):
        raise ValueError(f"block={block!r}: must be an int")
    if block < 1:
        raise ValueError(f"block={block!r}: must be >= 1")
    return int(block)


def _f32_bits(x: ArrayLike, name: str) -> NDArray[np.uint32]:
    """float32 values or uint32 float32 bit patterns -> uint32 bit patterns."""
    a = np.asarray(x)
    if a.dtype == np.float32:
        return a.view(np.uint32)
    if a.dtype == np.uint32:
        return a
    raise ValueError(
        f"{name}: dtype {a.dtype} not accepted; pass float32 values or uint32 float32 bit patterns"
    )


def _int_codes(a: ArrayLike, name: str, bits: int) -> NDArray[np.int64]:
    """Integer array with every value in ``[0, 2**bits)``, as int64."""
    arr = np.asarray(a)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: dtype {arr.dtype} not accepted; pass an integer (uint8) array")
    out = arr.astype(np.int64)
    if out.size and (out.min() < 0 or out.max() >= (1 << bits)):
        raise ValueError(f"{name}: codes must lie in [0, {1 << bits}) for {bits}-bit codes")
    return out


# ----------------------------------------------------------------------------------
# integer helpers
# ----------------------------------------------------------------------------------
def _msb(v: NDArray[np.int64]) -> NDArray[np.int64]:
    """Index of the most significant set bit of each positive int64 (0 for v <= 1)."""
    v = v.copy()
    r = np.zeros(v.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = v >= (np.int64(1) << s)
        r += np.where(big, s, 0)
        v = np.where(big, v >> s, v)
    return r


def _rne_shr(m: NDArray[np.int64], r: NDArray[np.int64]) -> NDArray[np.int64]:
    """``round_half_even(m / 2**r)`` for ``m >= 0`` and ``1 <= r <= 62``."""
    q = m >> r
    rem = m & ((np.int64(1) << r) - 1)
    half = np.int64(1) << (r - 1)
    up = (rem > half) | ((rem == half) & ((q & 1) == 1))
    return q + up.astype(np.int64)


def _decompose(
    bits: NDArray[np.unsignedinteger], ebits: int, fbits: int
) -> dict[str, NDArray]:
    """Split IEEE binary bit patterns into exact integer fields.

    A finite nonzero value equals ``(-1)**sign * sig * 2**(elog - fbits)`` with
    ``sig`` normalised to ``[2**fbits, 2**(fbits+1))`` (subnormals are normalised too)
    and ``elog = floor(log2 |value|)``.
    """
    b = bits.astype(np.uint64)
    bias = (1 << (ebits - 1)) - 1
    emask = (1 << ebits) - 1
    sign = (b >> np.uint64(ebits + fbits)).astype(np.int64) & 1
    be = ((b >> np.uint64(fbits)) & np.uint64(emask)).astype(np.int64)
    frac = (b & np.uint64((1 << fbits) - 1)).astype(np.int64)
    special = be == emask
    normal = (be != 0) & ~special
    subn = (be == 0) & (frac != 0)
    msb = _msb(frac)
    sig = np.where(normal, frac | (np.int64(1) << fbits), frac << np.where(subn, fbits - msb, 0))
    elog = np.where(normal, be - bias, np.where(subn, msb - (bias - 1 + fbits), _NO_EXP))
    return {
        "sign": sign,
        "sig": np.where(normal | subn, sig, 0),
        "elog": elog,
        "nz": normal | subn,
        "subn": subn,
        "zero": (be == 0) & (frac == 0),
        "nan": special & (frac != 0),
        "inf": special & (frac == 0),
    }


def _cast(
    sign: NDArray[np.int64],
    sig: NDArray[np.int64],
    elog: NDArray[np.int64],
    nz: NDArray[np.bool_],
    fbits: int,
    x: NDArray[np.int64] | int,
    e: MxElement,
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Cast ``v / 2**x`` to element codes, where ``v = +-sig * 2**(elog - fbits)``.

    Returns the element codes (int64, zeros encoded with their sign for float types)
    and a mask of the elements whose rounded magnitude exceeded ``max_normal``.
    """
    ev = np.where(nz, elog - x, 0)  # floor(log2 |v / 2**x|)
    if e.ebits == 0:  # MXINT8: grid 2**-6, saturate symmetric at 127
        over = ev >= 1  # |v'| >= 2: certainly beyond 127/64
        r = np.clip(fbits - 6 - ev, 1, 62)
        n = np.where(nz & ~over, _rne_shr(sig, r), 0)
        sat = nz & (over | (n > 127))
        n = np.minimum(np.where(sat, 127, n), 127)
        return np.where(sign == 1, (256 - n) & 0xFF, n), sat
    emin, emax, mb = e.emin, e.emax, e.mbits
    n_max = int(e.max_normal * 2.0 ** (mb - emax))  # significand of max_normal at emax
    assert n_max * 2.0 ** (emax - mb) == e.max_normal
    eff = np.maximum(ev, emin)  # element exponent whose grid v' is rounded on
    r = np.clip(fbits - mb + (eff - ev), 1, 62)  # always >= fbits - mb >= 20
    n = np.where(nz, _rne_shr(sig, r), 0)  # v' ~= n * 2**(eff - mb)
    carry = n == (1 << (mb + 1))  # rounded up to the next binade
    eff = np.where(carry, eff + 1, eff)
    n = np.where(carry, n >> 1, n)
    sat = nz & ((eff > emax) | ((eff == emax) & (n > n_max)))
    eff = np.where(sat, emax, eff)
    n = np.where(sat, n_max, n)
    normal = n >= (1 << mb)  # else element subnormal (eff == emin) or zero
    efield = np.where(normal, eff + e.bias, 0)
    mfield = np.where(normal, n - (1 << mb), n)
    code = (sign << (e.bits - 1)) | (efield << mb) | mfield
    return code, sat


# ----------------------------------------------------------------------------------
# element codecs
# ----------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _decode_table(name: str) -> NDArray[np.float64]:
    e = MX_ELEMENTS[name]
    tab = np.empty(1 << e.bits, np.float64)
    for c in range(1 << e.bits):
        if e.ebits == 0:
            tab[c] = math.ldexp(c - 256 if c >= 128 else c, -6)
            continue
        s = -1.0 if c >> (e.bits - 1) else 1.0
        ef = (c >> e.mbits) & ((1 << e.ebits) - 1)
        mf = c & ((1 << e.mbits) - 1)
        top = ef == (1 << e.ebits) - 1
        if e.has_inf and top:  # E5M2: IEEE-style Inf / NaN
            tab[c] = s * math.inf if mf == 0 else math.nan
        elif e.has_nan and top and mf == (1 << e.mbits) - 1:  # E4M3: S.1111.111
            tab[c] = math.nan
        elif ef == 0:
            tab[c] = s * math.ldexp(mf, e.emin - e.mbits)
        else:
            tab[c] = s * math.ldexp((1 << e.mbits) | mf, ef - e.bias - e.mbits)
    tab.setflags(write=False)
    return tab


def decode_element(codes: ArrayLike, elem: str | MxElement) -> NDArray[np.float64]:
    """Decode MX element codes to their exact values.

    Args:
        codes: integer array (normally uint8) of element codes in the low ``bits`` bits.
        elem: element type name, a key of :data:`~lockstep.models.bfp.MX_ELEMENTS`.

    Returns:
        float64 array of the same shape. NaN for the NaN codes of FP8 (E4M3
        ``S.1111.111``, E5M2 ``S.11111.{01,10,11}``), +-Inf for the E5M2 Inf codes;
        ``int8`` decodes ``code * 2**-6`` with code ``0x80`` meaning -2.0.

    Raises:
        ValueError: unknown ``elem``; ``codes`` not an integer array or out of range.

    Example:
        >>> decode_element(np.array([0x78, 0x80, 0x01], np.uint8), "fp8_e4m3").tolist()
        [256.0, -0.0, 0.001953125]
        >>> decode_element(np.array([0x7, 0x1], np.uint8), "fp4_e2m1").tolist()
        [6.0, 0.5]
    """
    e = _elem(elem)
    c = _int_codes(codes, "codes", e.bits)
    return _decode_table(e.name)[c]


def encode_element(values: ArrayLike, elem: str | MxElement) -> NDArray[np.uint8]:
    """Cast values (no shared scale) to MX element codes.

    Round to nearest, ties to even on the element grid, saturating to
    ``+-max_normal``, keeping the sign (tiny negatives become -0 in the float types;
    ``int8`` has no -0). This is the element cast that
    :func:`~lockstep.models.bfp.mx_quantize` applies to ``x / 2**X``.

    Args:
        values: float32 values, uint32 float32 bit patterns, or float64 values; all
            finite. float64 inputs are cast directly (a single rounding).
        elem: element type name, a key of :data:`~lockstep.models.bfp.MX_ELEMENTS`.

    Returns:
        uint8 array of codes (in the low ``bits`` bits), same shape as ``values``.

    Raises:
        ValueError: unknown ``elem``; ``values`` of another dtype or not finite.

    Example:
        >>> encode_element(np.array([256.0, 1000.0, -1e-9], np.float32), "fp8_e4m3").tolist()
        [120, 126, 128]
        >>> encode_element(np.array([0.75, 0.25, 1.0]), "fp4_e2m1").tolist()
        [2, 0, 2]
    """
    e = _elem(elem)
    a = np.asarray(values)
    if a.dtype == np.float64:
        d, fbits = _decompose(a.view(np.uint64), 11, 52), 52
    else:
        d, fbits = _decompose(_f32_bits(a, "values"), 8, 23), 23
    if np.any(d["nan"] | d["inf"]):
        raise ValueError("values: must be finite (MX blocks handle NaN/Inf via the scale)")
    code, _ = _cast(d["sign"], d["sig"], d["elog"], d["nz"], fbits, 0, e)
    if e.ebits == 0:
        code = np.where(d["nz"], code, 0)
    return code.astype(np.uint8)


def decode_scale(scales: ArrayLike) -> NDArray[np.float64]:
    """Decode E8M0 shared-scale codes.

    Args:
        scales: integer array of E8M0 codes in ``[0, 255]``.

    Returns:
        float64 array: ``2**(code - 127)``, NaN for code ``0xFF``.

    Raises:
        ValueError: ``scales`` not an integer array or out of range.

    Example:
        >>> decode_scale(np.array([127, 119, 0, 255], np.uint8)).tolist()[:3]
        [1.0, 0.00390625, 5.877471754111438e-39]
    """
    s = _int_codes(scales, "scales", 8)
    return np.where(s == E8M0_NAN, np.nan, np.ldexp(1.0, s - E8M0_BIAS))


# ----------------------------------------------------------------------------------
# block quantization
# ----------------------------------------------------------------------------------
_F32_MAG = np.uint32(0x7FFFFFFF)  # float32 magnitude bits
_F32_INF = 0x7F800000  # magnitude bits of +-Inf; larger is NaN
_F32_SUBN_MAX = 0x7FFFFF  # largest subnormal magnitude
_CHUNK = 1 << 17  # elements per chunk of the fast path (its temporaries stay in cache)
_DENSE_SHIFT = 3  # more than 1/8 of a chunk's elements near the subnormals: dense


def _quantize_rows_exact(
    bits: NDArray[np.uint32], e: MxElement
) -> tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8]]:
    """Reference block quantizer on rows ``(n, block)``: field split + :func:`_cast`.

    This is the semantics written out directly. :func:`mx_quantize_flags` uses it for
    the blocks its fast path does not take (a shared exponent below the fast path's
    ``x_min``, see :func:`_fast_params`). Returns uint8 ``(scales (n,), codes (n,
    block), flags (n,))``.
    """
    d = _decompose(bits, 8, 23)

    def anyb(m: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return np.any(m, axis=-1)

    has_nz, has_nan, has_inf = anyb(d["nz"]), anyb(d["nan"]), anyb(d["inf"])
    special = has_nan | has_inf
    emax_blk = np.max(np.where(d["nz"], d["elog"], _NO_EXP), axis=-1)
    x_raw = np.where(has_nz, emax_blk - e.emax, _X_MIN)
    scale_lo = has_nz & ~special & (x_raw < _X_MIN)
    xs = np.maximum(x_raw, _X_MIN)
    assert np.all(xs <= _X_MAX), "shared exponent above 127 is impossible for float32"

    code, sat = _cast(d["sign"], d["sig"], d["elog"], d["nz"], 23, xs[..., None], e)
    if e.ebits == 0:
        code = np.where(d["nz"], code, 0)  # int8: no -0
    code = np.where(special[..., None], 0, code)
    scales = np.where(special, E8M0_NAN, xs + E8M0_BIAS)

    flags = (
        np.where(~has_nz, MX_FLAG_ZERO, 0)
        | np.where(has_nan, MX_FLAG_NAN, 0)
        | np.where(has_inf, MX_FLAG_INF, 0)
        | np.where(scale_lo, MX_FLAG_SCALE_LO, 0)
        | np.where(anyb(sat) & ~special, MX_FLAG_SAT, 0)
        | np.where(anyb(d["subn"]), MX_FLAG_SUBN, 0)
    )
    return scales.astype(np.uint8), code.astype(np.uint8), flags.astype(np.uint8)


class _Fast(NamedTuple):
    """Constants of the fast path for one element type (see :func:`_fast_params`)."""

    shift: int  # float32 fraction bits below the element lsb in the element's normal binades
    emin: int  # exponent of the element's lowest normal binade
    mbits: int  # element fraction bits
    bias: int  # element exponent bias
    maxcode: int  # magnitude code of max_normal
    x_min: int  # smallest shared exponent the fast path takes
    be_min: int  # float32 biased exponent of a block maximum giving X == x_min
    sat_frac: int  # a fast block saturates iff the float32 fraction of its max exceeds this


@lru_cache(maxsize=None)
def _fast_params(name: str) -> _Fast:
    """Fast-path constants of an element type.

    A float element is a ``1 + mbits``-bit significand on the binades ``emin..emax``,
    plus subnormals of spacing ``2**(emin - mbits)``. ``int8`` is handled as the same
    thing with ``mbits = 7``, ``emin = 1``, ``bias = 0``: every ``|x / 2**X| < 2`` then
    lies below ``2**emin`` and is rounded on the fixed grid ``2**(emin - mbits) =
    2**-6``, and the magnitude code is that multiple of ``2**-6``.

    ``x_min = -102 - shift - emin`` is the smallest shared exponent ``X`` for which a
    zero or float32-subnormal input is certain to get a zero code (its ``|x / 2**X|``
    is below ``2**(-126 - X) <= 2**(emin - mbits - 1)``, half the smallest element
    step) and for which :func:`_generic_codes`, which reads every input as a normal
    float32, also gives 0 for it (its shift is then the maximum, 25). The fast path
    takes the blocks with ``X >= x_min``; the others (every value below
    ``2**(x_min + emax + 1)``) go to :func:`_quantize_rows_exact`. As ``x_min >
    -127``, the fast blocks' ``X`` is never clamped and their maximum lies in the top
    binade ``[2**emax, 2**(emax+1))``. Rounding is monotonic, so a block saturates iff its
    maximum rounds above ``max_normal``: iff its float32 fraction is above the midpoint
    between ``max_normal`` and the next grid value (``n_max + 1/2`` in units of the top
    binade's step, ``n_max`` being ``max_normal`` in those units: 14 for E4M3, 127 for
    ``int8``, whose top binade ``[1, 2)`` has the step ``2**-6``), or on it when
    ``n_max`` is odd (the tie goes to the even ``n_max + 1``). ``sat_frac`` is that
    midpoint's fraction, minus 1 if ``n_max`` is odd, so the test is ``frac >
    sat_frac``.
    """
    e = MX_ELEMENTS[name]
    if e.ebits == 0:
        mb, emin, bias, shift, mtop = 7, 1, 0, 16, 6
    else:
        mb, emin, bias, shift, mtop = e.mbits, e.emin, e.bias, 23 - e.mbits, e.mbits
    n_max = int(e.max_normal * 2.0 ** (mtop - e.emax))
    assert n_max * 2.0 ** (e.emax - mtop) == e.max_normal
    maxcode = 127 if e.ebits == 0 else ((e.emax + bias) << mb) | (n_max - (1 << mb))
    sat_frac = ((2 * n_max + 1) << (22 - mtop)) - (1 << 23) - (n_max & 1)
    x_min = -102 - shift - emin
    return _Fast(shift, emin, mb, bias, maxcode, x_min, x_min + e.emax + 127, sat_frac)


def _generic_codes(
    a: NDArray[np.uint32],
    rconst: NDArray[np.int32],
    p: _Fast,
    bufs: tuple[NDArray[np.int32], ...] | None = None,
) -> NDArray[np.int32]:
    """Unsaturated magnitude codes of ``v = |x| / 2**X``, on integers, for any binade.

    Args:
        a: float32 magnitude bits, read as normal numbers ``sig * 2**(be - 150)`` with
            ``sig = 2**23 | frac`` (exact for normal inputs; a zero or subnormal input is
            only allowed when ``X >= p.x_min``, where the result is 0 as it must be).
        rconst: ``X + 127 + p.emin + p.shift``, broadcastable to ``a``.
        p: the element's fast-path constants.
        bufs: four int32 scratch arrays shaped like ``a`` (the result is the first).

    Returns:
        int32 codes ``((eff + bias - 1) << mbits) + n`` with ``eff = max(floor(log2
        v), emin)`` and ``n = round_half_even(v / 2**(eff - mbits)) = round_half_even(
        sig / 2**r)``, ``r = shift + eff - floor(log2 v)``: the element code of ``v`` (a
        carry into the next binade gives the right code), above ``p.maxcode`` where
        ``v`` rounds above ``max_normal``. ``r`` is capped at 25, where every ``sig <
        2**24`` rounds to 0.
    """
    n_, r, sig, bt = bufs if bufs is not None else (None,) * 4
    ai = a.view(np.int32)
    r = np.right_shift(ai, 23, out=r)
    np.subtract(rconst, r, out=r)  # shift + emin - floor(log2 v)
    if p.bias:  # float element: eff + bias - 1 = max(floor(log2 v) - emin, 0)
        bt = np.subtract(p.shift, r, out=bt)
        np.maximum(bt, 0, out=bt)
        bt <<= p.mbits
    np.clip(r, p.shift, 25, out=r)
    sig = np.bitwise_and(ai, _F32_SUBN_MAX, out=sig)
    sig |= 1 << 23
    n = np.right_shift(sig, r, out=n_)
    n &= 1  # lsb of the truncated value: a tie rounds to even
    n += sig
    np.subtract(32, r, out=sig)
    np.right_shift(0x7FFFFFFF, sig, out=sig)  # 2**(r-1) - 1, just below half an lsb
    n += sig
    n >>= r
    if p.bias:
        n += bt
    return n


_AR8 = np.arange(8)


def _sparse_nonzero(mask: NDArray[np.bool_]) -> NDArray[np.intp]:
    """``np.flatnonzero(mask)``, fast when few elements are set."""
    if mask.size % 8:
        return np.flatnonzero(mask)
    words = np.flatnonzero(mask.view(np.uint64))
    if words.size > mask.size // 64:
        return np.flatnonzero(mask)
    cand = (words[:, None] * 8 + _AR8).ravel()
    return cand[mask[cand]]


class _Work:
    """Scratch buffers of the fast path for chunks of up to ``n`` elements."""

    def __init__(self, n: int) -> None:
        self.size = n
        self.a = np.empty(n, np.uint32)
        self.i32 = [np.empty(n, np.int32) for _ in range(4)]
        self.m = np.empty(n, np.bool_)
        self.s8 = np.empty(n, np.uint8)
        self.dense = False  # many element subnormals seen: use _generic_codes throughout


_TLS = threading.local()


def _work(n: int) -> _Work:
    """Scratch buffers for chunks of up to ``n`` elements, kept per thread between calls.

    Reusing them matters: first touching fresh pages costs more than a small call's
    arithmetic. Only chunk-sized sets (at most ``_CHUNK`` elements) are kept.
    """
    ws = getattr(_TLS, "work", None)
    if ws is None or ws.size < n:
        ws = _Work(n)
        if n <= _CHUNK:
            _TLS.work = ws
    ws.dense = False
    return ws


def _quantize_chunk(
    b: NDArray[np.uint32],
    block: int,
    e: MxElement,
    p: _Fast,
    s_out: NDArray[np.uint8],
    c_out: NDArray[np.uint8],
    f_out: NDArray[np.uint8],
    ws: _Work,
) -> None:
    """Quantize the whole blocks of a contiguous 1-D chunk of bit patterns into the outs.

    Per block: the largest magnitude (an unsigned compare of ``bits & 0x7FFFFFFF``
    orders finite float32 values by magnitude) gives ``X`` and tells NaN/Inf blocks.
    Per element, float types: ``v = |x| / 2**X`` with the element's exponent bias is
    the bit pattern ``P = a - ((X + 127 - bias) << 23)``; for ``v >= 2**emin`` the RNE
    cast to ``mbits`` fraction bits is ``(P + 2**(s-1) - 1 + ((P >> s) & 1)) >> s``
    (``s = 23 - mbits``), which is the element code (a carry moves into the exponent
    field). The elements whose code could be an element subnormal (``v < 2**emin``,
    except those below half the smallest subnormal, whose code is 0) are redone by
    :func:`_generic_codes`, or, when there are many, every element is. ``int8`` always
    uses :func:`_generic_codes`.
    """
    n = b.size
    nblk = n // block
    a = np.bitwise_and(b, _F32_MAG, out=ws.a[:n])
    ai = a.view(np.int32)
    amax = np.maximum.reduceat(a, np.arange(0, n, block)) if block > 1 else a.copy()
    am = amax.view(np.int32)
    be_m = am >> 23
    special = be_m == 255
    sp_rows = np.flatnonzero(special) if special.any() else None
    if sp_rows is not None:
        sa = a.reshape(nblk, block)[sp_rows]
        am[sp_rows] = np.where(sa < _F32_INF, sa, 0).max(axis=1)  # finite part
        be_m[sp_rows] = am[sp_rows] >> 23
        nan_rows = sp_rows[(sa > _F32_INF).any(axis=1)]
        inf_rows = sp_rows[(sa == _F32_INF).any(axis=1)]
    # fast blocks: X = be_m - 127 - emax >= x_min. The others get X = x_min: zero blocks,
    # whose codes do not depend on X, and the blocks redone at the end.
    be_c = np.maximum(be_m, p.be_min)
    rconst = be_c + (p.emin + p.shift - e.emax)  # for _generic_codes
    t32 = ws.i32[0][:n]

    done = False
    if e.ebits and not ws.dense:
        s = p.shift
        kexp = ((be_c - (e.emax + p.bias)) << 23) - ((1 << (s - 1)) - 1)
        t = np.right_shift(ai, s, out=t32)
        t &= 1
        t += ai
        if block > 1:
            t2 = t.reshape(nblk, block)
            np.subtract(t2, kexp[:, None], out=t2)
        else:
            t -= kexp
        t >>= s
        lo = -(p.mbits << p.mbits)  # below: v < 2**(emin - mbits - 1), code 0
        u = np.subtract(t, lo, out=ws.i32[1][:n])
        near = np.less_equal(u.view(np.uint32), (1 << p.mbits) - lo, out=ws.m[:n])
        idx = _sparse_nonzero(near)
        if idx.size <= n >> _DENSE_SHIFT:
            np.clip(t, 0, p.maxcode, out=c_out, casting="unsafe")
            if idx.size:
                rc = rconst[idx // block] if block > 1 else rconst[idx]
                c_out[idx] = np.minimum(_generic_codes(a[idx], rc, p), p.maxcode)
            done = True
        else:
            ws.dense = True
    if not done:
        bufs = tuple(buf[:n].reshape(nblk, block) for buf in ws.i32)
        code = _generic_codes(a.reshape(nblk, block), rconst[:, None], p, bufs)
        np.clip(code, 0, p.maxcode, out=c_out.reshape(nblk, block), casting="unsafe")
    if e.ebits:
        sgn = np.right_shift(b, 32 - e.bits, out=ws.s8[:n], casting="unsafe")
        sgn &= 1 << (e.bits - 1)
        c_out |= sgn
    else:
        neg = np.right_shift(b.view(np.int32), 31, out=ws.s8[:n], casting="unsafe")
        c_out ^= neg
        c_out -= neg  # two's complement of a negative value (0 stays 0)

    sub = np.subtract(a, 1, out=t32.view(np.uint32))  # 0 wraps to the top
    flags = (am == 0).view(np.uint8)  # MX_FLAG_ZERO
    if sub.min() < _F32_SUBN_MAX:
        subn = (np.minimum.reduceat(sub, np.arange(0, n, block)) if block > 1 else sub)
        flags = flags | ((subn < _F32_SUBN_MAX).view(np.uint8) << 6)  # MX_FLAG_SUBN
    sat = (am & _F32_SUBN_MAX) > p.sat_frac  # see _fast_params (false for zero blocks)
    if sp_rows is not None:
        sat[sp_rows] = False
    flags = flags | (sat.view(np.uint8) << 5)  # MX_FLAG_SAT
    s_out[...] = np.maximum(be_m - e.emax, 0)  # X + 127 for the fast rows, 0 for zero rows
    f_out[...] = flags
    slow = (be_m < p.be_min) & (am != 0)
    if sp_rows is not None:
        c_out.reshape(nblk, block)[sp_rows] = 0
        s_out[sp_rows] = E8M0_NAN
        f_out[nan_rows] |= MX_FLAG_NAN
        f_out[inf_rows] |= MX_FLAG_INF
        slow[sp_rows] = False
    if slow.any():
        rows = np.flatnonzero(slow)
        rs, rc, rf = _quantize_rows_exact(b.reshape(nblk, block)[rows], e)
        s_out[rows], f_out[rows] = rs, rf
        c_out.reshape(nblk, block)[rows] = rc


def mx_quantize_flags(
    x: ArrayLike, elem: str | MxElement, block: int = 32
) -> tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8]]:
    """Quantize to MX blocks along the last axis, with per-block status flags.

    Args:
        x: float32 values or uint32 float32 bit patterns, shape ``(..., K)`` with
            ``K`` a multiple of ``block``.
        elem: element type name, a key of :data:`~lockstep.models.bfp.MX_ELEMENTS`.
        block: elements per block (OCP uses 32).

    Returns:
        ``(scales, codes, flags)``: uint8 E8M0 scales of shape ``(..., K // block)``,
        uint8 element codes of shape ``(..., K)`` and uint8 flags of shape
        ``(..., K // block)``. Flag bits:

        * :data:`MX_FLAG_ZERO` -- no finite nonzero element (set in a NaN/Inf block
          too when its finite elements are all zero);
        * :data:`MX_FLAG_NAN`, :data:`MX_FLAG_INF` -- a NaN / an Inf element (scale
          ``0xFF``, codes 0);
        * :data:`MX_FLAG_SCALE_LO` -- ``X`` was clamped up to -127 (only in blocks
          with a finite nonzero element and no NaN/Inf);
        * :data:`MX_FLAG_SAT` -- an element saturated to ``max_normal`` (never in a
          NaN/Inf block);
        * :data:`MX_FLAG_SUBN` -- a float32 subnormal input (in any block).

    Raises:
        ValueError: unknown ``elem``; ``block`` < 1 or not an int; ``x`` of another
            dtype, 0-d, or with a last axis that is not a multiple of ``block``.

    Example:
        >>> x = np.array([[6.0, -0.25, 1e-3, -1e-3] + [0.0] * 28], np.float32)
        >>> s, c, f = mx_quantize_flags(x, "fp4_e2m1")
        >>> int(s[0, 0]), c[0, :4].tolist(), int(f[0, 0])
        (127, [7, 8, 0, 8], 0)
    """
    e = _elem(elem)
    block = _block(block)
    bits = _f32_bits(x, "x")
    if bits.ndim == 0:
        raise ValueError("x: must have at least one axis (the blocked axis)")
    k = bits.shape[-1]
    if k % block:
        raise ValueError(f"x: last axis has {k} elements, not a multiple of block={block}")
    lead = bits.shape[:-1]
    flat = np.ascontiguousarray(bits).reshape(-1)
    nblk = flat.size // block
    scales = np.empty(nblk, np.uint8)
    codes = np.empty(flat.size, np.uint8)
    flags = np.empty(nblk, np.uint8)
    p = _fast_params(e.name)
    rows = max(1, _CHUNK // block)
    ws = _work(min(rows, nblk) * block)
    for r0 in range(0, nblk, rows):
        r1 = min(nblk, r0 + rows)
        sl = slice(r0 * block, r1 * block)
        _quantize_chunk(flat[sl], block, e, p, scales[r0:r1], codes[sl], flags[r0:r1], ws)
    blk_shape = lead + (k // block,)
    return scales.reshape(blk_shape), codes.reshape(lead + (k,)), flags.reshape(blk_shape)


def mx_quantize(
    x: ArrayLike, elem: str | MxElement, block: int = 32
) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """Quantize to MX blocks along the last axis.

    Same as :func:`~lockstep.models.bfp.mx.mx_quantize_flags` without the flags.

    Args:
        x: float32 values or uint32 float32 bit patterns, shape ``(..., K)`` with
            ``K`` a multiple of ``block``.
        elem: element type name, a key of :data:`~lockstep.models.bfp.MX_ELEMENTS`.
        block: elements per block (OCP uses 32).

    Returns:
        ``(scales, codes)``: uint8 E8M0 scales of shape ``(..., K // block)`` and
        uint8 element codes of shape ``(..., K)``.

    Raises:
        ValueError: as :func:`~lockstep.models.bfp.mx.mx_quantize_flags`.

    Example:
        >>> s, c = mx_quantize(np.full((2, 32), 6.0, np.float32), "fp4_e2m1")
        >>> s.tolist(), c[:, 0].tolist()
        ([[127], [127]], [7, 7])
    """
    scales, codes, _ = mx_quantize_flags(x, elem, block)
    return scales, codes


def mx_dequantize(
    scales: ArrayLike, codes: ArrayLike, elem: str | MxElement, block: int = 32
) -> NDArray[np.float32]:
    """Decode MX blocks: ``decode_element(code) * 2**(scale - 127)``.

    The product is formed exactly in float64 and then cast to float32 (exact for
    anything :func:`~lockstep.models.bfp.mx_quantize` produces; an arbitrary scale/code
    pair beyond the float32 range becomes +-Inf, or rounds, in that final cast).

    Args:
        scales: integer (uint8) E8M0 codes, shape ``(..., K // block)``.
        codes: integer (uint8) element codes, shape ``(..., K)``.
        elem: element type name, a key of :data:`~lockstep.models.bfp.MX_ELEMENTS`.
        block: elements per block.

    Returns:
        float32 array of shape ``(..., K)``; every element of a block with scale
        ``0xFF`` is NaN.

    Raises:
        ValueError: unknown ``elem``; bad ``block``; non-integer or out-of-range
            ``scales``/``codes``; shapes that do not match.

    Example:
        >>> mx_dequantize(np.array([126], np.uint8), np.array([7, 15], np.uint8),
        ...               "fp4_e2m1", block=2).tolist()
        [3.0, -3.0]
    """
    e = _elem(elem)
    block = _block(block)
    c = _int_codes(codes, "codes", e.bits)
    s = _int_codes(scales, "scales", 8)
    if c.ndim == 0:
        raise ValueError("codes: must have at least one axis (the blocked axis)")
    k = c.shape[-1]
    if k % block:
        raise ValueError(f"codes: last axis has {k} elements, not a multiple of block={block}")
    want = c.shape[:-1] + (k // block,)
    if s.shape != want:
        raise ValueError(f"scales: shape {s.shape} does not match codes (expected {want})")
    vals = _decode_table(e.name)[c].reshape(want + (block,))
    out = np.ldexp(vals, (s - E8M0_BIAS)[..., None])
    out = np.where((s == E8M0_NAN)[..., None], np.nan, out)
    with np.errstate(over="ignore"):
        return out.reshape(c.shape).astype(np.float32)


def _benchmark(
    n: int = 1 << 22, elem: str = "fp8_e4m3", block: int = 32, reps: int = 7
) -> dict[str, float]:
    """Throughput of :func:`mx_quantize` next to ml_dtypes' ``astype(float8_e4m3fn)``.

    A development aid (ml_dtypes is a dev dependency and is imported only here). Both
    run on the same ``n`` standard-normal float32 values, ``(n // 1024, 1024)``,
    alternately, ``reps`` times; the best time of each counts.

    Returns:
        ``{"ours": elements/s, "ml_dtypes": elements/s, "ratio": ours / ml_dtypes}``.
    """
    import time

    import ml_dtypes

    x = np.random.default_rng(0).standard_normal(n).astype(np.float32).reshape(-1, 1024)
    best = {"ours": math.inf, "ml_dtypes": math.inf}
    for _ in range(reps):
        for key in best:
            t0 = time.perf_counter()
            if key == "ours":
                mx_quantize(x, elem, block)
            else:
                x.astype(ml_dtypes.float8_e4m3fn)
            best[key] = min(best[key], time.perf_counter() - t0)
    ours, ref = n / best["ours"], n / best["ml_dtypes"]
    return {"ours": ours, "ml_dtypes": ref, "ratio": ours / ref}
