"""Tests of the BFP golden model (lockstep.models.bfp).

Every property test compares against an independent scalar reference written with
Python ``fractions.Fraction`` / big ints (slow, obviously correct), never against values
produced by the model itself. Directed vectors come from the patent (spec 004).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from lockstep.models.bfp import (
    FFLAG_INEXACT,
    FFLAG_OVF,
    FFLAG_UNF,
    FLAG_EXP_HI,
    FLAG_EXP_LO,
    FLAG_INF,
    FLAG_NAMES,
    FLAG_NAN,
    FLAG_OVF,
    FLAG_SUBN,
    FLAG_ZERO,
    PRESETS,
    StatsSelector,
    dequantize,
    dot,
    f32_bits,
    lop_f32,
    lop_int,
    matvec,
    quantize,
    renormalize,
    select_max,
    shift_to,
    stats_offset,
    stats_window,
    sticky,
    to_float32,
)
from lockstep.models.bfp.params import BfpFormat
from lockstep.models.record import ParamError

from bfp_refs import TWO, f32_value, floor_log2, ref_quantize_block, ref_round, ref_to_width


def ref_pow2_bits(c: int) -> int:
    """float32 bit pattern of 2**c, c in [-149, 127]."""
    return (c + 127) << 23 if c >= -126 else 1 << (c + 149)


SPECIALS = np.array(
    [
        0x00000000, 0x80000000,  # +-0
        0x7FC00000, 0xFFC00001, 0x7F800001, 0xFFFFFFFF,  # NaNs
        0x7F800000, 0xFF800000,  # +-Inf
        0x00000001, 0x807FFFFF, 0x00400000, 0x00000003,  # subnormals
        0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x3F800000,  # max, min normal, 1.0
    ],
    dtype=np.uint32,
)


def make_bits(rng, L, neg):
    """float32 patterns with leading-one position L (zero below -149), random fraction."""
    L = np.clip(L, -200, 127)
    frac = rng.integers(0, 1 << 23, size=L.shape, dtype=np.int64)
    normal = L >= -126
    sub = (L < -126) & (L >= -149)
    p = np.clip(L + 149, 0, 22)
    sfrac = (np.int64(1) << p) | (frac & ((np.int64(1) << p) - 1))
    bits = np.where(normal, ((L + 127) << 23) | frac, np.where(sub, sfrac, 0))
    return (bits | (neg.astype(np.int64) << 31)).astype(np.uint32)


def rand_blocks(rng, fmt: BfpFormat, nb: int) -> np.ndarray:
    """Random blocks mixing clamping-window scales, wide ranges and corner cases."""
    n = fmt.n
    lo_c, hi_c = fmt.e_min + fmt.w - 2 - 5, fmt.e_max + fmt.w - 2 + 5
    c = np.where(
        rng.random(nb) < 0.6,
        rng.integers(max(lo_c, -150), min(hi_c, 127) + 1, size=nb),
        rng.integers(-150, 128, size=nb),
    )
    spread = np.where(rng.random((nb, 1)) < 0.7, fmt.w + 4, 60)
    d = (rng.random((nb, n)) * spread).astype(np.int64)
    d[:, 0] = 0
    neg = rng.random((nb, n)) < 0.5
    bits = make_bits(rng, c[:, None] - d, neg)
    # boundary values around 2**c: exact, -1 ulp, +1 ulp
    cc = np.clip(c, -149, 127)
    p2 = np.array([ref_pow2_bits(int(v)) for v in cc], dtype=np.int64)[:, None]
    which = rng.integers(-1, 2, size=(nb, n))
    edge = np.clip(p2 + which, 1, 0x7F7FFFFF) | (neg.astype(np.int64) << 31)
    bits = np.where(rng.random((nb, n)) < 0.12, edge.astype(np.uint32), bits)
    # specials
    sp = SPECIALS[rng.integers(0, len(SPECIALS), size=(nb, n))]
    bits = np.where(rng.random((nb, n)) < 0.06, sp, bits)
    # RNE tie blocks: m = (2j+1)/2 at exponent ex; max element at lop ex + w - 2
    tie = rng.random(nb) < 0.15
    for i in np.nonzero(tie)[0]:
        ex = int(rng.integers(max(-125, fmt.e_min - 2), min(127 - fmt.w, fmt.e_max + 2) + 1))
        j = rng.integers(0, 1 << (fmt.w - 1), size=n)
        vals = np.ldexp((2 * j + 1).astype(np.float64), ex - 1)
        top = (2**fmt.w - 1) if rng.random() < 0.5 else 2 ** (fmt.w - 1)
        vals[0] = math.ldexp(top, ex - 1)
        vals *= np.where(rng.random(n) < 0.5, -1.0, 1.0)
        bits[i] = vals.astype(np.float32).view(np.uint32)
    # all-zero / all-special blocks
    zero = rng.random(nb) < 0.04
    bits[zero] = np.where(rng.random((int(zero.sum()), n)) < 0.5, 0, 0x80000000)
    allsp = rng.random(nb) < 0.03
    bits[allsp] = SPECIALS[rng.integers(0, 8, size=(int(allsp.sum()), n))]
    rng.shuffle(bits, axis=1)
    return bits


QFMTS = [
    BfpFormat(w=4, e=3, n=4, rounding="trunc", overflow="sat"),
    BfpFormat(w=4, e=8, n=16, rounding="rne", overflow="wrap"),
    BfpFormat(w=8, e=3, n=16, rounding="rne", overflow="sat"),
    BfpFormat(w=8, e=8, n=32, rounding="trunc", overflow="wrap"),
    BfpFormat(w=8, e=5, n=4, rounding="rne", overflow="wrap"),
    BfpFormat(w=16, e=5, n=16, rounding="rne", overflow="sat"),
    BfpFormat(w=16, e=8, n=4, rounding="trunc", overflow="sat"),
    BfpFormat(w=16, e=3, n=32, rounding="rne", overflow="wrap"),
    BfpFormat(w=24, e=9, n=4, rounding="rne", overflow="sat"),
]


def fid(f: BfpFormat) -> str:
    return f"w{f.w}e{f.e}n{f.n}{f.rounding}{f.overflow}"


# ======================================================================================
# flags / small helpers
# ======================================================================================
def test_flag_constants():
    assert [FLAG_NAMES[k] for k in ("zero", "nan", "inf", "exp_hi", "exp_lo", "ovf", "subn")] == [
        1, 2, 4, 8, 16, 32, 64
    ]
    assert (FFLAG_OVF, FFLAG_UNF, FFLAG_INEXACT) == (1, 2, 4)
    assert sticky(np.array([[1, 0], [4, 32]])) == 37
    assert sticky(np.zeros(0, np.int64)) == 0


def test_presets():
    assert PRESETS["patent"] == BfpFormat(w=16, e=5, n=16)
    assert all(isinstance(f, BfpFormat) for f in PRESETS.values())



def test_f32_bits_dtypes():
    x = np.array([1.5, -0.0], np.float32)
    assert f32_bits(x).dtype == np.uint32
    assert f32_bits(x).tolist() == [0x3FC00000, 0x80000000]
    assert f32_bits(np.array([1.5, -0.0])).tolist() == [0x3FC00000, 0x80000000]
    u = np.array([0x7FC00000], np.uint32)
    assert f32_bits(u) is u
    with pytest.raises(ValueError, match="x"):
        f32_bits(np.array([1, 2]))


def test_lop_f32_exhaustive_exponents():
    rng = np.random.default_rng(1)
    bits = np.concatenate(
        [
            rng.integers(1, 0x7F800000, size=4000).astype(np.uint32),
            (np.arange(0, 23, dtype=np.uint32) << 0) + 1,
            np.uint32(1) << np.arange(0, 31, dtype=np.uint32) & np.uint32(0x7FFFFFFF),
        ]
    )
    bits = bits[(bits & 0x7FFFFFFF) != 0]
    bits = bits[(bits & 0x7FFFFFFF) < 0x7F800000]
    neg = bits | np.uint32(0x80000000)
    ref = [floor_log2(abs(Fraction(f32_value(b)))) for b in bits]
    assert lop_f32(bits).tolist() == ref
    assert lop_f32(neg).tolist() == ref
    for bad in (0, 0x80000000, 0x7F800000, 0x7FC00000):
        with pytest.raises(ValueError):
            lop_f32(np.array([bad], np.uint32))


def test_lop_int():
    rng = np.random.default_rng(2)
    lows = rng.integers(0, 2**63, size=3000, dtype=np.uint64).tolist()
    vals = [(1 << k) | (lo >> (63 - k)) for k, lo in zip(rng.integers(0, 64, 3000).tolist(), lows)]
    vals += [1, 2, 3, (1 << 64) - 1, 1 << 63, (1 << 63) - 1]
    v = np.array(vals, np.uint64)
    assert lop_int(v).tolist() == [int(x).bit_length() - 1 for x in v.tolist()]
    s = np.array([1, 5, (1 << 63) - 1], np.int64)
    assert lop_int(s).tolist() == [0, 2, 62]
    assert lop_int(3 << 200) == 201
    for bad in (0, -1, np.array([3, 0]), np.array([-5])):
        with pytest.raises(ValueError):
            lop_int(bad)
    with pytest.raises(ValueError):
        lop_int(np.array([1.0]))


# ======================================================================================
# quantizer: directed patent vectors
# ======================================================================================
TABLE2 = np.array([131072, 256, 1, 0.5, 0.125], np.float32)


def test_table2_forced_exponents_wrap():
    f = BfpFormat(w=16, e=5, n=5, rounding="trunc", overflow="wrap")
    e, m, fl = quantize(TABLE2, f, exp=3)
    assert int(e) == 3 and m.tolist() == [0x4000, 0x0020, 0, 0, 0] and int(fl) == 0
    e, m, fl = quantize(TABLE2, f, exp=-3)
    assert int(e) == -3 and m.tolist() == [0, 0x0800, 0x0008, 0x0004, 0x0001]
    assert int(fl) == FLAG_OVF  # the wrapped 2**20 is an overflow
    # unforced selection picks +3 (Eq. 4)
    e, m, fl = quantize(TABLE2, f)
    assert int(e) == 3 and m.tolist() == [0x4000, 0x0020, 0, 0, 0] and int(fl) == 0


def test_table2_forced_exponent_sat():
    f = BfpFormat(w=16, e=5, n=5, rounding="trunc", overflow="sat")
    e, m, fl = quantize(TABLE2, f, exp=-3)
    assert m.tolist() == [0x7FFF, 0x0800, 0x0008, 0x0004, 0x0001] and int(fl) == FLAG_OVF
    e, m, fl = quantize(-TABLE2, f, exp=-3)
    assert m.tolist() == [-0x7FFF, -0x0800, -0x0008, -0x0004, -0x0001]


def test_forced_exponent_batch_and_errors():
    f = BfpFormat(w=16, e=5, n=5, overflow="wrap")
    x = np.stack([TABLE2, TABLE2, np.zeros(5, np.float32)])
    e, m, fl = quantize(x, f, exp=np.array([3, -3, 7]))
    assert e.tolist() == [3, -3, 7]
    assert m[1].tolist() == [0, 0x0800, 8, 4, 1]
    assert fl.tolist() == [0, FLAG_OVF, FLAG_ZERO]
    for bad in (16, -17):
        with pytest.raises(ValueError, match="exp"):
            quantize(TABLE2, f, exp=bad)
    with pytest.raises(ValueError, match="exp"):
        quantize(x, f, exp=np.array([1, 2]))
    with pytest.raises(ValueError, match="exp"):
        quantize(x, f, exp=1.5)


@pytest.mark.parametrize(
    "x, e, trunc, rne",
    [
        (255.0, -7, 0x7F80, 0x7F80),
        (1.0, -14, 0x4000, 0x4000),
        (0.5, -15, 0x4000, 0x4000),
        (11.5, -11, 0x5C00, 0x5C00),
        (131072.0, 3, 0x4000, 0x4000),
        (1 / 3, -16, 0x5555, 0x5555),
        (math.pi, -13, 0x6487, 0x6488),
    ],
)
@pytest.mark.parametrize("ebits", [5, 8])
def test_spec_single_values(x, e, trunc, rne, ebits):
    for rounding, want in (("trunc", trunc), ("rne", rne)):
        f = BfpFormat(w=16, e=ebits, n=1, rounding=rounding)
        ex, m, fl = quantize(np.array([x], np.float32), f)
        assert (int(ex), int(m[0]), int(fl)) == (e, want, 0)
        ex, m, fl = quantize(np.array([-x], np.float32), f)
        assert (int(ex), int(m[0])) == (e, -want)


def test_rne_roundup_corner():
    x = np.array([2 - 2**-20, 0.5], np.float32)
    assert float(x[0]) == 2 - 2**-20
    e, m, fl = quantize(x, BfpFormat(w=16, e=5, n=2, rounding="rne", overflow="sat"))
    assert int(e) == -14 and m.tolist() == [32767, 8192] and int(fl) == FLAG_OVF
    e, m, fl = quantize(-x, BfpFormat(w=16, e=5, n=2, rounding="rne", overflow="sat"))
    assert m.tolist() == [-32767, -8192] and int(fl) == FLAG_OVF
    e, m, fl = quantize(x, BfpFormat(w=16, e=5, n=2, rounding="rne", overflow="wrap"))
    assert m.tolist() == [-32768, 8192] and int(fl) == FLAG_OVF
    e, m, fl = quantize(x, BfpFormat(w=16, e=5, n=2, rounding="trunc"))
    assert m.tolist() == [32767, 8192] and int(fl) == 0


def test_special_values():
    f = BfpFormat(w=8, e=5, n=4, overflow="wrap")
    inf, nan = np.float32(np.inf), np.float32(np.nan)
    e, m, fl = quantize(np.array([inf, -inf, 1.0, -0.0], np.float32), f)
    assert int(e) == -6 and m.tolist() == [127, -127, 64, 0] and int(fl) == FLAG_INF
    e, m, fl = quantize(np.array([nan, 0.0, -0.0, 0.0], np.float32), f)
    assert int(e) == f.e_min and m.tolist() == [0, 0, 0, 0]
    assert int(fl) == FLAG_ZERO | FLAG_NAN
    e, m, fl = quantize(np.array([-inf, nan, 0.0, 0.0], np.float32), f)
    assert int(e) == f.e_min and m.tolist() == [-127, 0, 0, 0]
    assert int(fl) == FLAG_ZERO | FLAG_NAN | FLAG_INF  # no EXP_LO
    e, m, fl = quantize(np.zeros((3, 4), np.float32), f)
    assert e.tolist() == [f.e_min] * 3 and fl.tolist() == [FLAG_ZERO] * 3


def test_subnormals_exact():
    f = BfpFormat(w=16, e=10, n=4, rounding="trunc")  # e_min = -512: no clamp
    bits = np.array([0x007FFFFF, 0x00000001, 0x80400000, 0x00000000], np.uint32)
    e, m, fl = quantize(bits, f)
    # max subnormal = (2**23 - 1) * 2**-149, lop = -127
    assert int(e) == -127 - 14
    assert m.tolist() == [(2**23 - 1) >> 8, 0, -(2**22 >> 8), 0]
    assert int(fl) == FLAG_SUBN
    f5 = BfpFormat(w=16, e=5, n=4)
    e, m, fl = quantize(bits, f5)
    assert int(e) == -16 and int(fl) == FLAG_SUBN | FLAG_EXP_LO and m.tolist() == [0, 0, 0, 0]


def test_clamp_hi():
    f = BfpFormat(w=8, e=3, n=2, overflow="sat")
    e, m, fl = quantize(np.array([2000.0, 1.0], np.float32), f)
    assert int(e) == 3 and m.tolist() == [127, 0]
    assert int(fl) == FLAG_EXP_HI | FLAG_OVF


def test_quantize_bad_input():
    f = BfpFormat(w=8, e=5, n=4)
    with pytest.raises(ValueError, match="x"):
        quantize(np.zeros(5, np.float32), f)
    with pytest.raises(ValueError, match="x"):
        quantize(np.zeros(4, np.int64), f)
    with pytest.raises(ValueError, match="x"):
        quantize(np.float32(1.0), f)
    with pytest.raises(ValueError, match="fmt"):
        quantize(np.zeros(4, np.float32), "patent")
    # float64 input is converted to float32
    e, m, _ = quantize(np.array([1.0, 2.0, 3.0, 4.0]), f)
    assert int(e) == -4 and m.tolist() == [16, 32, 48, 64]


# ======================================================================================
# quantizer: property tests against the Fraction reference
# ======================================================================================
@pytest.mark.parametrize("fmt", QFMTS, ids=fid)
def test_quantize_vs_reference(fmt):
    rng = np.random.default_rng(abs(hash(fid(fmt))) % 2**32)
    nb = max(150, 4800 // fmt.n)
    bits = rand_blocks(rng, fmt, nb)
    e, m, fl = quantize(bits.reshape(nb // 2, 2, fmt.n) if nb % 2 == 0 else bits, fmt)
    e, m, fl = e.reshape(-1), m.reshape(-1, fmt.n), fl.reshape(-1)
    assert e.dtype == m.dtype == fl.dtype == np.int64
    for i in range(nb):
        re_, rm, rf = ref_quantize_block(bits[i].tolist(), fmt)
        assert (int(e[i]), m[i].tolist(), int(fl[i])) == (re_, rm, rf), (
            i, [hex(b) for b in bits[i].tolist()]
        )
    # the generator did reach the interesting cases
    seen = sticky(fl)
    assert seen & FLAG_ZERO and seen & FLAG_NAN and seen & FLAG_INF and seen & FLAG_SUBN
    if -149 - (fmt.w - 2) < fmt.e_min:  # clamping reachable from float32 inputs
        assert seen & FLAG_EXP_LO
    if 127 - (fmt.w - 2) > fmt.e_max:
        assert seen & FLAG_EXP_HI
    if fmt.rounding == "rne" or fmt.e <= 5:
        assert seen & FLAG_OVF


@pytest.mark.parametrize("fmt", QFMTS, ids=fid)
def test_quantize_forced_vs_reference(fmt):
    rng = np.random.default_rng(7 + fmt.w)
    nb = 200
    bits = rand_blocks(rng, fmt, nb)
    ex = rng.integers(fmt.e_min, fmt.e_max + 1, size=nb)
    e, m, fl = quantize(bits, fmt, exp=ex)
    assert e.tolist() == ex.tolist()
    for i in range(nb):
        _, rm, rf = ref_quantize_block(bits[i].tolist(), fmt, exp=int(ex[i]))
        rf &= ~(FLAG_EXP_HI | FLAG_EXP_LO)
        assert (m[i].tolist(), int(fl[i])) == (rm, rf)


@pytest.mark.parametrize("fmt", QFMTS, ids=fid)
def test_quantize_invariants(fmt):
    rng = np.random.default_rng(11 + fmt.w * 7 + fmt.n)
    bits = rand_blocks(rng, fmt, 600)
    e, m, fl = quantize(bits, fmt)
    vals = [[f32_value(b) for b in row] for row in bits.tolist()]
    checked_norm = checked_err = 0
    for i in range(len(bits)):
        f = int(fl[i])
        finite = [j for j in range(fmt.n) if math.isfinite(vals[i][j])]
        if not f & (FLAG_ZERO | FLAG_EXP_HI | FLAG_EXP_LO) and fmt.rounding == "trunc":
            mx = max(abs(int(m[i][j])) for j in finite)
            assert 2 ** (fmt.w - 2) <= mx <= fmt.m_max
            assert not f & FLAG_OVF
            checked_norm += 1
        if not f & (FLAG_OVF | FLAG_EXP_HI):
            q = TWO ** int(e[i])
            for j in finite:
                err = abs(Fraction(vals[i][j]) - int(m[i][j]) * q)
                assert err < q if fmt.rounding == "trunc" else err <= q / 2
                checked_err += 1
    assert checked_err > 1000
    assert fmt.rounding == "rne" or checked_norm > 50


# ======================================================================================
# dequantize
# ======================================================================================
def test_dequantize():
    rng = np.random.default_rng(3)
    m = rng.integers(-(2**23), 2**23, size=(50, 8))
    e = rng.integers(-200, 200, size=50)
    d = dequantize(e, m)
    assert d.dtype == np.float64 and d.shape == (50, 8)
    for i in range(50):
        for j in range(8):
            assert Fraction(float(d[i, j])) == int(m[i, j]) * TWO ** int(e[i])
    with pytest.raises(ValueError, match="exponents"):
        dequantize(np.zeros(3, np.int64), np.zeros((4, 8), np.int64))
    with pytest.raises(ValueError, match="mantissas"):
        dequantize(0, np.zeros(3))


def test_quantize_dequantize_roundtrip_exact():
    f = BfpFormat(w=16, e=8, n=5)
    e, m, _ = quantize(TABLE2[None, :], f, exp=-3)
    assert dequantize(e, m)[0, 1:].tolist() == [256.0, 1.0, 0.5, 0.125]


# ======================================================================================
# dot product / matvec
# ======================================================================================
def ref_dot(a, ea, b, eb, fmt, bias=None, e5=None):
    acc = sum(int(x) * int(y) for x, y in zip(a, b))
    e3 = int(ea) + int(eb)
    if bias is None:
        return acc, e3, 0
    A = fmt.acc_bits
    lo, hi = -(2 ** (A - 1)), 2 ** (A - 1) - 1
    e6 = int(e5) - e3
    v = int(bias) * TWO**e6
    mag = ref_round(abs(v), fmt.rounding)
    al = mag if v >= 0 else -mag
    fl = 0
    if not lo <= al <= hi:
        al, fl = (hi if al > 0 else -hi), FLAG_OVF
    s = acc + al
    if not lo <= s <= hi:
        s, fl = (hi if s > 0 else -hi), FLAG_OVF
    return s, e3, fl


DFMTS = [
    BfpFormat(w=8, e=5, n=16),
    BfpFormat(w=8, e=10, n=4, rounding="rne"),
    BfpFormat(w=16, e=8, n=32, rounding="rne", acc=64),
    BfpFormat(w=16, e=10, n=16, acc=64),
    BfpFormat(w=24, e=9, n=1024, rounding="rne"),
    BfpFormat(w=4, e=3, n=4, rounding="rne"),
]


@pytest.mark.parametrize("fmt", DFMTS, ids=fid)
def test_dot_vs_reference(fmt):
    rng = np.random.default_rng(fmt.w * 1000 + fmt.n)
    nb = 64 if fmt.n > 100 else 400
    lo, hi = -(2 ** (fmt.w - 1)), fmt.m_max
    a = rng.integers(lo, hi + 1, size=(nb, fmt.n))
    b = rng.integers(lo, hi + 1, size=(nb, fmt.n))
    a[: nb // 8] = lo  # most negative everywhere: the largest possible sum
    b[: nb // 16] = lo
    b[nb // 16 : nb // 8] = hi
    ea = rng.integers(fmt.e_min, fmt.e_max + 1, size=nb)
    eb = rng.integers(fmt.e_min, fmt.e_max + 1, size=nb)
    acc, e3, fl = dot(a, ea, b, eb, fmt)
    for i in range(nb):
        ra, re3, _ = ref_dot(a[i], ea[i], b[i], eb[i], fmt)
        assert (int(acc[i]), int(e3[i]), int(fl[i])) == (ra, re3, 0)
        assert -(2 ** (fmt.acc_min - 1)) <= ra < 2 ** (fmt.acc_min - 1)
    # with bias: e5 spread so e6 covers large left shifts, right shifts and ties
    bias = rng.integers(lo, hi + 1, size=nb)
    bias[::7] = lo
    bias[1::7] = 1
    bias[2::7] = -1
    e5 = rng.integers(fmt.e_min, fmt.e_max + 1, size=nb)
    acc, e3, fl = dot(a, ea, b, eb, fmt, bias=bias, e5=e5)
    for i in range(nb):
        got = (int(acc[i]), int(e3[i]), int(fl[i]))
        assert got == ref_dot(a[i], ea[i], b[i], eb[i], fmt, bias[i], e5[i]), i


def test_dot_bias_edges_acc64():
    f = BfpFormat(w=16, e=10, n=4, acc=64, rounding="rne")
    L = 2**63 - 1

    def run(accv, bias, e6):
        a = np.array([accv, 0, 0, 0])
        b = np.array([1, 0, 0, 0])
        # e3 = 0 + 0, so e5 = e6
        return dot(a, 0, b, 0, f, bias=bias, e5=e6)

    cases = [
        (5, -1, 63),
        (-5, -1, 63),
        (-5, 1, 63),
        (5, 1, 62),
        (5, 3, 62),
        (-5, -2, 62),
        (0, 1, 511),
        (0, -32768, 300),
        (7, -3, -1),   # -1.5 -> -2 (RNE, magnitude 1.5 -> 2)
        (7, -5, -1),   # -2.5 -> -2
        (7, 32767, -100),
        (7, -32768, -15),  # exactly -1
        (7, -32768, -16),  # -0.5 -> 0
        (7, -32767, -16),  # magnitude < 0.5 -> 0
    ]
    for accv, bias, e6 in cases:
        got = tuple(int(v) for v in run(accv, bias, e6))
        assert got == ref_dot([accv], 0, [1], 0, f, bias, e6), (accv, bias, e6)
    assert int(run(5, -1, 63)[0]) == -(2**63) + 5
    assert int(run(-5, -1, 63)[0]) == -L and int(run(-5, -1, 63)[2]) == FLAG_OVF
    assert int(run(-5, 1, 63)[0]) == L - 5 and int(run(-5, 1, 63)[2]) == FLAG_OVF
    assert int(run(7, -3, -1)[0]) == 5


def test_dot_bias_trunc_small_acc():
    f = BfpFormat(w=4, e=3, n=2)  # acc_bits = 9
    rng = np.random.default_rng(5)
    for _ in range(500):
        a = rng.integers(-8, 8, size=2)
        b = rng.integers(-8, 8, size=2)
        bias = int(rng.integers(-8, 8))
        ea, eb, e5 = (int(v) for v in rng.integers(-4, 4, size=3))
        got = tuple(int(v) for v in dot(a, ea, b, eb, f, bias=bias, e5=e5))
        assert got == ref_dot(a, ea, b, eb, f, bias, e5)


def test_dot_errors():
    f = BfpFormat(w=8, e=5, n=4)
    ok = np.zeros(4, np.int64)
    with pytest.raises(ValueError, match="ma"):
        dot(ok + 128, 0, ok, 0, f)
    with pytest.raises(ValueError, match="mb"):
        dot(ok, 0, ok - 129, 0, f)
    with pytest.raises(ValueError, match="ma"):
        dot(np.zeros(5, np.int64), 0, np.zeros(5, np.int64), 0, f)
    with pytest.raises(ValueError, match="ea"):
        dot(ok, 16, ok, 0, f)
    with pytest.raises(ValueError, match="e5"):
        dot(ok, 0, ok, 0, f, bias=1)
    with pytest.raises(ValueError, match="bias"):
        dot(ok, 0, ok, 0, f, bias=300, e5=0)
    with pytest.raises(ValueError, match="ma"):
        dot(ok + 0.5, 0, ok, 0, f)


def test_matvec():
    f = BfpFormat(w=8, e=5, n=8, rounding="rne")
    rng = np.random.default_rng(9)
    M = rng.integers(-128, 128, size=(6, 8))
    v = rng.integers(-128, 128, size=8)
    eM = rng.integers(-16, 16, size=6)
    bias = rng.integers(-128, 128, size=6)
    acc, e3, fl = matvec(M, eM, v, -5, f, bias=bias, e5=3)
    for r in range(6):
        assert (int(acc[r]), int(e3[r]), int(fl[r])) == ref_dot(M[r], eM[r], v, -5, f, bias[r], 3)
    # batched: two vectors against the same matrix
    V = rng.integers(-128, 128, size=(2, 8))
    acc, e3, _ = matvec(M, 2, V, np.array([1, -1]), f)
    assert acc.shape == (2, 6)
    assert acc[1].tolist() == [sum(int(x) * int(y) for x, y in zip(M[r], V[1])) for r in range(6)]
    assert e3.tolist() == [[3] * 6, [1] * 6]


# ======================================================================================
# renormaliser
# ======================================================================================
def ref_select_max(acc, e3, fmt):
    mx = max(abs(int(a)) for a in acc)
    if mx == 0:
        return fmt.e_min, FLAG_ZERO
    e4 = e3 + mx.bit_length() - 1 - (fmt.w - 2)
    if e4 > fmt.e_max:
        return fmt.e_max, FLAG_EXP_HI
    if e4 < fmt.e_min:
        return fmt.e_min, FLAG_EXP_LO
    return e4, 0


def ref_shift(acc, e3, e4, fmt, overflow=None):
    out, fl = [], 0
    for a in acc:
        v = int(a) * TWO ** (e3 - e4)
        m, o = ref_to_width(v, fmt.w, fmt.rounding, overflow or fmt.overflow)
        out.append(m)
        fl |= FLAG_OVF if o else 0
    return out, fl


def rand_acc(rng, fmt, shape):
    A = fmt.acc_bits
    bl = rng.integers(0, A, size=shape)
    v = rng.integers(0, 2**62, size=shape, dtype=np.int64) >> (62 - np.minimum(bl, 62))
    v = v | np.where(bl > 0, np.int64(1) << np.minimum(bl, 62) - 1, 0)
    v = np.where(rng.random(shape) < 0.5, -v, v)
    v = np.where(rng.random(shape) < 0.05, 0, v)
    return v


RFMTS = [
    BfpFormat(w=16, e=5, n=16, rounding="rne", overflow="sat"),
    BfpFormat(w=8, e=3, n=4, rounding="trunc", overflow="wrap"),
    BfpFormat(w=4, e=8, n=8, rounding="rne", overflow="wrap"),
    BfpFormat(w=16, e=10, n=16, rounding="trunc", overflow="sat", acc=64),
    BfpFormat(w=24, e=6, n=2, rounding="rne", overflow="sat", acc=64),
]


@pytest.mark.parametrize("fmt", RFMTS, ids=fid)
def test_renormalizer_vs_reference(fmt):
    rng = np.random.default_rng(100 + fmt.w + fmt.e)
    T, L = 300, 6
    acc = rand_acc(rng, fmt, (T, L))
    acc[0] = 0
    acc[1, 0] = -(2 ** (fmt.acc_bits - 1))
    acc[2, :] = 2 ** (fmt.acc_bits - 1) - 1
    e3 = rng.integers(-(2**fmt.e), 2**fmt.e, size=T)
    # max mode
    e4, fl = select_max(acc, e3, fmt)
    for t in range(T):
        assert (int(e4[t]), int(fl[t])) == ref_select_max(acc[t], int(e3[t]), fmt), t
    e4b, m, flb = renormalize(acc, e3, fmt)
    assert e4b.tolist() == e4.tolist()
    for t in range(T):
        rm, rf = ref_shift(acc[t], int(e3[t]), int(e4[t]), fmt)
        assert m[t].tolist() == rm and int(flb[t]) == int(fl[t]) | rf
        if not int(fl[t]) & (FLAG_EXP_HI | FLAG_EXP_LO | FLAG_ZERO) and fmt.rounding == "trunc":
            assert rf == 0 and max(abs(x) for x in rm) >= 2 ** (fmt.w - 2)
    # fixed / arbitrary e4 (including ones far from the max-mode choice)
    e4r = rng.integers(fmt.e_min, fmt.e_max + 1, size=T)
    m, fl = shift_to(acc, e3, e4r, fmt)
    for t in range(T):
        rm, rf = ref_shift(acc[t], int(e3[t]), int(e4r[t]), fmt)
        assert (m[t].tolist(), int(fl[t])) == (rm, rf), t
    _, m2, fl2 = renormalize(acc, e3, fmt, mode="fixed", e4=e4r)
    assert np.array_equal(m2, m)
    zero = [FLAG_ZERO if not acc[t].any() else 0 for t in range(T)]
    assert fl2.tolist() == [int(f) | z for f, z in zip(fl, zero)]


def test_renormalizer_errors():
    f = BfpFormat(w=8, e=5, n=4)  # acc_bits 18
    with pytest.raises(ValueError, match="acc"):
        select_max([2**17], 0, f)
    with pytest.raises(ValueError, match="e3"):
        select_max([1], 32, f)
    with pytest.raises(ValueError, match="e4"):
        shift_to([1], 0, 16, f)
    with pytest.raises(ValueError, match="e4"):
        renormalize([1], 0, f, mode="fixed")
    with pytest.raises(ValueError, match="mode"):
        renormalize([1], 0, f, mode="stats")
    with pytest.raises(ValueError, match="acc"):
        select_max(np.array([1.5]), 0, f)


def test_shift_rne_ties():
    f = BfpFormat(w=8, e=5, n=4, rounding="rne")
    m, fl = shift_to([5, -5, 7, -7, 6, 254], 0, 1, f)  # /2
    assert m.tolist() == [2, -2, 4, -4, 3, 127] and int(fl) == 0
    m, fl = shift_to([255], 0, 1, f)  # 127.5 -> 128 -> SAT
    assert m.tolist() == [127] and int(fl) == FLAG_OVF


# ======================================================================================
# statistics mode
# ======================================================================================
class RefStats:
    """Scalar reference of the statistics selector (Python ints / Fractions)."""

    def __init__(self, fmt):
        self.f = fmt
        self.s1 = self.s2 = self.count = 0
        self.offset = None
        self.last = None

    def step(self, acc, e3):
        f = self.f
        acc = [int(a) for a in acc]
        if self.last is not None and e3 != self.last:
            self.s1 = self.s2 = self.count = 0
        self.last = e3
        mx = max(abs(a) for a in acc)
        fl = FLAG_ZERO if mx == 0 else 0
        ovf_mode, accumulate = f.overflow, True
        if self.offset is None:
            e4, f1 = ref_select_max(acc, e3, f)
            fl |= f1
        else:
            want = e3 + self.offset
            e4 = min(max(want, f.e_min), f.e_max)
            fl |= FLAG_EXP_HI if want > f.e_max else FLAG_EXP_LO if want < f.e_min else 0
            # the vector's largest magnitude needs more than w-1 bits at e4
            if mx and Fraction(mx) * TWO ** (e3 - e4) >= 2 ** (f.w - 1):
                fl |= FLAG_OVF
                if f.stat_policy == "sat":
                    ovf_mode = "sat"
                else:
                    e4, f1 = ref_select_max(acc, e3, f)
                    fl = (fl & ~(FLAG_EXP_HI | FLAG_EXP_LO)) | f1
                    self.s1 = self.s2 = self.count = 0
                    accumulate = False
        m, f2 = ref_shift(acc, e3, e4, f, ovf_mode)
        fl |= f2
        if accumulate:
            self.s1 += sum(abs(a) for a in acc)
            self.s2 += sum(a * a for a in acc)
            self.count += len(acc)
            N = 2**f.stat_log2_win
            if self.count == N:
                mu = Fraction(self.s1, N).__floor__()
                ex2 = Fraction(self.s2, N).__floor__()
                var = max(ex2 - mu * mu, 0)
                sigma = math.isqrt(var)
                hi = mu + f.k_sigma * sigma
                if hi:
                    self.offset = floor_log2(Fraction(hi)) - (f.w - 2)
                self.s1 = self.s2 = self.count = 0
        return e4, m, fl


def patent_window(rng, n_vals):
    """|values| are 20480 +- 1024 (half each): mean 20480, std 1024 exactly."""
    mags = np.array([19456, 21504] * (n_vals // 2))
    rng.shuffle(mags)
    return mags * np.where(rng.random(n_vals) < 0.5, -1, 1)


def test_stats_patent_example():
    # mu=10, sigma=0.5, k=3 -> exponent -11, in units of 2**-11 (e3 = -11)
    f = BfpFormat(w=16, e=5, n=4, k_sigma=3, stat_log2_win=4)
    rng = np.random.default_rng(4)
    win = patent_window(rng, 16)
    sw = stats_offset(win, f)
    assert (sw.mu, sw.sigma, sw.hi, sw.offset) == (20480, 1024, 23552, 0)
    assert sw.mu == 10 * 2**11 and sw.sigma * 2 == 2**11 and sw.hi == int(11.5 * 2**11)
    s = StatsSelector(f)
    for t in range(4):
        s.step(win[4 * t : 4 * t + 4], -11)
    assert s.offset == 0 and s.count == 0 and s.s1 == 0 and s.s2 == 0
    # next vector's max alone would give e4 = -11 + 9 - 14 = -16; stats gives -11
    e4, m, fl = s.step([1000, -3, 0, 512], -11)
    assert e4 == -11 and m.tolist() == [1000, -3, 0, 512] and fl == 0
    assert s.count == 4 and s.s1 == 1515 and s.s2 == 1000**2 + 9 + 512**2
    # same window, but at e3 = -20 the offset still applies: e4 = -20 + 0 -> clamped
    e4, m, fl = s.step([1, 2, 3, 4], -20)
    assert e4 == -16 and fl == FLAG_EXP_LO and m.tolist() == [0, 0, 0, 0]
    assert s.count == 4  # restarted (e3 changed) then accumulated this vector


def test_stats_window_arith():
    f = BfpFormat(w=16, e=5, n=4, k_sigma=2, stat_log2_win=3)
    # inconsistent sums exercise the negative-variance clamp (unreachable from real
    # data, since mu**2 is an integer <= E[x**2])
    sw = stats_window(8 * 100, 8 * 5, f)
    assert (sw.mu, sw.ex2, sw.var, sw.sigma, sw.hi, sw.offset) == (100, 5, 0, 0, 100, 6 - 14)
    sw = stats_window(0, 0, f)
    assert sw.hi == 0 and sw.offset is None
    rng = np.random.default_rng(6)
    for _ in range(200):
        v = rand_acc(rng, BfpFormat(w=16, e=5, n=4, acc=64), 8)
        sw = stats_offset(v, f)
        s1 = sum(abs(int(x)) for x in v)
        s2 = sum(int(x) ** 2 for x in v)
        mu, ex2 = s1 // 8, s2 // 8
        assert sw.mu == mu and sw.ex2 == ex2 and sw.var == ex2 - mu * mu
        assert sw.sigma**2 <= sw.var < (sw.sigma + 1) ** 2
        assert sw.hi == mu + 2 * sw.sigma
    with pytest.raises(ValueError, match="values"):
        stats_offset([1, 2, 3], f)


def test_stats_restart_on_e3_change():
    f = BfpFormat(w=16, e=5, n=4, stat_log2_win=3)
    s = StatsSelector(f)
    s.step([100, 200, 300, 400], -5)
    assert (s.count, s.s1) == (4, 1000)
    s.step([1, 1, 1, 1], -4)  # e3 changed: the first half-window is dropped
    assert (s.count, s.s1, s.s2) == (4, 4, 4) and s.offset is None
    s.step([1, 1, 1, 1], -4)
    assert s.count == 0 and s.offset == 0 - 14  # mu=1, var=0 -> lop(1)=0


def test_stats_policy_sat():
    f = BfpFormat(w=8, e=5, n=2, stat_log2_win=1, k_sigma=0, overflow="wrap", stat_policy="sat")
    s = StatsSelector(f)
    e4, _, _ = s.step([64, 64], 0)  # max mode, window done: hi = 64 -> offset 0
    assert e4 == 0 and s.offset == 0
    e4, m, fl = s.step([300, -5], 0)  # lop 8 > 6: overflow, saturated despite WRAP
    assert e4 == 0 and m.tolist() == [127, -5] and fl == FLAG_OVF
    # the vector was accumulated and closed a window: mu = 152, var = 147**2
    assert s.count == 0 and s.offset == 7 - 6
    e4, m, fl = s.step([129, 0], 0)  # fits at e4 = 1 (64.5 -> 64 trunc)
    assert e4 == 1 and m.tolist() == [64, 0] and fl == 0


def test_stats_policy_reshift_clears():
    f = BfpFormat(w=8, e=5, n=2, stat_log2_win=2, k_sigma=0, stat_policy="reshift")
    s = StatsSelector(f)
    s.step([64, 64], 0)
    s.step([64, 64], 0)
    assert s.offset == 0 and s.count == 0
    s.step([10, 20], 0)
    assert s.count == 2
    e4, m, fl = s.step([1000, -7], 0)  # overflow at e4 = 0 -> re-shift to max mode
    assert e4 == 9 - 6 and fl == FLAG_OVF and m.tolist() == [125, 0]
    assert (s.s1, s.s2, s.count) == (0, 0, 0) and s.offset == 0
    e4, m, fl = s.step([-40, 2], 0)  # back to the offset, accumulating again
    assert e4 == 0 and m.tolist() == [-40, 2] and fl == 0 and s.count == 2


def test_stats_hi_zero_keeps_offset():
    f = BfpFormat(w=8, e=5, n=2, stat_log2_win=1)
    s = StatsSelector(f)
    s.step([8, 8], 2)
    assert s.offset == 3 - 6
    e4, m, fl = s.step([0, 0], 2)
    assert e4 == 2 - 3 and fl == FLAG_ZERO and s.offset == -3


def test_stats_param_errors():
    with pytest.raises(ParamError, match="n"):
        StatsSelector(BfpFormat(n=12, stat_log2_win=5))
    with pytest.raises(ParamError, match="stat_log2_win"):
        StatsSelector(BfpFormat(n=16, stat_log2_win=3))
    s = StatsSelector(BfpFormat(n=4, stat_log2_win=3))
    with pytest.raises(ValueError, match="acc_vector"):
        s.step([1, 2, 3], 0)
    with pytest.raises(ValueError, match="e3"):
        s.step([1, 2, 3, 4], 64)


@pytest.mark.parametrize(
    "fmt",
    [
        BfpFormat(w=8, e=5, n=4, stat_log2_win=3, k_sigma=1, stat_policy="sat", overflow="wrap"),
        BfpFormat(w=8, e=4, n=4, stat_log2_win=2, k_sigma=2, stat_policy="reshift", rounding="rne"),
        BfpFormat(w=16, e=6, n=8, stat_log2_win=5, k_sigma=3, stat_policy="sat", rounding="rne"),
        BfpFormat(w=16, e=8, n=2, stat_log2_win=2, k_sigma=0, stat_policy="reshift", acc=64),
    ],
    ids=lambda f: f"w{f.w}n{f.n}k{f.stat_log2_win}{f.stat_policy}",
)
def test_stats_stream_vs_reference(fmt):
    rng = np.random.default_rng(fmt.w + 31 * fmt.stat_log2_win)
    T = 400
    # gaussian-ish accumulators with occasional outliers and e3 changes
    scale = 2.0 ** rng.integers(4, min(fmt.acc_bits - 8, 40), size=T // 40).repeat(40)
    acc = np.rint(rng.standard_normal((T, fmt.n)) * scale[:, None]).astype(np.int64)
    out = rng.random((T, fmt.n)) < 0.01
    acc = np.where(out, acc * 64, acc)
    lim = 2 ** (fmt.acc_bits - 1) - 1
    acc = np.clip(acc, -lim, lim)
    acc[rng.random(T) < 0.02] = 0
    e3 = np.repeat(rng.integers(-(2**fmt.e), 2**fmt.e, size=T // 25), 25)
    e3[rng.random(T) < 0.05] += 1
    e3 = np.clip(e3, -(2**fmt.e), 2**fmt.e - 1)
    s, r = StatsSelector(fmt), RefStats(fmt)
    e4s, ms, fls = s.run(acc, e3)
    seen = 0
    for t in range(T):
        re4, rm, rf = r.step(acc[t], int(e3[t]))
        assert (int(e4s[t]), ms[t].tolist(), int(fls[t])) == (re4, rm, rf), t
        seen |= rf
    assert (s.s1, s.s2, s.count, s.offset) == (r.s1, r.s2, r.count, r.offset)
    assert seen & FLAG_OVF


STATS_FMTS = [
    BfpFormat(w=8, e=5, n=4, stat_log2_win=3, k_sigma=1, stat_policy="sat", overflow="wrap"),
    BfpFormat(w=8, e=4, n=4, stat_log2_win=2, k_sigma=2, stat_policy="reshift", rounding="rne"),
    BfpFormat(w=16, e=6, n=8, stat_log2_win=5, k_sigma=3, stat_policy="sat", rounding="rne"),
    BfpFormat(w=16, e=8, n=2, stat_log2_win=2, k_sigma=0, stat_policy="reshift", acc=64),
    BfpFormat(w=4, e=8, n=8, rounding="rne", stat_log2_win=3, k_sigma=0, stat_policy="reshift"),
    BfpFormat(w=16, e=5, n=16, overflow="wrap", stat_log2_win=5, k_sigma=2, stat_policy="reshift"),
    BfpFormat(),
]


@pytest.mark.parametrize("fmt", STATS_FMTS, ids=lambda f: f"w{f.w}n{f.n}k{f.stat_log2_win}{f.stat_policy}")
def test_stats_run_is_step_after_step(fmt):
    """The vectorised :meth:`StatsSelector.run` gives what :meth:`step` gives vector by
    vector, and leaves the same state (sums, count, offset, last e3, last window), over
    random streams cut into random pieces (the state carried from call to call): scales
    from 1 to the accumulator's top, zero vectors, e3 changes, windows of every size."""
    for seed in range(25):
        rng = np.random.default_rng(seed * 7 + fmt.w)
        T = int(rng.integers(0, 300))
        b = rng.integers(0, fmt.acc_bits - 2, size=T // 20 + 1).repeat(20)[:T]
        lim = 2 ** (fmt.acc_bits - 1) - 1
        acc = np.clip(np.rint(rng.standard_normal((T, fmt.n)) * (2.0 ** b)[:, None]), -lim, lim).astype(np.int64)
        acc[rng.random(T) < 0.05] = 0
        e3 = np.repeat(rng.integers(-(2**fmt.e), 2**fmt.e, size=T // 10 + 1), 10)[:T]
        e3 = np.clip(np.where(rng.random(T) < 0.05, e3 + 1, e3), -(2**fmt.e), 2**fmt.e - 1)
        vec, one = StatsSelector(fmt), StatsSelector(fmt)
        cuts = [0, *sorted(rng.integers(0, T + 1, size=3).tolist()), T]
        got = [vec.run(acc[lo:hi], e3[lo:hi]) for lo, hi in zip(cuts, cuts[1:])]
        e4, m, fl = (np.concatenate([g[k] for g in got]) for k in range(3))
        for t in range(T):
            w4, wm, wf = one.step(acc[t], int(e3[t]))
            assert (int(e4[t]), m[t].tolist(), int(fl[t])) == (int(w4), wm.tolist(), int(wf)), (seed, t)
        state = lambda s: (s.s1, s.s2, s.count, s.offset, s.last_e3, s.last_window)  # noqa: E731
        assert state(vec) == state(one), seed


def test_stats_run_traced_says_what_the_selector_did():
    """The trace, worked by hand (w = 8, so the headroom is w - 2 = 6; a window is one
    2-lane vector; k = 0, so hi = mu): [12, -12] is max mode, e4 = 0 + lop 12 - 6 = -3,
    its window's mu = 12 (lop 3) sets offset -3; [3, 3]: e4 = -3, mu = 3 (lop 1), offset
    -5; [1, 0]: e4 = -5, mu = 1 >> 1 = 0, no offset (lop -1), -5 kept; [100, 1]: e4 = -5,
    lop 100 = 6 > -5 - 0 + 6: the guard (OVF, saturated), mu = 50 (lop 5), offset -1;
    [5, 5] with e3 = 1: a restart, e4 = 1 - 1 = 0, mu = 5 (lop 2)."""
    f = BfpFormat(w=8, e=5, n=2, stat_log2_win=1, k_sigma=0)
    acc = np.array([[12, -12], [3, 3], [1, 0], [100, 1], [5, 5]])
    e4, _, fl, tr = StatsSelector(f).run_traced(acc, [0, 0, 0, 0, 1])
    assert e4.tolist() == [-3, -3, -5, -5, 0] and fl.tolist() == [0, 0, 0, FLAG_OVF, 0]
    assert tr["max_mode"].tolist() == [True, False, False, False, False]
    assert tr["window_end"].tolist() == [True] * 5 and tr["window_lop"].tolist() == [3, 1, -1, 5, 2]
    assert tr["restart"].tolist() == [False, False, False, False, True]
    assert tr["guard"].tolist() == [False, False, False, True, False]


# ======================================================================================
# BFP -> float32
# ======================================================================================
def ref_f32(m: int, e: int) -> tuple[int, int]:
    """Single RNE rounding of m * 2**e to float32 via Fractions."""
    if m == 0:
        return 0, 0
    v = abs(m) * TWO**e
    q = max(floor_log2(v) - 23, -149)
    sig = round(v / TWO**q)
    r = sig * TWO**q
    inexact = r != v
    sign = 0x80000000 if m < 0 else 0
    if r >= TWO**128:
        return sign | 0x7F800000, FFLAG_OVF | FFLAG_INEXACT
    bits = int(np.array(float(r), np.float32).view(np.uint32))
    fl = (FFLAG_INEXACT if inexact else 0) | (FFLAG_UNF if inexact and r < TWO**-126 else 0)
    return sign | bits, fl


def test_to_float32_vs_float64_path():
    rng = np.random.default_rng(12)
    N = 20000
    bl = rng.integers(0, 54, size=N)
    m = rng.integers(0, 2**53, size=N, dtype=np.int64) >> (53 - bl)
    m = np.where(rng.random(N) < 0.5, -m, m)
    L = np.array([int(abs(x)).bit_length() - 1 for x in m.tolist()])
    E = rng.integers(-175, 132, size=N)  # exponent of the leading bit of the result
    e = np.where(m == 0, rng.integers(-300, 300, size=N), E - L)
    bits, fl = to_float32(m[:, None], e)
    bits, fl = bits[:, 0], fl[:, 0]
    exact = np.ldexp(m.astype(np.float64), e)  # exact: |m| < 2**53, in float64 range
    with np.errstate(over="ignore"):
        ref = exact.astype(np.float32)
    assert np.array_equal(bits, ref.view(np.uint32))
    back = ref.astype(np.float64)
    inexact = back != exact
    rfl = (
        np.where(np.isinf(ref), FFLAG_OVF, 0)
        | np.where(inexact & (np.abs(back) < 2.0**-126), FFLAG_UNF, 0)
        | np.where(inexact, FFLAG_INEXACT, 0)
    )
    assert np.array_equal(fl, rfl)
    for flag in (FFLAG_OVF, FFLAG_UNF, FFLAG_INEXACT):
        assert np.any(fl & flag)


def test_to_float32_large_mantissas():
    rng = np.random.default_rng(13)
    ms = [-(2**63), 2**63 - 1, 2**53 + 1, -(2**60 + 2**36 + 1), 2**62 + 2**38]
    ms += [int(x) for x in rng.integers(2**53, 2**63 - 1, size=300, dtype=np.int64)]
    ms += [-int(x) for x in rng.integers(2**40, 2**63 - 1, size=300, dtype=np.int64)]
    # exact ties: a 24-bit head at bits 62..39, round bit 38 set, no sticky bits
    ms += [(int(h) << 39) | (1 << 38) for h in rng.integers(2**23, 2**24, size=50)]
    es = [int(x) for x in rng.integers(-220, 70, size=len(ms))]
    es[:5] = [0, 0, 0, -100, 65]
    bits, fl = to_float32(np.array(ms, np.int64)[:, None], np.array(es))
    for i, (m, e) in enumerate(zip(ms, es)):
        assert (int(bits[i, 0]), int(fl[i, 0])) == ref_f32(m, e), (m, e)


@pytest.mark.parametrize(
    "m, e, val, flags",
    [
        (0, 1000, 0.0, 0),
        (0, -1000, 0.0, 0),
        (1, 0, 1.0, 0),
        (-(2**63), 0, -(2.0**63), 0),
        (2**63 - 1, 0, 2.0**63, FFLAG_INEXACT),
        (0xFFFFFF, 104, 3.4028234663852886e38, 0),
        (0x1FFFFFF, 103, math.inf, FFLAG_OVF | FFLAG_INEXACT),
        (1, 128, math.inf, FFLAG_OVF | FFLAG_INEXACT),
        (-1, 10**6, -math.inf, FFLAG_OVF | FFLAG_INEXACT),
        (1, -149, 2.0**-149, 0),
        (3, -151, 2.0**-149, FFLAG_UNF | FFLAG_INEXACT),
        (1, -150, 0.0, FFLAG_UNF | FFLAG_INEXACT),
        (-1, -150, -0.0, FFLAG_UNF | FFLAG_INEXACT),
        (3, -150, 2.0**-148, FFLAG_UNF | FFLAG_INEXACT),
        (2**24 - 1, -150, 2.0**-126, FFLAG_INEXACT),  # rounds up to min normal
        (-5, -10**6, -0.0, FFLAG_UNF | FFLAG_INEXACT),
    ],
)
def test_to_float32_directed(m, e, val, flags):
    bits, fl = to_float32(np.array([m], np.int64), e)
    got = float(bits.view(np.float32)[0])
    assert got == val and math.copysign(1, got) == math.copysign(1, val)
    assert int(fl[0]) == flags


def test_to_float32_block_broadcast():
    bits, fl = to_float32([[3, -1], [5, 0]], [-1, 2])
    assert bits.view(np.float32).tolist() == [[1.5, -0.5], [20.0, 0.0]]
    with pytest.raises(ValueError, match="exponents"):
        to_float32([[1, 2], [3, 4]], [1, 2, 3])
    with pytest.raises(ValueError, match="mantissas"):
        to_float32(np.array([1.0]), 0)


@pytest.mark.parametrize("n", [1, 4, 16, 32])
def test_lone_blocks_put_every_class_in_every_lane_alone(n):
    """float_kind('lone'): each class of LONE_CLASSES in each lane once per len * n blocks,
    the only lane of its class (lone_class names it); +Inf and the subnormal among zeros,
    so an Inf lane's max-tree key stuck nonzero is the block maximum; a NaN is sometimes
    signalling with payload 1."""
    from lockstep.verif.bfp.stimulus import LONE_CLASSES, float_kind, lone_class

    fmt = BfpFormat(w=8, e=5, n=n)
    k = len(LONE_CLASSES) * n
    bits = float_kind(np.random.default_rng(n), "lone", 4 * k, fmt)
    names = lone_class(bits)
    for part in range(4):
        assert sorted(names[part * k:(part + 1) * k]) == sorted(f"{c}@{i}" for c in LONE_CLASSES for i in range(n))
    cls = np.array([LONE_CLASSES.index(s.split("@")[0]) for s in names])
    lane = np.array([int(s.split("@")[1]) for s in names])
    other = np.ones(bits.shape, bool)
    other[np.arange(len(bits)), lane] = False
    zero_bg = np.isin(cls, [1, 3])
    assert (bits[zero_bg[:, None] & other] == 0).all()
    assert (bits[~zero_bg[:, None] & other] != 0).all()
    nan = bits[np.arange(len(bits)), lane][cls == 0]
    assert (nan == 0x7F800001).any() and (nan & 0x400000 != 0).any()


@pytest.mark.parametrize("n", [1, 5, 16])
def test_lone_bit_blocks_sweep_every_fraction_bit_of_every_lane(n):
    """lone_bit_blocks: each block one lane nonzero, a subnormal with one fraction bit;
    23 * n steps from any start (split over calls) give every (lane, bit) pair once."""
    from lockstep.verif.bfp.stimulus import lone_bit_blocks

    rng = np.random.default_rng(n)
    start = 7 * n + 3
    bits = np.concatenate([lone_bit_blocks(rng, start, 10, n), lone_bit_blocks(rng, start + 10, 23 * n - 10, n)])
    mag = bits & np.uint32(0x7FFFFFFF)
    assert ((mag != 0).sum(axis=1) == 1).all()
    lane = np.argmax(mag != 0, axis=1)
    val = mag[np.arange(len(bits)), lane]
    assert (val < (1 << 23)).all() and (val & (val - 1) == 0).all()   # a subnormal, one bit
    pairs = {(int(i), int(v).bit_length() - 1) for i, v in zip(lane, val)}
    assert pairs == {(i, b) for i in range(n) for b in range(23)}
