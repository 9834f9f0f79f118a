"""Conflict detection (docs/gemm.md section 2): the exact walk against independent brute
forces, the closed form against the walk, and the patent's worked examples."""

from __future__ import annotations

import random
from collections import Counter
from math import ceil

import pytest

from lockstep.models import gemm as G
from lockstep.models.gemm.params import GemmParams

P = GemmParams()  # 64 sets x 8 ways x 64 B, fp32, V = 16, budget 6


def brute_worst(base, ld_elems, elem_bytes, m, v, line, sets):
    """spec 003 section 4.3's snippet: the most distinct lines any set receives."""
    s = ld_elems * elem_bytes
    lines = set()
    for r in range(m):
        lo = base + r * s
        hi = lo + v * elem_bytes - 1
        lines.update(range(lo // line, hi // line + 1))
    per_set = Counter(ln % sets for ln in lines)
    return max(per_set.values()), per_set


def brute_keep(base, ld, m, p: GemmParams):
    """Largest m' <= m whose first m' rows put at most ``budget`` lines in every set."""
    best = 0
    for mm in range(1, m + 1):
        if brute_worst(base, ld, p.eb, mm, p.v, p.line, p.sets)[0] <= p.budget:
            best = mm
    return best


def brute_visits(base, ld, m, p: GemmParams):
    s = ld * p.eb
    return sum((base + r * s + p.v * p.eb - 1) // p.line - (base + r * s) // p.line + 1 for r in range(m))


GEOMS = [
    P,
    GemmParams(ways=1),                                  # direct-mapped, budget 1
    GemmParams(ways=2, sets=16, line=32),
    GemmParams(ways=4, sets=8, line=16, eb=2, v=8),
    GemmParams(ways=3, sets=32, line=64, eb=1, v=16),    # V*eb < L
    GemmParams(ways=8, sets=64, line=64, eb=4, v=32),    # V*eb = 2 lines
    GemmParams(ways=5, sets=4, line=4, eb=2, v=4),       # segments of 2 lines, tiny sets
]
LDS = [1, 3, 7, 15, 16, 17, 64, 256, 512, 1000, 1008, 1016, 1023, 1024, 1025, 1032, 1536, 2048, 3072, 4096, 4112]


def test_walk_matches_brute_force_sweep(seed):
    rng = random.Random(seed)
    for p in GEOMS:
        for _ in range(60):
            ld = rng.choice(LDS + [rng.randrange(1, 5000)])
            base = rng.choice([0, p.line, rng.randrange(0, 1 << 16) * p.eb, rng.randrange(0, 1 << 20)])
            m = rng.randrange(1, p.m_max + 1)
            d = G.ld_conflict(base, ld, m, p)
            worst, per_set = brute_worst(base, ld, p.eb, m, p.v, p.line, p.sets)
            keep = brute_keep(base, ld, m, p)
            assert d.worst == worst, (p, base, ld, m)
            assert d.keep == keep, (p, base, ld, m)
            assert d.conflict == (keep < m)
            assert d.visits == brute_visits(base, ld, m, p)
            assert d.done_cycle == d.visits + 1 and not d.err
            assert d.counts == tuple(per_set.get(i, 0) for i in range(p.sets))


def test_keep_of_a_prefix_is_min(seed):
    """One walk over m_max rows answers every m: keep(m') = min(m', keep(m_max))."""
    rng = random.Random(seed + 1)
    for p in GEOMS:
        for _ in range(10):
            base, ld = rng.randrange(0, 1 << 14), rng.choice(LDS)
            full = G.ld_conflict(base, ld, p.m_max, p).keep
            for mm in range(1, p.m_max + 1):
                assert G.ld_conflict(base, ld, mm, p).keep == min(mm, full)


def test_closed_form_equals_walk_when_aligned(seed):
    rng = random.Random(seed + 2)
    n = 0
    for p in GEOMS:
        if p.v * p.eb > p.line:
            continue
        for _ in range(80):
            lines_per_row = rng.choice([1, 2, 3, 4, 5, 8, 12, 16, 24, 32, 48, 64, 96, 128, 200, 256])
            if lines_per_row * p.line % p.eb:
                continue
            ld = lines_per_row * p.line // p.eb
            base = rng.randrange(0, 1 << 12) * p.line
            m = rng.randrange(1, p.m_max + 1)
            cf, d = G.closed_form(base, ld, m, p), G.ld_conflict(base, ld, m, p)
            assert cf.aligned
            assert cf.worst_cf == d.worst == ceil(m / cf.period)
            assert d.keep == min(m, p.budget * cf.period)
            n += 1
    assert n > 200


def test_closed_form_flags():
    assert G.closed_form(0, 1024, 8, P) == G.ClosedForm(True, True, True, 1, 8)       # stride = way
    assert G.closed_form(0, 2048, 8, P) == G.ClosedForm(True, False, True, 1, 8)      # 2 ways
    assert G.closed_form(0, 256, 8, P) == G.ClosedForm(False, True, True, 4, 2)       # 1 KiB, a quarter way
    assert G.closed_form(0, 1000, 8, P) == G.ClosedForm(False, False, False, 0, 0)    # 4000 B: not line-aligned
    assert G.closed_form(4, 1024, 8, P) == G.ClosedForm(True, True, False, 0, 0)      # base not aligned
    assert G.closed_form(0, 1040, 8, P) == G.ClosedForm(False, False, True, 64, 1)    # padded by a line
    wide = GemmParams(v=32)  # 128-byte segments: no closed form, the period still shows
    assert G.closed_form(0, 1024, 8, wide) == G.ClosedForm(True, True, True, 1, 0)


def test_patent_example_4k_stride_period_1():
    """64 sets x 64 B, lda = 1024 fp32 = 4 KiB: every row in one set; conflict iff m > budget."""
    for m in range(1, P.m_max + 1):
        d = G.ld_conflict(0, 1024, m, P)
        assert G.closed_form(0, 1024, m, P).period == 1
        assert d.worst == m and d.visits == m
        assert d.keep == min(m, P.budget) == min(m, 6)
        assert d.conflict == (m > 6)
        assert d.counts[0] == m and sum(d.counts) == m


def test_patent_example_1k_stride_period_4():
    """lda = 256 fp32 = 1 KiB: every 4th row shares a set; keep = min(m, 4*budget) = 24."""
    for m in range(1, P.m_max + 1):
        d = G.ld_conflict(0, 256, m, P)
        assert G.closed_form(0, 256, m, P).period == 4
        assert d.worst == ceil(m / 4)
        assert d.keep == min(m, 24)
        assert d.conflict == (m > 24)
        assert {i for i, c in enumerate(d.counts) if c} == {16 * r % 64 for r in range(m)}


def test_unaligned_rows_take_two_lines():
    """base 32 B into a line, fp32 V = 16: each 64-byte row segment straddles two lines."""
    d = G.ld_conflict(32, 1024, 4, P)
    assert d.visits == 8 and d.worst == 4 and d.counts[0] == 4 and d.counts[1] == 4
    # budget 6: row 6 puts a 7th line into sets 0 and 1
    assert G.ld_conflict(32, 1024, 7, P).keep == 6


def test_overlapping_rows_count_lines_once():
    """ld < V: rows overlap; the shared lines are visited again but counted once."""
    d = G.ld_conflict(0, 8, 4, P)  # rows at 0, 32, 64, 96 B, each 64 B long
    assert d.visits == 1 + 2 + 1 + 2  # lines 0 | 0,1 | 1 | 1,2
    assert d.counts[:3] == (1, 1, 1) and d.worst == 1 and d.keep == 4


def test_ld_beyond_dimw_bits():
    """A legal lda may exceed 2**dimw (only lda >= K and lda*eb < 2**aw are required)."""
    d = G.ld_conflict(0, (1 << 16) + 1024, 8, P)  # 260 KiB: a way multiple
    assert (d.worst, d.keep) == (8, 6)


def test_direct_mapped_budget_1():
    dm = GemmParams(ways=1)
    assert dm.budget == 1
    assert G.ld_conflict(0, 1024, 2, dm).keep == 1
    assert G.ld_conflict(0, 1040, 30, dm).keep == 30  # one line per set over 30 rows


@pytest.mark.parametrize("ld,m", [(0, 4), (-16, 4), (1024, 0), (1024, 31), (1024, -1)])
def test_refused_inputs(ld, m):
    d = G.ld_conflict(0, ld, m, P)
    assert d.err and d.done_cycle == 1
    assert (d.worst, d.keep, d.conflict, d.visits) == (0, 0, False, 0) and not any(d.counts)
    assert G.closed_form(0, ld, m, P) == G.ClosedForm(False, False, False, 0, 0)
