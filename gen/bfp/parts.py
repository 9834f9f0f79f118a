"""Reusable MyHDL building blocks for the BFP units (structure built in Python)."""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, block, concat, intbv

from ..common import flat_signal

__all__ = ["max_tree", "msb_index", "msb_bits", "any_of", "lane_split", "f32_lop"]


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


def msb_bits(width: int) -> int:
    """Width of :func:`msb_index`'s ``idx`` for a ``width``-bit vector: ``ceil(log2(width))``."""
    if width < 2:
        raise ValueError(f"msb_index needs a vector of at least 2 bits, got {width}")
    return (width - 1).bit_length()


@block
def msb_index(vec, idx):
    """Index of the most significant set bit (0 when ``vec`` is 0), as a binary tree.

    Any width: the low half of each node is a power of two, the high part whatever is
    left, so no zero padding (constant bits, dead branches) goes into the tree.

    Ports:
        vec: input vector, at least 2 bits.
        idx: :func:`msb_bits` ``(len(vec))`` bits.
    """
    width = len(vec)
    nb = len(idx)
    if nb != msb_bits(width):
        raise ValueError(f"msb_index of {width} bits needs a {msb_bits(width)}-bit index, got {nb}")
    if width == 2:
        # The MSB index of a 2-bit vector ignores bit 0; the signal name matches
        # Verilator's default --unused-regexp (*unused*), which says so to the linter.
        unused_lsb = Signal(bool(0))

        @always_comb
        def leaf():
            idx.next = vec[1]
            unused_lsb.next = vec[0]

        return leaf
    half = 1 << (nb - 1)          # the low part: a power of two, a full subtree
    hw = width - half             # the high part: 1 .. half bits
    lo, lo_i = flat_signal(half), flat_signal(nb - 1)
    subs = [msb_index(lo, lo_i)]
    if hw == 1:  # the top bit alone: its index is width - 1 = half

        @always_comb
        def top():
            lo.next = vec[half:0]
            if vec[width - 1]:
                idx.next = concat(bool(1), intbv(0)[nb - 1 :])
            else:
                idx.next = concat(bool(0), lo_i)

        return subs, top
    hi, hi_i = flat_signal(hw), flat_signal(msb_bits(hw))
    subs.append(msb_index(hi, hi_i))
    pad = nb - 1 - len(hi_i)

    if pad == 0:

        @always_comb
        def node():
            hi.next = vec[width:half]
            lo.next = vec[half:0]
            if vec[width:half] != 0:
                idx.next = concat(bool(1), hi_i)
            else:
                idx.next = concat(bool(0), lo_i)

        return subs, node

    @always_comb
    def node_short():
        hi.next = vec[width:half]
        lo.next = vec[half:0]
        if vec[width:half] != 0:
            idx.next = concat(bool(1), intbv(0)[pad:], hi_i)
        else:
            idx.next = concat(bool(0), lo_i)

    return subs, node_short


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
    sub_msb = flat_signal(msb_bits(23))
    frac = flat_signal(23)

    @always_comb
    def take_frac():
        frac.next = absmax[23:0]

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

    return take_frac, msb_index(frac, sub_msb), leading_one
