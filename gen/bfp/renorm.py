"""MyHDL generator of the BFP renormaliser: output exponent selector + mantissa shifter.

Spec 004 sections 2.4 (items 6-7) and 4.2(c); the semantics are those of
:func:`lockstep.models.bfp.renormalize` (built on ``select_max`` and ``shift_to``):

* max mode: ``e4 = e3 + lop_int(max|acc|) - (w - 2)``, clamped to ``[e_min, e_max]``
  with ``exp_hi``/``exp_lo``; an all-zero vector gives ``e_min`` and ``zero``;
* fixed mode (``in_fixed``): ``e4 = in_e4``, no clamp flags, an all-zero vector still
  reports ``zero``;
* every lane: ``R(acc * 2**(e3 - e4))`` with ``fmt.rounding`` on the magnitude, then
  SAT/WRAP to ``w`` bits with ``ovf``.

Structure: per lane ``|acc|`` (``A = fmt.acc_bits`` bits, ``|-2**(A-1)|`` fits), a
balanced max tree (:func:`.parts.max_tree`), the leading one of the maximum
(:func:`.parts.msb_index` on the maximum, any width: no padding), one shared
exponent/shift computation, and per lane a clipped left shifter (amount clipped to
``w``: any larger shift of a nonzero magnitude overflows and leaves the low ``w`` bits
zero) or a clipped right shifter with round/sticky bits (amount clipped to ``A``: any
larger shift gives 0 in both roundings, since ``|acc| <= 2**(A-1)``). One output register
stage (latency 1).
"""

from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, concat, intbv

from lockstep.models.bfp import FLAG_NAMES, StatsSelector
from lockstep.models.bfp.params import BfpFormat

from ..common import Emitted, emit_stream_unit, flat_signal
from ..stream import STREAM_LATENCY, stream_ports, stream_register
from .parts import any_of, max_tree, msb_bits, msb_index

__all__ = [
    "RENORM_FLAGS",
    "RENORM_LATENCY",
    "renorm",
    "renorm_ports",
    "emit_renorm",
    "STATS_WINDOW_STALL",
    "stats",
    "stats_ports",
    "emit_stats",
]

#: Flag bit order of ``out_flags``/``err`` (the golden model's FLAG_NAMES order; the
#: renormaliser only ever sets zero, exp_hi, exp_lo and ovf).
RENORM_FLAGS = tuple(FLAG_NAMES)
#: Cycles from an accepted input vector to its output vector (one register stage).
RENORM_LATENCY = STREAM_LATENCY


def _exp_bits(fmt: BfpFormat) -> int:
    """Signed width holding every intermediate exponent and shift of the renormaliser."""
    # e3 in [-2**e, 2**e - 1], e4 in [e_min, e_max], lop in [0, A + 4] (the statistics
    # bound mu + k_sigma * sigma < 2**(A+4)), w - 2 <= 22: e3 + lop - (w-2), e3 + offset
    # and +-(e3 - e4) stay inside +-(2**e + 2**(e-1) + A + 8).
    lim = (1 << fmt.e) + (1 << (fmt.e - 1)) + fmt.acc_bits + 8
    return lim.bit_length() + 1


@block
def _abs_lane(acc_bus, x, mag, neg, lo, fmt):
    """Lane view of the packed accumulator bus and its magnitude.

    Ports:
        acc_bus: packed bus; this lane is ``[lo +: A]`` (two's complement).
        x: the lane's raw bits.
        mag: ``|x|`` as an unsigned ``A``-bit value (``2**(A-1)`` fits).
        neg: the sign bit.
    """
    a = fmt.acc_bits

    @always_comb
    def split():
        x.next = acc_bus[lo + a : lo]

    @always_comb
    def absval():
        neg.next = x[a - 1]
        if x[a - 1]:
            mag.next = ~x + 1
        else:
            mag.next = x

    return split, absval


