"""Tests of the OCP MX v1.0 golden model (lockstep.models.bfp.mx).

Independent references used here:

* ml_dtypes (float8_e4m3fn, float8_e5m2, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn,
  float8_e8m0fnu) for the element and scale encodings and the element RNE cast;
* a slow scalar reference written with fractions.Fraction, whose element cast picks the
  nearest representable value from the ml_dtypes code table (ties to the even code),
  for whole-block quantization.
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from lockstep.models.bfp import mx as mx_module
from lockstep.models.bfp.params import MX_ELEMENTS
from lockstep.models.bfp.mx import (
    MX_FLAG_INF, MX_FLAG_NAN, MX_FLAG_SAT, MX_FLAG_SCALE_LO, MX_FLAG_SUBN, MX_FLAG_ZERO, decode_element,
    decode_scale, encode_element, mx_dequantize, mx_quantize, mx_quantize_flags,
)
from mx_refs import ML

# OCP MX v1.0 Table 1, written out again here: (bits, ebits, mbits, emax, max_normal).
OCP_TABLE = {
    "int8": (8, 0, 7, 0, Fraction(127, 64)),
    "fp8_e4m3": (8, 4, 3, 8, Fraction(448)),
    "fp8_e5m2": (8, 5, 2, 15, Fraction(57344)),
    "fp6_e2m3": (6, 2, 3, 2, Fraction(15, 2)),
    "fp6_e3m2": (6, 3, 2, 4, Fraction(28)),
    "fp4_e2m1": (4, 2, 1, 2, Fraction(6)),
}
FLOAT_ELEMS = list(ML)
ALL_ELEMS = list(OCP_TABLE)


# ----------------------------------------------------------------------------------
# scalar Fraction reference
# ----------------------------------------------------------------------------------
def flog2(a: Fraction) -> int:
    """floor(log2(a)) for a > 0, exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > a else e


class RefElem:
    """Element type described from ml_dtypes' code table (int8: from the OCP formula)."""

    def __init__(self, name: str) -> None:
        bits, ebits, mbits, emax, max_normal = OCP_TABLE[name]
        self.name, self.bits, self.emax, self.max_normal = name, bits, emax, max_normal
        self.is_int = ebits == 0
        if self.is_int:
            cands = [(Fraction(n, 64), n) for n in range(129)]
        else:
            pos = np.arange(1 << (bits - 1), dtype=np.uint8)
            vals = pos.view(ML[name]).astype(np.float64)
            fin = [(Fraction(float(v)), int(c)) for c, v in zip(pos, vals) if np.isfinite(v)]
            cands = sorted(fin)
            assert cands[-1][0] == max_normal
            # extend the top binade past max_normal (IEEE rounding with unbounded range)
            step = cands[-1][0] - cands[-2][0]
            top, c = cands[-1][0], cands[-1][1]
            while top < Fraction(2) ** (flog2(max_normal) + 1):
                top, c = top + step, c + 1
                cands.append((top, c))
        self.values = [v for v, _ in cands]
        self.tags = [t for _, t in cands]  # code (float) or integer n (int8)
        self.max_tag = 127 if self.is_int else next(
            t for v, t in cands if v == max_normal
        )

    def cast(self, v: Fraction, neg: bool) -> tuple[int, bool]:
        """(code, saturated) of the RNE, saturating cast of the value ``v`` (sign ``neg``)."""
        a = abs(v)
        i = bisect.bisect_left(self.values, a)
        if i == len(self.values):
            pick, sat = self.max_tag, True
        elif self.values[i] == a:
            pick = self.tags[i]
        else:
            lo, hi = i - 1, i
            dlo, dhi = a - self.values[lo], self.values[hi] - a
            if dlo != dhi:
                pick = self.tags[lo] if dlo < dhi else self.tags[hi]
            else:  # tie: the even code (or even integer for int8)
                pick = self.tags[lo] if self.tags[lo] % 2 == 0 else self.tags[hi]
        mag = self.values[self.tags.index(pick)] if not self.is_int else Fraction(pick, 64)
        sat = mag > self.max_normal
        if sat:
            pick = self.max_tag
        if self.is_int:
            return ((-pick) & 0xFF if neg else pick), sat
        return pick | ((1 << (self.bits - 1)) if neg else 0), sat


