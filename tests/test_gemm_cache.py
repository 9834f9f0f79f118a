"""The cache model (docs/gemm.md section 5): true LRU on hand-worked sequences, eviction
counts, write-allocate, per-kind counters, and the 3C split on hand-made traces."""

from __future__ import annotations

import random

from lockstep.models import gemm as G
from lockstep.models.gemm import A_LD, B_LD, C_WR, COPY_WR


def line_seq(c: G.CacheSim, lines, kind=None):
    return [c.access(x * c.line, kind) for x in lines]


def test_two_way_set_three_lines_cycling_all_miss():
    c = G.CacheSim(1, 2, 64)
    assert line_seq(c, [0, 1, 2] * 4) == [False] * 12
    assert c.evictions == 10 and c.n_misses == 12 and c.n_hits == 0


def test_lru_refresh_order():
    c = G.CacheSim(1, 2, 64)
    # a b a c: c evicts b (a was refreshed); then a hits, b misses (evicting c)
    assert line_seq(c, [0, 1, 0, 2, 0, 1, 2]) == [False, False, True, False, True, False, False]
    assert c.contents(0) == [1, 2]
    assert c.evictions == 3


def test_direct_mapped():
    c = G.CacheSim(4, 1, 16)
    # bytes 0 and 64 share set 0; byte 16 is set 1
    assert [c.access(a) for a in (0, 64, 0, 16, 16, 20, 64)] == [False, False, False, False, True, True, False]
    assert c.evictions == 3


def test_sets_are_independent():
    c = G.CacheSim(2, 1, 64)
    assert line_seq(c, [0, 1, 0, 1, 2, 1, 0]) == [False, False, True, True, False, True, False]


def test_write_allocate_and_kinds():
    c = G.CacheSim(8, 2, 32)
    assert c.access(100, C_WR) is False       # a write miss fills
    assert c.access(96, A_LD) is True         # same line, a read hits
    assert c.request(COPY_WR, 120, 16) == [True, False]  # lines 3, 4
    assert c.lookups[C_WR] == 1 and c.misses[C_WR] == 1 and c.hits[C_WR] == 0
    assert c.lookups[A_LD] == 1 and c.hits[A_LD] == 1
    assert c.lookups[COPY_WR] == 2 and c.hits[COPY_WR] == 1 and c.misses[COPY_WR] == 1
    assert (c.n_lookups, c.n_hits, c.n_misses, c.evictions) == (4, 2, 2, 0)


def test_evictions_count_only_valid_lines():
    c = G.CacheSim(1, 4, 64)
    line_seq(c, range(4))
    assert c.evictions == 0
    line_seq(c, range(4, 7))
    assert c.evictions == 3


def test_clear_and_reset():
    c = G.CacheSim(2, 2, 64)
    line_seq(c, [0, 1, 2], B_LD)
    c.clear()
    assert c.n_lookups == 0 and c.lookups[B_LD] == 0
    assert c.access(0) is True  # lines stay after clr
    c.reset()
    assert c.access(0) is False and c.n_lookups == 1


def ref_lru(lines, sets, ways):
    """An independent list-based LRU: most recent last."""
    st = [[] for _ in range(sets)]
    out, ev = [], 0
    for x in lines:
        s = st[x % sets]
        if x in s:
            s.remove(x)
            s.append(x)
            out.append(True)
        else:
            if len(s) == ways:
                s.pop(0)
                ev += 1
            s.append(x)
            out.append(False)
    return out, ev


def test_replay_equals_reference_lru(seed):
    rng = random.Random(seed)
    for sets, ways, line in ((1, 1, 4), (4, 1, 16), (8, 2, 32), (64, 8, 64), (3, 3, 8)):
        reqs = [(rng.randrange(6), rng.randrange(0, 16 * sets * ways * line), rng.randrange(1, 3 * line))
                for _ in range(3000)]
        c = G.CacheSim(sets, ways, line)
        hits = c.replay(reqs)
        lines = [x for _, a, n in reqs for x in range(a // line, (a + n - 1) // line + 1)]
        exp, ev = ref_lru(lines, sets, ways)
        assert hits.tolist() == exp and c.evictions == ev
        kinds = [k for k, a, n in reqs for _ in range(a // line, (a + n - 1) // line + 1)]
        for k in range(6):
            assert c.lookups[k] == kinds.count(k)
            assert c.hits[k] == sum(h for h, kk in zip(exp, kinds) if kk == k)
        # request() gives the same answers
        c2 = G.CacheSim(sets, ways, line)
        assert [h for k, a, n in reqs for h in c2.request(k, a, n)] == exp


def test_classify_pure_compulsory():
    t = [(A_LD, 64 * i, 4) for i in range(100)]
    r = G.classify(t, 4, 2, 64)
    assert (r.lookups, r.misses, r.compulsory, r.capacity, r.conflict) == (100, 100, 100, 0, 0)


def test_classify_pure_capacity():
    # 2 sets x 2 ways; lines 0..7 twice: the 4-line LRU misses all 16, so does the cache
    t = [(B_LD, 64 * x, 64) for x in list(range(8)) * 2]
    r = G.classify(t, 2, 2, 64)
    assert (r.misses, r.compulsory, r.capacity, r.conflict) == (16, 8, 8, 0)


def test_classify_pure_conflict():
    # 2 sets x 1 way: lines 0 and 2 share set 0; a 2-line LRU keeps both
    t = [(A_LD, 64 * x, 4) for x in (0, 2, 0, 2, 0, 2)]
    r = G.classify(t, 2, 1, 64)
    assert (r.misses, r.compulsory, r.capacity, r.conflict) == (6, 2, 0, 4)
    assert r.by_kind["A_LD"] == (6, 6, 2, 0, 4) and r.by_kind["B_LD"] == (0, 0, 0, 0, 0)


def test_classify_negative_conflict_is_reported():
    # 2 sets x 1 way: 0 1 3 0 -> the cache hits the last 0 (set 0 untouched by 1, 3),
    # the 2-line LRU has evicted it: capacity 1, conflict -1
    t = [(A_LD, 64 * x, 4) for x in (0, 1, 3, 0)]
    r = G.classify(t, 2, 1, 64)
    assert (r.misses, r.compulsory, r.capacity, r.conflict) == (3, 3, 1, -1)
