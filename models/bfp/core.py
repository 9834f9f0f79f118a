"""Golden model of the block-floating-point (BFP) family (spec 004).

This module is the SPEC the RTL is checked against: pure numpy, integer-exact, no
floating-point arithmetic anywhere a rounding could matter. Every function works on
whole arrays; a leading ``...`` in a shape means "any number of independent blocks".

Number format
    A block holds ``fmt.n`` signed ``w``-bit mantissas ``m`` sharing one ``e``-bit
    two's-complement exponent ``x``; element value ``m * 2**x``. See
    :class:`~lockstep.models.bfp.params.BfpFormat`.

Flags (one ``int64`` per block; the hardware also keeps a sticky OR, :func:`sticky`)
    ==============  ===  ===========================================================
    ``FLAG_ZERO``   1    the block has no finite nonzero element
    ``FLAG_NAN``    2    a NaN input (its mantissa is 0)
    ``FLAG_INF``    4    a +-Inf input (its mantissa is +-m_max, also under WRAP)
    ``FLAG_EXP_HI`` 8    the selected exponent was clamped down to ``e_max``
    ``FLAG_EXP_LO`` 16   the selected exponent was clamped up to ``e_min``
    ``FLAG_OVF``    32   a finite value's rounded magnitude exceeded ``m_max`` (it was
                         saturated or wrapped), or an accumulator saturated
    ``FLAG_SUBN``   64   a subnormal float32 input (handled exactly, never flushed)
    ==============  ===  ===========================================================

    The float32 converter :func:`to_float32` has its own namespace:
    ``FFLAG_OVF=1`` (rounded to +-Inf), ``FFLAG_UNF=2`` (nonzero, inexact, and the
    rounded result is subnormal or zero: tininess *after* rounding),
    ``FFLAG_INEXACT=4``.

Quantizer (:func:`quantize`, float32 -> BFP; spec 4.2(a))
    * NaN (biased exponent 255, fraction != 0): mantissa 0, ``FLAG_NAN``.
    * +-Inf: mantissa +-m_max (also in WRAP mode), ``FLAG_INF``; excluded from absmax.
    * +-0: mantissa 0 (the sign of zero is lost).
    * Subnormal: ``FLAG_SUBN``, converted exactly.
    * ``absmax`` is the largest ``bits & 0x7FFFFFFF`` over the finite elements (an
      unsigned compare orders finite floats by magnitude).
    * No finite nonzero element: exponent ``e_min``, ``FLAG_ZERO`` (``FLAG_EXP_LO`` is
      NOT set); NaN/Inf elements keep their mantissas and flags.
    * Exponent (patent Eq. 4, claim 28): ``lop(absmax) - (w - 2)`` where ``lop`` is the
      exact ``floor(log2 |x|)``; clamped to ``[e_min, e_max]`` with ``FLAG_EXP_HI`` /
      ``FLAG_EXP_LO``.
    * Forced exponent (``exp=``; patent Table 2): used as is, no clamp flags, must lie in
      ``[e_min, e_max]``; an all-zero block still reports ``FLAG_ZERO`` but keeps the
      forced exponent.
    * Mantissa: the exact value ``sig * 2**(be_eff - 150)`` is scaled by ``2**-x`` and
      rounded on the MAGNITUDE (TRUNC = toward zero, RNE = half to even, symmetric),
      the sign is applied after rounding. If the rounded magnitude exceeds
      ``m_max = 2**(w-1) - 1``: SAT gives ``+-m_max``; WRAP gives the signed value
      ``+-mag`` reduced to ``w``-bit two's complement; both set ``FLAG_OVF``. (So WRAP
      can produce ``-2**(w-1)``, flagged.) Shift amounts are clipped without changing
      any result: a left shift ``>= w`` always overflows and leaves the low ``w`` bits
      zero, a right shift ``>= 64`` gives 0 in both roundings.

Dot product / matrix-vector (:func:`dot`, :func:`matvec`; spec 4.2(b))
    * ``acc = sum(ma * mb)`` exactly (mantissas in ``[-2**(w-1), 2**(w-1)-1]``; the last
      axis must equal ``fmt.n``, so ``acc`` always fits ``acc_min`` bits), ``e3 = ea+eb``.
    * Bias ``b`` (``w``-bit mantissas, exponent ``e5``): ``e6 = e5 - e3``. ``e6 >= 0``:
      ``aligned = b * 2**e6`` exactly; ``e6 < 0``: ``aligned = R(b * 2**e6)`` with
      ``fmt.rounding`` on the magnitude (any right shift ``>= 64`` gives 0).
    * Two saturation stages, both to ``+-(2**(A-1) - 1)`` (``A = fmt.acc_bits``) and both
      setting ``FLAG_OVF``: (1) the aligned bias, if it lies outside the ``A``-bit
      two's-complement range ``[-2**(A-1), 2**(A-1)-1]`` (so a huge ``e6`` saturates, it
      never wraps); (2) the exact sum ``acc + aligned`` if it lies outside that range.
      ``-2**(A-1)`` itself fits and is not saturated.

Renormaliser (:func:`select_max`, :func:`shift_to`, :func:`renormalize`,
:class:`StatsSelector`; spec 4.2(c))
    * Max mode: ``e4 = e3 + lop_int(max|acc|) - (w - 2)``, clamped with
      ``FLAG_EXP_HI``/``FLAG_EXP_LO``; an all-zero vector gives ``e_min`` and
      ``FLAG_ZERO``.
    * Shifter: ``out = R(acc * 2**(e3 - e4))`` on the magnitude, then SAT/WRAP to ``w``
      bits with ``FLAG_OVF`` exactly as the quantizer.
    * Statistics mode: see :class:`StatsSelector`.

BFP -> float32 (:func:`to_float32`; spec 4.2(d))
    ``m * 2**x`` rounded once, RNE, to float32, computed on integers (``|m|`` up to
    ``2**63``). Overflow gives +-Inf. ``m = 0`` gives +0.0; a nonzero value that rounds
    to zero keeps its sign (-0.0 for a negative value), as IEEE 754 does.

The OCP MX functions :func:`mx_quantize` / :func:`mx_dequantize` live in
:mod:`lockstep.models.bfp.mx`; :mod:`lockstep.models.bfp` re-exports both modules' names.
"""

from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..record import ParamError
from .params import BfpFormat

__all__ = [
    "FLAG_ZERO",
    "FLAG_NAN",
    "FLAG_INF",
    "FLAG_EXP_HI",
    "FLAG_EXP_LO",
    "FLAG_OVF",
    "FLAG_SUBN",
    "FLAG_NAMES",
    "FFLAG_OVF",
    "FFLAG_UNF",
    "FFLAG_INEXACT",
    "FFLAG_NAMES",
    "PRESETS",
    "StatsSelector",
    "StatsWindow",
    "decode_flags",
    "dequantize",
    "dot",
    "f32_bits",
    "lop_f32",
    "lop_int",
    "matvec",
    "quantize",
    "renormalize",
    "select_max",
    "shift_to",
    "stats_offset",
    "stats_window",
    "sticky",
    "to_float32",
]

