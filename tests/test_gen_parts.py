"""The BFP building blocks' leading-one tree (``msb_index``) at any width, simulated in MyHDL."""

from __future__ import annotations

import random

import pytest
from myhdl import Signal, block, delay, instance, intbv

from lockstep.gen.bfp.parts import msb_bits, msb_index


@block
def _bench(width: int, values: list[int], got: list[int]):
    vec, idx = Signal(intbv(0)[width:]), Signal(intbv(0)[msb_bits(width):])
    dut = msb_index(vec, idx)

    @instance
    def drive():
        for v in values:
            vec.next = v
            yield delay(1)
            got.append(int(idx))

    return dut, drive


@pytest.mark.parametrize("width", [2, 3, 4, 5, 6, 7, 8, 9, 12, 17, 23, 24, 31, 32, 33, 37])
def test_msb_index_any_width_is_floor_log2(width):
    """Every value up to 9 bits, else every power of two, its neighbours and 300 random
    values: the index of the leading one (0 for 0)."""
    if width <= 9:
        values = list(range(1 << width))
    else:
        rng = random.Random(width)
        values = [0] + [v for b in range(width) for v in ((1 << b), (1 << b) - 1, (2 << b) - 1)]
        values += [rng.randrange(1 << width) for _ in range(300)]
    got: list[int] = []
    bench = _bench(width, values, got)
    bench.run_sim(quiet=1)
    bench.quit_sim()
    assert got == [max(v.bit_length() - 1, 0) for v in values]


def test_msb_index_refuses_a_wrong_index_width():
    assert msb_bits(24) == 5 and msb_bits(32) == 5 and msb_bits(33) == 6 and msb_bits(2) == 1
    with pytest.raises(ValueError, match="needs a 5-bit index, got 4"):
        msb_index(Signal(intbv(0)[24:]), Signal(intbv(0)[4:]))
    with pytest.raises(ValueError, match="at least 2 bits"):
        msb_bits(1)
