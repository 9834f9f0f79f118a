"""Hypothesis fuzz tests of the inputs a user or an upstream tool hands the project.

Three input classes, each fed arbitrary (and deliberately broken) data:

1. BFP / OCP MX arrays and byte codes (spec 004, :mod:`lockstep.models.bfp`), their parameter
   records, and the lane packing of blocks into port words (:mod:`lockstep.verif.packing`);
2. testplan YAML (:mod:`lockstep.verif.testplan`): parsed structures and raw file text;
3. ``RTL=`` files checked against a generated record (:func:`lockstep.verif.runner.check_rtl_ports`).

The rule everywhere: a correct result, or the documented error (``ValueError`` /
``ParamError`` / ``TestplanError``) whose message names the problem; never another exception
and never a hang. The expected values come from the documented semantics (docs/bfp.md and
the module docstrings), computed here independently: exact ``fractions.Fraction``
arithmetic, the ``ml_dtypes`` element casts and code tables, and the plain bit layout of a
port word. Nothing here simulates or builds RTL.
"""

from __future__ import annotations

import bisect
import copy
import functools
import json
import math
import re
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lockstep.models.bfp import core
from lockstep.models.bfp.mx import (
    MX_FLAG_INF, MX_FLAG_NAN, MX_FLAG_SAT, MX_FLAG_SCALE_LO, MX_FLAG_SUBN, MX_FLAG_ZERO, decode_element,
    decode_scale, encode_element, mx_dequantize, mx_quantize, mx_quantize_flags,
)
from lockstep.models.bfp.params import MX_ELEMENTS, BfpFormat, MxParams
from lockstep.models.record import ParamError
from lockstep.verif import testplan
from lockstep.verif.packing import pack_lanes, to_signed, unpack_lanes, unpack_rows
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import check_rtl_ports
from bfp_refs import floor_log2, ref_quantize_block, ref_to_width
from mx_refs import ML

REPO = Path(__file__).resolve().parent.parent

#: No example database (nothing written into the work tree), no wall-clock deadline (the
#: machine may be busy): a failing example is still shrunk and printed.
FUZZ = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def fuzz(n: int) -> settings:
    """:data:`FUZZ` with ``n`` examples."""
    return settings(FUZZ, max_examples=n)


ELEMS = sorted(MX_ELEMENTS)


# ======================================================================================
# exact references
# ======================================================================================
def pow2(k: int) -> Fraction:
    """``2**k`` as an exact Fraction (any sign of ``k``)."""
    return Fraction(2) ** k


def is_f32_subnormal(v: float) -> bool:
    """A nonzero finite float32 value below the smallest normal, ``2**-126``."""
    return math.isfinite(v) and 0 < abs(v) < 2.0**-126


def f32_round(q: Fraction) -> float:
    """``q`` rounded once, to nearest even, to float32 (subnormals, +-Inf on overflow).

    A nonzero value that rounds to zero keeps its sign (spec 4.2(d)); ``q == 0`` is +0.0.
    """
    if q == 0:
        return 0.0
    a = abs(q)
    lsb = max(floor_log2(a) - 23, -149)
    n = round(a / pow2(lsb))  # ties to even
    if n * pow2(lsb) >= pow2(128):
        return math.copysign(math.inf, q)
    return math.copysign(float(np.float32(math.ldexp(n, lsb))), q)


@functools.lru_cache(maxsize=None)
def elem_table(name: str) -> tuple[tuple[Fraction, ...], Fraction]:
    """Non-negative finite magnitudes of an MX element type, indexed by magnitude code,
    and the grid step of its top binade.

    Float types come from ml_dtypes' own decoding of the positive codes (their NaN/Inf
    codes sit at the top and are dropped); ``int8`` is OCP's ``k * 2**-6``, ``k <= 127``.
    """
    e = MX_ELEMENTS[name]
    if e.ebits == 0:
        mags = tuple(Fraction(k, 64) for k in range(128))
    else:
        codes = np.arange(1 << (e.bits - 1), dtype=np.uint8)
        vals = codes.view(ML[name]).astype(np.float64)
        mags = tuple(Fraction(float(v)) for v in vals if np.isfinite(v))
    assert all(a < b for a, b in zip(mags, mags[1:])), name  # monotonic in the code
    assert mags[-1] == Fraction(e.max_normal), name
    return mags, mags[-1] - mags[-2]


def ref_cast(v: Fraction, neg: bool, name: str) -> tuple[int, bool]:
    """The MX element cast of ``v`` (docs: RNE on the element grid, saturate to
    ``+-max_normal``, keep the sign; ``int8`` two's complement with no -0).

    The nearest grid value wins, a tie goes to the even magnitude code; the grid is
    extended by one step above ``max_normal``, and landing there means saturation.
    Returns ``(code, saturated)``.
    """
    e = MX_ELEMENTS[name]
    mags, step = elem_table(name)
    grid = mags + (mags[-1] + step,)
    a = abs(v)
    i = bisect.bisect_left(grid, a)
    if i == len(grid):
        k = len(grid) - 1
    elif grid[i] == a or i == 0:
        k = i
    else:
        lo, hi = grid[i - 1], grid[i]
        k = i - 1 if a - lo < hi - a else i if hi - a < a - lo else (i - 1 if (i - 1) % 2 == 0 else i)
    sat = k == len(mags)
    k = min(k, len(mags) - 1)
    if e.ebits == 0:
        return ((-k) & 0xFF if neg else k), sat
    return k | ((1 << (e.bits - 1)) if neg else 0), sat


def ref_decode(code: int, name: str) -> float:
    """An element code's value from :func:`elem_table` (NaN/Inf codes via ml_dtypes)."""
    e = MX_ELEMENTS[name]
    mags, _ = elem_table(name)
    if e.ebits == 0:
        s = code - 256 if code >= 128 else code
        return s / 64.0
    neg = code >> (e.bits - 1)
    k = code & ((1 << (e.bits - 1)) - 1)
    if k >= len(mags):  # a NaN or Inf code: ml_dtypes says which
        return float(np.array([code], np.uint8).view(ML[name]).astype(np.float64)[0])
    return -float(mags[k]) if neg else float(mags[k])


def ref_mx_block(block: np.ndarray, name: str) -> tuple[int, list[int], int]:
    """One OCP MX block per the module docs: ``(scale code, element codes, flags)``."""
    e = MX_ELEMENTS[name]
    vals = [float(v) for v in block]
    nan = any(math.isnan(v) for v in vals)
    inf = any(math.isinf(v) for v in vals)
    mags = [abs(Fraction(v)) for v in vals if math.isfinite(v) and v != 0]
    flags = (MX_FLAG_ZERO if not mags else 0) | (MX_FLAG_NAN if nan else 0) | (MX_FLAG_INF if inf else 0)
    flags |= MX_FLAG_SUBN if any(is_f32_subnormal(v) for v in vals) else 0
    if nan or inf:
        return 0xFF, [0] * len(vals), flags
    x = -127
    if mags:
        raw = floor_log2(max(mags)) - e.emax
        flags |= MX_FLAG_SCALE_LO if raw < -127 else 0
        x = max(raw, -127)
    codes = []
    for v in vals:
        c, sat = ref_cast(Fraction(v) / pow2(x), math.copysign(1.0, v) < 0, name)
        codes.append(c)
        flags |= MX_FLAG_SAT if sat else 0
    return x + 127, codes, flags