# ---- flags -----------------------------------------------------------------------------
FLAG_ZERO = 1 << 0
FLAG_NAN = 1 << 1
FLAG_INF = 1 << 2
FLAG_EXP_HI = 1 << 3
FLAG_EXP_LO = 1 << 4
FLAG_OVF = 1 << 5
FLAG_SUBN = 1 << 6

#: Block flag name -> bit value (names match ``lockstep.gen.bfp.QUANT_FLAGS`` order).
FLAG_NAMES: dict[str, int] = {
    "zero": FLAG_ZERO,
    "nan": FLAG_NAN,
    "inf": FLAG_INF,
    "exp_hi": FLAG_EXP_HI,
    "exp_lo": FLAG_EXP_LO,
    "ovf": FLAG_OVF,
    "subn": FLAG_SUBN,
}

FFLAG_OVF = 1 << 0
FFLAG_UNF = 1 << 1
FFLAG_INEXACT = 1 << 2

#: float32-converter flag name -> bit value.
FFLAG_NAMES: dict[str, int] = {"ovf": FFLAG_OVF, "unf": FFLAG_UNF, "inexact": FFLAG_INEXACT}

#: A few named formats. "patent" is claim 29 (16-bit mantissa, 5-bit exponent).
PRESETS: dict[str, BfpFormat] = {
    "patent": BfpFormat(w=16, e=5, n=16),
    "patent_rne": BfpFormat(w=16, e=5, n=16, rounding="rne"),
    "w16e8n16": BfpFormat(w=16, e=8, n=16),
    "w8e8n16": BfpFormat(w=8, e=8, n=16, rounding="rne"),
    "w4e8n32": BfpFormat(w=4, e=8, n=32, rounding="rne"),
}

_U1 = np.uint64(1)
_U0 = np.uint64(0)


# ---- small helpers ---------------------------------------------------------------------
def sticky(flags: ArrayLike) -> int:
    """OR of the flags of all blocks (the hardware's sticky error register).

    Args:
        flags: integer flags, any shape (a scalar counts as one block).

    Returns:
        The bitwise OR of every element as a Python int (0 for an empty array).

    Example:
        >>> sticky([FLAG_ZERO, FLAG_NAN, 0])
        3
    """
    f = _int_array(flags, "flags")
    if f.size == 0:
        return 0
    return int(np.bitwise_or.reduce(f.ravel()))


def decode_flags(flags: int, names: dict[str, int] | None = None) -> list[str]:
    """Names of the bits set in one flag word.

    Args:
        flags: one flag word, a non-negative integer (Python or numpy, or a 0-d array).
        names: the namespace, :data:`FLAG_NAMES` (default) or :data:`FFLAG_NAMES`.

    Returns:
        The names of the set bits, in bit order.

    Raises:
        ValueError: ``flags`` is not an integer (a float, str, bool, None, an array with
            axes) or is negative.

    Example:
        >>> decode_flags(FLAG_OVF | FLAG_NAN)
        ['nan', 'ovf']
    """
    try:
        word = operator.index(flags) if not isinstance(flags, bool) else None
    except TypeError:
        word = None
    if word is None or word < 0:
        raise ValueError(f"flags: expected one non-negative integer flag word, got {flags!r}")
    table = FLAG_NAMES if names is None else names
    return [k for k, v in sorted(table.items(), key=lambda kv: kv[1]) if word & v]


def _check_fmt(fmt: Any) -> BfpFormat:
    if not isinstance(fmt, BfpFormat):
        raise ValueError(f"fmt: expected a BfpFormat, got {type(fmt).__name__}")
    return fmt