@block
def _shift_lane(mag, neg, left, sl, rr, m_out, f_ovf, fmt, force_sat=None):
    """One lane of the output mantissa shifter.

    Ports:
        mag, neg: the lane's magnitude (``A`` bits) and sign.
        left: shift left by ``sl`` (``e3 >= e4``), else right by ``rr`` with rounding.
        sl: left shift amount clipped to ``w``.
        rr: right shift amount clipped to ``A``.
        m_out: ``w``-bit two's-complement mantissa.
        f_ovf: the rounded magnitude exceeded ``m_max`` (saturated or wrapped).
        force_sat: optional; when high, saturate even if ``fmt.overflow`` is "wrap"
            (statistics mode, policy "sat"). ``None``: ``fmt.overflow`` alone decides.
    """
    a, w = fmt.acc_bits, fmt.w
    mmax = fmt.m_max
    rne = fmt.rounding == "rne"
    sat = fmt.overflow == "sat"
    lw = a + w  # mag << (sl <= w) fits
    low = flat_signal(w)
    ovf_s = Signal(bool(0))

    @always_comb
    def shift():
        lsh = intbv(0)[lw:]
        ext = intbv(0)[2 * a :]
        ip = intbv(0)[a + 1 :]
        lsh[:] = concat(intbv(0)[w:], mag)
        lsh[:] = lsh << sl
        ext[:] = concat(mag, intbv(0)[a:])
        ext[:] = ext >> rr
        ip[:] = concat(bool(0), ext[2 * a : a])
        if rne and ext[a - 1] and (ext[a - 1 : 0] != 0 or ip[0]):
            ip[:] = ip + 1
        if left:
            ovf_s.next = lsh[lw : w - 1] != 0
            low.next = lsh[w:0]
        else:
            ovf_s.next = ip > mmax
            low.next = ip[w:0]

    if force_sat is None or sat:

        @always_comb
        def finish():
            v = intbv(0)[w:]
            v[:] = low
            if sat and ovf_s:
                v[:] = mmax
            if neg:
                m_out.next = ~v + 1
            else:
                m_out.next = v
            f_ovf.next = ovf_s

    else:

        @always_comb
        def finish():
            v = intbv(0)[w:]
            v[:] = low
            if force_sat and ovf_s:
                v[:] = mmax
            if neg:
                m_out.next = ~v + 1
            else:
                m_out.next = v
            f_ovf.next = ovf_s

    return shift, finish


