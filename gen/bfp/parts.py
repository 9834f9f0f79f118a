"""Reusable MyHDL building blocks for the BFP units (structure built in Python)."""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, block, concat, intbv

from ..common import flat_signal

__all__ = ["max_tree", "msb_index", "any_of", "lane_split", "f32_lop"]


@block
def max_tree(keys, out):
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
    lo = max_tree(keys[:half], lo_max)
    hi = max_tree(keys[half:], hi_max)

    @always_comb
    def pick():
        if hi_max > lo_max:
            out.next = hi_max
        else:
            out.next = lo_max

    return lo, hi, pick


@block
def lane_split(in_data, xi, ki, lo):
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
def any_of(bits, out):
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
def msb_index(vec, idx):
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
    subs = [msb_index(hi, hi_i), msb_index(lo, lo_i)]

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
def f32_lop(absmax, lop):
    """Exact ``floor(log2 x)`` of a finite float32 magnitude (patent Eq. 3, no log2).

    Normal: biased exponent - 127; subnormal: MSB of the fraction - 149. Meaningless
    (the caller checks) when ``absmax`` is 0.

    Ports:
        absmax: 31-bit magnitude key (``bits[30:0]`` of a finite float32).
        lop: signed result, wide enough for [-149, 127].
    """
    w = len(lop)
    lo, hi = lop.min, lop.max
    sub_msb = flat_signal(5)
    frac32 = flat_signal(32)

    @always_comb
    def pad_frac():
        frac32.next = concat(intbv(0)[9:], absmax[23:0])

    @always_comb
    def leading_one():
        am_be = intbv(0, min=lo, max=hi)
        p = intbv(0, min=lo, max=hi)
        am_be[:] = concat(intbv(0)[w - 8 :], absmax[31:23])
        p[:] = concat(intbv(0)[w - 5 :], sub_msb)
        if am_be == 0:
            lop.next = p - 149
        else:
            lop.next = am_be - 127

    return pad_frac, msb_index(frac32, sub_msb), leading_one