# ======================================================================================
# strategies
# ======================================================================================
def f32_value() -> st.SearchStrategy[float]:
    """float32 values: anything (NaN, +-Inf, subnormals, extremes), exact ``m * 2**k`` near
    1 (so blocks are not always clamped), and raw bit patterns (NaN payloads, -NaN)."""
    return st.one_of(
        st.floats(width=32),
        st.sampled_from([math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 2.0**-149, -(2.0**-126),
                         float(np.finfo(np.float32).max)]),
        st.builds(lambda m, k: math.ldexp(m, k), st.integers(-(2**24) + 1, 2**24 - 1), st.integers(-60, 40)),
        st.integers(0, 2**32 - 1).map(lambda b: float(np.array([b], np.uint32).view(np.float32)[0])),
    )


def f32_blocks(n: int, max_blocks: int = 3) -> st.SearchStrategy[np.ndarray]:
    """``(blocks, n)`` float32 arrays. A row is either :func:`f32_value`s (specials mixed
    in), or normal values ``m * 2**k`` sharing one binade offset ``k`` (full 24-bit
    significands: round-ups, ties and saturation at the block maximum)."""
    def build(rows: list[list[float]]) -> np.ndarray:
        return np.array(rows, dtype=np.float64).astype(np.float32).reshape(len(rows), n)

    scaled = st.builds(lambda ms, k: [math.ldexp(m, k) for m in ms],
                       st.lists(st.integers(-(2**24) + 1, 2**24 - 1), min_size=n, max_size=n), st.integers(-150, 104))
    row = st.lists(f32_value(), min_size=n, max_size=n) | scaled
    return st.lists(row, min_size=1, max_size=max_blocks).map(build)


def f32_bit_blocks(n: int, max_blocks: int = 3) -> st.SearchStrategy[np.ndarray]:
    """``(blocks, n)`` uint32 float32 bit patterns, every pattern possible."""
    return hnp.arrays(np.uint32, st.tuples(st.integers(1, max_blocks), st.just(n)),
                      elements=st.integers(0, 2**32 - 1))


formats = st.builds(
    BfpFormat,
    w=st.integers(3, 24),
    e=st.integers(2, 10),
    n=st.integers(1, 6),
    rounding=st.sampled_from(BfpFormat.ROUNDINGS),
    overflow=st.sampled_from(BfpFormat.OVERFLOWS),
)

#: Things that are not what the argument should be: other dtypes, shapes, Python objects.
junk_dtypes = st.sampled_from([np.float16, np.float32, np.float64, np.uint32, np.uint8, np.int8, np.int32,
                               np.int64, np.uint64, np.bool_, np.complex64])
junk_arrays = hnp.arrays(junk_dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
junk_objects = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=5),
    st.lists(st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.none(), st.text(max_size=2)), max_size=4),
)


def accepted_ints(x: Any) -> np.ndarray | None:
    """``x`` as an int array when it is integer data by numpy's reading (no bools, no
    floats, Python ints only within int64), else None."""
    try:
        a = np.asarray(x)
    except (ValueError, OverflowError):
        return None
    if a.dtype.kind in "iu":
        if a.dtype == np.uint64 and a.size and int(a.max()) >= 2**63:
            return None
        return a.astype(np.int64)
    if a.dtype == object:
        flat = a.ravel().tolist()
        if all(isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 for v in flat):
            return np.array(flat, dtype=np.int64).reshape(a.shape)
    return None


def names_problem(exc: Exception, *names: str) -> bool:
    """The message starts with one of the argument names (``name: ...`` or ``name=...``)."""
    msg = str(exc)
    return any(msg.startswith(f"{n}:") or msg.startswith(f"{n}=") for n in names)


# ======================================================================================
# 1a. BFP arrays (models/bfp/core.py)
# ======================================================================================
@fuzz(200)
@given(data=st.data(), fmt=formats, as_bits=st.booleans(), forced=st.booleans())
def test_quantize_matches_spec(data, fmt: BfpFormat, as_bits: bool, forced: bool) -> None:
    """quantize on any float32 blocks (NaN, Inf, subnormal, huge, tiny; value or bit-pattern
    input; Eq. 4 or a forced exponent) equals the spec's exact per-block result, and
    dequantize of it is within one exponent step of the input (half a step for RNE)."""
    x = data.draw(st.one_of(f32_blocks(fmt.n), f32_bit_blocks(fmt.n).map(lambda b: b.view(np.float32))))
    exp = data.draw(st.integers(fmt.e_min, fmt.e_max)) if forced else None
    e, m, fl = core.quantize(x.view(np.uint32) if as_bits else x, fmt, exp=exp)
    assert e.shape == fl.shape == x.shape[:-1] and m.shape == x.shape
    assert e.dtype == m.dtype == fl.dtype == np.int64
    back = core.dequantize(e, m)
    for i in range(x.shape[0]):
        want = ref_quantize_block(x[i].view(np.uint32), fmt, exp)
        assert (int(e[i]), m[i].tolist(), int(fl[i])) == want, (x[i].tolist(), fmt)
        step = 2.0 ** int(e[i])
        for v, q, mi in zip(x[i].tolist(), back[i].tolist(), m[i].tolist()):
            if not math.isfinite(v) or fl[i] & core.FLAG_OVF:
                continue
            err = abs(Fraction(q) - Fraction(v))
            assert err < step if fmt.rounding == "trunc" else err <= step / 2, (v, mi, int(e[i]))
            if fmt.rounding == "trunc":
                assert abs(Fraction(q)) <= abs(Fraction(v))
        if exp is None and fmt.rounding == "trunc" and not fl[i] & core.FLAG_EXP_HI:
            assert not fl[i] & core.FLAG_OVF  # Eq. 4 leaves room for the block maximum


@fuzz(300)
@given(x=st.one_of(junk_arrays, junk_objects), exp=st.one_of(st.none(), junk_objects, junk_arrays),
       fmt=st.one_of(formats, st.just(core.PRESETS["patent"])))
def test_quantize_arbitrary_arguments(x: Any, exp: Any, fmt: BfpFormat) -> None:
    """Any x / exp: a result exactly when x is float (or uint32 bits) with last axis n and
    exp is None or integers in [e_min, e_max] broadcastable to the blocks; otherwise a
    ValueError naming the bad argument."""
    a = np.asarray(x) if not isinstance(x, list) or _homogeneous(x) else None
    x_ok = (a is not None and a.ndim >= 1 and a.shape[-1] == fmt.n
            and (a.dtype == np.uint32 or np.issubdtype(a.dtype, np.floating)))
    ea = accepted_ints(exp) if exp is not None else None
    exp_ok = exp is None or (
        ea is not None and (ea.size == 0 or (int(ea.min()) >= fmt.e_min and int(ea.max()) <= fmt.e_max))
        and x_ok and _broadcasts_to(ea.shape, a.shape[:-1]))
    try:
        with np.errstate(over="ignore"):
            e, m, fl = core.quantize(x, fmt, exp=exp)
    except ValueError as exc:
        assert not (x_ok and exp_ok), exc
        assert names_problem(exc, "x") if not x_ok else names_problem(exc, "exp"), exc
        return
    assert x_ok and exp_ok
    assert m.shape == a.shape and e.shape == fl.shape == a.shape[:-1]


def _homogeneous(x: list) -> bool:
    """numpy can make an array of the list (not ragged)."""
    try:
        np.asarray(x)
    except (ValueError, OverflowError):
        return False
    return True


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """An array of ``shape`` broadcasts to ``target`` (one way: the result is ``target``)."""
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


@fuzz(200)
@given(m=hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=4),
                    elements=st.integers(-(2**52), 2**52)),
       e=st.one_of(st.integers(-1000, 1000), hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4),
                                                         elements=st.integers(-1000, 1000))))
