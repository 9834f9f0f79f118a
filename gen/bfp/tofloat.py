"""BFP block -> float32 converter (spec 004 section 4.2(d)), MyHDL generator.

Semantics: :func:`lockstep.models.bfp.to_float32` (``m * 2**x`` rounded once, RNE, to
float32; overflow to +-Inf; a nonzero value rounding to zero keeps its sign; ``m = 0``
gives +0.0). Per lane the datapath is sign/magnitude, leading-one detection
(:func:`~lockstep.gen.bfp.parts.msb_index`), then one of three cases chosen from the
value's exponent ``E = lop(|m|) + x``:

* ``E >= 128``: +-Inf, flags ``ovf`` and ``inexact``;
* ``E >= -126``: normal, exact (``|m| <= 2**(w-1)`` and ``w <= 24``, so the significand
  always fits): the magnitude is shifted left by ``23 - lop`` and the biased exponent is
  ``E + 127``;
* otherwise subnormal: the magnitude is shifted left by ``x + 149`` when that is
  ``>= 0`` (exact), else right by ``-(x + 149)`` with round-half-even on the guard and
  sticky bits. A right shift means ``x <= -150``, so the rounded value is at most
  ``2**22`` (never carries into the normal range) and any inexact result is also an
  underflow (tininess after rounding): ``unf`` and ``inexact``.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, Signal, always_comb, block, concat, intbv

from lockstep.models.bfp.params import BfpFormat

from ..common import Emitted, emit_stream_unit, flat_signal
from ..stream import STREAM_LATENCY, stream_ports, stream_register
from .parts import any_of, msb_bits, msb_index

__all__ = ["TO_FLOAT_FLAGS", "TO_FLOAT_LATENCY", "to_float", "to_float_ports", "emit_to_float"]

#: Flag bit order of ``out_flags``/``err`` (same as lockstep.models.bfp.FFLAG_NAMES).
TO_FLOAT_FLAGS = ("ovf", "unf", "inexact")
#: Cycles from an accepted input block to its output block (one register stage).
TO_FLOAT_LATENCY = STREAM_LATENCY

_FRAC = 23  # float32 fraction bits
_EMAX = 127  # largest unbiased float32 exponent
_EMIN = -126  # smallest normal unbiased exponent
_SUB = 149  # -(weight of the subnormal lsb)


def _pad_bits(fmt: BfpFormat) -> int:
    """Width of the zero-padded magnitude the shifter takes: a power of two > w (the
    spare top bit keeps the guard bit of a clipped right shift zero)."""
    p = 2
    while p <= fmt.w:
        p *= 2
    return p


def _exp_bits(fmt: BfpFormat) -> int:
    """Signed width holding x, lop + x, x + 149 and their negations."""
    lim = (1 << (fmt.e - 1)) + _SUB + 24
    return lim.bit_length() + 1


@block
def _lane_slice(in_data, m_i, lo: int, w: int):
    """Lane ``[lo +: w]`` of the packed mantissa bus as its own signal.

    Ports:
        in_data: packed bus.
        m_i: the lane's ``w``-bit two's-complement mantissa.
    """

    @always_comb
    def split():
        m_i.next = in_data[lo + w : lo]

    return split


@block
def _tofloat_lane(m_i, xs, f_out, f_ovf, f_unf, f_inx, fmt: BfpFormat):
    """One element: ``w``-bit mantissa and the shared exponent in, float32 bits out.

    Ports:
        m_i: mantissa, ``w``-bit two's complement.
        xs: shared exponent, sign-extended (signed).
        f_out: float32 bit pattern.
        f_ovf, f_unf, f_inx: this element's FFLAG bits.
    """
    w = fmt.w
    p = _pad_bits(fmt)
    sb = _exp_bits(fmt)
    smin, smax = -(1 << (sb - 1)), 1 << (sb - 1)
    dw = p + 24  # shifter width: a left shift by <= 23 of a p-bit magnitude fits
    magp = flat_signal(p)
    mag = flat_signal(w)
    lidx = flat_signal(msb_bits(w))
    # Bits 23 and up of the shifter result: the hidden one of a normal result (implied by
    # the exponent field) and bits that are zero by construction. Not needed.
    res_unused = flat_signal(dw - _FRAC)

    @always_comb
    def magnitude():
        a = intbv(0)[w:]
        if m_i[w - 1]:
            a[:] = ~m_i + 1  # |-2**(w-1)| = 2**(w-1) still fits w unsigned bits
        else:
            a[:] = m_i
        mag.next = a
        magp.next = concat(intbv(0)[p - w :], a)

    lop = msb_index(mag, lidx)

    @always_comb
    def convert():
        ls = intbv(0, min=smin, max=smax)
        big_e = intbv(0, min=smin, max=smax)
        amt_s = intbv(0, min=smin, max=smax)
        sh = intbv(0)[5:]
        r = intbv(0)[sb:]  # unsigned: a signed shift amount makes MyHDL widen the operand
        lsh = intbv(0)[dw:]
        ext = intbv(0)[2 * p :]
        ip = intbv(0)[p:]
        res = intbv(0)[dw:]
        bexp = intbv(0)[8:]
        guard = bool(0)
        sticky = bool(0)
        ovf = bool(0)
        inx = bool(0)
        ls[:] = concat(intbv(0)[sb - len(lidx) :], lidx)
        big_e[:] = ls + xs
        amt_s[:] = xs + _SUB
        res[:] = 0
        bexp[:] = 0
        if magp == 0:
            ovf = bool(0)
        elif big_e > _EMAX:
            ovf = bool(1)
            bexp[:] = 255
        elif big_e >= _EMIN:
            bexp[:] = big_e[8:] + _EMAX  # E + 127 (in 1..254 here)
            sh[:] = _FRAC - ls[5:]  # lop <= 23
            lsh[:] = concat(intbv(0)[24:], magp)
            res[:] = lsh << sh
        elif amt_s >= 0:
            sh[:] = amt_s[5:]  # < 23 - lop here (the value is below 2**-126)
            lsh[:] = concat(intbv(0)[24:], magp)
            res[:] = lsh << sh
        else:
            if amt_s < -p:
                r[:] = p  # >= p: integer part 0, guard 0 (top pad bit), sticky = m != 0
            else:
                r[:] = -amt_s
            ext[:] = concat(magp, intbv(0)[p:])
            ext[:] = ext >> r
            ip[:] = ext[2 * p : p]
            guard = ext[p - 1]
            sticky = ext[p - 1 : 0] != 0
            if guard and (sticky or ip[0]):
                ip[:] = ip + 1
            res[:] = concat(intbv(0)[24:], ip)
            inx = guard or sticky
        f_out.next = concat(m_i[w - 1], bexp, res[_FRAC:0])
        res_unused.next = res[dw:_FRAC]
        f_ovf.next = ovf
        f_unf.next = inx
        f_inx.next = ovf or inx

    return magnitude, lop, convert


@block
def to_float(
    clk,
    rst,
    in_valid,
    in_ready,
    in_data,
    in_exp,
    out_valid,
    out_ready,
    out_data,
    out_flags,
    err,
    fmt: BfpFormat,
):
    """BFP block (``n`` W-bit mantissas, one E-bit exponent) -> ``n`` float32 values.

    Ports:
        clk, rst: clock and synchronous active-high reset.
        in_valid, in_ready, in_data: input stream, ``n`` W-bit two's-complement mantissas.
        in_exp: shared exponent of the input block (E-bit two's complement).
        out_valid, out_ready, out_data: output stream, ``n`` float32 bit patterns.
        out_flags: OR of the lanes' flags, bit order :data:`TO_FLOAT_FLAGS`.
        err: sticky OR of every accepted block's flags (cleared by ``rst``).
    """
    n, w, e = fmt.n, fmt.w, fmt.e
    sb = _exp_bits(fmt)
    ms = [flat_signal(w) for _ in range(n)]
    fs = [flat_signal(32) for _ in range(n)]
    ovfs = [Signal(bool(0)) for _ in range(n)]
    unfs = [Signal(bool(0)) for _ in range(n)]
    inxs = [Signal(bool(0)) for _ in range(n)]
    xs = Signal(intbv(0, min=-(1 << (sb - 1)), max=1 << (sb - 1)))
    insts = []
    for i in range(n):
        insts.append(_lane_slice(in_data, ms[i], w * i, w))
        insts.append(_tofloat_lane(ms[i], xs, fs[i], ovfs[i], unfs[i], inxs[i], fmt))

    @always_comb
    def sign_extend():
        rep = intbv(0)[sb - e :]
        rep[:] = 0
        if in_exp[e - 1]:
            rep[:] = (1 << (sb - e)) - 1
        xs.next = concat(rep, in_exp)

    any_ovf, any_unf, any_inx = (Signal(bool(0)) for _ in range(3))
    insts += [any_of(ovfs, any_ovf), any_of(unfs, any_unf), any_of(inxs, any_inx)]
    data_bus = ConcatSignal(*reversed(fs)) if n > 1 else fs[0]
    flags = ConcatSignal(any_inx, any_unf, any_ovf)
    shell = stream_register(
        clk, rst, in_valid, in_ready, out_valid, out_ready, [(out_data, data_bus), (out_flags, flags)], flags, err
    )
    return insts, sign_extend, shell


def to_float_ports(fmt: BfpFormat) -> dict[str, dict]:
    """Port list of :func:`to_float` (name -> direction, width, doc)."""
    return stream_ports(
        {
            "data": (fmt.w * fmt.n, "n W-bit two's-complement mantissas"),
            "exp": (fmt.e, "shared exponent (two's complement)"),
        },
        {"data": (32 * fmt.n, "n float32 bit patterns")},
        TO_FLOAT_FLAGS,
    )


def emit_to_float(fmt: BfpFormat, outdir: Path | str, name: str = "bfp_to_float") -> Emitted:
    """Write the BFP -> float32 converter for ``fmt`` as ``<outdir>/<name>.v`` plus its record.

    Args:
        fmt: the block format (``w``, ``e``, ``n``; rounding/overflow do not apply: the
            conversion is always RNE with overflow to +-Inf).
        outdir: output folder.
        name: Verilog module name.

    Returns:
        The :class:`~lockstep.gen.common.Emitted` paths and record.

    Raises:
        ParamError: ``fmt`` is not a BfpFormat, or ``name`` is a keyword.
    """
    return emit_stream_unit(
        to_float,
        fmt,
        BfpFormat,
        to_float_ports,
        outdir,
        name,
        family="bfp",
        timing={"latency": TO_FLOAT_LATENCY, "blocks_per_cycle": 1},
        doc="BFP block -> float32 (single RNE rounding, +-Inf on overflow, subnormals, flags)",
    )