@block
def renorm(
    clk,
    rst,
    in_valid,
    in_ready,
    in_data,
    in_e3,
    in_fixed,
    in_e4,
    out_valid,
    out_ready,
    out_data,
    out_e4,
    out_flags,
    err,
    fmt: BfpFormat,
):
    """Accumulator vector (exponent e3) -> BFP block (exponent e4), max or fixed mode.

    Ports:
        clk, rst: clock and synchronous active-high reset.
        in_valid, in_ready, in_data: input stream, ``n`` two's-complement accumulators
            of ``fmt.acc_bits`` bits.
        in_e3: the accumulators' exponent (``fmt.e_sum_bits``-bit two's complement).
        in_fixed, in_e4: when ``in_fixed`` is high, use ``in_e4`` (``e``-bit two's
            complement) instead of the max-mode exponent.
        out_valid, out_ready, out_data: output stream, ``n`` W-bit mantissas.
        out_e4: the block's exponent (``e``-bit two's complement).
        out_flags: flags of the block, bit order :data:`RENORM_FLAGS`.
        err: sticky OR of every accepted block's flags (cleared by ``rst``).
    """
    n, w, e, a = fmt.n, fmt.w, fmt.e, fmt.acc_bits
    es = fmt.e_sum_bits
    eb = _exp_bits(fmt)
    emin, emax = fmt.e_min, fmt.e_max
    ib = msb_bits(a)  # msb_index width
    slb = w.bit_length()  # sl in [0, w]
    rb = a.bit_length()  # rr in [0, A]
    smin, smax = -(1 << (eb - 1)), 1 << (eb - 1)

    xs = [flat_signal(a) for _ in range(n)]
    mags = [flat_signal(a) for _ in range(n)]
    negs = [Signal(bool(0)) for _ in range(n)]
    ms = [flat_signal(w) for _ in range(n)]
    ovfs = [Signal(bool(0)) for _ in range(n)]
    absmax = flat_signal(a)
    lop = flat_signal(ib)
    left = Signal(bool(0))
    sl = flat_signal(slb)
    rr = flat_signal(rb)
    e4 = flat_signal(e)
    f_zero, f_hi, f_lo, any_ovf = (Signal(bool(0)) for _ in range(4))
    flags = flat_signal(len(RENORM_FLAGS))
    insts = []

    for i in range(n):
        insts.append(_abs_lane(in_data, xs[i], mags[i], negs[i], a * i, fmt))
        insts.append(_shift_lane(mags[i], negs[i], left, sl, rr, ms[i], ovfs[i], fmt))
    insts.append(max_tree(mags, absmax))

    e3_s, ex_s = Signal(intbv(0, min=smin, max=smax)), Signal(intbv(0, min=smin, max=smax))
    insts += [msb_index(absmax, lop), any_of(ovfs, any_ovf)]
    insts.append(_shift_plan(e3_s, ex_s, e4, left, sl, rr, fmt))

    @always_comb
    def select_exp():
        e3x = intbv(0, min=smin, max=smax)
        fx = intbv(0, min=smin, max=smax)
        lx = intbv(0, min=smin, max=smax)
        raw = intbv(0, min=smin, max=smax)
        ex = intbv(0, min=smin, max=smax)
        rep3 = intbv(0)[eb - es :]
        rep4 = intbv(0)[eb - e :]
        rep3[:] = 0
        if in_e3[es - 1]:
            rep3[:] = (1 << (eb - es)) - 1
        rep4[:] = 0
        if in_e4[e - 1]:
            rep4[:] = (1 << (eb - e)) - 1
        e3x[:] = concat(rep3, in_e3)
        fx[:] = concat(rep4, in_e4)
        lx[:] = concat(intbv(0)[eb - ib :], lop)
        raw[:] = e3x + lx - (w - 2)
        f_zero.next = absmax == 0
        f_hi.next = 0
        f_lo.next = 0
        if in_fixed:
            ex[:] = fx
        elif absmax == 0:
            ex[:] = emin
        elif raw > emax:
            ex[:] = emax
            f_hi.next = 1
        elif raw < emin:
            ex[:] = emin
            f_lo.next = 1
        else:
            ex[:] = raw
        e3_s.next = e3x
        ex_s.next = ex

    @always_comb
    def pack_flags():
        flags.next = concat(bool(0), any_ovf, f_lo, f_hi, intbv(0)[2:], f_zero)

    mant_bus = ConcatSignal(*reversed(ms)) if n > 1 else ms[0]
    shell = stream_register(
        clk, rst, in_valid, in_ready, out_valid, out_ready,
        [(out_data, mant_bus), (out_e4, e4), (out_flags, flags)], flags, err,
    )
    return insts, select_exp, pack_flags, shell


def renorm_ports(fmt: BfpFormat) -> dict[str, dict]:
    """Port list of :func:`renorm` (name -> direction, width, doc)."""
    a = fmt.acc_bits
    return stream_ports(
        {
            "data": (a * fmt.n, f"n {a}-bit two's-complement accumulators"),
            "e3": (fmt.e_sum_bits, "accumulator exponent e3 (two's complement)"),
            "fixed": (1, "fixed mode: use in_e4 instead of the max-mode exponent"),
            "e4": (fmt.e, "fixed output exponent (two's complement)"),
        },
        {"data": (fmt.w * fmt.n, "n W-bit mantissas"), "e4": (fmt.e, "output exponent e4")},
        RENORM_FLAGS,
    )