def test_dequantize_exact_or_shape_error(m: np.ndarray, e: Any) -> None:
    """dequantize(e, m) is m * 2**e exactly (float64, |m| < 2**53) with the mantissas'
    shape when e's shape broadcasts to the blocks m.shape[:-1]; otherwise a ValueError
    naming the exponents (never a silently broadcast bigger array)."""
    es = np.shape(e)
    ok = _broadcasts_to(es, m.shape[:-1])
    try:
        with np.errstate(over="ignore"):  # beyond float64: +-Inf
            d = core.dequantize(e, m)
    except ValueError as exc:
        assert not ok and names_problem(exc, "exponents"), exc
        return
    assert ok, (es, m.shape, d.shape)
    assert d.shape == m.shape and d.dtype == np.float64
    eb = np.broadcast_to(np.asarray(e)[..., None], m.shape)
    for q, mi, ei in zip(d.ravel().tolist(), m.ravel().tolist(), eb.ravel().tolist()):
        want = Fraction(mi) * pow2(ei)
        if abs(want) >= 2**1023:  # beyond float64: the docs promise nothing exact
            continue
        assert Fraction(q) == want, (mi, ei)


@fuzz(250)
@given(m=st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-(2**30), 2**30), min_size=1, max_size=4),
       e=st.integers(-500, 500) | st.integers(-(2**62), 2**62))
def test_to_float32_rounds_once(m: list[int], e: int) -> None:
    """to_float32 is m * 2**e rounded once (RNE) to float32, with +-Inf on overflow, a
    signed zero for a nonzero value that rounds to 0, +0.0 for m = 0, and the flags."""
    bits, ff = core.to_float32(np.array(m, np.int64), e)
    got = bits.view(np.float32).tolist()
    for mi, g, f in zip(m, got, ff.tolist()):
        if mi == 0:
            assert (g, math.copysign(1, g), f) == (0.0, 1.0, 0)
            continue
        if e > 200:  # |m| < 2**64: certainly beyond float32
            want, exact = math.copysign(math.inf, mi), False
        elif e < -300:  # certainly below half the smallest subnormal
            want, exact = math.copysign(0.0, mi), False
        else:
            q = Fraction(mi) * pow2(e)
            want = f32_round(q)
            exact = math.isfinite(want) and Fraction(want) == q
        assert g == want and math.copysign(1, g) == math.copysign(1, want), (mi, e)
        wf = ((core.FFLAG_OVF if math.isinf(want) else 0)
              | (core.FFLAG_UNF if not exact and abs(want) < 2.0**-126 else 0)
              | (0 if exact else core.FFLAG_INEXACT))
        assert f == wf, (mi, e)


@fuzz(200)
@given(data=st.data(), fmt=formats, bias=st.booleans())
def test_dot_exact_or_named_error(data, fmt: BfpFormat, bias: bool) -> None:
    """dot on mantissas that may lie outside the w-bit range, exponents that may lie outside
    [e_min, e_max], and a last axis that may not be n: the exact sum (plus the aligned,
    saturated bias), or a ValueError naming the bad argument."""
    lo, hi = -(1 << (fmt.w - 1)), fmt.m_max
    n_a = data.draw(st.sampled_from([fmt.n, fmt.n, fmt.n, fmt.n + 1]))
    mant = st.integers(lo, hi) | st.integers(lo - 3, hi + 3)
    expo = st.integers(fmt.e_min, fmt.e_max) | st.integers(fmt.e_min - 2, fmt.e_max + 2)
    ma = data.draw(st.lists(mant, min_size=n_a, max_size=n_a))
    mb = data.draw(st.lists(mant, min_size=fmt.n, max_size=fmt.n))
    ea, eb = data.draw(expo), data.draw(expo)
    b, e5 = (data.draw(mant), data.draw(expo)) if bias else (None, None)
    bad = []
    if n_a != fmt.n or not all(lo <= v <= hi for v in ma):
        bad.append("ma")
    if not all(lo <= v <= hi for v in mb):
        bad.append("mb")
    bad += [nm for nm, v in (("ea", ea), ("eb", eb), ("e5", e5)) if v is not None and not fmt.e_min <= v <= fmt.e_max]
    if b is not None and not lo <= b <= hi:
        bad.append("bias")
    try:
        acc, e3, fl = core.dot(ma, ea, mb, eb, fmt, bias=b, e5=e5)
    except ValueError as exc:
        assert bad and names_problem(exc, *bad), (bad, exc)
        return
    assert not bad
    s = sum(x * y for x, y in zip(ma, mb))
    assert int(e3) == ea + eb
    if b is None:
        assert (int(acc), int(fl)) == (s, 0)
        return
    A = fmt.acc_bits
    lim = (1 << (A - 1)) - 1
    exact = Fraction(b) * pow2(e5 - (ea + eb))  # e6 = e5 - e3
    mag = int(abs(exact)) if fmt.rounding == "trunc" else round(abs(exact))  # exact when e6 >= 0
    aligned = -mag if exact < 0 else mag
    ovf = False
    if not -lim - 1 <= aligned <= lim:
        aligned, ovf = (lim if aligned > 0 else -lim), True
    total = s + aligned
    if not -lim - 1 <= total <= lim:
        total, ovf = (lim if total > 0 else -lim), True
    assert (int(acc), int(fl)) == (total, core.FLAG_OVF if ovf else 0)


@fuzz(200)
@given(data=st.data(), fmt=formats, mode=st.sampled_from(["max", "fixed", "min", ""]))
def test_renormalize_matches_spec(data, fmt: BfpFormat, mode: str) -> None:
    """renormalize on accumulators that may exceed acc_bits, e3 outside its range, a bad
    mode or a bad e4: the spec's e4 / mantissas / flags, or a ValueError naming it."""
    A = fmt.acc_bits
    amax = (1 << (A - 1)) - 1 if A < 64 else 2**63 - 1
    big = st.integers(-amax - 1, amax)
    acc = data.draw(st.lists(big | st.integers(-1000, 1000) | st.sampled_from([amax + 1, -amax - 2]),
                             min_size=1, max_size=5))
    e3 = data.draw(st.integers(-(1 << fmt.e) - 1, 1 << fmt.e))
    e4 = data.draw(st.none() | st.integers(fmt.e_min - 1, fmt.e_max + 1))
    bad = []
    if any(not -amax - 1 <= v <= amax for v in acc):
        bad.append("acc")
    if not -(1 << fmt.e) <= e3 <= (1 << fmt.e) - 1:
        bad.append("e3")
    if mode not in ("max", "fixed"):
        bad.append("mode")
    if (mode == "max" and e4 is not None) or (mode == "fixed" and (e4 is None or not fmt.e_min <= e4 <= fmt.e_max)):
        bad.append("e4")
    try:
        got_e4, m, fl = core.renormalize(acc, e3, fmt, mode=mode, e4=e4)
    except ValueError as exc:
        assert bad and names_problem(exc, *bad), (bad, exc)
        return
    assert not bad
    flags = 0
    top = max(abs(v) for v in acc)
    if mode == "max":
        if top == 0:
            want_e4, flags = fmt.e_min, core.FLAG_ZERO
        else:
            want = e3 + top.bit_length() - 1 - (fmt.w - 2)
            want_e4 = min(max(want, fmt.e_min), fmt.e_max)
            flags |= core.FLAG_EXP_HI if want > fmt.e_max else 0
            flags |= core.FLAG_EXP_LO if want < fmt.e_min else 0
    else:
        want_e4, flags = e4, (core.FLAG_ZERO if top == 0 else 0)
    mant = []
    for v in acc:
        mv, ovf = ref_to_width(Fraction(v) * pow2(e3 - want_e4), fmt.w, fmt.rounding, fmt.overflow)
        mant.append(mv)
        flags |= core.FLAG_OVF if ovf else 0
    assert (int(got_e4), m.tolist(), int(fl)) == (want_e4, mant, flags)