REF = {n: RefElem(n) for n in ALL_ELEMS}


def ref_block(vals: np.ndarray, name: str) -> tuple[int, list[int], int]:
    """Scalar reference for one block: (scale, codes, flags)."""
    r = REF[name]
    fl = [float(v) for v in vals]
    nan = any(math.isnan(v) for v in fl)
    inf = any(math.isinf(v) for v in fl)
    nz = [Fraction(v) for v in fl if math.isfinite(v) and v != 0]
    flags = (MX_FLAG_NAN if nan else 0) | (MX_FLAG_INF if inf else 0)
    flags |= 0 if nz else MX_FLAG_ZERO
    tiny = Fraction(2) ** -126
    if any(0 < abs(v) < tiny for v in nz):
        flags |= MX_FLAG_SUBN
    if nan or inf:
        return 0xFF, [0] * len(fl), flags
    if not nz:
        signed0 = 1 << (r.bits - 1)
        neg = [math.copysign(1, v) < 0 for v in fl]
        return 0, [signed0 if n and not r.is_int else 0 for n in neg], flags
    x = flog2(max(abs(v) for v in nz)) - r.emax
    if x < -127:
        x, flags = -127, flags | MX_FLAG_SCALE_LO
    assert x <= 127
    codes = []
    for v in fl:
        c, sat = r.cast(Fraction(v) / Fraction(2) ** x, math.copysign(1, v) < 0)
        codes.append(c)
        if sat:
            flags |= MX_FLAG_SAT
    return x + 127, codes, flags


# ----------------------------------------------------------------------------------
# test data
# ----------------------------------------------------------------------------------
def f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).astype(np.float32)


