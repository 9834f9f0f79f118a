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
(:func:`.parts.msb_index` on the maximum zero-padded to a power of two), one shared
exponent/shift computation, and per lane a clipped left shifter (amount clipped to
``w``: any larger shift of a nonzero magnitude overflows and leaves the low ``w`` bits
zero) or a clipped right shifter with round/sticky bits (amount clipped to ``A``: any
larger shift gives 0 in both roundings, since ``|acc| <= 2**(A-1)``). One output register
stage (latency 1).
"""

from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, concat, intbv

from lockstep.models.bfp import FLAG_NAMES
from lockstep.models.formats import BfpFormat

from ..common import Emitted, emit_stream_unit, flat_signal
from .parts import any_of, max_tree, msb_index

__all__ = [
    "RENORM_FLAGS",
    "RENORM_LATENCY",
    "renorm",
    "renorm_ports",
    "emit_renorm",
]

#: Flag bit order of ``out_flags``/``err`` (the golden model's FLAG_NAMES order; the
#: renormaliser only ever sets zero, exp_hi, exp_lo and ovf).
RENORM_FLAGS = tuple(FLAG_NAMES)
#: Cycles from an accepted input vector to its output vector (one register stage).
RENORM_LATENCY = 1


def _pow2_at_least(v: int) -> int:
    """Smallest power of two >= ``v`` (and >= 2, the narrowest msb_index)."""
    p = 2
    while p < v:
        p *= 2
    return p


def _exp_bits(fmt: BfpFormat) -> int:
    """Signed width holding every intermediate exponent and shift of the renormaliser."""
    # e3 in [-2**e, 2**e - 1], lop in [0, 63], w - 2 <= 22, e4 in [e_min, e_max]:
    # e3 + lop - (w-2) and e3 - e4 (and its negation) stay inside +-(2**e + 2**(e-1) + 64).
    lim = (1 << fmt.e) + (1 << (fmt.e - 1)) + 64
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
def _shift_lane(mag, neg, left, sl, rr, m_out, f_ovf, fmt):
    """One lane of the output mantissa shifter.

    Ports:
        mag, neg: the lane's magnitude (``A`` bits) and sign.
        left: shift left by ``sl`` (``e3 >= e4``), else right by ``rr`` with rounding.
        sl: left shift amount clipped to ``w``.
        rr: right shift amount clipped to ``A``.
        m_out: ``w``-bit two's-complement mantissa.
        f_ovf: the rounded magnitude exceeded ``m_max`` (saturated or wrapped).
    """
    a, w = fmt.acc_bits, fmt.w
    mmax = fmt.m_max
    rne = fmt.rounding == "rne"
    sat = fmt.overflow == "sat"
    lw = a + w  # mag << (sl <= w) fits

    @always_comb
    def shift():
        lsh = intbv(0)[lw:]
        ext = intbv(0)[2 * a :]
        ip = intbv(0)[a + 1 :]
        v = intbv(0)[w:]
        o = intbv(0)[w:]
        ovf = bool(0)
        lsh[:] = concat(intbv(0)[w:], mag)
        lsh[:] = lsh << sl
        ext[:] = concat(mag, intbv(0)[a:])
        ext[:] = ext >> rr
        ip[:] = concat(bool(0), ext[2 * a : a])
        if rne and ext[a - 1] and (ext[a - 1 : 0] != 0 or ip[0]):
            ip[:] = ip + 1
        if left:
            ovf = lsh[lw : w - 1] != 0
            v[:] = lsh[w:0]
        else:
            ovf = ip > mmax
            v[:] = ip[w:0]
        if sat and ovf:
            v[:] = mmax
        if neg:
            o[:] = ~v + 1
        else:
            o[:] = v
        m_out.next = o
        f_ovf.next = ovf

    return shift


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
    pw = _pow2_at_least(a)
    ib = pw.bit_length() - 1  # msb_index width
    slb = w.bit_length()  # sl in [0, w]
    rb = a.bit_length()  # rr in [0, A]
    smin, smax = -(1 << (eb - 1)), 1 << (eb - 1)

    xs = [flat_signal(a) for _ in range(n)]
    mags = [flat_signal(a) for _ in range(n)]
    negs = [Signal(bool(0)) for _ in range(n)]
    ms = [flat_signal(w) for _ in range(n)]
    ovfs = [Signal(bool(0)) for _ in range(n)]
    absmax = flat_signal(a)
    padded = flat_signal(pw)
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

    if pw == a:

        @always_comb
        def pad():
            padded.next = absmax

    else:

        @always_comb
        def pad():
            padded.next = concat(intbv(0)[pw - a :], absmax)

    insts += [pad, msb_index(padded, lop), any_of(ovfs, any_ovf)]

    @always_comb
    def select_exp():
        e3x = intbv(0, min=smin, max=smax)
        fx = intbv(0, min=smin, max=smax)
        lx = intbv(0, min=smin, max=smax)
        raw = intbv(0, min=smin, max=smax)
        ex = intbv(0, min=smin, max=smax)
        sh = intbv(0, min=smin, max=smax)
        nsh = intbv(0, min=smin, max=smax)
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

    @always_comb
    def pack_flags():
        flags.next = concat(bool(0), any_ovf, f_lo, f_hi, intbv(0)[2:], f_zero)

    mant_bus = ConcatSignal(*reversed(ms)) if n > 1 else ms[0]
    out_v = Signal(bool(0))

    @always_comb
    def ready():
        in_ready.next = not out_v or out_ready
        out_valid.next = out_v

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if in_valid and (not out_v or out_ready):
            out_v.next = 1
            out_data.next = mant_bus
            out_e4.next = e4
            out_flags.next = flags
            err.next = err | flags
        elif out_ready:
            out_v.next = 0

    return insts, select_exp, pack_flags, ready, regs


def renorm_ports(fmt: BfpFormat) -> dict[str, dict]:
    """Port list of :func:`renorm` (name -> direction, width, doc)."""
    nf = len(RENORM_FLAGS)
    a = fmt.acc_bits
    return {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset"},
        "in_valid": {"dir": "in", "width": 1, "doc": "input vector valid"},
        "in_ready": {"dir": "out", "width": 1, "doc": "input vector accepted when valid"},
        "in_data": {"dir": "in", "width": a * fmt.n, "doc": f"n {a}-bit two's-complement accumulators"},
        "in_e3": {"dir": "in", "width": fmt.e_sum_bits, "doc": "accumulator exponent e3 (two's complement)"},
        "in_fixed": {"dir": "in", "width": 1, "doc": "fixed mode: use in_e4 instead of the max-mode exponent"},
        "in_e4": {"dir": "in", "width": fmt.e, "doc": "fixed output exponent (two's complement)"},
        "out_valid": {"dir": "out", "width": 1, "doc": "output block valid"},
        "out_ready": {"dir": "in", "width": 1, "doc": "output block taken when valid"},
        "out_data": {"dir": "out", "width": fmt.w * fmt.n, "doc": "n W-bit mantissas"},
        "out_e4": {"dir": "out", "width": fmt.e, "doc": "output exponent e4"},
        "out_flags": {"dir": "out", "width": nf, "doc": "block flags " + ",".join(RENORM_FLAGS)},
        "err": {"dir": "out", "width": nf, "doc": "sticky OR of accepted flags"},
    }


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
