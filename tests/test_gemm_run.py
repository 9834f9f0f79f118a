"""Values, memory effects, counters and cycles of whole jobs (docs/gemm.md sections 6-10).

Two independent references: a triple loop in Python ints (section 8) and an executor
that runs the trace literally on a copy of the memory (COPY_RD/COPY_WR move data, B_LD
loads vectors, A_LD/BUF_LD do the z FMAs, C_WR writes the accumulators)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from lockstep.models import gemm as G
from lockstep.models.gemm.params import GemmParams
from lockstep.models.gemm import A_LD, B_LD, BUF_LD, C_WR, COPY_RD, COPY_WR

P = GemmParams()


def wrap_sat(x: int, shift: int, p: GemmParams) -> int:
    x &= (1 << p.accw) - 1
    if x >> (p.accw - 1):
        x -= 1 << p.accw
    x >>= shift
    lim = 1 << (p.ew - 1)
    return max(-lim, min(lim - 1, x))


def triple_loop(A, B, N, shift, p):
    M, K = len(A), len(B)
    return [[wrap_sat(sum(int(A[i][k]) * int(B[k][j]) for k in range(K)), shift, p) for j in range(N)]
            for i in range(M)]


def execute(trace: G.Trace, mem: np.ndarray, p: GemmParams, shift: int) -> tuple[list[int], int]:
    """Run the trace on a copy of the memory; returns (memory, FMAs)."""
    mem = [int(x) for x in mem]
    eb, mask = p.eb, (1 << p.accw) - 1
    prev, held, bvecs, row, acc, cw, fmas = None, None, [], 0, {}, 0, 0
    for kind, addr, nb in trace:
        e, n = addr // eb, nb // eb
        if prev == C_WR and kind != C_WR:        # a new (m0, n0) block
            acc, bvecs = {}, []
        if kind == COPY_RD:
            held = mem[e:e + n]
        elif kind == COPY_WR:
            assert prev == COPY_RD and len(held) == n
            mem[e:e + n] = held
        elif kind == B_LD:
            if prev != B_LD:
                bvecs, row = [], 0
            bvecs.append(mem[e:e + n])
        elif kind in (A_LD, BUF_LD):
            a = mem[e]
            for j, b in enumerate(bvecs):
                fmas += 1
                for lane, bv in enumerate(b):
                    acc[row, j, lane] = (acc.get((row, j, lane), 0) + a * bv) & mask
            row += 1
        elif kind == C_WR:
            if prev != C_WR:
                cw = 0
            r, j = divmod(cw, max(len(bvecs), 1))
            mem[e:e + n] = [wrap_sat(acc.get((r, j, lane), 0), 0, p) if shift == 0 else
                            wrap_sat(acc.get((r, j, lane), 0), shift, p) for lane in range(n)]
            cw += 1
        prev = kind
    return mem, fmas


def layout(M, N, K, p, lda=None, ldb=None, ldc=None, **kw):
    lda, ldb, ldc = lda or K + 3, ldb or N + 5, ldc or N + 2
    eb, al = p.eb, 1024
    a_end = ((M - 1) * lda + K) * eb
    b0 = -(-a_end // al) * al + al
    c0 = -(-(b0 + ((K - 1) * ldb + N) * eb) // al) * al + al
    buf = -(-(c0 + ((M - 1) * ldc + N) * eb) // al) * al + al
    return G.GemmCfg(M=M, N=N, K=K, lda=lda, ldb=ldb, ldc=ldc, base_a=0, base_b=b0, base_c=c0, base_buf=buf,
                     buf_len=1 << 14, **kw)


def random_mem(p, rng, extreme=False):
    lo, hi = -(1 << (p.ew - 1)), (1 << (p.ew - 1)) - 1
    if extreme:
        return np.array([rng.choice([lo, hi, lo + 1, hi - 1, rng.randint(lo, hi)]) for _ in range(p.mem_elems)],
                        np.int64)
    return np.array([rng.randint(lo, hi) for _ in range(p.mem_elems)], np.int64)


def covered(cfg, k, p):
    """Element indices of C and of the buffer extent."""
    eb = p.eb
    c = {cfg.base_c // eb + i * cfg.ldc + j for i in range(cfg.M) for j in range(cfg.N)}
    b = G.extents(cfg, k, p)["BUF"]
    return c, set(range(b[0] // eb, b[1] // eb))


def check_job(cfg, mem, p):
    r = G.run(cfg, mem, p)
    assert r.err == 0, G.err_names(r.err)
    # values: gemm_ref, the triple loop, and the literal trace executor
    A = G.load_matrix(mem, cfg.base_a, cfg.M, cfg.K, cfg.lda, p)
    B = G.load_matrix(mem, cfg.base_b, cfg.K, cfg.N, cfg.ldb, p)
    C = G.load_matrix(r.mem, cfg.base_c, cfg.M, cfg.N, cfg.ldc, p)
    assert C.tolist() == G.gemm_ref(A, B, p, cfg.shift).tolist() == triple_loop(A.tolist(), B.tolist(), cfg.N, cfg.shift, p)
    ex, fmas = execute(r.trace, mem, p, cfg.shift)
    assert r.mem.tolist() == ex
    # only C and the buffer are written
    cset, bset = covered(cfg, r.kernel, p)
    outside = np.ones(p.mem_elems, bool)
    outside[list(cset | bset)] = False
    assert np.array_equal(r.mem[outside], mem[outside])
    # counters: the trace replayed on a fresh cache
    c = G.CacheSim(p.sets, p.ways, p.line)
    hits = c.replay(r.trace)
    assert np.array_equal(hits, r.hits)
    for i, name in enumerate(p.KINDS):
        assert r.counters[f"{name}_req"] == r.trace.count(i)
        assert (r.counters[f"{name}_lookups"], r.counters[f"{name}_hits"], r.counters[f"{name}_misses"]) == (
            c.lookups[i], c.hits[i], c.misses[i])
    assert r.counters["n_evict"] == c.evictions
    assert r.counters["n_fma"] == fmas
    assert r.counters["n_mem_wr"] == r.trace.count(COPY_WR) + r.trace.count(C_WR)
    sel = r.counters["sel_cycles"]
    assert r.cycles == r.counters["cycles"] == 1 + sel + c.n_lookups + p.miss_pen * c.n_misses
    assert list(r.counters) == list(p.COUNTERS) and len(p.COUNTERS) == 29
    return r


def test_copy_off_and_every_keep(seed):
    rng = random.Random(seed)
    mem = random_mem(P, rng)
    base = layout(13, 40, 37, P, m=6, z=2, shift=3)
    r0 = check_job(base, mem, P)
    assert r0.regs == {"SEL_M": 6, "SEL_Z": 2, "SEL_KEEP": 0 + 6 * 0 + base.keep, "SEL_PROG": G.NORMAL,
                       "DET_WORST": 0, "DET_KEEP": 0, "DET_FLAGS": 0}
    for keep in range(0, 7):
        r = check_job(base.with_(keep=keep, copy=True), mem, P)
        assert np.array_equal(G.load_matrix(r.mem, base.base_c, 13, 40, base.ldc, P),
                              G.load_matrix(r0.mem, base.base_c, 13, 40, base.ldc, P))
        assert r.regs["SEL_PROG"] == G.OVERFLOW_COPY and r.regs["SEL_KEEP"] == keep


def test_buffer_holds_the_last_blocks_rows(seed):
    rng = random.Random(seed + 1)
    mem = random_mem(P, rng)
    # M = 12 = 2 blocks of 6, K = 37 (tail of 5): the buffer holds rows 6+keep..11
    cfg = layout(12, 20, 37, P, m=6, z=1, keep=2, copy=True)
    r = check_job(cfg, mem, P)
    buf = cfg.base_buf // 4
    for q in range(3):
        for rr in range(4):
            for lane in range(16):
                k = q * 16 + lane
                got = r.mem[buf + (q * 4 + rr) * 16 + lane]
                assert got == (mem[(8 + rr) * cfg.lda + k] if k < 37 else mem[buf + (q * 4 + rr) * 16 + lane])
    # a 1-row tail block (M = 13) with keep 2 copies nothing: the slots keep block 1's rows
    r13 = check_job(cfg.with_(M=13), mem, P)
    assert np.array_equal(r13.mem[buf:buf + 3 * 4 * 16], r.mem[buf:buf + 3 * 4 * 16])
    # a 4-row tail block (M = 16): slots of rows 2, 3 from block 2, rows 4, 5 still from block 1
    r16 = check_job(cfg.with_(M=16), mem, P)
    assert r16.mem[buf + 0] == mem[14 * cfg.lda] and r16.mem[buf + 2 * 16] == mem[10 * cfg.lda]


def test_narrow_counters_wrap_and_the_duration_does_not(seed):
    """cnt_bits = 8: every counter is the 32-bit one modulo 2**8 (the job counts well past
    it: cycles, A_LD lookups), and the job's duration (done's cycle) is not wrapped."""
    rng = random.Random(seed + 5)
    mem = random_mem(P, rng)
    cfg = layout(13, 40, 37, P, m=6, z=2, keep=2, copy=True)
    p8 = GemmParams(**{**P.to_dict(), "cnt_bits": 8})
    wide, narrow = G.run(cfg, mem, P), G.run(cfg, mem, p8)
    assert wide.cycles > 255 and wide.counters["A_LD_lookups"] > 255
    assert narrow.counters == {n: v % 256 for n, v in wide.counters.items()}
    assert narrow.cycles == wide.cycles and np.array_equal(narrow.mem, wide.mem)
    refused = cfg.with_(M=0)
    assert G.run(refused, mem, p8).cycles == G.run(refused, mem, P).cycles


@pytest.mark.parametrize("p", [GemmParams(eb=1, accw=8, v=8, line=16), GemmParams(eb=2, accw=20),
                               GemmParams(eb=4, accw=64), GemmParams(eb=4, accw=63), GemmParams(eb=1, accw=33)])
def test_widths_wrap_and_saturate(p, seed):
    rng = random.Random(seed + 2)
    mem = random_mem(p, rng, extreme=True)
    m, z = p.candidates[1]
    for shift in (0, 1, p.accw - 1):
        check_job(layout(7, 2 * p.v + 3, 2 * p.v + 1, p, m=m, z=z, keep=1, copy=True, shift=shift), mem, p)


def test_gemm_ref_exact():
    p = GemmParams(eb=4, accw=64)
    big = (1 << 31) - 1
    A = np.array([[-(1 << 31)] * 8 + [big] * 3])
    B = np.array([[-(1 << 31)]] * 8 + [[big]] * 3)
    want = 8 * (1 << 62) + 3 * big * big  # > 2**64: wraps
    assert G.gemm_ref(A, B, p)[0, 0] == wrap_sat(want, 0, p)
    q = GemmParams(eb=1, accw=12)
    # -5 >> 1 = -3 (arithmetic); 2047 + 1 wraps to -2048; saturation to int8
    assert G.gemm_ref([[-5]], [[1]], q, 1).tolist() == [[-3]]
    assert G.gemm_ref([[127, 127, 127]], [[127], [127], [-127]], q).tolist() == [[wrap_sat(127 * 127, 0, q)]]
    assert G.gemm_ref([[100, 100]], [[100], [100]], q, 0).tolist() == [[wrap_sat(20000, 0, q)]]
    assert G.gemm_ref(np.zeros((3, 0), int), np.zeros((0, 2), int), q).tolist() == [[0, 0]] * 3
    with pytest.raises(ValueError):
        G.gemm_ref([[128]], [[1]], q)


def test_k_zero_writes_zeros_and_empty_jobs(seed):
    rng = random.Random(seed + 3)
    mem = random_mem(P, rng)
    cfg = layout(5, 20, 1, P, m=6, z=2, keep=0, copy=True).with_(K=0)
    r = check_job(cfg, mem, P)
    assert not G.load_matrix(r.mem, cfg.base_c, 5, 20, cfg.ldc, P).any()
    assert r.counters["C_WR_req"] == 5 * 2 and r.counters["n_fma"] == 0
    for M, N in ((0, 20), (5, 0)):
        r = G.run(cfg.with_(M=M, N=N, K=4), mem, P)
        assert r.err == 0 and len(r.trace) == 0 and np.array_equal(r.mem, mem)
        assert r.cycles == 1 and r.counters["cycles"] == 1 and sum(r.counters.values()) == 1


def test_refused_jobs_write_nothing(seed):
    rng = random.Random(seed + 4)
    mem = random_mem(P, rng)
    cfg = layout(13, 40, 37, P, m=6, z=2, keep=2, copy=True)
    for bad in (dict(buf_len=0), dict(lda=3), dict(z=3), dict(base_c=cfg.base_b)):
        r = G.run(cfg.with_(**bad), mem, P)
        assert r.err and np.array_equal(r.mem, mem) and len(r.trace) == 0 and r.regs is None
        assert r.cycles == 1 and {k for k, v in r.counters.items() if v} == {"cycles"}
    # auto mode: refused after the selection: done at 1 + sel_cycles
    r = G.run(cfg.with_(auto=True, buf_len=0, lda=1024, base_b=1 << 16, base_c=(1 << 16) + 8192,
                        base_buf=(1 << 16) + 16384), mem, P)
    assert r.err == G.ERR["OOB"] | G.ERR["BUF_OVF"]  # B is beyond the 64 KiB memory; (30, 1) copies
    assert r.cycles == 1 + 35 and r.counters["sel_cycles"] == 35 and r.selection.prog == G.OVERFLOW_COPY
    assert np.array_equal(r.mem, mem) and len(r.trace) == 0
    r = G.run(cfg.with_(auto=True, lda=3), mem, P)
    assert r.err == G.ERR["BAD_LD"] and r.cycles == 1 and r.counters["sel_cycles"] == 0


def test_auto_mode(seed):
    rng = random.Random(seed + 5)
    p = GemmParams(mem_aw=16)
    mem = random_mem(p, rng)
    cfg = layout(14, 64, 20, p, lda=1024, auto=True)   # N = 64: (30, 1) balanced, conflict: copy keep 6
    r = check_job(cfg, mem, p)
    s = G.select_kernel(64, 1024, 0, p)
    assert r.kernel == G.Kernel(G.OVERFLOW_COPY, 30, 1, 6, True) == G.Kernel(s.prog, s.m, s.z, s.keep, s.copy)
    assert r.counters["sel_cycles"] == s.sel_cycles == 35
    assert r.regs == {"SEL_M": 30, "SEL_Z": 1, "SEL_KEEP": 6, "SEL_PROG": G.OVERFLOW_COPY, "DET_WORST": 30,
                      "DET_KEEP": 6, "DET_FLAGS": 0b1111}
    r = check_job(cfg.with_(limit_m=True), mem, p)
    assert r.kernel == G.Kernel(G.NO_COPY, 2, 8, 2, False)   # pick(6): (2,8) and (6,4) 1 N-block each: tie
    assert r.kernel.m * r.kernel.z > p.l_hw


def test_warm_cache_persists_across_starts(seed):
    rng = random.Random(seed + 6)
    mem = random_mem(P, rng)
    cfg = layout(6, 16, 16, P, m=6, z=1, keep=6)
    cache = G.CacheSim(P.sets, P.ways, P.line)
    r1 = G.run(cfg, mem, P, cache)
    r2 = G.run(cfg, r1.mem, P, cache)
    miss = [sum(r.counters[f"{k}_misses"] for k in P.KINDS) for r in (r1, r2)]
    assert miss[0] > 0 and miss[1] == 0     # the whole job fits the cache
    assert r2.cycles == 1 + sum(r2.counters[f"{k}_lookups"] for k in P.KINDS)


def test_run_leaves_its_input_alone(seed):
    mem = random_mem(P, random.Random(seed + 7))
    keep = mem.copy()
    G.run(layout(4, 16, 16, P, m=2, z=8, keep=2), mem, P)
    assert np.array_equal(mem, keep)
    with pytest.raises(ValueError):
        G.run(layout(4, 16, 16, P, m=2, z=8, keep=2), mem[:-1], P)