def emit_renorm(fmt: BfpFormat, outdir: Path | str, name: str = "bfp_renorm") -> Emitted:
    """Write the renormaliser for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a BfpFormat, or ``name`` is a Verilog keyword.
    """
    return emit_stream_unit(
        renorm,
        fmt,
        BfpFormat,
        renorm_ports,
        outdir,
        name,
        family="bfp",
        timing={"latency": RENORM_LATENCY, "blocks_per_cycle": 1},
        doc="accumulator vector -> BFP block (output exponent selector, max/fixed mode, + mantissa shifter)",
    )


# ---- statistics mode (stretch) ---------------------------------------------------------------
#: Cycles ``in_ready`` stays low after accepting a vector that completes a window (the
#: window arithmetic - mean, variance, isqrt, mu + k*sigma, leading one - runs then).
STATS_WINDOW_STALL = 1


@block
def _sum_tree(keys, out):
    """Unsigned sum of a power-of-two count of equal-width signals, as a balanced tree.

    Ports:
        keys: list of input signals (``2**j`` of them).
        out: their sum, ``len(keys[0]) + j`` bits.
    """
    if len(keys) == 1:
        k0 = keys[0]

        @always_comb
        def pass1():
            out.next = k0

        return pass1
    half = len(keys) // 2
    wd = len(out) - 1
    lo_s, hi_s = flat_signal(wd), flat_signal(wd)
    lo = _sum_tree(keys[:half], lo_s)
    hi = _sum_tree(keys[half:], hi_s)

    @always_comb
    def add():
        out.next = concat(bool(0), lo_s) + concat(bool(0), hi_s)

    return lo, hi, add


@block
def _square(mag, sq, fmt):
    """``sq = mag * mag`` (``A`` bits in, ``2A`` bits out)."""
    a = fmt.acc_bits

    @always_comb
    def mul():
        m2 = intbv(0)[2 * a :]
        m2[:] = concat(intbv(0)[a:], mag)
        sq.next = m2 * m2

    return mul


@block
def _shift_plan(e3x, ex, e4, left, sl, rr, fmt):
    """Output exponent and the lanes' shift: ``acc * 2**(e3 - e4)``.

    Ports:
        e3x: accumulator exponent e3, sign-extended (signed).
        ex: selected output exponent e4, clamped to the format (signed, same width).
        e4: ``ex`` as the ``e``-bit output field.
        left: shift left (``e3 >= e4``).
        sl: left shift, clipped to ``w`` (any larger one overflows every nonzero lane).
        rr: right shift, clipped to the accumulator width (every lane rounds from 0).
    """
    w, a, e = fmt.w, fmt.acc_bits, fmt.e
    slb, rb = len(sl), len(rr)
    smin, smax = ex.min, ex.max

    @always_comb
    def plan():
        sh = intbv(0, min=smin, max=smax)
        nsh = intbv(0, min=smin, max=smax)
        e4.next = ex[e:]
        sh[:] = e3x - ex
        nsh[:] = ex - e3x
        left.next = sh >= 0
        if sh > w:
            sl.next = w
        elif sh >= 0:
            sl.next = sh[slb:]
        else:
            sl.next = 0
        if nsh > a:
            rr.next = a
        elif nsh >= 0:
            rr.next = nsh[rb:]
        else:
            rr.next = 0

    return plan


@block
def _zext(src, dst):
    """``dst`` = ``src`` zero-extended (``len(dst) >= len(src)``)."""
    pad = len(dst) - len(src)
    if pad == 0:

        @always_comb
        def same():
            dst.next = src

        return same

    @always_comb
    def extend():
        dst.next = concat(intbv(0)[pad:], src)

    return extend