def make_blocks(rng: np.random.Generator, name: str, block: int, n: int) -> np.ndarray:
    """A mix of ~n blocks exercising the corner cases, shape (n_blocks, block)."""
    _, _, mbits, emax, _ = OCP_TABLE[name]
    emin = 0 if name == "int8" else 1 - ((1 << (OCP_TABLE[name][1] - 1)) - 1)
    out = []
    k = max(1, n // 12)

    def scl(lo: int, hi: int, size: int) -> np.ndarray:
        return np.ldexp(1.0, rng.integers(lo, hi, size))[:, None]

    # Gaussian over the whole exponent range (underflow to float32 subnormals included)
    out.append(f32(rng.standard_normal((k, block)) * scl(-140, 120, k)))
    out.append(f32(rng.standard_normal((k, block)) * scl(-20, 20, k)))
    # heavy-tailed: wide dynamic range inside a block, many elements underflow
    out.append(f32(rng.standard_cauchy((k, block)) * scl(-10, 10, k)))
    out.append(f32(rng.choice([-1, 1], (k, block)) * np.exp(rng.normal(0, 6, (k, block)))))
    # random float32 bit patterns (all finite): every exponent, subnormals, -0
    b = rng.integers(0, 1 << 32, (k, block), dtype=np.uint64).astype(np.uint32)
    b = np.where((b >> 23) & 0xFF == 0xFF, b & 0x807FFFFF, b)
    out.append(b.view(np.float32))
    # subnormal-only and tiny-normal blocks (scale clamp)
    sb = rng.integers(0, 1 << 23, (k, block), dtype=np.uint32)
    sb |= rng.integers(0, 2, (k, block), dtype=np.uint32) << 31
    out.append(sb.view(np.float32))
    tiny_sub = (sb & 0x7FFFFF) >> rng.integers(0, 23, (k, 1)).astype(np.uint32)
    out.append((tiny_sub | (sb & 0x80000000)).view(np.float32))
    out.append(f32(rng.standard_normal((k, block)) * scl(-126, -100, k)))
    # zeros and -0 sprinkled in; all +-0 blocks
    z = f32(rng.standard_normal((k, block)))
    z[rng.random((k, block)) < 0.5] = 0.0
    z[rng.random((k, block)) < 0.3] = -0.0
    out.append(z)
    zz = np.where(rng.random((2, block)) < 0.5, np.float32(0.0), np.float32(-0.0))
    out.append(zz)
    # exact ties on the element grid, and max element set so X is known
    t = np.empty((k, block))
    for i in range(k):
        xsh = int(rng.integers(-100, 100))
        if name == "int8":
            nn = rng.integers(0, 127, block)
            t[i] = np.ldexp(2 * nn + 1, xsh - 7)
        else:
            ee = rng.integers(emin, emax + 1, block)
            nn = rng.integers(1 << mbits, 1 << (mbits + 1), block)
            t[i] = np.ldexp(2 * nn + 1, xsh + ee - mbits - 1)
            sub = rng.random(block) < 0.2  # subnormal-range ties
            nsub = rng.integers(0, 1 << mbits, sub.sum())
            t[i, sub] = np.ldexp(2 * nsub + 1, xsh + emin - mbits - 1)
        t[i, 0] = np.ldexp(1.0, xsh + emax)
        t[i] *= rng.choice([-1, 1], block)
    out.append(f32(t))
    # just below powers of two (carry into the next binade, saturation)
    p = np.ldexp(1.0, rng.integers(-130, 127, (k, block))).astype(np.float32)
    out.append(np.nextafter(p, np.float32(0)) * rng.choice([-1, 1], (k, block)).astype(np.float32))
    # extremes
    out.append(np.full((1, block), np.finfo(np.float32).max, np.float32))
    out.append(np.full((1, block), -np.finfo(np.float32).smallest_subnormal, np.float32))
    # NaN / Inf blocks
    for bad in (np.nan, np.inf, -np.inf):
        s = f32(rng.standard_normal((2, block)))
        s[:, rng.integers(0, block)] = bad
        out.append(s)
    if block > 1:
        s = f32(np.zeros((1, block)))
        s[0, 0], s[0, -1] = np.nan, -np.inf
        out.append(s)
    return np.concatenate(out).astype(np.float32)


# ----------------------------------------------------------------------------------
# formats and element encodings
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL_ELEMS)
def test_formats_record_matches_ocp_table(name):
    e = MX_ELEMENTS[name]
    bits, ebits, mbits, emax, max_normal = OCP_TABLE[name]
    assert (e.bits, e.ebits, e.mbits, e.emax) == (bits, ebits, mbits, emax)
    assert Fraction(e.max_normal) == max_normal
    if name in ML:
        assert float(ml_dtypes.finfo(ML[name]).max) == e.max_normal


@pytest.mark.parametrize("name", FLOAT_ELEMS)
def test_decode_every_code_matches_ml_dtypes(name):
    bits = MX_ELEMENTS[name].bits
    codes = np.arange(1 << bits, dtype=np.uint8)
    got = decode_element(codes, name)
    want = codes.view(ML[name]).astype(np.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)  # NaN == NaN here
    assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


def test_decode_int8():
    codes = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(decode_element(codes, "int8"), codes.view(np.int8) / 64.0)


def test_decode_scale_matches_ml_dtypes_e8m0():
    codes = np.arange(256, dtype=np.uint8)
    want = codes.view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    np.testing.assert_array_equal(decode_scale(codes), want)


def _in_range_values(rng, name, n):
    """float32 values whose RNE cast does not overflow: random bits + exact midpoints."""
    e = MX_ELEMENTS[name]
    table = np.sort(np.unique(np.abs(decode_element(np.arange(1 << e.bits), name))))
    table = table[np.isfinite(table)]
    mids = (table[:-1] + table[1:]) / 2  # exact ties
    top = e.max_normal + (table[-1] - table[-2]) / 2  # RNE boundary above max_normal
    lo = np.log2(table[1]) - 4
    mag = np.exp2(rng.uniform(lo, np.log2(top), n))
    v = np.concatenate([mag, mids, table, table[1:] * (1 - 2.0**-20), table * (1 + 2.0**-20)])
    v = v[v < top]
    v = v * rng.choice([-1.0, 1.0], v.size)
    bitsub = rng.integers(0, 1 << 23, 200, dtype=np.uint32).view(np.float32)
    return np.concatenate([f32(v), bitsub, f32([0.0, -0.0])])


