"""MyHDL generator of the BFP dot-product unit with optional aligned bias (spec 004, 4.2(b)).

Semantics: :func:`lockstep.models.bfp.dot` (the golden model is the reference):

* ``acc = sum(a_i * b_i)`` exactly: ``n`` products of ``w``-bit two's-complement
  mantissas (``2w`` bits each, ``-2**(w-1)`` allowed) summed by a balanced adder tree
  built in Python, one bit wider per level, so the tree output is exactly
  ``acc_min = 2w + ceil(log2 n)`` bits; sign-extended to ``fmt.acc_bits``.
* ``e3 = ea + eb`` on ``e + 1`` bits (never wraps).
* Bias (when ``in_bias_en``): ``e6 = e5 - e3``; ``e6 >= 0`` shifts the bias left,
  saturating to ``+-(2**(A-1)-1)`` with ``FLAG_OVF`` when the exact value leaves the
  ``A``-bit range; ``e6 < 0`` shifts the magnitude right with ``fmt.rounding`` and
  applies the sign. The exact sum ``acc + aligned`` is then saturated the same way.
* Flags use the family's 7-bit layout (:data:`~lockstep.gen.bfp.QUANT_FLAGS`); the dot
  product only ever raises ``ovf``.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import Signal, always_comb, block, concat, intbv

from lockstep.models.bfp.params import BfpFormat
from lockstep.models.record import ParamError, clog2

from ..common import Emitted, emit_stream_unit, flat_signal, lane
from ..stream import STREAM_LATENCY, stream_ports, stream_register
from .quantizer import QUANT_FLAGS

__all__ = ["DOT_FLAGS", "DOT_LATENCY", "DOT_MAX_N", "bfp_dot", "dot_ports", "emit_dot"]

#: Flag bit order of ``out_flags``/``err``: the family's layout (only ``ovf`` is used).
DOT_FLAGS = QUANT_FLAGS
#: Cycles from an accepted input block to its output (one register stage).
DOT_LATENCY = STREAM_LATENCY
#: Largest block size the generator elaborates (one multiplier per lane, one cycle).
DOT_MAX_N = 256

_OVF_CODE = 1 << DOT_FLAGS.index("ovf")  # out_flags value of an overflow


def _signed(width: int) -> Signal:
    """A fresh signed ``width``-bit signal."""
    return Signal(intbv(0, min=-(1 << (width - 1)), max=1 << (width - 1)))


def _shift_bits(fmt: BfpFormat) -> int:
    """Signed width of the exponent arithmetic (``e3``, ``e6``, shift amounts).

    ``e6 = e5 - e3`` lies in ``[e_min - 2 e_max, e_max - 2 e_min]`` (inside ``e + 2`` bits);
    the left shift is clipped at ``A <= 64`` and the right shift at ``w + 1 <= 25``.
    """
    return max(fmt.e + 2, fmt.acc_bits.bit_length() + 1)


def check_dot_params(fmt: BfpFormat) -> None:
    """Refuse a format this generator cannot build.

    Raises:
        ParamError: naming the field (``n`` above :data:`DOT_MAX_N`).
    """
    if not isinstance(fmt, BfpFormat):
        raise ParamError(f"bfp_dot: params must be a BfpFormat, got {type(fmt).__name__}")
    if fmt.n > DOT_MAX_N:
        raise ParamError(
            f"BfpFormat.n={fmt.n}: the one-cycle dot unit builds n multipliers; "
            f"n must be <= {DOT_MAX_N}"
        )
    # BfpFormat already refuses acc < acc_min and acc > 64; restate as a guard.
    if fmt.acc_bits < fmt.acc_min:
        raise ParamError(f"BfpFormat.acc={fmt.acc}: needs at least {fmt.acc_min} bits")


@block
def _sext(x, y):
    """Sign extension by concatenation (explicit widths for verilator -Wall).

    Ports:
        x: input, two's complement (bit pattern, signed or unsigned signal).
        y: output, at least as wide as ``x``.
    """
    wx, wy = len(x), len(y)
    if wy == wx:

        @always_comb
        def same():
            y.next = x

        return same
    k = wy - wx

    @always_comb
    def ext():
        rep = intbv(0)[k:]
        rep[:] = 0
        if x[wx - 1]:
            rep[:] = ~rep
        y.next = concat(rep, x)

    return ext


@block
def _product(ax, bx, p):
    """``p = ax * bx``; all three signed and ``2w`` bits wide (the product fits)."""

    @always_comb
    def mul():
        p.next = ax * bx

    return mul


@block
def add_tree(terms, out):
    """Exact signed sum of a list of signals as a balanced binary tree.

    The list is split in halves recursively; each node sign-extends both children to
    its own width (one bit wider than the wider child) and adds them, so no node can
    overflow. ``len(out)`` must equal ``max child width + 1`` (or the term's width for
    a single term): use :func:`tree_width`.

    Ports:
        terms: list of signed signals (equal widths).
        out: the sum, signed, ``tree_width(len(terms), len(terms[0]))`` bits.
    """
    if len(terms) == 1:
        t0 = terms[0]

        @always_comb
        def pass1():
            out.next = t0

        return pass1
    half = len(terms) // 2
    w0 = len(terms[0])
    width = len(out)
    lo_s, hi_s = _signed(tree_width(half, w0)), _signed(tree_width(len(terms) - half, w0))
    lo_x, hi_x = _signed(width), _signed(width)
    subs = [
        add_tree(terms[:half], lo_s),
        add_tree(terms[half:], hi_s),
        _sext(lo_s, lo_x),
        _sext(hi_s, hi_x),
    ]

    @always_comb
    def node():
        out.next = lo_x + hi_x

    return subs, node


def tree_width(count: int, width: int) -> int:
    """Output bits of :func:`add_tree` over ``count`` terms of ``width`` bits."""
    return width + clog2(count)


@block
def _bias_align(e3, e5, bias, bias_en, aligned, ovf1, fmt):
    """Aligned bias ``b * 2**(e5 - e3)`` on ``A`` bits (0 when disabled).

    Ports:
        e3: product exponent, signed (``_shift_bits``).
        e5: bias exponent, signed (same width).
        bias: bias mantissa, ``w``-bit two's-complement pattern.
        bias_en: the bias is present.
        aligned: ``A``-bit two's complement (unsigned bit pattern).
        ovf1: the left-aligned bias left the ``A``-bit range (it was saturated).
    """
    w, A = fmt.w, fmt.acc_bits
    sb = len(e3)
    rne = fmt.rounding == "rne"
    lw = w + A  # bias << A (the clip) still fits: |b| <= 2**(w-1)
    g = w + 1  # right-shift clip: every shift >= w + 1 gives 0 in both roundings
    top_ones = (1 << (lw - A + 1)) - 1  # bits [lw-1 : A-1] all set (w + 1 bits, < 2**25)

    @always_comb
    def align():
        e6 = intbv(0, min=-(1 << (sb - 1)), max=1 << (sb - 1))
        ne6 = intbv(0, min=-(1 << (sb - 1)), max=1 << (sb - 1))
        sl = intbv(0)[sb - 1 :]  # unsigned shift amounts (a signed one widens the operand)
        r = intbv(0)[sb - 1 :]
        rep = intbv(0)[A:]
        bsx = intbv(0)[lw:]
        sh = intbv(0)[lw:]
        top = intbv(0)[lw - A + 1 :]
        mag = intbv(0)[w:]
        ext = intbv(0)[w + g :]
        q = intbv(0)[w + 1 :]
        qa = intbv(0)[A:]
        satv = intbv(0)[A - 2 :]
        res = intbv(0)[A:]
        fits = bool(0)
        e6[:] = e5 - e3
        ne6[:] = e3 - e5
        # sign-extended bias on lw bits
        rep[:] = 0
        if bias[w - 1]:
            rep[:] = ~rep
        bsx[:] = concat(rep, bias)
        # |bias| on w bits (|-2**(w-1)| = 2**(w-1) fits unsigned)
        mag[:] = bias
        if bias[w - 1]:
            mag[:] = ~bias + 1
        # saturation value +-(2**(A-1) - 1): {s, (A-2){~s}, 1}
        satv[:] = 0
        if not bias[w - 1]:
            satv[:] = ~satv
        ovf1.next = 0
        if e6 >= 0:
            if e6 > A:
                sl[:] = A
            else:
                sl[:] = e6[sb - 1 :]
            sh[:] = bsx << sl
            top[:] = sh[lw : A - 1]
            fits = top == 0 or top == top_ones
            if fits:
                res[:] = sh[A:]
            else:
                res[:] = concat(bias[w - 1], satv, bool(1))
                ovf1.next = bias_en
        else:
            if ne6 > g:
                r[:] = g
            else:
                r[:] = ne6[sb - 1 :]
            ext[:] = concat(mag, intbv(0)[g:])
            ext[:] = ext >> r
            q[:] = concat(bool(0), ext[w + g : g])
            if rne and ext[g - 1] and (ext[g - 1 : 0] != 0 or q[0]):
                q[:] = q + 1
            qa[:] = concat(intbv(0)[A - w - 1 :], q)
            if bias[w - 1]:
                qa[:] = ~qa + 1
            res[:] = qa
        if bias_en:
            aligned.next = res
        else:
            aligned.next = 0

    return align


@block
def bfp_dot(
    clk,
    rst,
    in_valid,
    in_ready,
    in_a,
    in_ea,
    in_b,
    in_eb,
    in_bias_en,
    in_bias,
    in_e5,
    out_valid,
    out_ready,
    out_acc,
    out_e3,
    out_flags,
    err,
    fmt: BfpFormat,
):
    """BFP dot product ``sum(a_i * b_i)`` with exponent ``ea + eb`` and optional bias.

    Ports:
        clk, rst: clock and synchronous active-high reset.
        in_valid, in_ready: input stream handshake.
        in_a, in_b: ``n`` W-bit two's-complement mantissas each (lane i at
            ``[i*w +: w]``).
        in_ea, in_eb: their shared exponents (E-bit two's complement).
        in_bias_en: add the bias (``in_bias``, ``in_e5`` are ignored when low).
        in_bias: bias mantissa (W-bit two's complement).
        in_e5: bias exponent (E-bit two's complement).
        out_valid, out_ready: output stream handshake.
        out_acc: accumulator plus aligned bias, ``acc_bits`` two's complement, saturated.
        out_e3: ``ea + eb`` on ``e + 1`` bits, two's complement.
        out_flags: flags, bit order :data:`DOT_FLAGS` (only ``ovf`` can be set).
        err: sticky OR of every accepted block's flags (cleared by ``rst``).
    """
    check_dot_params(fmt)
    n, w, e, A = fmt.n, fmt.w, fmt.e, fmt.acc_bits
    sb = _shift_bits(fmt)
    tw = tree_width(n, 2 * w)  # == fmt.acc_min
    insts = []

    prods = []
    for i in range(n):
        ar, br = flat_signal(w), flat_signal(w)
        ax, bx, p = _signed(2 * w), _signed(2 * w), _signed(2 * w)
        insts += [lane(in_a, i * w, w, ar), lane(in_b, i * w, w, br)]
        insts += [_sext(ar, ax), _sext(br, bx), _product(ax, bx, p)]
        prods.append(p)
    tree = _signed(tw)
    insts.append(add_tree(prods, tree))

    ea_x, eb_x, e5_x, e3 = _signed(sb), _signed(sb), _signed(sb), _signed(sb)
    insts += [_sext(in_ea, ea_x), _sext(in_eb, eb_x), _sext(in_e5, e5_x)]

    @always_comb
    def exp_add():
        e3.next = ea_x + eb_x

    aligned = flat_signal(A)
    ovf1 = Signal(bool(0))
    insts.append(_bias_align(e3, e5_x, in_bias, in_bias_en, aligned, ovf1, fmt))

    acc_x, al_x = _signed(A + 1), _signed(A + 1)
    insts += [_sext(tree, acc_x), _sext(aligned, al_x)]
    acc_o = flat_signal(A)
    flags = flat_signal(len(DOT_FLAGS))

    @always_comb
    def bias_add():
        s = intbv(0, min=-(1 << A), max=1 << A)
        satv = intbv(0)[A - 2 :]
        s[:] = acc_x + al_x
        satv[:] = 0
        if not s[A]:
            satv[:] = ~satv
        flags.next = 0
        if s[A] != s[A - 1]:
            acc_o.next = concat(s[A], satv, bool(1))
            flags.next = _OVF_CODE
        else:
            acc_o.next = s[A:]
            if ovf1:
                flags.next = _OVF_CODE

    shell = stream_register(
        clk, rst, in_valid, in_ready, out_valid, out_ready,
        [(out_acc, acc_o), (out_e3, e3(e + 1, 0)), (out_flags, flags)], flags, err,
    )
    return insts, exp_add, bias_add, shell


def dot_ports(fmt: BfpFormat) -> dict[str, dict]:
    """Port list of :func:`bfp_dot` (name -> direction, width, doc)."""
    return stream_ports(
        {
            "a": (fmt.w * fmt.n, "n W-bit mantissas of a"),
            "ea": (fmt.e, "exponent of a (two's complement)"),
            "b": (fmt.w * fmt.n, "n W-bit mantissas of b"),
            "eb": (fmt.e, "exponent of b (two's complement)"),
            "bias_en": (1, "add the aligned bias"),
            "bias": (fmt.w, "bias mantissa (two's complement)"),
            "e5": (fmt.e, "bias exponent (two's complement)"),
        },
        {
            "acc": (fmt.acc_bits, "acc + aligned bias, saturated"),
            "e3": (fmt.e_sum_bits, "e3 = ea + eb"),
        },
        DOT_FLAGS,
    )


def emit_dot(fmt: BfpFormat, outdir: Path | str, name: str = "bfp_dot") -> Emitted:
    """Write the dot-product unit for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a :class:`BfpFormat`, or ``n > DOT_MAX_N``.
    """
    check_dot_params(fmt)
    return emit_stream_unit(
        bfp_dot,
        fmt,
        BfpFormat,
        dot_ports,
        outdir,
        name,
        family="bfp",
        timing={"latency": DOT_LATENCY, "blocks_per_cycle": 1},
        doc="BFP dot product: exact sum of n mantissa products, e3 = ea + eb, optional "
        "aligned bias (e6 = e5 - e3) with saturation",
    )