@block
def _window_math(wmu, wex2, hi, fmt):
    """End-of-window arithmetic of :func:`lockstep.models.bfp.stats_window`.

    Ports:
        wmu: ``mu = s1 >> k`` (``A`` bits).
        wex2: ``ex2 = s2 >> k`` (``2A`` bits).
        hi: ``mu + k_sigma * isqrt(max(ex2 - mu*mu, 0))`` (``A + 5`` bits).
    """
    a, ks = fmt.acc_bits, fmt.k_sigma
    hb = len(hi)

    @always_comb
    def wmath():
        mu2 = intbv(0)[2 * a :]
        vr = intbv(0)[2 * a :]
        x = intbv(0)[2 * a :]
        res = intbv(0)[2 * a :]
        pbit = intbv(0)[2 * a :]
        t = intbv(0)[2 * a :]
        sg = intbv(0)[hb:]
        mx = intbv(0)[hb:]
        ksv = intbv(0)[hb:]
        mu2[:] = concat(intbv(0)[a:], wmu)
        mu2[:] = mu2 * mu2
        if wex2 > mu2:
            vr[:] = wex2 - mu2
        else:
            vr[:] = 0
        # digit-by-digit integer square root: A result bits, floor(sqrt(var))
        x[:] = vr
        res[:] = 0
        pbit[:] = concat(intbv(1)[2:], intbv(0)[2 * a - 2 :])
        for stage in range(a):  # noqa: B007 - one restoring step per result bit
            t[:] = res + pbit
            if x >= t:
                x[:] = x - t
                res[:] = (res >> 1) + pbit
            else:
                res[:] = res >> 1
            pbit[:] = pbit >> 2
        sg[:] = res[hb:]
        mx[:] = concat(intbv(0)[5:], wmu)
        ksv[:] = ks
        hi.next = mx + sg * ksv

    return wmath