@fuzz(200)
@given(flags=st.one_of(st.integers(0, 2**80), junk_objects, st.integers(0, 255).map(np.int64),
                       st.integers(0, 255).map(np.uint8), st.integers(0, 127).map(lambda v: np.array(v))),
       table=st.sampled_from([None, core.FFLAG_NAMES]))
def test_decode_flags_names_or_refuses(flags: Any, table: dict[str, int] | None) -> None:
    """decode_flags of a non-negative integer word lists the names of its set bits in bit
    order; anything else (negative, float, str, None, array) is a ValueError naming flags."""
    names = core.FLAG_NAMES if table is None else table
    is_int = isinstance(flags, (int, np.integer)) and not isinstance(flags, (bool, np.bool_)) or (
        isinstance(flags, np.ndarray) and flags.ndim == 0 and flags.dtype.kind in "iu")
    try:
        got = core.decode_flags(flags, table)
    except ValueError as exc:
        assert not (is_int and int(flags) >= 0), exc
        assert names_problem(exc, "flags"), exc
        return
    assert is_int and int(flags) >= 0, (flags, got)
    assert got == [k for k, v in sorted(names.items(), key=lambda kv: kv[1]) if int(flags) & v]


@fuzz(150)
@given(x=st.one_of(junk_arrays, junk_objects))
def test_f32_bits_patterns_or_refuses(x: Any) -> None:
    """f32_bits: float32 values -> their bit patterns, uint32 unchanged, other floats via
    the float32 cast; other dtypes a ValueError naming x."""
    a = np.asarray(x) if not isinstance(x, list) or _homogeneous(x) else None
    try:
        with np.errstate(over="ignore"):
            b = core.f32_bits(x)
    except ValueError as exc:
        assert a is None or not (a.dtype == np.uint32 or np.issubdtype(a.dtype, np.floating)), exc
        assert names_problem(exc, "x"), exc
        return
    assert b.dtype == np.uint32 and b.shape == a.shape
    with np.errstate(over="ignore"):
        want = a if a.dtype == np.uint32 else a.astype(np.float32).view(np.uint32)
    assert np.array_equal(b, want)


_FIELD_RANGES = {
    "w": range(3, 25), "e": range(2, 11), "n": range(1, 1025), "k_sigma": range(0, 16),
    "stat_log2_win": range(0, 17),
}


@fuzz(300)
@given(fields=st.dictionaries(
    st.sampled_from(["w", "e", "n", "rounding", "overflow", "acc", "k_sigma", "stat_log2_win", "stat_policy"]),
    st.one_of(st.integers(-5, 70), st.sampled_from(["trunc", "rne", "sat", "wrap", "reshift", "RNE"]),
              st.none(), st.floats(), st.booleans(), st.lists(st.integers(), max_size=2)),
    max_size=5))
def test_bfp_format_valid_or_names_field(fields: dict[str, Any]) -> None:
    """BfpFormat(**fields): a record whose every field lies in the documented range
    (docs/bfp.md table), or a ParamError naming a field that does not."""
    try:
        fmt = BfpFormat(**fields)
    except ParamError as exc:
        m = re.match(r"BfpFormat\.(\w+)=", str(exc))
        assert m and m.group(1) in fields, exc
        return
    for f, rng in _FIELD_RANGES.items():
        v = getattr(fmt, f)
        assert type(v) is int and v in rng, (f, v)
    assert fmt.rounding in ("trunc", "rne") and fmt.overflow in ("sat", "wrap")
    assert fmt.stat_policy in ("sat", "reshift")
    assert fmt.acc is None or (type(fmt.acc) is int and 2 * fmt.w + math.ceil(math.log2(fmt.n)) <= fmt.acc <= 64)


@fuzz(200)
@given(d=st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(["elem", "block", "blok", "w"]), st.integers(0, 3), st.none()),
                    st.one_of(st.sampled_from(ELEMS + ["fp8", "FP4_E2M1"]), st.integers(-2, 70), st.floats(),
                              st.none(), st.booleans()), max_size=3),
    st.lists(st.integers(), max_size=2), st.none(), st.integers(), st.text(max_size=3)))
def test_mx_params_from_dict(d: Any) -> None:
    """MxParams.from_dict of any decoded-JSON-like value: a record with a known element and
    a block in [1, 64], or a ParamError naming the field (or the unknown keys)."""
    try:
        p = MxParams.from_dict(d)
    except ParamError as exc:
        assert str(exc).startswith("MxParams"), exc
        return
    assert isinstance(d, dict)
    assert p.elem in MX_ELEMENTS and type(p.block) is int and 1 <= p.block <= 64
    assert p.to_dict() == {"elem": d["elem"], "block": d.get("block", 32)}


# ======================================================================================
# 1b. OCP MX codes (models/bfp/mx.py)
# ======================================================================================
@pytest.mark.parametrize("name", ELEMS)
def test_every_code_decodes_and_encodes_back(name: str) -> None:
    """All codes of each element type: decode_element agrees with ml_dtypes' decoding (OCP's
    k * 2**-6 for int8), and encode_element(decode_element(c)) == c through both the
    float64 and the float32 paths, except the documented cases: the NaN codes and the E5M2
    Inf codes cannot be encoded (ValueError naming values), and int8's 0x80 (-2.0)
    saturates to -127/64 (0x81). Signed zeros keep their sign."""
    e = MX_ELEMENTS[name]
    codes = np.arange(1 << e.bits, dtype=np.uint8)
    vals = decode_element(codes, name)
    want = np.array([ref_decode(int(c), name) for c in codes])
    assert vals.dtype == np.float64 and np.array_equal(vals, want, equal_nan=True)
    num = ~np.isnan(want)  # the sign of a NaN means nothing
    assert np.array_equal(np.signbit(vals[num]), np.signbit(want[num]))
    for c, v in zip(codes.tolist(), vals.tolist()):
        for arr in (np.array([v]), np.array([v], np.float32), np.array([v], np.float32).view(np.uint32)):
            if not math.isfinite(v):
                with pytest.raises(ValueError, match="^values:"):
                    encode_element(arr, name)
                continue
            back = int(encode_element(arr, name)[0])
            assert back == (0x81 if (name, c) == ("int8", 0x80) else c), (c, v, back)
    special = int(np.isnan(vals).sum()), int(np.isinf(vals).sum())
    assert special == {"fp8_e4m3": (2, 0), "fp8_e5m2": (6, 2)}.get(name, (0, 0))


@fuzz(200)
@given(name=st.sampled_from(ELEMS), dtype=st.sampled_from([np.float32, np.float64]),
       v=st.lists(st.floats(allow_nan=False, allow_infinity=False) | f32_value(), min_size=1, max_size=6))
def test_encode_element_is_the_documented_cast(name: str, dtype: type, v: list[float]) -> None:
    """encode_element of finite float32/float64 values: RNE on the element grid (one
    rounding, also from float64), saturating, sign kept (-0 for tiny negatives in the float
    types); a non-finite value is a ValueError naming values."""
    with np.errstate(over="ignore"):
        a = np.array(v, dtype=np.float64).astype(dtype)
    if not np.isfinite(a).all():
        with pytest.raises(ValueError, match="^values:"):
            encode_element(a, name)
        return
    got = encode_element(a, name)
    assert got.dtype == np.uint8 and got.shape == a.shape
    want = [ref_cast(Fraction(float(x)), math.copysign(1.0, float(x)) < 0, name)[0] for x in a.tolist()]
    assert got.tolist() == want, a.tolist()
    if dtype is np.float32 and name in ML:  # and ml_dtypes' own cast, on values in range
        mx = MX_ELEMENTS[name].max_normal
        ml = np.clip(a, -mx, mx).astype(ML[name]).astype(np.float64)
        ours = got.view(ML[name]).astype(np.float64)
        assert np.array_equal(ours, ml) and np.array_equal(np.signbit(ours), np.signbit(ml))