def _int_array(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as an int64 array; non-integer input is a ValueError naming ``name``."""
    a = np.asarray(x)
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        if a.dtype == object:
            try:
                vals = [int(v) for v in a.ravel()]
            except (TypeError, ValueError):
                raise ValueError(f"{name}: expected integers, got dtype {a.dtype}") from None
            if any(isinstance(v, bool) for v in a.ravel()):
                raise ValueError(f"{name}: expected integers, got bool")
            if vals and (min(vals) < -(1 << 63) or max(vals) >= (1 << 63)):
                raise ValueError(f"{name}: value outside the int64 range")
            return np.array(vals, dtype=np.int64).reshape(a.shape)
        raise ValueError(f"{name}: expected an integer array, got dtype {a.dtype}")
    if a.dtype == np.uint64 and a.size and int(a.max()) >= (1 << 63):
        raise ValueError(f"{name}: value outside the int64 range")
    return a.astype(np.int64)


def _check_range(a: np.ndarray, lo: int, hi: int, name: str, what: str) -> None:
    if a.size and (int(a.min()) < lo or int(a.max()) > hi):
        bad = a[(a < lo) | (a > hi)].ravel()[0]
        raise ValueError(f"{name}: {what} must lie in [{lo}, {hi}], got {int(bad)}")


def _exp_array(x: ArrayLike, name: str, lo: int, hi: int) -> np.ndarray:
    a = _int_array(x, name)
    _check_range(a, lo, hi, name, "exponent")
    return a


def _broadcast(a: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    try:
        return np.broadcast_to(a, shape)
    except ValueError:
        raise ValueError(f"{name}: shape {a.shape} does not broadcast to {shape}") from None


def _abs_u64(a: np.ndarray) -> np.ndarray:
    """Exact ``|a|`` of an int64 array as uint64 (``|-2**63| = 2**63``)."""
    u = a.astype(np.uint64)
    return np.where(a < 0, _U0 - u, u)


def _signed_from_u64(mag: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """``(-1)**neg * mag`` as int64 for ``mag <= 2**63`` (``-2**63`` allowed)."""
    return np.where(neg, _U0 - mag, mag).astype(np.int64)


def _lop_u64(v: np.ndarray) -> np.ndarray:
    """floor(log2 v) of a uint64 array, -1 where v == 0 (binary search, exact)."""
    v = np.asarray(v, dtype=np.uint64)
    r = np.zeros(v.shape, dtype=np.int64)
    t = v.copy()
    for sh in (32, 16, 8, 4, 2, 1):
        m = t >= (_U1 << np.uint64(sh))
        t = np.where(m, t >> np.uint64(sh), t)
        r += m.astype(np.int64) * sh
    return np.where(v == 0, -1, r)


def _rshift_round(mag: np.ndarray, r: np.ndarray, rounding: str) -> np.ndarray:
    """``R(mag / 2**r)`` for uint64 ``mag <= 2**63`` and int64 ``r >= 0``.

    TRUNC drops the shifted-out bits; RNE rounds half to even using the round bit
    ``r-1`` and the sticky bits below it. ``r >= 64`` gives 0 in both modes (for
    ``mag <= 2**63`` and ``r = 64`` the RNE case is at most a tie to the even value 0).
    """
    rc = np.minimum(r, 63).astype(np.uint64)
    q = mag >> rc
    if rounding == "rne":
        rem = mag & ((_U1 << rc) - _U1)
        half = _U1 << (np.maximum(rc, _U1) - _U1)  # unused (rem = 0 < 1) when rc == 0
        up = (rem > half) | ((rem == half) & ((q & _U1) == _U1))
        q = q + up.astype(np.uint64)
    return np.where(r >= 64, _U0, q)


def _scale_to_width(
    mag: np.ndarray, neg: np.ndarray, sh: np.ndarray, w: int, rounding: str, overflow: str
) -> tuple[np.ndarray, np.ndarray]:
    """Signed ``w``-bit mantissa of ``(-1)**neg * mag * 2**sh`` (sign-magnitude rounding).

    Args:
        mag: uint64 magnitudes, ``<= 2**63``.
        neg: bool signs.
        sh: int64 shift (left if >= 0).
        w: mantissa bits including the sign.
        rounding: "trunc" or "rne" (on the magnitude).
        overflow: "sat" or "wrap".

    Returns:
        (int64 mantissas, bool overflow) where overflow means the rounded magnitude
        exceeded ``2**(w-1) - 1``.
    """
    m_max = (1 << (w - 1)) - 1
    mask = np.uint64((1 << w) - 1)
    left = sh >= 0
    # left shift: overflow iff lop(mag) + sh >= w - 1 (mag != 0)
    lop = _lop_u64(mag)
    ovf_l = (mag != 0) & (lop + sh >= w - 1)
    ex_l = mag << np.where(left & ~ovf_l & (mag != 0), sh, 0).astype(np.uint64)
    low_l = ((mag & mask) << np.clip(sh, 0, w).astype(np.uint64)) & mask
    # right shift with rounding
    q = _rshift_round(mag, np.where(left, 0, -sh), rounding)
    ovf_r = q > np.uint64(m_max)
    ovf = np.where(left, ovf_l, ovf_r)
    exact = np.where(left, ex_l, q)  # meaningful only where not ovf
    low = np.where(left, low_l, q & mask)
    if overflow == "sat":
        out = np.where(ovf, np.uint64(m_max), exact)
        return _signed_from_u64(out, neg), ovf
    vlow = np.where(neg, (mask + _U1 - low) & mask, low).astype(np.int64)
    v = np.where(vlow > m_max, vlow - (1 << w), vlow)
    return v, ovf


# ---- float32 helpers -------------------------------------------------------------------
def f32_bits(x: ArrayLike) -> np.ndarray:
    """float32 bit patterns of ``x``.

    Args:
        x: float32 values (viewed), uint32 bit patterns (returned as is), or any other
            floating dtype (converted to float32 first; the conversion is numpy's RNE).

    Returns:
        uint32 array of IEEE-754 binary32 bit patterns, same shape as ``x``.

    Raises:
        ValueError: for a non-float, non-uint32 dtype (e.g. int64).

    Example:
        >>> [hex(b) for b in f32_bits(np.array([1.0, -2.0], np.float32)).tolist()]
        ['0x3f800000', '0xc0000000']
    """
    a = np.asarray(x)
    if a.dtype == np.uint32:
        return a
    if a.dtype == np.float32:
        return a.view(np.uint32)
    if np.issubdtype(a.dtype, np.floating):
        return np.asarray(a, np.float32).view(np.uint32)
    raise ValueError(f"x: expected float32 values or uint32 bit patterns, got dtype {a.dtype}")


def _lop_f32_bits(bits: np.ndarray) -> np.ndarray:
    be = ((bits >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64)
    frac = (bits & np.uint32(0x7FFFFF)).astype(np.uint64)
    return np.where(be == 0, _lop_u64(frac) - 149, be - 127)


def lop_f32(bits: ArrayLike) -> np.ndarray:
    """Exact ``floor(log2 |x|)`` (leading-one position) of finite nonzero float32 values.

    Normal (biased exponent 1..254): ``be - 127``; subnormal: ``msb(frac) - 149``.

    Args:
        bits: uint32 bit patterns (or float32 values, see :func:`f32_bits`).

    Returns:
        int64 array, same shape.

    Raises:
        ValueError: if any element is zero, NaN or Inf.

    Example:
        >>> lop_f32(np.array([1.0, 255.0, 0.1, 1e-45], np.float32)).tolist()
        [0, 7, -4, -149]
    """
    b = f32_bits(bits)
    mag = b & np.uint32(0x7FFFFFFF)
    if np.any(mag == 0) or np.any(mag >= np.uint32(0x7F800000)):
        raise ValueError("bits: lop_f32 needs finite nonzero values")
    return _lop_f32_bits(b)


def lop_int(v: ArrayLike) -> int | np.ndarray:
    """Exact ``floor(log2 v)`` of positive integers (leading-one detector).

    Args:
        v: a positive Python int (any size), or an integer array (int64/uint64).

    Returns:
        A Python int for a Python int input, else an int64 array of the same shape.

    Raises:
        ValueError: if any value is <= 0 or the input is not integer.

    Example:
        >>> lop_int(np.array([1, 2, 3, 1 << 62])).tolist()
        [0, 1, 1, 62]
        >>> lop_int(1 << 100)
        100
    """
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        iv = int(v)
        if iv <= 0:
            raise ValueError(f"v: lop_int needs positive integers, got {iv}")
        return iv.bit_length() - 1
    a = np.asarray(v)
    if a.dtype == np.uint64:
        u = a
    else:
        s = _int_array(a, "v")
        if s.size and int(s.min()) <= 0:
            raise ValueError(f"v: lop_int needs positive integers, got {int(s.min())}")
        u = s.astype(np.uint64)
    if u.size and int(u.min()) == 0:
        raise ValueError("v: lop_int needs positive integers, got 0")
    return _lop_u64(u)


# ---- quantizer -------------------------------------------------------------------------
def quantize(
    x: ArrayLike, fmt: BfpFormat, exp: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float32 blocks -> BFP (shared exponent, ``w``-bit mantissas, flags).

    Args:
        x: shape ``(..., fmt.n)``; float32 values, uint32 bit patterns, or another float
            dtype (converted to float32).
        fmt: the format.
        exp: optional forced exponent (int or int array broadcastable to ``x.shape[:-1]``)
            in ``[e_min, e_max]``; replaces the Eq. 4 selection (patent Table 2).

    Returns:
        ``(exponents, mantissas, flags)``: int64 arrays of shapes ``(...,)``,
        ``(..., n)``, ``(...,)``. See the module docstring for the exact semantics.

    Raises:
        ValueError: bad dtype, last axis != ``fmt.n``, or ``exp`` out of range.

    Example:
        >>> f = BfpFormat(w=16, e=5, n=5, overflow="wrap")
        >>> x = np.array([131072, 256, 1, 0.5, 0.125], np.float32)
        >>> e, m, fl = quantize(x, f, exp=-3)
        >>> int(e), [hex(v) for v in m.tolist()], decode_flags(int(fl))
        (-3, ['0x0', '0x800', '0x8', '0x4', '0x1'], ['ovf'])
    """
    fmt = _check_fmt(fmt)
    bits = f32_bits(x)
    if bits.ndim == 0 or bits.shape[-1] != fmt.n:
        raise ValueError(f"x: last axis must equal fmt.n={fmt.n}, got shape {bits.shape}")
    bshape = bits.shape[:-1]
    be = ((bits >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64)
    frac = (bits & np.uint32(0x7FFFFF)).astype(np.int64)
    neg = (bits >> np.uint32(31)).astype(bool)
    is_nan = (be == 255) & (frac != 0)
    is_inf = (be == 255) & (frac == 0)
    finite = be != 255
    is_subn = (be == 0) & (frac != 0)

    absbits = np.where(finite, bits & np.uint32(0x7FFFFFFF), np.uint32(0))
    absmax = absbits.max(axis=-1)
    zero = absmax == 0
    flags = np.where(zero, FLAG_ZERO, 0).astype(np.int64)
    flags |= np.where(is_nan.any(axis=-1), FLAG_NAN, 0)
    flags |= np.where(is_inf.any(axis=-1), FLAG_INF, 0)
    flags |= np.where(is_subn.any(axis=-1), FLAG_SUBN, 0)

    if exp is None:
        lop = _lop_f32_bits(np.where(zero, np.uint32(1), absmax))
        ex = lop - (fmt.w - 2)
        hi = ~zero & (ex > fmt.e_max)
        lo = ~zero & (ex < fmt.e_min)
        ex = np.where(zero, fmt.e_min, np.clip(ex, fmt.e_min, fmt.e_max))
        flags |= np.where(hi, FLAG_EXP_HI, 0) | np.where(lo, FLAG_EXP_LO, 0)
    else:
        fe = _exp_array(exp, "exp", fmt.e_min, fmt.e_max)
        ex = _broadcast(fe, bshape, "exp").copy()
    ex = ex.astype(np.int64)

    sig = np.where(be > 0, frac | (1 << 23), frac)
    sh = np.maximum(be, 1) - 150 - ex[..., None]
    sh = np.where(finite, sh, 0)
    m, ovf = _scale_to_width(
        sig.astype(np.uint64), neg, sh, fmt.w, fmt.rounding, fmt.overflow
    )
    ovf &= finite
    m = np.where(is_nan, 0, m)
    m = np.where(is_inf, np.where(neg, -fmt.m_max, fmt.m_max), m)
    flags |= np.where(ovf.any(axis=-1), FLAG_OVF, 0)
    return ex, m.astype(np.int64), flags


def _block_exponents(e: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Block exponents ``e`` broadcast to the blocks ``m.shape[:-1]`` of the mantissas.

    Only ``e`` is broadcast: an exponent array with more blocks than the mantissas (say
    ``(B,)`` against one flat ``(B * n,)`` vector) is an error, never a bigger result.
    """
    try:
        return np.broadcast_to(e, m.shape[:-1])
    except ValueError:
        raise ValueError(
            f"exponents: shape {e.shape} does not broadcast over mantissas' blocks {m.shape}"
        ) from None


def dequantize(exponents: ArrayLike, mantissas: ArrayLike) -> np.ndarray:
    """BFP -> float64, ``m * 2**x`` (exact while ``|m| < 2**53`` and in float64 range).

    Args:
        exponents: int array of shape ``mantissas.shape[:-1]`` (or broadcastable to it);
            broadcast over the last axis of ``mantissas``.
        mantissas: int array of shape ``(..., n)``.

    Returns:
        float64 array of shape ``mantissas.shape``.

    Raises:
        ValueError: non-integer input, or ``exponents`` that do not broadcast to the
            blocks ``mantissas.shape[:-1]``.

    Example:
        >>> dequantize(-7, [32640, -1]).tolist()
        [255.0, -0.0078125]
    """
    e = _int_array(exponents, "exponents")
    m = _int_array(mantissas, "mantissas")
    if m.ndim == 0:
        raise ValueError("mantissas: need at least one axis (the block axis)")
    eb = np.broadcast_to(_block_exponents(e, m)[..., None], m.shape)
    eb = np.clip(eb, -2000, 2000).astype(np.int32)
    return np.ldexp(m.astype(np.float64), eb)


# ---- dot product / matrix-vector ---------------------------------------------------------
def _check_mant(m: ArrayLike, fmt: BfpFormat, name: str) -> np.ndarray:
    a = _int_array(m, name)
    _check_range(a, -(1 << (fmt.w - 1)), fmt.m_max, name, f"a {fmt.w}-bit mantissa")
    return a


def _sat_acc(v: np.ndarray, ovf: np.ndarray, pos: np.ndarray, bits: int) -> np.ndarray:
    lim = (1 << (bits - 1)) - 1
    return np.where(ovf, np.where(pos, lim, -lim), v)


def dot(
    ma: ArrayLike,
    ea: ArrayLike,
    mb: ArrayLike,
    eb: ArrayLike,
    fmt: BfpFormat,
    bias: ArrayLike | None = None,
    e5: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BFP dot product over the last axis, with optional aligned bias (Fig. 1).

    Args:
        ma: mantissas ``(..., n)``, ``n == fmt.n``, each in ``[-2**(w-1), 2**(w-1)-1]``.
        ea: exponents of ``ma``'s blocks, broadcastable to the block shape, in
            ``[e_min, e_max]``.
        mb: mantissas ``(..., n)`` (broadcast against ``ma``).
        eb: exponents of ``mb``'s blocks.
        fmt: the format (``w``, ``e``, ``n``, ``rounding``, ``acc_bits``).
        bias: optional bias mantissas (``w``-bit), broadcastable to the block shape.
        e5: bias exponent(s) in ``[e_min, e_max]``; required with ``bias``.

    Returns:
        ``(acc, e3, flags)`` int64 arrays of the block shape: ``acc`` the exact
        ``acc_bits``-wide accumulator (plus aligned bias, saturated), ``e3 = ea + eb``,
        ``flags`` with ``FLAG_OVF`` where a bias saturation occurred.

    Raises:
        ValueError: mantissa/exponent out of range, wrong ``n``, or ``bias`` without
            ``e5``.

    Example:
        >>> f = BfpFormat(w=8, e=5, n=4)
        >>> acc, e3, fl = dot([1, 2, 3, 4], -2, [5, 6, 7, -8], 1, f, bias=3, e5=0)
        >>> int(acc), int(e3), int(fl)
        (12, -1, 0)
    """
    fmt = _check_fmt(fmt)
    a = _check_mant(ma, fmt, "ma")
    b = _check_mant(mb, fmt, "mb")
    for nm, arr in (("ma", a), ("mb", b)):
        if arr.ndim == 0 or arr.shape[-1] != fmt.n:
            raise ValueError(f"{nm}: last axis must equal fmt.n={fmt.n}, got shape {arr.shape}")
    try:
        a, b = np.broadcast_arrays(a, b)
    except ValueError:
        raise ValueError(f"mb: shape {b.shape} does not broadcast with ma {a.shape}") from None
    bshape = a.shape[:-1]
    ea_ = _broadcast(_exp_array(ea, "ea", fmt.e_min, fmt.e_max), bshape, "ea")
    eb_ = _broadcast(_exp_array(eb, "eb", fmt.e_min, fmt.e_max), bshape, "eb")
    e3 = (ea_ + eb_).astype(np.int64)
    # |product| <= 2**46 and n <= 1024: the int64 sum is exact, and fits acc_min bits.
    acc = np.sum(a * b, axis=-1, dtype=np.int64)
    flags = np.zeros(bshape, dtype=np.int64)
    if bias is None:
        if e5 is not None:
            raise ValueError("e5: given without bias")
        return acc, e3, flags
    if e5 is None:
        raise ValueError("e5: required when bias is given")
    bm = _broadcast(_check_mant(bias, fmt, "bias"), bshape, "bias")
    e5_ = _broadcast(_exp_array(e5, "e5", fmt.e_min, fmt.e_max), bshape, "e5")
    A = fmt.acc_bits
    e6 = e5_ - e3
    bneg = bm < 0
    bmag = _abs_u64(bm)
    # stage 1: align. Left: exact if it fits A-bit two's complement, else saturate.
    lop = _lop_u64(bmag)
    top = lop + np.maximum(e6, 0)
    is_pow2 = bmag == (_U1 << np.maximum(lop, 0).astype(np.uint64))
    fits_l = (bmag == 0) | (top <= A - 2) | (bneg & (top == A - 1) & is_pow2)
    left = e6 >= 0
    mag_l = bmag << np.where(left & fits_l & (bmag != 0), e6, 0).astype(np.uint64)
    mag_r = _rshift_round(bmag, np.where(left, 0, -e6), fmt.rounding)
    aligned = _signed_from_u64(np.where(left, mag_l, mag_r), bneg)
    ovf1 = left & ~fits_l
    aligned = _sat_acc(aligned, ovf1, ~bneg, A)
    # stage 2: exact sum (wrap-detected for A = 64), then saturate to A bits.
    with np.errstate(over="ignore"):
        s = acc + aligned
    ovf64 = ((acc ^ s) & (aligned ^ s)) < 0
    lim = (1 << (A - 1)) - 1
    ovf2 = ovf64 | (s > lim) | (s < -lim - 1)
    pos = np.where(ovf64, acc >= 0, s >= 0)
    acc2 = _sat_acc(s, ovf2, pos, A)
    flags |= np.where(ovf1 | ovf2, FLAG_OVF, 0)
    return acc2.astype(np.int64), e3, flags


def matvec(
    M: ArrayLike,
    eM: ArrayLike,
    v: ArrayLike,
    ev: ArrayLike,
    fmt: BfpFormat,
    bias: ArrayLike | None = None,
    e5: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BFP matrix x vector: :func:`dot` of every row of ``M`` with ``v``.

    Args:
        M: mantissas ``(..., rows, n)``.
        eM: exponent(s) of ``M``: a scalar, or per row (broadcastable to ``(..., rows)``).
        v: vector mantissas ``(..., n)``.
        ev: exponent(s) of ``v``, broadcastable to ``(...)``.
        fmt: the format.
        bias: optional bias mantissas broadcastable to ``(..., rows)``.
        e5: bias exponent(s), required with ``bias``.

    Returns:
        ``(acc, e3, flags)`` of shape ``(..., rows)``, as :func:`dot`.

    Example:
        >>> f = BfpFormat(w=8, e=5, n=2)
        >>> acc, e3, fl = matvec([[1, 2], [3, -4]], 0, [10, 1], -1, f)
        >>> acc.tolist(), e3.tolist()
        ([12, 26], [-1, -1])
    """
    vv = _int_array(v, "v")
    if vv.ndim == 0:
        raise ValueError("v: need at least one axis")
    evv = _int_array(ev, "ev")
    return dot(M, eM, vv[..., None, :], evv[..., None], fmt, bias=bias, e5=e5)


# ---- renormaliser (output exponent selector + mantissa shifter) --------------------------
def _check_acc(acc: ArrayLike, fmt: BfpFormat, name: str = "acc") -> np.ndarray:
    a = _int_array(acc, name)
    if a.ndim == 0:
        raise ValueError(f"{name}: need at least one axis (the vector axis)")
    A = fmt.acc_bits
    if A < 64:
        _check_range(a, -(1 << (A - 1)), (1 << (A - 1)) - 1, name, f"an {A}-bit accumulator")
    return a


def _check_e3(e3: ArrayLike, fmt: BfpFormat, shape: tuple[int, ...]) -> np.ndarray:
    return _broadcast(_exp_array(e3, "e3", fmt.e_sum_min, fmt.e_sum_max), shape, "e3")


def _select_max(
    mag: np.ndarray, e3: np.ndarray, fmt: BfpFormat
) -> tuple[np.ndarray, np.ndarray]:
    mx = mag.max(axis=-1)
    zero = mx == 0
    e4 = e3 + _lop_u64(mx) - (fmt.w - 2)
    hi = ~zero & (e4 > fmt.e_max)
    lo = ~zero & (e4 < fmt.e_min)
    e4 = np.where(zero, fmt.e_min, np.clip(e4, fmt.e_min, fmt.e_max)).astype(np.int64)
    flags = (
        np.where(zero, FLAG_ZERO, 0) | np.where(hi, FLAG_EXP_HI, 0) | np.where(lo, FLAG_EXP_LO, 0)
    ).astype(np.int64)
    return e4, flags


def select_max(acc: ArrayLike, e3: ArrayLike, fmt: BfpFormat) -> tuple[np.ndarray, np.ndarray]:
    """Max-mode output exponent: ``e4 = e3 + lop_int(max|acc|) - (w - 2)``, clamped.

    Args:
        acc: accumulator vectors ``(..., L)`` (``fmt.acc_bits``-bit signed values).
        e3: their exponent(s), broadcastable to ``(...)``, ``e_sum_bits`` wide.
        fmt: the format.

    Returns:
        ``(e4, flags)`` int64 of shape ``(...)``; flags ``FLAG_EXP_HI``/``FLAG_EXP_LO``
        on clamping, ``FLAG_ZERO`` (and ``e4 = e_min``) for an all-zero vector.

    Example:
        >>> e4, fl = select_max([23552, -100], -11, BfpFormat(w=16, e=5))
        >>> int(e4), int(fl)
        (-11, 0)
    """
    fmt = _check_fmt(fmt)
    a = _check_acc(acc, fmt)
    e3_ = _check_e3(e3, fmt, a.shape[:-1])
    return _select_max(_abs_u64(a), e3_, fmt)


def _shift_to(
    a: np.ndarray, e3: np.ndarray, e4: np.ndarray, fmt: BfpFormat, overflow: str
) -> tuple[np.ndarray, np.ndarray]:
    sh = np.broadcast_to((e3 - e4)[..., None], a.shape)
    m, ovf = _scale_to_width(_abs_u64(a), a < 0, sh, fmt.w, fmt.rounding, overflow)
    return m, np.where(ovf.any(axis=-1), FLAG_OVF, 0).astype(np.int64)


def shift_to(
    acc: ArrayLike, e3: ArrayLike, e4: ArrayLike, fmt: BfpFormat
) -> tuple[np.ndarray, np.ndarray]:
    """Output mantissa shifter: ``R(acc * 2**(e3 - e4))`` then SAT/WRAP to ``w`` bits.

    Args:
        acc: accumulator vectors ``(..., L)``.
        e3: their exponent(s), broadcastable to ``(...)``.
        e4: target exponent(s) in ``[e_min, e_max]``, broadcastable to ``(...)``.
        fmt: the format (``rounding`` on the magnitude, ``overflow``).

    Returns:
        ``(mantissas (..., L), flags (...))`` with ``FLAG_OVF`` where a rounded magnitude
        exceeded ``m_max``.

    Example:
        >>> m, fl = shift_to([23552, -3, 70000], -11, -11, BfpFormat(w=16, e=5))
        >>> m.tolist(), decode_flags(int(fl))
        ([23552, -3, 32767], ['ovf'])
    """
    fmt = _check_fmt(fmt)
    a = _check_acc(acc, fmt)
    bs = a.shape[:-1]
    e3_ = _check_e3(e3, fmt, bs)
    e4_ = _broadcast(_exp_array(e4, "e4", fmt.e_min, fmt.e_max), bs, "e4")
    return _shift_to(a, e3_, e4_, fmt, fmt.overflow)


def renormalize(
    acc: ArrayLike, e3: ArrayLike, fmt: BfpFormat, mode: str = "max", e4: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Output exponent selector + mantissa shifter in one call.

    Args:
        acc: accumulator vectors ``(..., L)``.
        e3: their exponent(s).
        fmt: the format.
        mode: ``"max"`` (:func:`select_max`) or ``"fixed"`` (use ``e4``).
        e4: the fixed exponent(s) (``mode="fixed"`` only).

    Returns:
        ``(e4, mantissas, flags)``. In fixed mode an all-zero vector reports
        ``FLAG_ZERO`` (as the quantizer with a forced exponent).

    Example:
        >>> e4, m, fl = renormalize([[255, 1]], 0, BfpFormat(w=16, e=5))
        >>> e4.tolist(), m.tolist()
        ([-7], [[32640, 128]])
    """
    fmt = _check_fmt(fmt)
    a = _check_acc(acc, fmt)
    bs = a.shape[:-1]
    e3_ = _check_e3(e3, fmt, bs)
    if mode == "max":
        if e4 is not None:
            raise ValueError("e4: only allowed with mode='fixed'")
        e4_, f1 = _select_max(_abs_u64(a), e3_, fmt)
    elif mode == "fixed":
        if e4 is None:
            raise ValueError("e4: required with mode='fixed'")
        e4_ = _broadcast(_exp_array(e4, "e4", fmt.e_min, fmt.e_max), bs, "e4").copy()
        f1 = np.where(np.all(a == 0, axis=-1), FLAG_ZERO, 0).astype(np.int64)
    else:
        raise ValueError(f"mode: must be 'max' or 'fixed', got {mode!r}")
    m, f2 = _shift_to(a, e3_, e4_, fmt, fmt.overflow)
    return e4_, m, f1 | f2


# ---- statistics mode ----------------------------------------------------------------------
class StatsWindow(NamedTuple):
    """Window arithmetic of the statistics selector (all exact Python ints).

    Attributes:
        mu: ``s1 >> k``.
        ex2: ``s2 >> k``.
        var: ``max(ex2 - mu*mu, 0)``.
        sigma: ``isqrt(var)``.
        hi: ``mu + k_sigma * sigma``.
        offset: ``lop_int(hi) - (w - 2)``, or None when ``hi == 0``.
    """

    mu: int
    ex2: int
    var: int
    sigma: int
    hi: int
    offset: int | None


def stats_window(s1: int, s2: int, fmt: BfpFormat) -> StatsWindow:
    """End-of-window arithmetic from the running sums ``s1 = sum|acc|``, ``s2 = sum acc**2``.

    Args:
        s1: sum of the ``2**k`` absolute values (``k = fmt.stat_log2_win``), >= 0.
        s2: sum of their squares, >= 0.
        fmt: the format (``w``, ``k_sigma``, ``stat_log2_win``).

    Returns:
        A :class:`StatsWindow`.

    Example:
        >>> f = BfpFormat(w=16, e=5, n=4, stat_log2_win=2)
        >>> stats_window(4 * 20480, 2 * 19456**2 + 2 * 21504**2, f)
        StatsWindow(mu=20480, ex2=420478976, var=1048576, sigma=1024, hi=23552, offset=0)
    """
    fmt = _check_fmt(fmt)
    s1, s2 = int(s1), int(s2)
    if s1 < 0:
        raise ValueError(f"s1: must be >= 0, got {s1}")
    if s2 < 0:
        raise ValueError(f"s2: must be >= 0, got {s2}")
    k = fmt.stat_log2_win
    mu = s1 >> k
    ex2 = s2 >> k
    var = max(ex2 - mu * mu, 0)
    sigma = math.isqrt(var)
    hi = mu + fmt.k_sigma * sigma
    off = (hi.bit_length() - 1) - (fmt.w - 2) if hi > 0 else None
    return StatsWindow(mu, ex2, var, sigma, hi, off)


def stats_offset(values: ArrayLike, fmt: BfpFormat) -> StatsWindow:
    """Window arithmetic of one complete window of accumulator values.

    Args:
        values: exactly ``2**fmt.stat_log2_win`` accumulator values (signed; the
            statistics use ``|v|`` and ``v**2``).
        fmt: the format.

    Returns:
        The :class:`StatsWindow` of ``s1 = sum|v|`` and ``s2 = sum v**2``.

    Example:
        >>> f = BfpFormat(w=16, e=5, n=4, stat_log2_win=2)
        >>> stats_offset([19456, -21504, 19456, 21504], f).offset
        0
    """
    fmt = _check_fmt(fmt)
    v = _int_array(values, "values").ravel()
    if v.size != 1 << fmt.stat_log2_win:
        raise ValueError(
            f"values: need 2**stat_log2_win={1 << fmt.stat_log2_win} values, got {v.size}"
        )
    s1, s2 = _sums(v)
    return stats_window(s1, s2, fmt)


def _sums(v: np.ndarray) -> tuple[int, int]:
    """Exact ``(sum|v|, sum v**2)`` of an int64 vector as Python ints."""
    o = v.astype(object)
    return int(np.abs(o).sum()), int((o * o).sum())


class StatsSelector:
    """Streaming statistics-mode exponent selector + shifter (claims 1-4, 18-23, 30-31).

    One call of :meth:`step` per accumulator vector of length ``fmt.n`` (a power of two,
    ``<= 2**k``, ``k = fmt.stat_log2_win``). Per vector:

    1. If ``e3`` differs from the previous vector's ``e3``, ``s1``, ``s2`` and ``count``
       are cleared (the window restarts); ``offset`` is kept.
    2. Exponent: before the first completed window (``offset is None``) max mode
       (:func:`select_max`); otherwise ``e4 = e3 + offset`` clamped to
       ``[e_min, e_max]`` with ``FLAG_EXP_HI``/``FLAG_EXP_LO``.
    3. Overflow guard (offset mode only): if ``lop_int(max|acc|) > e4 - e3 + w - 2``,
       ``FLAG_OVF`` is set and, by ``fmt.stat_policy``:
       ``"sat"`` - the vector is shifted to ``e4`` with SATURATION (whatever
       ``fmt.overflow`` says) and accumulated as usual;
       ``"reshift"`` - ``e4`` (and its clamp flags) comes from :func:`select_max`, the
       vector is shifted to it with ``fmt.overflow``, ``s1``/``s2``/``count`` are cleared
       and this vector is NOT accumulated.
       Otherwise the shift uses ``fmt.overflow`` (RNE round-up can still set OVF).
    4. Accumulate ``s1 += sum|acc|``, ``s2 += sum acc**2`` (exact ints), ``count += n``.
       When ``count == 2**k``: ``offset = stats_window(s1, s2).offset`` (kept if ``hi ==
       0``), then the sums are cleared. The new offset applies from the NEXT vector.

    An all-zero vector reports ``FLAG_ZERO`` in both modes.

    Attributes:
        fmt: the format.
        s1: running ``sum|acc|`` of the current window.
        s2: running ``sum acc**2``.
        count: values accumulated in the current window.
        offset: ``e4 - e3`` from the last completed window, or None.
        last_e3: ``e3`` of the previous vector, or None.
        last_window: the :class:`StatsWindow` of the last completed window, or None.

    Example:
        >>> f = BfpFormat(w=16, e=5, n=4, stat_log2_win=2)
        >>> s = StatsSelector(f)
        >>> e4, m, fl = s.step([19456, -21504, 19456, 21504], -11)   # max mode
        >>> int(e4), s.offset
        (-11, 0)
    """

    def __init__(self, fmt: BfpFormat) -> None:
        fmt = _check_fmt(fmt)
        n, k = fmt.n, fmt.stat_log2_win
        if n & (n - 1):
            raise ParamError(f"BfpFormat.n={n}: statistics mode needs a power-of-two n")
        if n > (1 << k):
            raise ParamError(
                f"BfpFormat.stat_log2_win={k}: window 2**k must hold at least n={n} values"
            )
        self.fmt = fmt
        self.reset()

    def reset(self) -> None:
        """Clear the sums, the count, the offset and the remembered ``e3``."""
        self.s1: int = 0
        self.s2: int = 0
        self.count: int = 0
        self.offset: int | None = None
        self.last_e3: int | None = None
        self.last_window: StatsWindow | None = None

    def _clear(self) -> None:
        self.s1 = self.s2 = self.count = 0

    def step(self, acc_vector: ArrayLike, e3: int) -> tuple[int, np.ndarray, int]:
        """Process one accumulator vector.

        Args:
            acc_vector: shape ``(fmt.n,)`` accumulator values.
            e3: their exponent (an int in the ``e_sum_bits`` range).

        Returns:
            ``(e4, mantissas (n,) int64, flags)``.

        Raises:
            ValueError: wrong shape or out-of-range values.
        """
        fmt = self.fmt
        a = _check_acc(acc_vector, fmt, "acc_vector")
        if a.shape != (fmt.n,):
            raise ValueError(f"acc_vector: shape must be ({fmt.n},), got {a.shape}")
        e3a = _check_e3(e3, fmt, ())
        e3i = int(e3a)
        if self.last_e3 is not None and e3i != self.last_e3:
            self._clear()
        self.last_e3 = e3i
        mag = _abs_u64(a)
        flags = FLAG_ZERO if int(mag.max()) == 0 else 0
        accumulate = True
        overflow = fmt.overflow
        if self.offset is None:
            e4a, f = _select_max(mag, e3a, fmt)
            e4, flags = int(e4a), flags | int(f)
        else:
            want = e3i + self.offset
            e4 = min(max(want, fmt.e_min), fmt.e_max)
            flags |= FLAG_EXP_HI if want > fmt.e_max else 0
            flags |= FLAG_EXP_LO if want < fmt.e_min else 0
            mx = int(mag.max())
            if mx and mx.bit_length() - 1 > e4 - e3i + fmt.w - 2:
                flags |= FLAG_OVF
                if fmt.stat_policy == "sat":
                    overflow = "sat"
                else:
                    e4a, f = _select_max(mag, e3a, fmt)
                    e4 = int(e4a)
                    flags = (flags & ~(FLAG_EXP_HI | FLAG_EXP_LO)) | int(f)
                    self._clear()
                    accumulate = False
        m, f2 = _shift_to(a, e3a, np.asarray(e4, dtype=np.int64), fmt, overflow)
        flags |= int(f2)
        if accumulate:
            s1, s2 = _sums(a)
            self.s1 += s1
            self.s2 += s2
            self.count += fmt.n
            if self.count >= 1 << fmt.stat_log2_win:
                win = stats_window(self.s1, self.s2, fmt)
                self.last_window = win
                if win.offset is not None:
                    self.offset = win.offset
                self._clear()
        return e4, m, flags

    def run(self, accs: ArrayLike, e3s: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`step` over a sequence of vectors, vectorised (the same outputs and the
        same state after it).

        Args:
            accs: shape ``(T, n)``.
            e3s: an int or ``T`` ints.

        Returns:
            ``(e4 (T,), mantissas (T, n), flags (T,))`` int64 arrays.

        Raises:
            ValueError: wrong shape or out-of-range values.

        Example:
            >>> s = StatsSelector(BfpFormat(w=8, e=5, n=2, stat_log2_win=1))
            >>> e4, m, fl = s.run([[64, 64], [64, 64], [200, 0]], 0)
            >>> e4.tolist(), decode_flags(int(fl[2]))
            ([0, 0, 0], ['ovf'])
        """
        e4, m, fl, _ = self.run_traced(accs, e3s)
        return e4, m, fl

    def run_traced(self, accs: ArrayLike, e3s: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """:meth:`run`, and per vector what the selector did (for coverage).

        The window state is sequential, but the offset only changes when a window
        completes, so the vectors up to the next completion are computed together: the
        exponents and guards from the offset in force, the restarts (a changed ``e3``,
        a reshift) and the running count by segment; a horizon of about two windows
        bounds each step's work, so a run costs O(T) whatever its length.

        Returns:
            ``(e4, mantissas, flags, trace)``; ``trace`` holds ``(T,)`` arrays:
            ``lop`` (``lop(max|acc|)``, -1 for an all-zero vector), ``max_mode`` (the
            exponent came from :func:`select_max`: before the first
            window, or a reshift), ``restart`` (``e3`` changed: the sums were cleared),
            ``guard`` (offset mode: ``lop(max|acc|)`` exceeded the offset's headroom),
            ``window_end`` (a window completed with this vector) and ``window_lop``
            (``lop(mu + k*sigma)`` of that window, -1 for none or ``hi = 0``).
        """
        fmt = self.fmt
        a = _int_array(accs, "accs")
        if a.ndim != 2 or a.shape[1] != fmt.n:
            raise ValueError(f"accs: expected shape (T, {fmt.n}), got {a.shape}")
        a = _check_acc(a, fmt, "accs")
        T, n = a.shape
        e = np.array(_check_e3(_int_array(e3s, "e3s"), fmt, (T,)), dtype=np.int64)
        mag = _abs_u64(a)
        mx = mag.max(axis=1) if T else np.zeros(0, np.uint64)
        lop = _lop_u64(mx)
        zero = mx == 0
        prev = np.empty(T, np.int64)
        if T:
            prev[0] = e[0] if self.last_e3 is None else self.last_e3
            prev[1:] = e[:-1]
        restart = e != prev
        e4 = np.zeros(T, np.int64)
        flags = np.where(zero, FLAG_ZERO, 0).astype(np.int64)
        sat = np.zeros(T, bool)
        max_mode = np.zeros(T, bool)
        guard = np.zeros(T, bool)
        window_end = np.zeros(T, bool)
        window_lop = np.full(T, -1, np.int64)
        full = 1 << fmt.stat_log2_win
        horizon = 2 * (full // n) + 8
        i = 0
        while i < T:
            j = min(T, i + horizon)
            sl = slice(i, j)
            ez, zz = e[sl], zero[sl]
            if self.offset is None:
                e4s, fls = _select_max(mag[sl], ez, fmt)
                g = np.zeros(j - i, bool)
                mm = np.ones(j - i, bool)
                accm = np.ones(j - i, bool)
            else:
                want = ez + self.offset
                e4s = np.clip(want, fmt.e_min, fmt.e_max)
                fls = np.where(zz, FLAG_ZERO, 0) | np.where(want > fmt.e_max, FLAG_EXP_HI, 0) \
                    | np.where(want < fmt.e_min, FLAG_EXP_LO, 0)
                g = ~zz & (lop[sl] > e4s - ez + fmt.w - 2)
                mm = np.zeros(j - i, bool)
                accm = np.ones(j - i, bool)
                if fmt.stat_policy != "sat" and g.any():   # reshift: max mode, sums cleared, not accumulated
                    e4m, fm = _select_max(mag[sl], ez, fmt)
                    e4s = np.where(g, e4m, e4s)
                    fls = np.where(g, fm, fls)
                    mm, accm = g, ~g
                fls = fls | np.where(g, FLAG_OVF, 0)
            # the running count: a segment starts at a restart or after a reshift vector
            start = restart[sl].copy()
            start[1:] |= ~accm[:-1]
            inc = np.where(accm, n, 0)
            csum = np.cumsum(inc)
            base = np.maximum.accumulate(np.where(start, csum - inc, 0))
            first_seg = ~np.logical_or.accumulate(start)
            cnt = csum - base + np.where(first_seg, self.count, 0)
            done = accm & (cnt >= full)
            stop = int(np.argmax(done)) if done.any() else j - i - 1
            k = i + stop + 1   # this step settles the vectors [i, k)
            e4[i:k], flags[i:k] = e4s[:stop + 1], flags[i:k] | fls[:stop + 1]
            sat[i:k] = g[:stop + 1] & (fmt.stat_policy == "sat")
            max_mode[i:k], guard[i:k] = mm[:stop + 1], g[:stop + 1]
            # the sums of the segment the step ends in (its accumulated vectors)
            seg0 = int(np.flatnonzero(start[:stop + 1])[-1]) if start[:stop + 1].any() else 0
            keep = accm[seg0:stop + 1]
            o = a[i + seg0:k][keep].astype(object)
            s1 = int(np.abs(o).sum()) if o.size else 0
            s2 = int((o * o).sum()) if o.size else 0
            if first_seg[stop]:
                s1, s2 = s1 + self.s1, s2 + self.s2
            if not accm[stop]:   # ends on a reshift vector: cleared
                s1 = s2 = 0
            self.last_e3 = int(e[k - 1])
            if done[stop]:
                win = stats_window(s1, s2, fmt)
                self.last_window = win
                if win.offset is not None:
                    self.offset = win.offset
                window_end[k - 1] = True
                window_lop[k - 1] = int(win.hi).bit_length() - 1
                self._clear()
            else:
                self.s1, self.s2, self.count = s1, s2, int(cnt[stop]) if accm[stop] else 0
            i = k
        m, f2 = _shift_to(a, e, e4, fmt, fmt.overflow)
        if sat.any() and fmt.overflow != "sat":
            ms, fs = _shift_to(a[sat], e[sat], e4[sat], fmt, "sat")
            m[sat], f2[sat] = ms, fs
        trace = {"lop": lop, "max_mode": max_mode, "restart": restart, "guard": guard, "window_end": window_end,
                 "window_lop": window_lop}
        return e4, m, flags | f2, trace


# ---- BFP -> float32 ----------------------------------------------------------------------
def to_float32(mantissas: ArrayLike, exponents: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``m * 2**x`` rounded once (RNE) to float32, on integers.

    Args:
        mantissas: int64 array ``(..., L)`` (any width, e.g. accumulators).
        exponents: int array of shape ``(...)`` (broadcast over the last axis of
            ``mantissas``, as :func:`dequantize`), any value.

    Returns:
        ``(bits, fflags)``: uint32 float32 bit patterns of shape ``(..., L)`` and per
        element int64 flags ``FFLAG_OVF`` (rounded to +-Inf), ``FFLAG_UNF`` (nonzero,
        inexact, result subnormal or zero), ``FFLAG_INEXACT``.

    Example:
        >>> b, f = to_float32([1, 3, (1 << 24) + 1], -1)
        >>> b.view(np.float32).tolist(), f.tolist()
        ([0.5, 1.5, 8388608.0], [0, 0, 4])
    """
    m = _int_array(mantissas, "mantissas")
    if m.ndim == 0:
        raise ValueError("mantissas: need at least one axis (the block axis)")
    e = _int_array(exponents, "exponents")
    e = np.broadcast_to(_block_exponents(e, m)[..., None], m.shape)
    # |m| < 2**64: e >= 400 always overflows, e <= -400 always rounds to zero; clip keeps
    # every outcome (value, flags) while bounding the integer arithmetic.
    e = np.clip(e, -400, 400).astype(np.int64)
    neg = m < 0
    mag = _abs_u64(m)
    nz = mag != 0
    L = _lop_u64(mag)
    r = np.maximum(L - 23, -149 - e)  # shift so the lsb has weight 2**max(E-23, -149)
    r = np.where(nz, r, 0)
    q = _rshift_round(mag, np.maximum(r, 0), "rne")
    q = np.where(r < 0, mag << np.maximum(-r, 0).astype(np.uint64), q)  # r>=-23, mag<2**24
    # inexact iff some shifted-out bit was set
    rc = np.minimum(np.maximum(r, 0), 64)
    low_mask = np.where(rc >= 64, ~_U0, (_U1 << np.minimum(rc, 63).astype(np.uint64)) - _U1)
    inexact = (r > 0) & ((mag & low_mask) != 0)
    eq = r + e  # weight of q's lsb: E-23 (normal) or -149 (subnormal)
    bits = ((eq + 149) << 23) + q.astype(np.int64)  # carries into the exponent field
    bits = np.where(nz, bits, 0)
    ovf = nz & (bits >= 0x7F800000)
    bits = np.where(ovf, 0x7F800000, bits)
    unf = inexact & (bits < 0x00800000)
    bits = bits | np.where(neg, 1 << 31, 0)
    ff = (
        np.where(ovf, FFLAG_OVF, 0)
        | np.where(unf, FFLAG_UNF, 0)
        | np.where(inexact | ovf, FFLAG_INEXACT, 0)
    ).astype(np.int64)
    return bits.astype(np.uint32), ff
