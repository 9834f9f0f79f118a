"""MyHDL generators for the block-floating-point family (spec 004).

Every unit reads one :class:`~lockstep.models.formats.BfpFormat` and implements the
semantics documented in :mod:`lockstep.models.bfp`; the golden model is the reference
and these blocks are checked against it bit for bit.

Stream convention: ``in_valid/in_ready/in_*`` and ``out_valid/out_ready/out_*``; lane
``i`` of a packed bus occupies bits ``[i*width +: width]``. One block per clock when
``out_ready`` is high; ``err`` is the sticky OR of every accepted block's flags, cleared
only by ``rst``.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, concat, intbv, ResetSignal

from lockstep.models.formats import BfpFormat, ParamError

from .common import Emitted, emit, flat_signal

__all__ = ["QUANT_FLAGS", "quantizer", "emit_quantizer", "QUANTIZER_LATENCY"]

#: Flag bit order of the quantizer's ``out_flags``/``err`` (same as lockstep.models.bfp).
QUANT_FLAGS = ("zero", "nan", "inf", "exp_hi", "exp_lo", "ovf", "subn")
#: Cycles from an accepted input block to its output block (one register stage).
QUANTIZER_LATENCY = 1

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
def _max_tree(keys, out):
    """Unsigned maximum of a list of equal-width signals, as a balanced tree.

    Ports:
        keys: list of input signals (recursion splits it in halves).
        out: the largest of ``keys``.
    """
    if len(keys) == 1:
        k0 = keys[0]

        @always_comb
        def pass1():
            out.next = k0

        return pass1
    half = len(keys) // 2
    width = len(out)
    lo_max, hi_max = flat_signal(width), flat_signal(width)
    lo = _max_tree(keys[:half], lo_max)
    hi = _max_tree(keys[half:], hi_max)

    @always_comb
    def pick():
        if hi_max > lo_max:
            out.next = hi_max
        else:
            out.next = lo_max

    return lo, hi, pick


@block
def _lane_split(in_data, xi, ki, lo):
    """Lane view of a packed float32 bus.

    Ports:
        in_data: packed bus; this lane is ``[lo +: 32]``.
        xi: the lane's float32 bits.
        ki: magnitude key for the max search (``bits[30:0]``, 0 for Inf/NaN).
    """

    @always_comb
    def split():
        xi.next = in_data[lo + 32 : lo]
        if in_data[lo + 31 : lo + 23] == 255:
            ki.next = 0
        else:
            ki.next = in_data[lo + 31 : lo]

    return split


@block
def _any(bits, out):
    """OR of a list of 1-bit signals.

    Ports:
        bits: list of 1-bit signals.
        out: high when any of ``bits`` is high.
    """
    vec = ConcatSignal(*reversed(bits)) if len(bits) > 1 else bits[0]

    @always_comb
    def reduce_or():
        out.next = vec != 0

    return reduce_or


@block
def _msb(vec, idx):
    """Index of the most significant set bit (0 when ``vec`` is 0), as a binary tree.

    Ports:
        vec: input vector, width a power of two (>= 2).
        idx: ``log2(len(vec))``-bit index.
    """
    width = len(vec)
    if width == 2:
        # The MSB index of a 2-bit vector ignores bit 0; the signal name matches
        # Verilator's default --unused-regexp (*unused*), which says so to the linter.
        unused_lsb = Signal(bool(0))

        @always_comb
        def leaf():
            idx.next = vec[1]
            unused_lsb.next = vec[0]

        return leaf
    half = width // 2
    hi, lo = flat_signal(half), flat_signal(half)
    hi_i, lo_i = flat_signal(len(idx) - 1), flat_signal(len(idx) - 1)
    subs = [_msb(hi, hi_i), _msb(lo, lo_i)]

    @always_comb
    def node():
        hi.next = vec[width:half]
        lo.next = vec[half:0]
        if vec[width:half] != 0:
            idx.next = concat(bool(1), hi_i)
        else:
            idx.next = concat(bool(0), lo_i)

    return subs, node


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
        insts.append(_lane_split(in_data, xs[i], keys[i], 32 * i))
        insts.append(_quant_lane(xs[i], ex, ms[i], nans[i], infs[i], subns[i], ovfs[i], fmt))
    insts.append(_max_tree(keys, absmax))

    sub_msb = flat_signal(5)
    frac32 = flat_signal(32)

    @always_comb
    def pad_frac():
        frac32.next = concat(intbv(0)[9:], absmax[23:0])

    insts += [pad_frac, _msb(frac32, sub_msb)]

    @always_comb
    def select_exp():
        am_be = intbv(0, min=-(1 << (eb - 1)), max=1 << (eb - 1))
        p = intbv(0, min=-(1 << (eb - 1)), max=1 << (eb - 1))
        lop = intbv(0, min=-(1 << (eb - 1)), max=1 << (eb - 1))
        raw = intbv(0, min=-(1 << (eb - 1)), max=1 << (eb - 1))
        rep = intbv(0)[eb - e :]
        am_be[:] = concat(intbv(0)[eb - 8 :], absmax[31:23])
        p[:] = concat(intbv(0)[eb - 5 :], sub_msb)
        if am_be == 0:
            lop[:] = p - 149
        else:
            lop[:] = am_be - 127
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
    insts += [_any(nans, any_nan), _any(infs, any_inf), _any(subns, any_subn), _any(ovfs, any_ovf)]
    mant_bus = ConcatSignal(*reversed(ms)) if n > 1 else ms[0]
    flags = ConcatSignal(any_subn, any_ovf, f_lo, f_hi, any_inf, any_nan, f_zero)
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
            out_exp.next = ex[e:]
            out_flags.next = flags
            err.next = err | flags
        elif out_ready:
            out_v.next = 0

    return insts, select_exp, ready, regs


def quantizer_ports(fmt: BfpFormat) -> dict[str, dict]:
    """Port list of :func:`quantizer` (name -> direction, width, doc)."""
    nf = len(QUANT_FLAGS)
    return {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset"},
        "in_valid": {"dir": "in", "width": 1, "doc": "input block valid"},
        "in_ready": {"dir": "out", "width": 1, "doc": "input block accepted when valid"},
        "in_data": {"dir": "in", "width": 32 * fmt.n, "doc": "n float32 bit patterns"},
        "in_force": {"dir": "in", "width": 1, "doc": "use in_exp instead of Eq. 4"},
        "in_exp": {"dir": "in", "width": fmt.e, "doc": "forced exponent (two's complement)"},
        "out_valid": {"dir": "out", "width": 1, "doc": "output block valid"},
        "out_ready": {"dir": "in", "width": 1, "doc": "output block taken when valid"},
        "out_data": {"dir": "out", "width": fmt.w * fmt.n, "doc": "n W-bit mantissas"},
        "out_exp": {"dir": "out", "width": fmt.e, "doc": "shared exponent"},
        "out_flags": {"dir": "out", "width": nf, "doc": "block flags " + ",".join(QUANT_FLAGS)},
        "err": {"dir": "out", "width": nf, "doc": "sticky OR of accepted flags"},
    }


def emit_quantizer(fmt: BfpFormat, outdir: Path | str, name: str = "bfp_quantize") -> Emitted:
    """Write the quantizer for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record."""
    if not isinstance(fmt, BfpFormat):
        raise ParamError(f"emit_quantizer: fmt must be a BfpFormat, got {type(fmt).__name__}")
    ports = quantizer_ports(fmt)

    def make():
        sigs = {}
        for pname, p in ports.items():
            if pname == "rst":
                sigs[pname] = ResetSignal(0, active=1, isasync=False)
            elif p["width"] == 1:
                sigs[pname] = Signal(bool(0))
            else:
                sigs[pname] = flat_signal(p["width"])
        return quantizer(**sigs, fmt=fmt)

    return emit(
        make,
        name,
        outdir,
        family="bfp",
        params=fmt,
        ports=ports,
        timing={"latency": QUANTIZER_LATENCY, "blocks_per_cycle": 1},
        doc="float32 block -> BFP (shared exponent by Eq. 4, W-bit mantissas, flags)",
    )
