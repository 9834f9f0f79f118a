"""MyHDL generators for the block-floating-point family (spec 004).

Every unit reads one :class:`~lockstep.models.bfp.params.BfpFormat` and implements the
semantics documented in :mod:`lockstep.models.bfp`; the golden model is the reference
and these blocks are checked against it bit for bit.

Stream convention: ``in_valid/in_ready/in_*`` and ``out_valid/out_ready/out_*``; lane
``i`` of a packed bus occupies bits ``[i*width +: width]``. One block per clock when
``out_ready`` is high; ``err`` is the sticky OR of every accepted block's flags, cleared
only by ``rst``.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, Signal, always_comb, block, concat, intbv

from lockstep.models.bfp.params import BfpFormat
from lockstep.models.record import ParamError

from ..common import Emitted, emit_stream_unit, flat_signal
from ..stream import STREAM_LATENCY, stream_ports, stream_register
from .parts import any_of, f32_lop, lane_split, max_tree

__all__ = ["QUANT_FLAGS", "QUANTIZER_LATENCY", "quantizer", "quantizer_ports", "emit_quantizer"]

#: Flag bit order of the quantizer's ``out_flags``/``err`` (same as lockstep.models.bfp).
QUANT_FLAGS = ("zero", "nan", "inf", "exp_hi", "exp_lo", "ovf", "subn")
#: Cycles from an accepted input block to its output block (one register stage).
QUANTIZER_LATENCY = STREAM_LATENCY

# Right shifts of the 24-bit float32 significand by 26 or more give the same integer
# part (0), round bit (0) and sticky bit (significand != 0): clip there.
_RSHIFT_CLIP = 26
_SIG = 24  # float32 significand bits, hidden one included


def _exp_bits(fmt: BfpFormat) -> int:
    """Signed width that holds every intermediate exponent/shift of the quantizer."""
    # lop in [-149, 127]; ex = lop - (w - 2) and shifts be_eff - 150 - ex stay inside
    # +-(2**(e-1) + 300): 11 bits for e <= 9, 12 for e = 10.
    lim = (1 << (fmt.e - 1)) + 300
    return lim.bit_length() + 1


@block
def _quant_lane(x, ex, m_out, f_nan, f_inf, f_subn, f_ovf, fmt):
    """One element: float32 bits and the shared exponent in, W-bit mantissa out.

    Ports:
        x: float32 bit pattern (32 bits).
        ex: shared exponent (signed).
        m_out: mantissa, W-bit two's complement.
        f_nan, f_inf, f_subn, f_ovf: this element's flags.
    """
    w = fmt.w
    mmax = fmt.m_max
    rne = fmt.rounding == "rne"
    sat = fmt.overflow == "sat"
    sb = _exp_bits(fmt) + 1
    smin, smax = -(1 << (sb - 1)), 1 << (sb - 1)
    lw = _SIG + w + 1  # left-shifted significand, shift clipped to w

    @always_comb
    def comb():
        be = intbv(0)[8:]
        frac = intbv(0)[23:]
        sig = intbv(0)[_SIG:]
        be_eff = intbv(0, min=smin, max=smax)
        s = intbv(0, min=smin, max=smax)
        sl = intbv(0)[sb:]  # unsigned: a signed shift amount makes MyHDL widen the operand
        r = intbv(0)[sb:]
        lsh = intbv(0)[lw:]
        ext = intbv(0)[_SIG + _RSHIFT_CLIP:]
        ip = intbv(0)[_SIG + 1:]
        mag = intbv(0)[lw:]
        neg = intbv(0)[w:]
        ovf = bool(0)
        be[:] = x[31:23]
        frac[:] = x[23:0]
        if be == 0:
            sig[:] = concat(bool(0), frac)
            be_eff[:] = 1
        else:
            sig[:] = concat(bool(1), frac)
            be_eff[:] = concat(intbv(0)[sb - 8 :], be)
        s[:] = be_eff - 150 - ex
        mag[:] = 0
        if s >= 0:
            if s > w:
                sl[:] = w
            else:
                sl[:] = s
            lsh[:] = concat(intbv(0)[lw - _SIG :], sig)
            lsh[:] = lsh << sl
            mag[:] = lsh
        else:
            if s < -_RSHIFT_CLIP:
                r[:] = _RSHIFT_CLIP
            else:
                r[:] = -s
            ext[:] = concat(sig, intbv(0)[_RSHIFT_CLIP:])
            ext[:] = ext >> r
            ip[:] = concat(bool(0), ext[_SIG + _RSHIFT_CLIP : _RSHIFT_CLIP])
            if rne and ext[_RSHIFT_CLIP - 1] and (ext[_RSHIFT_CLIP - 1:0] != 0 or ip[0]):
                ip[:] = ip + 1
            mag[:] = concat(intbv(0)[lw - _SIG - 1 :], ip)
        ovf = mag > mmax
        f_nan.next = be == 255 and frac != 0
        f_inf.next = be == 255 and frac == 0
        f_subn.next = be == 0 and frac != 0
        f_ovf.next = be != 255 and ovf
        if be == 255:
            if frac != 0:
                neg[:] = 0
            elif x[31]:
                neg[:] = ~intbv(mmax)[w:] + 1
            else:
                neg[:] = mmax
        elif ovf and sat:
            if x[31]:
                neg[:] = ~intbv(mmax)[w:] + 1
            else:
                neg[:] = mmax
        elif x[31]:
            neg[:] = ~mag[w:] + 1
        else:
            neg[:] = mag[w:]
        m_out.next = neg

    return comb


@block
def quantizer(
    clk,
    rst,
    in_valid,
    in_ready,
    in_data,
    in_force,
    in_exp,
    out_valid,
    out_ready,
    out_data,
    out_exp,
    out_flags,
    err,
    fmt: BfpFormat,
):
    """Float32 block -> BFP block (shared exponent, W-bit mantissas, flags).

    Ports:
        clk, rst: clock and synchronous active-high reset.
        in_valid, in_ready, in_data: input stream, ``n`` float32 bit patterns.
        in_force, in_exp: sideband of the input stream: when ``in_force`` is high the
            block uses ``in_exp`` (E-bit two's complement) instead of Eq. 4's exponent.
        out_valid, out_ready, out_data: output stream, ``n`` W-bit mantissas.
        out_exp: shared exponent of the output block (E-bit two's complement).
        out_flags: flags of the output block, bit order :data:`QUANT_FLAGS`.
        err: sticky OR of every accepted block's flags (cleared by ``rst``).
    """
    n, w, e = fmt.n, fmt.w, fmt.e
    eb = _exp_bits(fmt)
    emin, emax = fmt.e_min, fmt.e_max
    xs = [flat_signal(32) for _ in range(n)]
    keys = [flat_signal(31) for _ in range(n)]
    ms = [flat_signal(w) for _ in range(n)]
    nans = [Signal(bool(0)) for _ in range(n)]
    infs = [Signal(bool(0)) for _ in range(n)]
    subns = [Signal(bool(0)) for _ in range(n)]
    ovfs = [Signal(bool(0)) for _ in range(n)]
    absmax = flat_signal(31)
    ex = Signal(intbv(0, min=-(1 << (eb - 1)), max=1 << (eb - 1)))
    f_zero, f_hi, f_lo = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    insts = []

    for i in range(n):
        insts.append(lane_split(in_data, xs[i], keys[i], 32 * i))
        insts.append(_quant_lane(xs[i], ex, ms[i], nans[i], infs[i], subns[i], ovfs[i], fmt))
    insts.append(max_tree(keys, absmax))

    lop = Signal(intbv(0, min=-(1 << (eb - 1)), max=1 << (eb - 1)))
    insts.append(f32_lop(absmax, lop))

    @always_comb
    def select_exp():
        raw = intbv(0, min=-(1 << (eb - 1)), max=1 << (eb - 1))
        rep = intbv(0)[eb - e :]
        raw[:] = lop - (w - 2)
        rep[:] = 0
        if in_exp[e - 1]:
            rep[:] = (1 << (eb - e)) - 1
        f_zero.next = absmax == 0
        f_hi.next = 0
        f_lo.next = 0
        if in_force:
            ex.next = concat(rep, in_exp)
        elif absmax == 0:
            ex.next = emin
        elif raw > emax:
            ex.next = emax
            f_hi.next = 1
        elif raw < emin:
            ex.next = emin
            f_lo.next = 1
        else:
            ex.next = raw

    any_nan, any_inf, any_subn, any_ovf = (Signal(bool(0)) for _ in range(4))
    insts += [any_of(nans, any_nan), any_of(infs, any_inf), any_of(subns, any_subn), any_of(ovfs, any_ovf)]
    mant_bus = ConcatSignal(*reversed(ms)) if n > 1 else ms[0]
    flags = ConcatSignal(any_subn, any_ovf, f_lo, f_hi, any_inf, any_nan, f_zero)
    shell = stream_register(
        clk, rst, in_valid, in_ready, out_valid, out_ready,
        [(out_data, mant_bus), (out_exp, ex(e, 0)), (out_flags, flags)], flags, err,
    )
    return insts, select_exp, shell


def quantizer_ports(fmt: BfpFormat) -> dict[str, dict]:
    """Port list of :func:`quantizer` (name -> direction, width, doc)."""
    return stream_ports(
        {
            "data": (32 * fmt.n, "n float32 bit patterns"),
            "force": (1, "use in_exp instead of Eq. 4"),
            "exp": (fmt.e, "forced exponent (two's complement)"),
        },
        {"data": (fmt.w * fmt.n, "n W-bit mantissas"), "exp": (fmt.e, "shared exponent")},
        QUANT_FLAGS,
    )


def emit_quantizer(fmt: BfpFormat, outdir: Path | str, name: str = "bfp_quantize") -> Emitted:
    """Write the quantizer for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record."""
    return emit_stream_unit(
        quantizer,
        fmt,
        BfpFormat,
        quantizer_ports,
        outdir,
        name,
        family="bfp",
        timing={"latency": QUANTIZER_LATENCY, "blocks_per_cycle": 1},
        doc="float32 block -> BFP (shared exponent by Eq. 4, W-bit mantissas, flags)",
    )
