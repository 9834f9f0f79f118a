"""Kernel selection (docs/gemm.md section 3), every expectation worked by hand.

Default ROM: (2, 8), (6, 4), (14, 2), (30, 1); r = m*z/(m+z) = 1.6, 2.4, 1.75, 0.97;
V = 16, ncores = 4, so (m, z) is balanced when ceil(N / (16*z)) >= 4."""

from __future__ import annotations

import pytest

from lockstep.models import gemm as G
from lockstep.models.gemm.params import GemmParams

P = GemmParams()


def test_rom_and_ratio_order():
    assert P.candidates == ((2, 8), (6, 4), (14, 2), (30, 1))
    assert G.better((6, 4), (14, 2)) and G.better((14, 2), (2, 8)) and G.better((2, 8), (30, 1))
    assert not G.better((6, 4), (6, 4))
    assert not G.better((4, 8), (8, 4)) and not G.better((8, 4), (4, 8))  # equal r


def sel(N, lda, base=0, limit_m=False, p=P):
    s = G.select_kernel(N, lda, base, p, limit_m)
    return (p.PROGS[s.prog], s.m, s.z, s.keep)


def test_enough_compute_picks_6_4():
    # N = 1024: 16 N-blocks for z = 4; lda = 1000 (4000 B, rows spread over the sets)
    assert sel(1024, 1000) == ("NORMAL", 6, 4, 6)
    # lda = 1024: keep_all = 6 = m: no conflict, but a way multiple: NO_COPY
    assert sel(1024, 1024) == ("NO_COPY", 6, 4, 6)
    # lda = 256 (1 KiB, a quarter way): keep_all = 24 >= 6: NO_COPY
    assert sel(1024, 256) == ("NO_COPY", 6, 4, 6)


def test_small_n_picks_14_2():
    # N = 128: ceil(128/64) = 2 < 4 blocks for z = 4, 4 for z = 2, 8 for z = 1
    assert sel(128, 1000) == ("NORMAL", 14, 2, 14)
    assert sel(128, 256) == ("NO_COPY", 14, 2, 14)       # keep_all 24 >= 14
    # lda = 1024: keep_all = 6 < 14: the patent's overflow copy, keep = budget = 6
    assert sel(128, 1024) == ("OVERFLOW_COPY", 14, 2, 6)
    s = G.select_kernel(128, 1024, 0, P)
    assert s.copy and s.det.keep == 6 and s.det.conflict and s.det.worst == 30


def test_limit_m():
    # pick(6) at N = 128: (2,8) valid (16 > 13), (6,4) valid (24), (6,2) and (6,1) not;
    # neither balanced (1 and 2 N-blocks): the most N-blocks is (6,4)
    assert sel(128, 1024, limit_m=True) == ("NO_COPY", 6, 4, 6)
    # no conflict: limit_m changes nothing
    assert sel(128, 1000, limit_m=True) == ("NORMAL", 14, 2, 14)
    # N = 1024 at lda = 1024 has no conflict at m = 6 either
    assert sel(1024, 1024, limit_m=True) == ("NO_COPY", 6, 4, 6)


def test_pick():
    assert G.pick(30, 1024, P) == (6, 4)
    assert G.pick(6, 1024, P) == (6, 4)      # (2,8) r 1.6 < (6,4) 2.4
    assert G.pick(2, 1024, P) == (2, 8)      # (2,4) 8, (2,2) 4, (2,1) 2 are not > 13
    assert G.pick(1, 1024, P) is None        # no m' * z > 13 with m' = 1
    assert G.pick(0, 1024, P) is None
    assert G.pick(30, 256, P) == (6, 4)      # z=4: 256/64 = 4 blocks: balanced
    assert G.pick(30, 193, P) == (6, 4)      # z=4: ceil(193/64) = 4
    assert G.pick(30, 192, P) == (14, 2)     # z=4: 3 blocks; z=2: 6


def test_fallback_most_blocks_first_on_tie():
    # N = 48: blocks 1 (z=8), 1 (z=4), 2 (z=2), 3 (z=1): nothing balanced; the most is (30,1)
    assert G.pick(30, 48, P) == (30, 1)
    # N = 16: every z gives 1 block: the first in ROM order
    assert G.pick(30, 16, P) == (2, 8)
    # N = 0: every count 0
    assert G.pick(30, 0, P) == (2, 8)
    assert sel(48, 1000) == ("NORMAL", 30, 1, 30)
    assert sel(48, 1024) == ("OVERFLOW_COPY", 30, 1, 6)
    # limit_m, pick(6) at N = 48: (2,8) 1 block, (6,4) 1 block: tie -> (2,8)
    assert sel(48, 1024, limit_m=True) == ("NO_COPY", 2, 8, 2)


def test_ratio_tie_first_in_rom_order():
    p = GemmParams(r_hw=41)  # ROM (4,8), (9,4), (19,2), (30,1)
    assert p.candidates == ((4, 8), (9, 4), (19, 2), (30, 1))
    # cap 8: (4,8) and (8,4) both r = 32/12; (8,2) 1.6; (8,1) invalid (8 <= 13)
    assert G.pick(8, 4096, p) == (4, 8)


def test_direct_mapped():
    dm = GemmParams(ways=1)  # budget 1
    # lda = 1024: keep_all = 1; (6,4) conflicts; pick(1) has nothing valid: copy with keep 1
    assert sel(1024, 1024, p=dm) == ("OVERFLOW_COPY", 6, 4, 1)
    assert sel(1024, 1024, limit_m=True, p=dm) == ("OVERFLOW_COPY", 6, 4, 1)
    # lda = 1040 (4 KiB + a line): one line per set over 30 rows, no conflict
    assert sel(1024, 1040, p=dm) == ("NORMAL", 6, 4, 6)


def test_first_row_overflows():
    # one set of 4-byte lines: a 64-byte row puts 16 lines into it, budget 6: keep_all 0
    p = GemmParams(sets=1, line=4)
    assert G.select_kernel(1024, 1000, 0, p).det.keep == 0
    assert sel(1024, 1000, p=p) == ("OVERFLOW_COPY", 6, 4, 0)
    assert sel(1024, 1000, limit_m=True, p=p) == ("OVERFLOW_COPY", 6, 4, 0)


def test_sel_cycles():
    assert G.select_kernel(1024, 1024, 0, P).sel_cycles == 30 + 4 + 1
    assert G.select_kernel(1024, 1024, 32, P).sel_cycles == 60 + 4 + 1   # two lines a row
    s = G.select_kernel(1024, 0, 0, P)
    assert s.err and s.sel_cycles == 1 and (s.prog, s.m, s.z, s.keep) == (0, 0, 0, 0)


@pytest.mark.parametrize("N,lda", [(1024, 1024), (128, 1024), (128, 1000), (64, 3072), (4096, 2048)])
def test_choice_is_conflict_free_or_copies(N, lda):
    """Invariant: the rows read in place never exceed the budget of any set."""
    for limit_m in (False, True):
        s = G.select_kernel(N, lda, 0, P, limit_m)
        assert G.ld_conflict(0, lda, s.keep, P).worst <= P.budget if s.keep else True
        assert s.copy == (s.keep < s.m)