@pytest.mark.parametrize("name", FLOAT_ELEMS)
def test_encode_matches_ml_dtypes_cast(name):
    rng = np.random.default_rng(1)
    v = _in_range_values(rng, name, 20000)
    got = encode_element(v, name)
    want = v.astype(ML[name]).view(np.uint8)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(v[i]), int(got[i]), int(want[i])) for i in bad[:5]]
    # uint32 bit patterns give the same codes
    np.testing.assert_array_equal(encode_element(v.view(np.uint32), name), got)


@pytest.mark.parametrize("name", ALL_ELEMS)
def test_encode_saturates(name):
    e = MX_ELEMENTS[name]
    mx_code = int(REF[name].max_tag)
    big = f32([e.max_normal * 1.5, 1e30, np.finfo(np.float32).max, e.max_normal * 2 - 1e-6])
    np.testing.assert_array_equal(encode_element(big, name), mx_code)
    neg = encode_element(-big, name)
    want_neg = (-mx_code) & 0xFF if name == "int8" else mx_code | (1 << (e.bits - 1))
    np.testing.assert_array_equal(neg, want_neg)


@pytest.mark.parametrize("name", ALL_ELEMS)
def test_encode_float64_single_rounding(name):
    rng = np.random.default_rng(2)
    r = REF[name]
    e = MX_ELEMENTS[name]
    v = rng.standard_normal(400) * np.exp2(rng.integers(-12, 4, 400)) * e.max_normal / 4
    # double-rounding traps: a hair above a tie, below float32 resolution
    tab = np.unique(np.abs(decode_element(np.arange(1 << e.bits), name)))
    tab = tab[np.isfinite(tab)]
    mids = (tab[:-1] + tab[1:]) / 2
    v = np.concatenate([v, mids * (1 + 2.0**-40), -mids * (1 - 2.0**-40)])
    got = encode_element(v, name)
    for x, c in zip(v, got):
        assert int(c) == r.cast(Fraction(float(x)), x < 0)[0], x


def test_encode_rejects_nonfinite_and_bad_dtype():
    with pytest.raises(ValueError, match="values"):
        encode_element(f32([1.0, np.nan]), "fp8_e4m3")
    with pytest.raises(ValueError, match="values"):
        encode_element(np.array([1, 2], np.int32), "fp8_e4m3")
    with pytest.raises(ValueError, match="elem"):
        encode_element(f32([1.0]), "fp8_e4m2")


# ----------------------------------------------------------------------------------
# whole-block quantization against the Fraction reference
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL_ELEMS)
@pytest.mark.parametrize("block,nblocks", [(32, 220), (8, 60), (1, 40)])
def test_quantize_matches_fraction_reference(name, block, nblocks):
    rng = np.random.default_rng([block, ALL_ELEMS.index(name)])
    x = make_blocks(rng, name, block, nblocks)
    scales, codes, flags = mx_quantize_flags(x.reshape(-1), name, block)
    scales, codes, flags = scales.reshape(-1), codes.reshape(-1, block), flags.reshape(-1)
    for i in range(x.shape[0]):
        s, c, f = ref_block(x[i], name)
        assert (int(scales[i]), codes[i].tolist(), int(flags[i])) == (s, c, f), (i, x[i].tolist())


def test_quantize_shapes_dtypes_and_bit_input():
    rng = np.random.default_rng(3)
    x = f32(rng.standard_normal((3, 2, 64)))
    s, c = mx_quantize(x, "fp6_e3m2")
    assert s.shape == (3, 2, 2) and c.shape == (3, 2, 64)
    assert s.dtype == c.dtype == np.uint8
    s2, c2 = mx_quantize(x.view(np.uint32), "fp6_e3m2")
    np.testing.assert_array_equal(s, s2)
    np.testing.assert_array_equal(c, c2)
    s3, c3 = mx_quantize(x.reshape(-1, 32), "fp6_e3m2")
    np.testing.assert_array_equal(s.reshape(-1), s3.reshape(-1))
    np.testing.assert_array_equal(c.reshape(-1), c3.reshape(-1))
    d = mx_dequantize(s, c, "fp6_e3m2")
    assert d.dtype == np.float32 and d.shape == x.shape
    # non-contiguous input
    xt = f32(rng.standard_normal((64, 5))).T
    np.testing.assert_array_equal(mx_quantize(xt, "int8")[1], mx_quantize(xt.copy(), "int8")[1])