@fuzz(120)
@given(data=st.data(), name=st.sampled_from(ELEMS), block=st.integers(1, 8) | st.just(32),
       as_bits=st.booleans())
def test_mx_quantize_matches_spec_and_ml_dtypes(data, name: str, block: int, as_bits: bool) -> None:
    """mx_quantize_flags on any float32 blocks (NaN, Inf, zeros, subnormals, extremes) gives
    the documented scale, codes and flags; the element values agree with ml_dtypes' cast of
    x / 2**X (clipped to max_normal, the saturation) and mx_dequantize decodes them."""
    x = data.draw(st.one_of(f32_blocks(block, 2), f32_bit_blocks(block, 2).map(lambda b: b.view(np.float32))))
    flat = x.reshape(-1)
    s, c, f = mx_quantize_flags(flat.view(np.uint32) if as_bits else flat, name, block)
    nblk = x.shape[0]
    assert s.shape == f.shape == (nblk,) and c.shape == flat.shape
    assert s.dtype == c.dtype == f.dtype == np.uint8
    assert np.array_equal(mx_quantize(flat, name, block)[0], s)
    c2 = c.reshape(nblk, block)
    deq = mx_dequantize(s, c, name, block).reshape(nblk, block)
    e = MX_ELEMENTS[name]
    for i in range(nblk):
        want = ref_mx_block(x[i], name)
        assert (int(s[i]), c2[i].tolist(), int(f[i])) == want, (x[i].tolist(), name)
        if s[i] == 0xFF:
            assert np.isnan(deq[i]).all()
            continue
        X = int(s[i]) - 127
        v = np.ldexp(x[i].astype(np.float64), -X).astype(np.float32)  # exact, or far below the grid
        if name in ML:
            ml = np.clip(v, -e.max_normal, e.max_normal).astype(ML[name]).astype(np.float64)
            ours = c2[i].view(ML[name]).astype(np.float64)
        else:  # MXINT8: round_half_even(v * 64) saturated to [-127, 127] (OCP, no ml_dtypes type)
            ml = np.clip(np.rint(v.astype(np.float64) * 64), -127, 127) / 64
            ours = c2[i].view(np.int8) / 64.0
        assert np.array_equal(ours, ml), (x[i].tolist(), name)
        if e.ebits:
            assert np.array_equal(np.signbit(ours), np.signbit(ml))
        assert np.array_equal(deq[i].astype(np.float64), np.ldexp(ours, X))


@fuzz(120)
@given(data=st.data(), name=st.sampled_from(ELEMS + ["fp8", "int4"]),
       block=st.one_of(st.integers(-1, 5), st.just(32), st.floats(0, 4), st.booleans()))
