"""The BFP building blocks' leading-one tree (``msb_index``) at any width, simulated in MyHDL."""

from __future__ import annotations

import random

import pytest
from myhdl import Signal, block, delay, instance, intbv

from lockstep.gen.bfp.parts import msb_bits, msb_index


WIDTHS = [2, 3, 4, 5, 6, 7, 8, 9, 12, 17, 23, 24, 31, 32, 33, 37]


def _values(width: int) -> list[int]:
    """Every value up to 9 bits, else every power of two, its neighbours and 300 random values."""
    if width <= 9:
        return list(range(1 << width))
    rng = random.Random(width)
    values = [0] + [v for b in range(width) for v in ((1 << b), (1 << b) - 1, (2 << b) - 1)]
    return values + [rng.randrange(1 << width) for _ in range(300)]


@block
def _bench(widths: list[int], got: dict[int, list[int]]):
    """One tree per width, all driven in one simulation (a MyHDL simulation per width cost
    10-19 s each in a busy test worker, against well under a second here)."""
    vecs = {w: Signal(intbv(0)[w:]) for w in widths}
    idxs = {w: Signal(intbv(0)[msb_bits(w):]) for w in widths}
    duts = [msb_index(vecs[w], idxs[w]) for w in widths]
    values = {w: _values(w) for w in widths}

    @instance
    def drive():
        for i in range(max(len(v) for v in values.values())):
            for w in widths:
                if i < len(values[w]):
                    vecs[w].next = values[w][i]
            yield delay(1)
            for w in widths:
                if i < len(values[w]):
                    got[w].append(int(idxs[w]))

    return duts, drive


def test_msb_index_any_width_is_floor_log2():
    """At each width in WIDTHS, each of its values: the index of the leading one (0 for 0)."""
    got: dict[int, list[int]] = {w: [] for w in WIDTHS}
    bench = _bench(WIDTHS, got)
    bench.run_sim(quiet=1)
    bench.quit_sim()
    for w in WIDTHS:
        assert got[w] == [max(v.bit_length() - 1, 0) for v in _values(w)], f"width {w}"


def test_msb_index_refuses_a_wrong_index_width():
    assert msb_bits(24) == 5 and msb_bits(32) == 5 and msb_bits(33) == 6 and msb_bits(2) == 1
    with pytest.raises(ValueError, match="needs a 5-bit index, got 4"):
        msb_index(Signal(intbv(0)[24:]), Signal(intbv(0)[4:]))
    with pytest.raises(ValueError, match="at least 2 bits"):
        msb_bits(1)