def test_never_emits_nan_or_inf_codes():
    rng = np.random.default_rng(4)
    b = rng.integers(0, 1 << 32, 1 << 15, dtype=np.uint64).astype(np.uint32)
    b = np.where((b >> 23) & 0xFF == 0xFF, b & 0x807FFFFF, b)
    _, c = mx_quantize(b, "fp8_e4m3")
    assert not np.any((c & 0x7F) == 0x7F)
    _, c = mx_quantize(b, "fp8_e5m2")
    assert not np.any((c & 0x7C) == 0x7C)
    _, c = mx_quantize(b, "int8")
    assert not np.any(c == 0x80)


# ----------------------------------------------------------------------------------
# directed cases (expected values worked out by hand from the spec)
# ----------------------------------------------------------------------------------
def q1(vals, name, block=None):
    x = f32(vals)
    s, c, f = mx_quantize_flags(x, name, block or x.size)
    return int(s[0]), c.tolist(), int(f[0])


def test_all_ones_fp8_e4m3():
    # max 1.0: X = floor(log2 1) - emax = 0 - 8 = -8, scale code 127 - 8 = 119.
    # 1.0 / 2**-8 = 256 = 1.0 * 2**8: biased exponent 8 + 7 = 15 -> 0b0_1111_000 = 0x78.
    s, c, f = q1([1.0] * 32, "fp8_e4m3")
    assert (s, f) == (119, 0) and c == [0x78] * 32
    np.testing.assert_array_equal(mx_dequantize(np.uint8([s]), np.uint8(c), "fp8_e4m3"), 1.0)


def test_fp4_max_six():
    # max 6.0: X = 2 - 2 = 0 (scale 127); 6.0 = 1.1b * 2**2 -> 0b0_11_1 = 0x7;
    # 1.0 -> 0b0_01_0 = 0x2; 0.5 is the subnormal 0b0_00_1; 0.25 ties to 0 (even) -> 0x0;
    # 0.75 ties between 0.5 (odd) and 1.0 (even) -> 0x2; -3.0 -> 0b1_10_1 = 0xD.
    s, c, f = q1([6.0, 1.0, 0.5, 0.25, 0.75, -3.0, 0.0, -0.0], "fp4_e2m1")
    assert (s, f) == (127, 0)
    assert c == [0x7, 0x2, 0x1, 0x0, 0x2, 0xD, 0x0, 0x8]


def test_fp4_ties_at_the_top():
    # max 7.0: X = 0; 7.0 is a tie between 6 (mantissa 1, odd) and 8 (even): rounds to 8,
    # above max_normal -> saturates to 6 with SAT.
    assert q1([7.0, 1.0], "fp4_e2m1") == (127, [0x7, 0x2], MX_FLAG_SAT)
    # max 5.0: tie between 4 (even) and 6 -> 4 = 0b0_11_0, no saturation.
    assert q1([5.0, 1.0], "fp4_e2m1") == (127, [0x6, 0x2], 0)


def test_fp8_e4m3_saturation():
    # max 2**3 * 1.99: X = 3 - 8 = -5; v' = 1.99 * 256 = 509.4 rounds to 512 > 448 -> 0x7E, SAT.
    assert q1([8 * 1.99, -8 * 1.99, 1.0], "fp8_e4m3") == (122, [0x7E, 0xFE, 0x60], MX_FLAG_SAT)
    # 464 = 448 + 16 is a tie between 448 (1.110b, even) and 480 (odd): 448, no SAT.
    assert q1([464 / 256, 1.0], "fp8_e4m3") == (119, [0x7E, 0x78], 0)
    # just above the tie -> 480 would be needed -> saturate.
    above = np.nextafter(np.float32(464 / 256), np.float32(2))
    assert q1([above, 1.0], "fp8_e4m3")[2] == MX_FLAG_SAT
    # a value just below a power of two: carry within the element, 1.999999 * 2**0 -> 512 -> sat
    s, c, f = q1([np.nextafter(np.float32(2.0), np.float32(0))], "fp8_e4m3")
    assert (s, c, f) == (119, [0x7E], MX_FLAG_SAT)


