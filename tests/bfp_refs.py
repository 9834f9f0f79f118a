"""Independent scalar references of spec 004's block quantizer (exact Fractions, one
value at a time): the model tests and the fuzzing compare :mod:`lockstep.models.bfp`
with these."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

from lockstep.models.bfp import FLAG_EXP_HI, FLAG_EXP_LO, FLAG_INF, FLAG_NAN, FLAG_OVF, FLAG_SUBN, FLAG_ZERO
from lockstep.models.bfp.params import BfpFormat

TWO = Fraction(2)


def f32_value(b: int) -> float:
    """The float32 bit pattern ``b`` as an (exact) Python float."""
    return struct.unpack("<f", struct.pack("<I", int(b) & 0xFFFFFFFF))[0]


def floor_log2(v: Fraction) -> int:
    """floor(log2 v) for a positive Fraction, by comparisons only."""
    assert v > 0
    k = v.numerator.bit_length() - v.denominator.bit_length()
    while TWO**k > v:
        k -= 1
    while TWO ** (k + 1) <= v:
        k += 1
    return k


def ref_round(q: Fraction, rounding: str) -> int:
    """Round a non-negative Fraction: TRUNC toward zero, RNE half to even."""
    assert q >= 0
    return int(q) if rounding == "trunc" else round(q)  # Fraction.__round__ is half-even


def ref_to_width(v: Fraction, w: int, rounding: str, overflow: str) -> tuple[int, bool]:
    """Sign-magnitude rounding of v then SAT/WRAP to w bits."""
    mag = ref_round(abs(v), rounding)
    m_max = 2 ** (w - 1) - 1
    s = -1 if v < 0 else 1
    if mag <= m_max:
        return s * mag, False
    if overflow == "sat":
        return s * m_max, True
    return ((s * mag + 2 ** (w - 1)) % 2**w) - 2 ** (w - 1), True


def ref_quantize_block(bits, fmt: BfpFormat, exp=None):
    """Scalar reference quantizer for one block of float32 bit patterns."""
    vals = [f32_value(b) for b in bits]
    flags = 0
    finite = []
    for b, x in zip(bits, vals):
        if math.isnan(x):
            flags |= FLAG_NAN
        elif math.isinf(x):
            flags |= FLAG_INF
        else:
            finite.append(Fraction(x))
            be = (int(b) >> 23) & 0xFF
            if be == 0 and (int(b) & 0x7FFFFF):
                flags |= FLAG_SUBN
    absmax = max((abs(f) for f in finite), default=Fraction(0))
    if absmax == 0:
        flags |= FLAG_ZERO
    if exp is not None:
        ex = int(exp)
    elif absmax == 0:
        ex = fmt.e_min
    else:
        ex = floor_log2(absmax) - (fmt.w - 2)
        if ex > fmt.e_max:
            ex, flags = fmt.e_max, flags | FLAG_EXP_HI
        elif ex < fmt.e_min:
            ex, flags = fmt.e_min, flags | FLAG_EXP_LO
    mants = []
    for x in vals:
        if math.isnan(x):
            mants.append(0)
        elif math.isinf(x):
            mants.append(fmt.m_max if x > 0 else -fmt.m_max)
        else:
            m, o = ref_to_width(Fraction(x) / TWO**ex, fmt.w, fmt.rounding, fmt.overflow)
            mants.append(m)
            if o:
                flags |= FLAG_OVF
    return ex, mants, flags