@block
def stats(
    clk,
    rst,
    in_valid,
    in_ready,
    in_data,
    in_e3,
    out_valid,
    out_ready,
    out_data,
    out_e4,
    out_flags,
    err,
    fmt: BfpFormat,
):
    """Statistics-mode exponent selector + mantissa shifter (:class:`StatsSelector`).

    Running ``s1 = sum|acc|``, ``s2 = sum acc**2`` over windows of ``2**k`` values
    (``k = fmt.stat_log2_win``), restarted when ``e3`` changes; a completed window sets
    ``offset = lop(mu + k_sigma*sigma) - (w - 2)`` for the following vectors (max mode
    until the first window completes). Overflow guard with ``fmt.stat_policy``.

    Ports:
        clk, rst: clock and synchronous active-high reset (also clears the statistics).
        in_valid, in_ready, in_data: input stream, ``n`` accumulators of ``acc_bits``.
            ``in_ready`` is low for :data:`STATS_WINDOW_STALL` cycle(s) after a vector
            that completes a window.
        in_e3: the accumulators' exponent (``e_sum_bits`` two's complement).
        out_valid, out_ready, out_data: output stream, ``n`` W-bit mantissas.
        out_e4: the block's exponent.
        out_flags: block flags, bit order :data:`RENORM_FLAGS`.
        err: sticky OR of every accepted block's flags.
    """
    n, w, e, a = fmt.n, fmt.w, fmt.e, fmt.acc_bits
    es = fmt.e_sum_bits
    k = fmt.stat_log2_win
    eb = _exp_bits(fmt)
    emin, emax = fmt.e_min, fmt.e_max
    smin, smax = -(1 << (eb - 1)), 1 << (eb - 1)
    lg = (n - 1).bit_length()
    nv = (1 << k) // n  # vectors per window
    cb = max(1, (nv - 1).bit_length())
    s1b, s2b = a + k, 2 * a + k
    hb = a + 5
    ib = msb_bits(a)
    hib = msb_bits(hb)
    slb, rb = w.bit_length(), a.bit_length()
    reshift = fmt.stat_policy == "reshift"
    dyn_sat = fmt.stat_policy == "sat" and fmt.overflow == "wrap"

    xs = [flat_signal(a) for _ in range(n)]
    mags = [flat_signal(a) for _ in range(n)]
    sqs = [flat_signal(2 * a) for _ in range(n)]
    negs = [Signal(bool(0)) for _ in range(n)]
    ms = [flat_signal(w) for _ in range(n)]
    ovfs = [Signal(bool(0)) for _ in range(n)]
    absmax, lop = flat_signal(a), flat_signal(ib)
    sv1, sv2 = flat_signal(a + lg), flat_signal(2 * a + lg)
    sv1x, sv2x = flat_signal(s1b), flat_signal(s2b)
    left, sl, rr = Signal(bool(0)), flat_signal(slb), flat_signal(rb)
    e4 = flat_signal(e)
    f_zero, f_hi, f_lo, guard, any_ovf = (Signal(bool(0)) for _ in range(5))
    flags = flat_signal(len(RENORM_FLAGS))
    # statistics state (the running sums only where a window spans more than one vector)
    wdone = Signal(bool(0))   # an accepted vector completes a window
    offset = Signal(intbv(0, min=smin, max=smax))
    off_ok, pend = Signal(bool(0)), Signal(bool(0))
    wmu, wex2 = flat_signal(a), flat_signal(2 * a)
    hi, hlop = flat_signal(hb), flat_signal(hib)
    insts = []

    for i in range(n):
        insts.append(_abs_lane(in_data, xs[i], mags[i], negs[i], a * i, fmt))
        insts.append(_square(mags[i], sqs[i], fmt))
        insts.append(
            _shift_lane(mags[i], negs[i], left, sl, rr, ms[i], ovfs[i], fmt, force_sat=guard if dyn_sat else None)
        )
    insts += [max_tree(mags, absmax), msb_index(absmax, lop), any_of(ovfs, any_ovf)]
    insts += [_sum_tree(mags, sv1), _sum_tree(sqs, sv2), _zext(sv1, sv1x), _zext(sv2, sv2x)]
    insts += [_window_math(wmu, wex2, hi, fmt), msb_index(hi, hlop)]
    e3_s, ex_s = Signal(intbv(0, min=smin, max=smax)), Signal(intbv(0, min=smin, max=smax))
    insts.append(_shift_plan(e3_s, ex_s, e4, left, sl, rr, fmt))

    @always_comb
    def select_exp():
        e3x = intbv(0, min=smin, max=smax)
        lx = intbv(0, min=smin, max=smax)
        raw = intbv(0, min=smin, max=smax)
        want = intbv(0, min=smin, max=smax)
        mxe = intbv(0, min=smin, max=smax)
        ofe = intbv(0, min=smin, max=smax)
        ex = intbv(0, min=smin, max=smax)
        rep3 = intbv(0)[eb - es :]
        mx_hi = bool(0)
        mx_lo = bool(0)
        of_hi = bool(0)
        of_lo = bool(0)
        g = bool(0)
        rep3[:] = 0
        if in_e3[es - 1]:
            rep3[:] = (1 << (eb - es)) - 1
        e3x[:] = concat(rep3, in_e3)
        lx[:] = concat(intbv(0)[eb - ib :], lop)
        raw[:] = e3x + lx - (w - 2)
        if absmax == 0:
            mxe[:] = emin
        elif raw > emax:
            mxe[:] = emax
            mx_hi = 1
        elif raw < emin:
            mxe[:] = emin
            mx_lo = 1
        else:
            mxe[:] = raw
        want[:] = e3x + offset
        if want > emax:
            ofe[:] = emax
            of_hi = 1
        elif want < emin:
            ofe[:] = emin
            of_lo = 1
        else:
            ofe[:] = want
        g = off_ok and absmax != 0 and lx > ofe - e3x + (w - 2)
        if not off_ok or (reshift and g):
            ex[:] = mxe
            f_hi.next = mx_hi
            f_lo.next = mx_lo
        else:
            ex[:] = ofe
            f_hi.next = of_hi
            f_lo.next = of_lo
        guard.next = g
        f_zero.next = absmax == 0
        e3_s.next = e3x
        ex_s.next = ex

    @always_comb
    def pack_flags():
        flags.next = concat(bool(0), guard or any_ovf, f_lo, f_hi, intbv(0)[2:], f_zero)

    mant_bus = ConcatSignal(*reversed(ms)) if n > 1 else ms[0]
    load = Signal(bool(0))
    shell = stream_register(
        clk, rst, in_valid, in_ready, out_valid, out_ready,
        [(out_data, mant_bus), (out_e4, e4), (out_flags, flags)], flags, err, stall=pend, load=load,
    )

    if nv == 1 and k == 0:   # one value a window: its sums are mu and ex2

        @always_comb
        def window():
            wdone.next = load and not (reshift and guard)

    elif nv == 1:   # every vector not reshifted is a window of its own: its sums are the window's
        sums_lsb_unused = flat_signal(2 * k)   # mu and ex2 drop the sums' k low bits

        @always_comb
        def window():
            wdone.next = load and not (reshift and guard)
            sums_lsb_unused.next = concat(sv1x[k:], sv2x[k:])

    if nv == 1:

        @always_seq(clk.posedge, reset=rst)
        def window_state():
            if wdone:
                wmu.next = sv1x[s1b:k]
                wex2.next = sv2x[s2b:k]

    else:   # running sums and count, restarted by a changed e3, cleared by a reshift
        s1, s2, cnt = flat_signal(s1b), flat_signal(s2b), flat_signal(cb)
        n1, n2, ncnt = flat_signal(s1b), flat_signal(s2b), flat_signal(cb)
        wend, clear_now = Signal(bool(0)), Signal(bool(0))
        last_e3, last_ok = flat_signal(es), Signal(bool(0))

        @always_comb
        def window():
            restart = bool(0)
            restart = last_ok and in_e3 != last_e3
            clear_now.next = reshift and guard
            wdone.next = load and not (reshift and guard) and not restart and cnt == nv - 1
            if restart:
                n1.next = sv1x
                n2.next = sv2x
                ncnt.next = 1
                wend.next = 0
            else:
                n1.next = s1 + sv1x
                n2.next = s2 + sv2x
                ncnt.next = cnt + 1
                wend.next = cnt == nv - 1

        @always_seq(clk.posedge, reset=rst)
        def window_state():
            if load:
                last_e3.next = in_e3
                last_ok.next = 1
                if clear_now or wend:
                    s1.next = 0
                    s2.next = 0
                    cnt.next = 0
                    if not clear_now:
                        wmu.next = n1[s1b:k]
                        wex2.next = n2[s2b:k]
                else:
                    s1.next = n1
                    s2.next = n2
                    cnt.next = ncnt

    @always_seq(clk.posedge, reset=rst)
    def offset_state():
        # the window's mu + k*sigma settles in the cycle after it ends (in_ready low then)
        pend.next = wdone
        if pend and hi != 0:
            offset.next = concat(intbv(0)[eb - hib :], hlop) - (w - 2)
            off_ok.next = 1

    return insts, select_exp, window, pack_flags, shell, window_state, offset_state


def stats_ports(fmt: BfpFormat) -> dict[str, dict]:
    """Port list of :func:`stats` (the renormaliser's, without the fixed-mode inputs)."""
    ports = renorm_ports(fmt)
    del ports["in_fixed"], ports["in_e4"]
    return ports


def emit_stats(fmt: BfpFormat, outdir: Path | str, name: str = "bfp_stats") -> Emitted:
    """Write the statistics-mode selector for ``fmt`` as ``<outdir>/<name>.v`` + record.

    Raises:
        ParamError: ``fmt`` is not a BfpFormat, ``n`` is not a power of two or exceeds
            the window ``2**stat_log2_win`` (the model's own refusal), or a keyword name.
    """
    if isinstance(fmt, BfpFormat):
        StatsSelector(fmt)  # the golden model's parameter refusals, naming the field
    return emit_stream_unit(
        stats,
        fmt,
        BfpFormat,
        stats_ports,
        outdir,
        name,
        family="bfp",
        timing={"latency": RENORM_LATENCY, "blocks_per_cycle": 1, "window_stall": STATS_WINDOW_STALL},
        doc="accumulator vector -> BFP block, statistics-mode exponent (mu + k*sigma) + mantissa shifter",
    )