def test_fp8_e5m2_and_int8_saturation():
    # e5m2: max 1.9 -> X = -15, v' = 1.9 * 2**15 rounds (2 mantissa bits) to 2**16
    # -> saturates to 57344 = 0b0_11110_11 = 0x7B.
    assert q1([1.9, -1.9], "fp8_e5m2") == (112, [0x7B, 0xFB], MX_FLAG_SAT)
    # int8: max 1.995 -> X = 0, 1.995 * 64 = 127.68 -> 128 -> sat 127 = 0x7F; -127 = 0x81.
    assert q1([1.995, -1.995, 1.0, -1.0], "int8") == (127, [0x7F, 0x81, 0x40, 0xC0], MX_FLAG_SAT)
    # int8 ties: 0.5/64 -> 0 (even); 1.5/64 -> 2; -2.5/64 -> -2 = 0xFE.
    assert q1([1.0, 0.5 / 64, 1.5 / 64, -2.5 / 64], "int8") == (127, [0x40, 0, 2, 0xFE], 0)


@pytest.mark.parametrize(
    "name,neg0",
    [("fp8_e4m3", 0x80), ("fp8_e5m2", 0x80), ("fp6_e2m3", 0x20), ("fp6_e3m2", 0x20),
     ("fp4_e2m1", 0x8), ("int8", 0x00)],
)
def test_tiny_negative_becomes_signed_zero(name, neg0):
    s, c, f = q1([1.0, -1e-20, 1e-20, -0.0, 0.0], name)
    assert c[1:] == [neg0, 0, neg0, 0] and f == 0


@pytest.mark.parametrize("name", ALL_ELEMS)
def test_all_zero_block(name):
    neg0 = 0 if name == "int8" else 1 << (MX_ELEMENTS[name].bits - 1)
    assert q1([0.0, -0.0, 0.0, -0.0], name) == (0, [0, neg0, 0, neg0], MX_FLAG_ZERO)
    d = mx_dequantize(np.uint8([0]), np.uint8([0, neg0, 0, neg0]), name, block=4)
    np.testing.assert_array_equal(d, 0.0)
    if name != "int8":
        assert np.signbit(d).tolist() == [False, True, False, True]


@pytest.mark.parametrize("name", ALL_ELEMS)
def test_nan_inf_blocks(name):
    x = f32([[1.0, np.nan, 3.0, 4.0, 1.0, 2.0, -np.inf, 0.0], [np.inf] + [0.0] * 7])
    s, c, f = mx_quantize_flags(x, name, 4)
    assert s[0, 0] == 0xFF and s[0, 1] == 0xFF and s[1, 0] == 0xFF
    assert f[0].tolist() == [MX_FLAG_NAN, MX_FLAG_INF]
    assert f[1, 0] == MX_FLAG_INF | MX_FLAG_ZERO and f[1, 1] == MX_FLAG_ZERO and s[1, 1] == 0
    assert not c[0].any() and not c[1, :4].any()
    d = mx_dequantize(s, c, name, 4)
    assert np.isnan(d[0]).all() and np.isnan(d[1, :4]).all() and (d[1, 4:] == 0).all()


