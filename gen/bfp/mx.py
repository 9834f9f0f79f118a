"""MyHDL generator of the OCP Microscaling (MX) v1.0 quantizer.

The unit implements :func:`lockstep.models.bfp.mx.mx_quantize_flags` bit for bit (the model
is the specification; read its module docstring). Structure, as the BFP quantizer's:

1. ``lane_split`` gives each lane its float32 bits and a magnitude key (0 for Inf/NaN);
   ``max_tree`` finds the largest finite magnitude ``absmax``;
2. the shared exponent ``X = floor(log2 absmax) - emax`` (subnormal absmax via
   ``msb_index``), clamped up to -127 (``SCALE_LO``); all-zero blocks use ``X = -127``;
3. per lane: ``msb_index`` of the 24-bit significand gives ``floor(log2|x|)``, hence
   ``ev = floor(log2|x / 2**X|)``; the element exponent ``eff = max(ev, emin)`` sets the
   grid; one right shift of the significand (clipped, it never shifts left) and RNE
   give the element significand; a carry renormalises, saturation clamps to
   ``max_normal`` (``SAT``); the code is ``sign|exponent|mantissa`` (MXINT8: the
   symmetric two's complement of ``round(v * 64)``);
4. a NaN/Inf anywhere in the block forces scale ``0xFF`` and every code to 0.

Stream convention: ``in_valid/in_ready/in_data`` and ``out_valid/out_ready/out_*``; lane
``i`` of a packed bus occupies bits ``[i*width +: width]``. One block per clock when
``out_ready`` is high; ``err`` is the sticky OR of every accepted block's flags.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, Signal, always_comb, block, concat, intbv

from lockstep.models.bfp.params import MxElement, MxParams
from lockstep.models.bfp.mx import (
    E8M0_BIAS, E8M0_NAN, MX_FLAG_INF, MX_FLAG_NAN, MX_FLAG_SAT, MX_FLAG_SCALE_LO, MX_FLAG_SUBN, MX_FLAG_ZERO,
)

from ..common import Emitted, emit_stream_unit, flat_signal
from ..stream import STREAM_LATENCY, stream_ports, stream_register
from .parts import any_of, f32_lop, lane_split, max_tree, msb_index

__all__ = [
    "MX_FLAGS",
    "MX_LATENCY",
    "emit_mx_quantizer",
    "mx_quantizer",
    "mx_quantizer_ports",
]

#: Flag bit order of ``out_flags``/``err``: bit i is ``MX_FLAGS[i]`` (``"unused"`` is tied
#: to 0). Identical to the golden model's ``MX_FLAG_*`` bit positions.
MX_FLAGS = ("zero", "nan", "inf", "unused", "scale_lo", "sat", "subn")
#: Cycles from an accepted input block to its output block (one register stage).
MX_LATENCY = STREAM_LATENCY

_EB = 11  # signed width of every exponent/shift: |ev| <= 276, shifts <= 330
_CLIP = 25  # right shifts of a 24-bit significand by >= 25 all round to 0: clip there
_INT8_GRID = 6  # MXINT8 is round(v * 2**6)
_X_MIN = -E8M0_BIAS  # smallest shared exponent (E8M0 code 0)


def _n_max(el: MxElement) -> int:
    """Element significand (hidden bit included) of ``max_normal`` at exponent ``emax``."""
    n = int(el.max_normal * 2.0 ** (el.mbits - el.emax))
    assert n * 2.0 ** (el.emax - el.mbits) == el.max_normal
    return n


def _sig() -> Signal:
    """A fresh signed exponent signal."""
    return Signal(intbv(0, min=-(1 << (_EB - 1)), max=1 << (_EB - 1)))


@block
def _lane_msb(x, msb):
    """``floor(log2)`` of the lane's 24-bit significand (hidden bit for normals).

    Ports:
        x: float32 bit pattern.
        msb: 5-bit index of the significand's leading one (0 for a zero).
    """
    sig = flat_signal(24)

    @always_comb
    def significand():
        if x[31:23] == 0:
            sig.next = concat(bool(0), x[23:0])
        else:
            sig.next = concat(bool(1), x[23:0])

    return significand, msb_index(sig, msb)


@block
def _mx_lane_fp(x, xs, msb, code, f_sat, f_nan, f_inf, f_subn, el: MxElement):
    """One floating-point element: ``cast(x / 2**X)``, RNE, saturating, signed zeros.

    Ports:
        x: float32 bit pattern.
        xs: shared exponent ``X`` (signed).
        msb: leading-one index of the lane's significand (from :func:`_lane_msb`).
        code: element code ``sign|exponent|mantissa`` (``el.bits`` bits).
        f_sat: the lane is finite, nonzero and its rounded magnitude exceeded max_normal.
        f_nan, f_inf, f_subn: the lane is a NaN / an Inf / a float32 subnormal.
    """
    mb, emin, emax, bias, eb = el.mbits, el.emin, el.emax, el.bias, el.ebits
    n_max = _n_max(el)
    lo, hi = -(1 << (_EB - 1)), 1 << (_EB - 1)
    unused_hi = flat_signal(_EB - eb)

    @always_comb
    def cast():
        be = intbv(0)[8:]
        sig = intbv(0)[24:]
        be_eff = intbv(0, min=lo, max=hi)
        mx = intbv(0, min=lo, max=hi)
        ev = intbv(0, min=lo, max=hi)
        eff = intbv(0, min=lo, max=hi)
        rr = intbv(0, min=lo, max=hi)
        et = intbv(0, min=lo, max=hi)
        r = intbv(0)[5:]  # unsigned: a signed shift amount makes MyHDL widen the operand
        ext = intbv(0)[24 + _CLIP :]
        n = intbv(0)[25:]
        ef = intbv(0)[eb:]
        nz = bool(0)
        sat = bool(0)
        be[:] = x[31:23]
        if be == 0:
            sig[:] = concat(bool(0), x[23:0])
            be_eff[:] = 1
        else:
            sig[:] = concat(bool(1), x[23:0])
            be_eff[:] = concat(intbv(0)[_EB - 8 :], be)
        mx[:] = concat(intbv(0)[_EB - 5 :], msb)
        ev[:] = be_eff - 150 + mx - xs  # floor(log2 |x / 2**X|)
        if ev < emin:
            eff[:] = emin
        else:
            eff[:] = ev
        rr[:] = mx - mb + eff - ev  # right shift of sig onto the grid 2**(eff - mb)
        if rr > _CLIP:
            r[:] = _CLIP
        elif rr < 0:
            r[:] = 0
        else:
            r[:] = rr[5:]
        ext[:] = concat(sig, intbv(0)[_CLIP:])
        ext[:] = ext >> r
        n[:] = concat(bool(0), ext[24 + _CLIP : _CLIP])
        if ext[_CLIP - 1] and (ext[_CLIP - 1 : 0] != 0 or n[0]):
            n[:] = n + 1
        if n == (1 << (mb + 1)):  # rounded up into the next binade
            eff[:] = eff + 1
            n[:] = n >> 1
        nz = be != 255 and sig != 0
        sat = nz and (eff > emax or (eff == emax and n > n_max))
        if sat:
            eff[:] = emax
            n[:] = n_max
        et[:] = eff + bias
        if n[mb]:
            ef[:] = et[eb:]
        else:
            ef[:] = 0
        # eff + bias lies in [1, 2**eb - 1] whenever it is used: the high bits are 0.
        unused_hi.next = et[_EB:eb]
        code.next = concat(x[31], ef, n[mb:])
        f_sat.next = sat
        f_nan.next = be == 255 and x[23:0] != 0
        f_inf.next = be == 255 and x[23:0] == 0
        f_subn.next = be == 0 and x[23:0] != 0

    return cast


@block
def _mx_lane_int(x, xs, msb, code, f_sat, f_nan, f_inf, f_subn, el: MxElement):
    """One MXINT8 element: ``round_half_even(x / 2**X * 64)`` saturated to [-127, 127].

    Ports:
        x: float32 bit pattern.
        xs: shared exponent ``X`` (signed).
        msb: leading-one index of the lane's significand.
        code: 8-bit two's-complement code (0 for +-0).
        f_sat, f_nan, f_inf, f_subn: as :func:`_mx_lane_fp`.
    """
    lo, hi = -(1 << (_EB - 1)), 1 << (_EB - 1)
    bits = el.bits
    cmax = (1 << (bits - 1)) - 1

    @always_comb
    def cast():
        be = intbv(0)[8:]
        sig = intbv(0)[24:]
        be_eff = intbv(0, min=lo, max=hi)
        mx = intbv(0, min=lo, max=hi)
        ev = intbv(0, min=lo, max=hi)
        rr = intbv(0, min=lo, max=hi)
        r = intbv(0)[5:]
        ext = intbv(0)[24 + _CLIP :]
        n = intbv(0)[25:]
        c = intbv(0)[bits:]
        nz = bool(0)
        sat = bool(0)
        be[:] = x[31:23]
        if be == 0:
            sig[:] = concat(bool(0), x[23:0])
            be_eff[:] = 1
        else:
            sig[:] = concat(bool(1), x[23:0])
            be_eff[:] = concat(intbv(0)[_EB - 8 :], be)
        mx[:] = concat(intbv(0)[_EB - 5 :], msb)
        ev[:] = be_eff - 150 + mx - xs
        rr[:] = mx - _INT8_GRID - ev  # right shift of sig onto the grid 2**-6
        if rr > _CLIP:
            r[:] = _CLIP
        elif rr < 0:
            r[:] = 0
        else:
            r[:] = rr[5:]
        ext[:] = concat(sig, intbv(0)[_CLIP:])
        ext[:] = ext >> r
        n[:] = concat(bool(0), ext[24 + _CLIP : _CLIP])
        if ext[_CLIP - 1] and (ext[_CLIP - 1 : 0] != 0 or n[0]):
            n[:] = n + 1
        nz = be != 255 and sig != 0
        sat = nz and (ev > 0 or n > cmax)
        if sat:
            n[:] = cmax
        if not nz:
            c[:] = 0
        elif x[31]:
            c[:] = ~n[bits:] + 1
        else:
            c[:] = n[bits:]
        code.next = c
        f_sat.next = sat
        f_nan.next = be == 255 and x[23:0] != 0
        f_inf.next = be == 255 and x[23:0] == 0
        f_subn.next = be == 0 and x[23:0] != 0

    return cast


@block
def mx_quantizer(
    clk,
    rst,
    in_valid,
    in_ready,
    in_data,
    out_valid,
    out_ready,
    out_scale,
    out_data,
    out_flags,
    err,
    fmt: MxParams,
):
    """Float32 block -> OCP MX block (E8M0 scale, element codes, flags).

    Ports:
        clk, rst: clock and synchronous active-high reset.
        in_valid, in_ready, in_data: input stream, ``block`` float32 bit patterns.
        out_valid, out_ready: output stream handshake.
        out_scale: E8M0 shared scale (``X + 127``; ``0xFF`` for a NaN/Inf block).
        out_data: ``block`` element codes of ``bits`` bits each.
        out_flags: block flags, bit order :data:`MX_FLAGS` (bit 3 is 0).
        err: sticky OR of every accepted block's flags (cleared by ``rst``).
    """
    el = fmt.element
    nb = fmt.block
    lane = _mx_lane_int if el.ebits == 0 else _mx_lane_fp
    xs_l = [flat_signal(32) for _ in range(nb)]
    keys = [flat_signal(31) for _ in range(nb)]
    msbs = [flat_signal(5) for _ in range(nb)]
    codes = [flat_signal(el.bits) for _ in range(nb)]
    sats, nans, infs, subns = ([Signal(bool(0)) for _ in range(nb)] for _ in range(4))
    absmax = flat_signal(31)
    xs = _sig()
    f_zero, f_lo = Signal(bool(0)), Signal(bool(0))
    insts = []
    for i in range(nb):
        insts.append(lane_split(in_data, xs_l[i], keys[i], 32 * i))
        insts.append(_lane_msb(xs_l[i], msbs[i]))
        insts.append(lane(xs_l[i], xs, msbs[i], codes[i], sats[i], nans[i], infs[i], subns[i], el))
    insts.append(max_tree(keys, absmax))

    lop = Signal(intbv(0, min=-(1 << (_EB - 1)), max=1 << (_EB - 1)))
    insts.append(f32_lop(absmax, lop))
    emax_e = el.emax
    scale = flat_signal(8)
    # X + 127 lies in [0, 254]: its high bits are 0.
    unused_scale_hi = flat_signal(_EB - 8)

    @always_comb
    def select_scale():
        raw = intbv(0, min=-(1 << (_EB - 1)), max=1 << (_EB - 1))
        xv = intbv(0, min=-(1 << (_EB - 1)), max=1 << (_EB - 1))
        sc = intbv(0, min=-(1 << (_EB - 1)), max=1 << (_EB - 1))
        raw[:] = lop - emax_e
        f_zero.next = absmax == 0
        f_lo.next = 0
        if absmax == 0:
            xv[:] = _X_MIN
        elif raw < _X_MIN:
            xv[:] = _X_MIN
            f_lo.next = 1
        else:
            xv[:] = raw
        xs.next = xv
        sc[:] = xv + E8M0_BIAS
        scale.next = sc[8:]
        unused_scale_hi.next = sc[_EB:8]

    any_nan, any_inf, any_subn, any_sat = (Signal(bool(0)) for _ in range(4))
    insts += [any_of(nans, any_nan), any_of(infs, any_inf), any_of(subns, any_subn), any_of(sats, any_sat)]
    code_bus = ConcatSignal(*reversed(codes)) if nb > 1 else codes[0]
    flags = flat_signal(len(MX_FLAGS))
    special = Signal(bool(0))

    @always_comb
    def block_flags():
        special.next = any_nan or any_inf
        flags.next = concat(
            any_subn,
            any_sat and not (any_nan or any_inf),
            f_lo and not (any_nan or any_inf),
            bool(0),
            any_inf,
            any_nan,
            f_zero,
        )

    scale_o, code_o = flat_signal(8), flat_signal(len(out_data))

    @always_comb
    def special_mux():
        # a NaN/Inf block: E8M0 NaN scale, every code 0 (OCP: all elements NaN)
        if special:
            scale_o.next = E8M0_NAN
            code_o.next = 0
        else:
            scale_o.next = scale
            code_o.next = code_bus

    shell = stream_register(
        clk, rst, in_valid, in_ready, out_valid, out_ready,
        [(out_scale, scale_o), (out_data, code_o), (out_flags, flags)], flags, err,
    )
    return insts, select_scale, block_flags, special_mux, shell


def mx_quantizer_ports(fmt: MxParams) -> dict[str, dict]:
    """Port list of :func:`mx_quantizer` (name -> direction, width, doc)."""
    return stream_ports(
        {"data": (32 * fmt.block, "block float32 bit patterns")},
        {
            "scale": (8, "E8M0 shared scale (0xFF: NaN block)"),
            "data": (fmt.element.bits * fmt.block, f"block {fmt.elem} element codes"),
        },
        MX_FLAGS,
    )


def emit_mx_quantizer(params: MxParams, outdir: Path | str, name: str = "bfp_mx_quantize") -> Emitted:
    """Write the MX quantizer for ``params`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``params`` is not an :class:`MxParams`, or ``name`` is a keyword.
    """
    doc = "float32 block -> OCP MX v1.0 block: E8M0 scale, element codes, flags"
    if isinstance(params, MxParams):
        doc = (
            f"float32 block -> OCP MX v1.0 {params.elem} block of {params.block}: "
            "E8M0 scale, element codes, flags"
        )
    return emit_stream_unit(
        mx_quantizer,
        params,
        MxParams,
        mx_quantizer_ports,
        outdir,
        name,
        family="bfp",
        timing={"latency": MX_LATENCY, "blocks_per_cycle": 1},
        doc=doc,
    )