def test_mx_dequantize_arbitrary_codes(data, name: str, block: Any) -> None:
    """mx_dequantize of arbitrary scale bytes and element codes (out of range, negative,
    wrong dtype, wrong shapes, a block that does not divide the length): the documented
    float32 values (``decode * 2**(scale - 127)`` rounded once, NaN under scale 0xFF), or a
    ValueError naming elem / block / codes / scales."""
    bits = MX_ELEMENTS[name].bits if name in MX_ELEMENTS else 8
    lead = data.draw(st.sampled_from([(), (2,), (1, 2)]))
    k = data.draw(st.integers(0, 6))
    cdt = data.draw(st.sampled_from([np.uint8, np.int16, np.int64, np.uint64, np.float32, np.bool_]))
    sdt = data.draw(st.sampled_from([np.uint8, np.uint8, np.int32, np.float64]))
    codes = data.draw(int_array(cdt, lead + (k,), st.integers(0, (1 << bits) - 1) | st.integers(-3, 300)))
    bk = block if isinstance(block, int) and not isinstance(block, bool) and block >= 1 else 1
    sshape = data.draw(st.sampled_from([lead + (k // bk,), lead + (k // bk + 1,), lead]))
    scales = data.draw(int_array(sdt, sshape, st.integers(0, 255) | st.integers(-2, 300)))
    bad = set()
    if name not in MX_ELEMENTS:
        bad.add("elem")
    if not (isinstance(block, int) and not isinstance(block, bool) and block >= 1):
        bad.add("block")
    ci, si = codes.astype(np.int64), scales.astype(np.int64)
    if cdt in (np.float32, np.bool_) or (ci.size and (ci.min() < 0 or ci.max() >= 1 << bits)):
        bad.add("codes")
    if "block" not in bad and k % block:
        bad.add("codes")
    if sdt is np.float64 or (si.size and (si.min() < 0 or si.max() > 255)):
        bad.add("scales")
    if "block" not in bad and "codes" not in bad and scales.shape != lead + (k // block,):
        bad.add("scales")
    try:
        out = mx_dequantize(scales, codes, name, block)
    except ValueError as exc:
        assert bad and names_problem(exc, *bad), (bad, exc)
        return
    assert not bad, (bad, out)
    assert out.dtype == np.float32 and out.shape == codes.shape
    sc = np.repeat(scales.astype(np.int64), block, axis=-1)
    for got, cc, ss in zip(out.ravel().tolist(), codes.astype(np.int64).ravel().tolist(), sc.ravel().tolist()):
        if ss == 0xFF:
            assert math.isnan(got)
            continue
        v = ref_decode(cc, name)
        if not math.isfinite(v):
            assert (math.isnan(got) and math.isnan(v)) or got == v
            continue
        # the scale is positive: the result has the element's sign, a zero included (a
        # Fraction has no -0: fp4_e2m1's code 8, -0, decodes to -0.0, which it dropped)
        want = math.copysign(f32_round(Fraction(v) * pow2(ss - 127)), v)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (cc, ss)


def int_array(dtype: type, shape: tuple[int, ...], values: st.SearchStrategy[int]) -> st.SearchStrategy[np.ndarray]:
    """Arrays of ``dtype`` holding integer ``values`` (those the dtype cannot hold are
    left out; a bool array gets ``v != 0``)."""
    def fits(v: int) -> bool:
        if dtype is np.bool_ or np.issubdtype(dtype, np.floating):
            return True
        info = np.iinfo(dtype)
        return info.min <= v <= info.max

    size = math.prod(shape)
    return st.lists(values.filter(fits), min_size=size, max_size=size).map(
        lambda vs: np.array([bool(v) for v in vs] if dtype is np.bool_ else vs, dtype=dtype).reshape(shape))


@fuzz(200)
@given(codes=st.one_of(junk_arrays, junk_objects), name=st.sampled_from(ELEMS + ["e2m1", ""]),
       scale=st.booleans())
def test_decode_element_and_scale_arbitrary(codes: Any, name: str, scale: bool) -> None:
    """decode_element / decode_scale of anything: the table value of each code (scale:
    ``2**(c-127)``, NaN at 0xFF), or a ValueError naming codes / scales / elem."""
    ints = accepted_ints(codes)
    a = np.asarray(codes) if ints is not None else None
    if a is not None and a.dtype == object:
        ints = None  # documented: an integer array (Python ints beyond numpy's reach aside)
    bits = 8 if scale else (MX_ELEMENTS[name].bits if name in MX_ELEMENTS else 8)
    ok = ints is not None and (ints.size == 0 or (int(ints.min()) >= 0 and int(ints.max()) < 1 << bits))
    try:
        got = decode_scale(codes) if scale else decode_element(codes, name)
    except ValueError as exc:
        expect = ["scales"] if scale else ["elem", "codes"]
        assert not ok or (not scale and name not in MX_ELEMENTS), exc
        assert names_problem(exc, *expect), exc
        return
    assert ok and (scale or name in MX_ELEMENTS)
    assert got.shape == ints.shape and got.dtype == np.float64
    for g, cc in zip(got.ravel().tolist(), ints.ravel().tolist()):
        want = (math.nan if cc == 0xFF else math.ldexp(1.0, cc - 127)) if scale else ref_decode(cc, name)
        assert (math.isnan(g) and math.isnan(want)) or (g == want and math.copysign(1, g) == math.copysign(1, want))


@fuzz(200)
@given(x=st.one_of(junk_arrays, junk_objects), name=st.sampled_from(ELEMS),
       block=st.one_of(st.integers(-2, 6), st.just(32), st.floats(0, 4)))
def test_mx_quantize_arbitrary_arguments(x: Any, name: str, block: Any) -> None:
    """mx_quantize of anything: a result for float32 (or uint32) data with a last axis that
    is a multiple of an int block >= 1, else a ValueError naming x or block."""
    a = np.asarray(x) if not isinstance(x, list) or _homogeneous(x) else None
    block_ok = isinstance(block, int) and not isinstance(block, bool) and block >= 1
    x_ok = a is not None and a.dtype in (np.float32, np.uint32) and a.ndim >= 1 and (
        not block_ok or a.shape[-1] % block == 0)
    try:
        s, c = mx_quantize(x, name, block)
    except ValueError as exc:
        assert not (x_ok and block_ok), exc
        assert names_problem(exc, *([] if x_ok else ["x"]) + ([] if block_ok else ["block"])), exc
        return
    assert x_ok and block_ok
    assert c.shape == a.shape and s.shape == a.shape[:-1] + (a.shape[-1] // block,)


# ======================================================================================
# 1c. lane packing of port words (verif/packing.py)
# ======================================================================================
@fuzz(250)
@given(data=st.data(), width=st.integers(1, 80), count=st.integers(0, 8), as_array=st.booleans())
def test_pack_unpack_round_trip(data, width: int, count: int, as_array: bool) -> None:
    """pack_lanes puts lane i at bits [i*width +: width] (two's complement for negatives);
    unpack_lanes / unpack_rows read them back (signed or not), ignoring bits above the
    lanes."""
    lane = st.integers(-(1 << (width - 1)), (1 << width) - 1)
    vals = data.draw(st.lists(lane, min_size=count, max_size=count))
    mask = (1 << width) - 1
    want = sum((v & mask) << (i * width) for i, v in enumerate(vals))
    arg = np.array(vals, dtype=np.int64) if as_array and width <= 63 else vals
    bus = pack_lanes(arg, width)
    assert bus == want
    junk = data.draw(st.integers(0, 2**16)) << (width * count)  # bits beyond the lanes
    u = unpack_lanes(bus | junk, width, count)
    sg = unpack_lanes(bus | junk, width, count, signed=True)
    assert [int(v) for v in u] == [v & mask for v in vals]
    assert [int(v) for v in sg] == [to_signed(v, width) for v in vals]
    other = data.draw(st.integers(0, (1 << (width * count)) - 1)) if count else 0
    rows = unpack_rows([bus, other], width, count, signed=True)
    assert rows.shape == (2, count)
    assert [int(v) for v in rows[0]] == [to_signed(v, width) for v in vals]
    assert [int(v) for v in rows[1]] == [to_signed(other >> (i * width), width) for i in range(count)]


@fuzz(200)
@given(values=st.lists(st.one_of(st.integers(-(2**80), 2**80), st.floats(), st.none(), st.text(max_size=2)),
                       max_size=4),
       width=st.integers(-2, 70), count=st.integers(-2, 4))
def test_pack_unpack_refuse_bad_arguments(values: list[Any], width: int, count: int) -> None:
    """Lane values that are not integers, a width < 1 or a count < 0 are a ValueError
    naming values / width / count; integer lanes (any size) keep their low width bits."""
    ints = all(isinstance(v, int) for v in values)
    try:
        bus = pack_lanes(values, width)
    except ValueError as exc:
        assert not ints or width < 1, exc
        assert names_problem(exc, *(["width"] if width < 1 else []) + ([] if ints else ["values"])), exc
    else:
        assert ints and width >= 1, (values, width, bus)
        mask = (1 << width) - 1
        assert bus == sum((v & mask) << (i * width) for i, v in enumerate(values))
    try:
        lanes = unpack_lanes(12345, width, count, signed=True)
    except ValueError as exc:
        assert width < 1 or count < 0, exc
        assert names_problem(exc, *(["width"] if width < 1 else []) + (["count"] if count < 0 else [])), exc
    else:
        assert width >= 1 and count >= 0
        assert [int(v) for v in lanes] == [to_signed(12345 >> (i * width), width) for i in range(count)]


# ======================================================================================
# 2. testplan YAML (verif/testplan.py)
# ======================================================================================
PLAN_FAMILY = "bfp"
REAL_PLAN_TEXT = (REPO / "verif" / PLAN_FAMILY / "testplan.yml").read_text()
REAL_PLAN = yaml.safe_load(REAL_PLAN_TEXT)
SMALL_PLAN = {"family": PLAN_FAMILY, "goals": {"functional": 100}, "stages": {"V1": "x"},
              "features": [{"name": "all", "stage": "V1", "tests": ["bfp_*"], "cover": ["bfp.quantizer"]}]}

yaml_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(), st.text(max_size=8),
                         st.sampled_from(["V1", "V2", "bfp", "bfp_*", "functional", "name", "stage", "tests"]))
yaml_keys = st.one_of(st.text(max_size=8), st.integers(-3, 3), st.none(), st.booleans(),
                      st.sampled_from(sorted(testplan._PLAN_KEYS | testplan._FEATURE_KEYS) + list(testplan.GOAL_KEYS)))
yaml_values = st.recursive(yaml_scalars, lambda kids: st.lists(kids, max_size=4)
                           | st.dictionaries(yaml_keys, kids, max_size=4), max_leaves=12)


def assert_plan_error(exc: testplan.TestplanError, path: Path) -> None:
    """A TestplanError names the file, then the place: ``<path>: <where>: <why>``."""
    msg = str(exc)
    assert msg.startswith(f"{path}: "), msg
    where, _, why = msg[len(f"{path}: "):].partition(": ")
    assert where.strip() and why.strip(), msg


def assert_valid_plan(plan: testplan.Testplan, data: Any, path: Path) -> None:
    """What a plan that loads promises (module docstring): the family, goals as percentages
    of known coverage kinds, every feature on a declared stage with tests of the family,
    every registered testbench of the family listed, cover names non-empty strings."""
    assert isinstance(data, dict) and plan.path == path and plan.family == data["family"] == PLAN_FAMILY
    assert data.get("goals") is None or isinstance(data["goals"], dict)
    assert all(k in testplan.GOAL_KEYS and 0 <= v <= 100 for k, v in plan.goals.items())
    assert isinstance(data["stages"], dict) and data["stages"] and isinstance(data["features"], list)
    family_tbs = {n for n, tb in TESTBENCHES.items() if tb.family == PLAN_FAMILY}
    assert plan.tests() == family_tbs
    assert len({f.name for f in plan.features}) == len(plan.features) == len(data["features"])
    for f, raw in zip(plan.features, data["features"]):
        assert isinstance(f.name, str) and f.name and f.stage in plan.stages
        assert f.tests and set(f.tests) <= family_tbs
        assert raw.get("cover") is None or isinstance(raw["cover"], list)
        assert all(isinstance(c, str) and c for c in f.cover)


@fuzz(200)
@given(data=yaml_values | st.dictionaries(yaml_keys, yaml_values, max_size=6))
def test_testplan_parse_arbitrary_structures(data: Any) -> None:
    """parse() of any YAML-like value: a Testplan or a TestplanError naming the file and
    the place (never KeyError / TypeError / AttributeError)."""
    _parse_and_check(data, Path("fuzz") / PLAN_FAMILY / "testplan.yml")


def _parse_and_check(data: Any, path: Path) -> None:
    """parse() gives a Testplan that keeps the format's promises, or a TestplanError
    naming the file and the place."""
    try:
        plan = testplan.parse(data, path, family=PLAN_FAMILY)
    except testplan.TestplanError as exc:
        assert_plan_error(exc, path)
        return
    assert_valid_plan(plan, data, path)


@st.composite
def mutated_plan(draw: st.DrawFn) -> Any:
    """A real plan (or the minimal valid one) with one to three random edits anywhere:
    a value replaced, a key dropped or added (any key type), a list item dropped,
    duplicated or appended."""
    obj = copy.deepcopy(draw(st.sampled_from([REAL_PLAN, SMALL_PLAN])))
    for _ in range(draw(st.integers(1, 3))):
        obj = _edit(draw, obj)
    return obj


def _edit(draw: st.DrawFn, obj: Any) -> Any:
    if isinstance(obj, dict) and obj and draw(st.integers(0, 2)):
        k = draw(st.sampled_from(sorted(obj, key=repr)))
        return {**obj, k: _edit(draw, obj[k])}
    if isinstance(obj, list) and obj and draw(st.integers(0, 2)):
        i = draw(st.integers(0, len(obj) - 1))
        return obj[:i] + [_edit(draw, obj[i])] + obj[i + 1:]
    op = draw(st.sampled_from(["replace", "drop", "add", "dup"]))
    if op == "drop" and isinstance(obj, dict) and obj:
        k = draw(st.sampled_from(sorted(obj, key=repr)))
        return {kk: v for kk, v in obj.items() if kk != k}
    if op == "drop" and isinstance(obj, list) and obj:
        i = draw(st.integers(0, len(obj) - 1))
        return obj[:i] + obj[i + 1:]
    if op == "add" and isinstance(obj, dict):
        return {**obj, draw(yaml_keys): draw(yaml_values)}
    if op in ("add", "dup") and isinstance(obj, list):
        return obj + [copy.deepcopy(draw(st.sampled_from(obj))) if op == "dup" and obj else draw(yaml_values)]
    return draw(yaml_values)


@fuzz(200)
@given(data=mutated_plan())
def test_testplan_parse_mutated_real_plans(data: Any) -> None:
    """parse() of a real plan with random edits deep inside: a Testplan that keeps every
    promise of the format, or a TestplanError naming the file and the place."""
    _parse_and_check(data, Path("verif") / PLAN_FAMILY / "testplan.yml")


def test_testplan_unedited_plans_load() -> None:
    """The seeds of the fuzzing are valid plans (so the edits are what breaks them)."""
    path = Path("verif") / PLAN_FAMILY / "testplan.yml"
    assert_valid_plan(testplan.parse(copy.deepcopy(REAL_PLAN), path, PLAN_FAMILY), REAL_PLAN, path)
    assert_valid_plan(testplan.parse(copy.deepcopy(SMALL_PLAN), path, PLAN_FAMILY), SMALL_PLAN, path)


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder named after the family, as load() reads the family from the folder name."""
    d = tmp_path_factory.mktemp("plans") / PLAN_FAMILY
    d.mkdir()
    return d


@st.composite
def mutated_text(draw: st.DrawFn) -> str:
    """A valid plan's YAML text (the minimal plan, block or flow style) with characters
    inserted and slices deleted."""
    text = draw(st.sampled_from([yaml.safe_dump(SMALL_PLAN), yaml.safe_dump(SMALL_PLAN, default_flow_style=True)]))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:i] + draw(st.text(alphabet=":-[]{}#&*!|>'\"%@`?,. \t\nabcV1_0\\", max_size=6)) + text[i:]
        else:
            text = text[:i] + text[i + draw(st.integers(1, 40)):]
    return text


@fuzz(150)
@given(raw=st.one_of(st.text(max_size=80).map(str.encode), st.binary(max_size=80), mutated_text().map(str.encode)))
def test_testplan_load_arbitrary_text(plan_dir: Path, raw: bytes) -> None:
    """load() of any file content (text, binary, broken YAML): a Testplan or a TestplanError
    naming the file; no yaml exception or decode error leaks."""
    check_load(plan_dir / "testplan.yml", raw)


@pytest.mark.parametrize("raw", [
    b"[" * 600, b"{a: " * 600, b"- " * 600, b"*a", b"&a [*a]", b"&a {family: bfp, stages: {V1: x}, features: [*a]}",
    b"? [a]\n: b\n", b"\xff\xfe\x00x", b"family: bfp\x00", b"!!python/object:os.system x", b"a: 1\na: 2\n\t- x",
    REAL_PLAN_TEXT.replace("stage: V1", "stage: [V1]").encode(),
    REAL_PLAN_TEXT.replace("tests: [bfp_quantize_table2]", "tests: 5").encode(),
    REAL_PLAN_TEXT.replace("  - name", "  -name", 1).encode(),
    (REAL_PLAN_TEXT.split("\nfeatures:")[0] + "\nfeatures: 3\n").encode(),
    (REAL_PLAN_TEXT.split("\nfeatures:")[0] + "\nfeatures: {a: 1}\n").encode(),
    re.sub(r"goals:\n(  .*\n)+", "goals: 0\n", REAL_PLAN_TEXT).encode(),
    REAL_PLAN_TEXT.replace("cover: [bfp.quantizer.vector]", "cover: 0").encode(),
])
def test_testplan_load_special_text(plan_dir: Path, raw: bytes) -> None:
    """Deep nesting, aliases (recursive ones too), unhashable keys, control characters,
    Python tags, tabs, and the real plan with a list stage or a scalar where a list
    belongs: a TestplanError naming the file and the place."""
    check_load(plan_dir / "testplan.yml", raw)


def check_load(path: Path, raw: bytes) -> None:
    """load() of ``raw`` written to ``path``: a valid Testplan or a well-formed TestplanError."""
    path.write_bytes(raw)
    try:
        plan = testplan.load(path)
    except testplan.TestplanError as exc:
        assert_plan_error(exc, path)
        return
    assert_valid_plan(plan, yaml.safe_load(raw.decode()), path)


def test_testplan_load_real_text(plan_dir: Path) -> None:
    """The unedited text loads from the fuzzing folder."""
    path = plan_dir / "testplan.yml"
    path.write_text(REAL_PLAN_TEXT)
    assert_valid_plan(testplan.load(path), REAL_PLAN, path)


# ======================================================================================
# 3. RTL= files (verif/runner.py check_rtl_ports)
# ======================================================================================
#: Generated modules small enough to rewrite on every example, plus the patent quantizer.
RTL_DESIGNS = ["sched/sched_counter", "sparse/sp_encoder", "sparse/w_mem", "gemm/ld_detect", "bfp/bfp_quantize"]


@functools.lru_cache(maxsize=None)
def design(key: str) -> tuple[str, str, dict[str, Any]]:
    """``(module, verilog text, record)`` of a committed generated design."""
    rec = json.loads((REPO / "hdl" / f"{key}.json").read_text())
    return rec["module"], (REPO / "hdl" / f"{key}.v").read_text(), rec


def decl(text: str, port: str) -> re.Match[str]:
    """The port's declaration line in MyHDL's non-ANSI output (``input [7:0] p;``)."""
    m = re.search(rf"^(input|output)(\s+\[(\d+):(\d+)\])?\s+{port};[ \t]*$", text, re.M)
    assert m, port
    return m


@pytest.fixture(scope="module")
def rtl_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rtl")


def run_check(path: Path, text: str | bytes, module: str, rec: dict[str, Any]) -> ValueError | None:
    """check_rtl_ports on ``text`` written to ``path``: None when it passes, else its
    ValueError (any other exception fails the test), in bounded time."""
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    t0 = time.perf_counter()
    try:
        check_rtl_ports(path, module, rec)
        err = None
    except ValueError as exc:
        assert str(exc).startswith(f"RTL={path}"), exc  # names the file
        err = exc
    assert time.perf_counter() - t0 < 5.0, "check_rtl_ports took too long"
    return err


@fuzz(150)
@given(key=st.sampled_from(RTL_DESIGNS), data=st.data())
def test_rtl_junk_files_are_refused(rtl_dir: Path, key: str, data) -> None:
    """Random text, binary bytes, and soups of Verilog tokens (module, the port names,
    ranges, comment markers) never pass unless every record port is declared, and fail
    only with a ValueError naming the file."""
    module, _, rec = design(key)
    tokens = ["module", module, "endmodule", "input", "output", "inout", "wire", "reg", "signed", "[7:0]",
              "[0:0]", "(", ")", ";", ",", "//", "/*", "*/", "\n", " ", "`timescale", *rec["ports"]]
    text = data.draw(st.one_of(
        st.text(max_size=200), st.binary(max_size=200),
        st.lists(st.sampled_from(tokens), max_size=60).map(" ".join),
        st.lists(st.sampled_from(tokens), max_size=60).map("".join)))
    err = run_check(rtl_dir / "junk.v", text, module, rec)
    if err is None:  # it passed: then every port must at least be declared in it
        body = text.decode(errors="replace") if isinstance(text, bytes) else text
        assert all(re.search(rf"\b(input|output)\b[^;]*\b{p}\b", body) for p in rec["ports"]), text


@st.composite
def rtl_mutation(draw: st.DrawFn) -> tuple[str, str, dict[str, Any], list[tuple[str, ...]]]:
    """A committed design's Verilog with zero to three edits, and the outcome each edit
    implies: ``("pass",)``, ``("port", name, ...words the message must contain)`` or
    ``("nomodule",)``."""
    module, text, rec = design(draw(st.sampled_from(RTL_DESIGNS)))
    ports = sorted(rec["ports"])
    touched = draw(st.lists(st.sampled_from(ports), unique=True, max_size=3))
    expect: list[tuple[str, ...]] = []
    for p in touched:
        want_dir = {"in": "input", "out": "output"}[rec["ports"][p]["dir"]]
        width = rec["ports"][p]["width"]
        m = decl(text, p)
        op = draw(st.sampled_from(["remove", "rename", "resize", "flip", "reverse", "inout"]))
        if op == "remove":
            text = text[:m.start()] + text[m.end():]
            expect.append(("port", p, "missing"))
        elif op == "rename":
            new = "zz_" + draw(st.text(alphabet="abcdefghij_0123456789", min_size=1, max_size=6))
            text = re.sub(rf"\b{p}\b", new, text)
            expect += [("port", p, "missing"), ("port", new, "not in the block's port list")]
        elif op == "resize":
            w2 = draw(st.integers(1, 600).filter(lambda v: v != width))
            rng = "" if w2 == 1 and draw(st.booleans()) else f" [{w2 - 1}:0]"
            text = text[:m.start()] + f"{m.group(1)}{rng} {p};" + text[m.end():]
            expect.append(("port", p, f"[{width}]", f"[{w2}]"))
        elif op == "flip":
            other = "output" if m.group(1) == "input" else "input"
            text = text[:m.start()] + other + text[m.start() + len(m.group(1)):]
            expect.append(("port", p, want_dir, other))
        elif op == "inout":
            text = text[:m.start()] + "inout" + text[m.start() + len(m.group(1)):]
            expect.append(("port", p, "inout"))
        elif m.group(2):  # reverse: [hi:lo] -> [lo:hi], the same width
            text = text[:m.start(2)] + f" [{m.group(4)}:{m.group(3)}]" + text[m.end(2):]
            expect.append(("pass",))
    dressing = draw(st.sampled_from(["none", "fake_comment", "junk", "wrap_comment", "rename_module",
                                     "drop_endmodule", "extra_port"]))
    junk = draw(st.text(alphabet="abc xyz;()[]:0123\n\t#`'\"", max_size=40))
    fake = f"module {module} (input [3:0] bogus); endmodule"
    if dressing == "fake_comment":
        text = f"// {fake}\n/* {fake}\n   module {module}; */\n" + text + f"\n// endmodule {module}\n"
    elif dressing == "junk":
        text = junk + "\n" + text + "\n" + junk
    elif dressing == "wrap_comment":
        text = "/*\n" + text.replace("*/", "* /") + "\n*/\n"
        expect.append(("nomodule",))
    elif dressing == "rename_module":
        text = re.sub(rf"\bmodule\s+{module}\b", f"module {module}_x", text)
        expect.append(("nomodule",))
    elif dressing == "drop_endmodule":
        text = text.replace("endmodule", "")
        expect.append(("nomodule",))
    elif dressing == "extra_port":
        i = text.index(f"module {module}")
        j = text.index(";", i) + 1
        text = text[:j] + "\noutput [2:0] zz_extra;" + text[j:]
        expect.append(("port", "zz_extra", "not in the block's port list"))
    return module, text, rec, expect


@fuzz(150)
@given(case=rtl_mutation())
def test_rtl_real_module_mutations(rtl_dir: Path, case) -> None:
    """The committed Verilog of a design, edited: ports removed, renamed, resized, turned
    around or made inout, ranges written [lo:hi], the module commented out, renamed or
    unterminated, fake modules in comments, junk around it. It passes exactly when the
    module and every port still match, else a ValueError names each problem."""
    module, text, rec, expect = case
    err = run_check(rtl_dir / "dut.v", text, module, rec)
    problems = [e for e in expect if e[0] != "pass"]
    if not problems:
        assert err is None, err
        return
    assert err is not None, expect
    msg = str(err)
    if any(e[0] == "nomodule" for e in problems):
        assert f"{module!r}" in msg and "module" in msg, msg
        return
    lines = msg.splitlines()[1:]
    for e in problems:
        assert any(f"port {e[1]}:" in ln and all(w in ln for w in e[2:]) for ln in lines), (e, msg)


@pytest.mark.parametrize("text", [
    "module {top} " * 20000,
    "/* " * 20000,
    "module {top} (\n" + "input a; " * 20000,
    "module {top} (" + "/*" * 20000,
    "module {top} (count); output [" + "9" * 5000 + ":0] count; endmodule",
])
def test_rtl_pathological_text_is_fast(rtl_dir: Path, text: str) -> None:
    """Thousands of unterminated ``module`` headers or block comments, or a range bound of
    thousands of digits, are refused with a ValueError naming the file, in bounded time
    (no quadratic regex scan)."""
    module, _, rec = design("sched/sched_counter")
    t0 = time.perf_counter()
    err = run_check(rtl_dir / "slow.v", text.replace("{top}", module), module, rec)
    assert err is not None and time.perf_counter() - t0 < 2.0