def test_subnormal_inputs_and_scale_clamp():
    # all float32 subnormals: max 2**-130 -> X = -130 - 8 < -127: clamp, SCALE_LO, SUBN.
    # v' = 2**-130 / 2**-127 = 2**-3 = 1.0 * 2**-3 -> e4m3 normal, biased exp 4 -> 0x20.
    s, c, f = q1([2.0**-130, -(2.0**-149), 2.0**-140], "fp8_e4m3")
    # 2**-149 / 2**-127 = 2**-22 underflows to -0 (0x80); 2**-140 -> 2**-13 -> 0.
    assert (s, c, f) == (0, [0x20, 0x80, 0x00], MX_FLAG_SCALE_LO | MX_FLAG_SUBN)
    # a normal block max with a subnormal neighbour: only SUBN
    s, c, f = q1([1.0, 2.0**-140], "fp8_e4m3")
    assert (s, c, f) == (119, [0x78, 0x00], MX_FLAG_SUBN)
    # float32 max: X = 127 - 8 = 119 (scale 246): 1.99999 * 2**8 -> rounds to 512 -> sat
    s, c, f = q1([np.finfo(np.float32).max], "fp8_e4m3")
    assert (s, c, f) == (246, [0x7E], MX_FLAG_SAT)


# ----------------------------------------------------------------------------------
# the chunked bit-pattern fast path against the direct transcription of the semantics
# ----------------------------------------------------------------------------------
def _bit_blocks(rng: np.random.Generator, name: str, block: int, n: int) -> np.ndarray:
    """uint32 blocks ``(~n, block)``: random patterns of every class (NaN, Inf,
    subnormals, +-0), per-block exponent windows whose maxima cover all of 0..254 and
    the fast path's lower limit, few-bit fractions (ties), and :func:`make_blocks`."""
    be_min = mx_module._fast_params(name).be_min
    k = max(2, n // 4)
    raw = rng.integers(0, 1 << 32, (k, block), dtype=np.uint64).astype(np.uint32)
    top = np.concatenate([rng.integers(0, 255, k), be_min + rng.integers(-3, 4, k)])[:, None]
    shape = (2 * k, block)
    ex = np.clip(top - rng.integers(0, 28, shape), 0, 254).astype(np.uint32)
    frac = rng.integers(0, 1 << 23, shape, dtype=np.uint32)
    frac &= np.uint32(0xFFFFFFFF) << rng.integers(0, 24, shape).astype(np.uint32)
    win = (ex << 23) | frac | (rng.integers(0, 2, shape, dtype=np.uint32) << 31)
    win[rng.random(shape) < 0.1] = 0
    return np.concatenate([raw, win, make_blocks(rng, name, block, k).view(np.uint32)])


def _dense_work(monkeypatch) -> None:
    """Make the fast path use _generic_codes for every element from the first chunk."""

    def dense_work(n: int) -> mx_module._Work:
        ws = mx_module._Work(n)
        ws.dense = True
        return ws

    monkeypatch.setattr(mx_module, "_work", dense_work)


@pytest.mark.parametrize("mode", ["default", "sparse_only", "dense_only", "tiny_chunks"])
@pytest.mark.parametrize("name", ALL_ELEMS)
def test_fast_path_matches_reference_path(name, mode, monkeypatch):
    if mode == "sparse_only":  # never switch to _generic_codes for every element
        monkeypatch.setattr(mx_module, "_DENSE_SHIFT", 0)
    elif mode == "dense_only":
        _dense_work(monkeypatch)
    elif mode == "tiny_chunks":  # many chunks, some of a length that is not a multiple of 8
        monkeypatch.setattr(mx_module, "_CHUNK", 200)
    rng = np.random.default_rng([8, ALL_ELEMS.index(name)])
    e = MX_ELEMENTS[name]
    for block in (1, 3, 8, 32):
        bits = _bit_blocks(rng, name, block, 3000 // block + 40)
        got = mx_quantize_flags(bits.reshape(-1), name, block)
        want = mx_module._quantize_rows_exact(bits, e)
        for g, w in zip(got, want):
            assert g.dtype == np.uint8
            np.testing.assert_array_equal(g.reshape(w.shape), w)


@pytest.mark.parametrize("name", ALL_ELEMS)
def test_fast_path_many_chunks(name):
    # several default-size chunks: Gaussian blocks (few element subnormals), then blocks
    # of values in the element-subnormal range below a maximum of 1 (the float types
    # switch to _generic_codes for whole chunks), then Gaussian blocks again
    rng = np.random.default_rng([9, ALL_ELEMS.index(name)])
    n = mx_module._CHUNK
    p = mx_module._fast_params(name)
    top = p.emin - MX_ELEMENTS[name].emax  # log2 of 2**emin relative to the block max
    subs = np.ldexp(rng.uniform(0.5, 1.0, n), rng.integers(top - p.mbits - 1, top + 1, n))
    subs[::32] = 1.0
    subs *= rng.choice([-1, 1], n)
    x = f32(np.concatenate([rng.standard_normal(n + 96), subs, rng.standard_normal(n // 2)]))
    x = x.reshape(-1, 32)
    got = mx_quantize_flags(x, name)
    want = mx_module._quantize_rows_exact(x.view(np.uint32), MX_ELEMENTS[name])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


# ----------------------------------------------------------------------------------
# round trip error bound
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL_ELEMS)
def test_roundtrip_error_bound(name):
    e = MX_ELEMENTS[name]
    rng = np.random.default_rng(5)
    x = make_blocks(rng, name, 32, 300)
    finite_blk = np.isfinite(x).all(axis=1)
    s, c, f = mx_quantize_flags(x, name)
    q = mx_dequantize(s, c, name).astype(np.float64)
    assert np.isnan(q[~finite_blk]).all()
    x, q, s, f = x[finite_blk].astype(np.float64), q[finite_blk], s[finite_blk, 0], f[finite_blk, 0]
    xs = s.astype(np.int64)[:, None] - 127
    vp, qp = np.ldexp(x, -xs), np.ldexp(q, -xs)  # exact: scaling by powers of two
    if e.ebits == 0:
        step = np.full_like(vp, 2.0**-6)
    else:
        _, ex = np.frexp(vp)  # |vp| in [2**(ex-1), 2**ex)
        step = np.ldexp(1.0, np.maximum(np.where(vp == 0, e.emin, ex - 1), e.emin) - e.mbits)
    ok = np.abs(vp - qp) <= step / 2
    sat = (np.abs(qp) == e.max_normal) & (np.abs(vp) > e.max_normal)
    sat &= ((f & MX_FLAG_SAT) != 0)[:, None]
    assert (ok | sat).all()
    if e.ebits:  # float elements keep the sign, zeros included
        assert (np.signbit(q) == np.signbit(x)).all()
    # a SAT block really holds a saturated element
    satblk = (f & MX_FLAG_SAT) != 0
    assert sat[satblk].any(axis=1).all()


# ----------------------------------------------------------------------------------
# argument checking and docs
# ----------------------------------------------------------------------------------
def test_bad_arguments():
    x = np.zeros((2, 32), np.float32)
    with pytest.raises(ValueError, match="elem"):
        mx_quantize(x, "fp8")
    with pytest.raises(ValueError, match="block"):
        mx_quantize(x, "fp8_e4m3", block=0)
    with pytest.raises(ValueError, match="block"):
        mx_quantize(x, "fp8_e4m3", block=2.0)
    with pytest.raises(ValueError, match="x.*multiple of block"):
        mx_quantize(x, "fp8_e4m3", block=5)
    with pytest.raises(ValueError, match="x"):
        mx_quantize(x.astype(np.float64), "fp8_e4m3")
    with pytest.raises(ValueError, match="x"):
        mx_quantize(np.float32(1.0), "fp8_e4m3")
    s, c = mx_quantize(x, "fp4_e2m1")
    with pytest.raises(ValueError, match="codes"):
        mx_dequantize(s, c | 0x10, "fp4_e2m1")
    with pytest.raises(ValueError, match="codes"):
        mx_dequantize(s, c.astype(np.float32), "fp4_e2m1")
    with pytest.raises(ValueError, match="scales"):
        mx_dequantize(s[:, :0], c, "fp4_e2m1")
    with pytest.raises(ValueError, match="elem"):
        mx_dequantize(s, c, "e2m1")
    with pytest.raises(ValueError, match="codes"):
        decode_element(np.array([64], np.uint8), "fp6_e2m3")

