"""The access trace (docs/gemm.md section 4): a hand-written list for a tiny job, request
counts by closed-form formulas, tails, empty dimensions, and a literal transliteration
of the section's loop nest (one Python step per request) on random small jobs."""

from __future__ import annotations

import random
from math import ceil

import pytest

from lockstep.models import gemm as G
from lockstep.models.gemm.params import GemmParams
from lockstep.models.gemm import A_LD, B_LD, BUF_LD, C_WR, COPY_RD, COPY_WR

P = GemmParams()


def literal_trace(M, N, K, lda, ldb, ldc, ba, bb, bc, bbuf, m, z, keep, copy, p):
    """Section 4's pseudo-code, line by line."""
    V, eb = p.v, p.eb
    out = []

    def slot(k0, r):
        return ((k0 // V) * (m - keep) + (r - keep)) * V

    for m0 in range(0, M, m):
        mb = min(m, M - m0)
        kp = min(keep, mb) if copy else mb
        for n0 in range(0, N, z * V):
            zb = ceil(min(z * V, N - n0) / V)
            nb = [min(V, N - n0 - j * V) for j in range(zb)]
            for k0 in range(0, K, V):
                kb = min(V, K - k0)
                if copy and n0 == 0:
                    for r in range(kp, mb):
                        out.append((COPY_RD, ba + ((m0 + r) * lda + k0) * eb, kb * eb))
                        out.append((COPY_WR, bbuf + slot(k0, r) * eb, kb * eb))
                for kk in range(kb):
                    for j in range(zb):
                        out.append((B_LD, bb + ((k0 + kk) * ldb + n0 + j * V) * eb, nb[j] * eb))
                    for r in range(mb):
                        if r < kp:
                            out.append((A_LD, ba + ((m0 + r) * lda + k0 + kk) * eb, eb))
                        else:
                            out.append((BUF_LD, bbuf + (slot(k0, r) + kk) * eb, eb))
            for r in range(mb):
                for j in range(zb):
                    out.append((C_WR, bc + ((m0 + r) * ldc + n0 + j * V) * eb, nb[j] * eb))
    return out


# ---- the hand-worked job: M = 3, N = V+1 = 5, K = 2, m = 2, z = 1, keep = 1, copy ----------
TINY = GemmParams(v=4, eb=2, line=8)
TINY_CFG = G.GemmCfg(M=3, N=5, K=2, lda=8, ldb=8, ldc=8, base_a=0, base_b=100, base_c=200, base_buf=300,
                     buf_len=8, m=2, z=1, keep=1, copy=True)
TINY_COPY = [
    # m0 = 0 (rows 0, 1; row 1 copied), n0 = 0 (4 lanes), k0 = 0 (kb = 2)
    (COPY_RD, 16, 4), (COPY_WR, 300, 4),          # A[1][0..2) -> buf[0..2)
    (B_LD, 100, 8), (A_LD, 0, 2), (BUF_LD, 300, 2),    # kk = 0
    (B_LD, 116, 8), (A_LD, 2, 2), (BUF_LD, 302, 2),    # kk = 1
    (C_WR, 200, 8), (C_WR, 216, 8),
    # m0 = 0, n0 = 4 (1 lane): no copy
    (B_LD, 108, 2), (A_LD, 0, 2), (BUF_LD, 300, 2),
    (B_LD, 124, 2), (A_LD, 2, 2), (BUF_LD, 302, 2),
    (C_WR, 208, 2), (C_WR, 224, 2),
    # m0 = 2 (row 2 only, in place: kp = min(1, 1) = 1)
    (B_LD, 100, 8), (A_LD, 32, 2), (B_LD, 116, 8), (A_LD, 34, 2), (C_WR, 232, 8),
    (B_LD, 108, 2), (A_LD, 32, 2), (B_LD, 124, 2), (A_LD, 34, 2), (C_WR, 240, 2),
]
TINY_NOCOPY = [
    (B_LD, 100, 8), (A_LD, 0, 2), (A_LD, 16, 2),
    (B_LD, 116, 8), (A_LD, 2, 2), (A_LD, 18, 2),
    (C_WR, 200, 8), (C_WR, 216, 8),
    (B_LD, 108, 2), (A_LD, 0, 2), (A_LD, 16, 2),
    (B_LD, 124, 2), (A_LD, 2, 2), (A_LD, 18, 2),
    (C_WR, 208, 2), (C_WR, 224, 2),
] + TINY_COPY[18:]


def test_tiny_hand_worked():
    assert G.check_cfg(TINY_CFG, TINY) == 0
    assert G.gen_trace(TINY_CFG, TINY).tolist() == TINY_COPY
    assert G.gen_trace(TINY_CFG.with_(copy=False), TINY).tolist() == TINY_NOCOPY
    # keep = m with copy on copies nothing: the no-copy trace
    assert G.gen_trace(TINY_CFG.with_(keep=2), TINY).tolist() == TINY_NOCOPY


def test_literal_matches_the_hand_list():
    c = TINY_CFG
    assert literal_trace(c.M, c.N, c.K, c.lda, c.ldb, c.ldc, c.base_a, c.base_b, c.base_c, c.base_buf,
                         c.m, c.z, c.keep, c.copy, TINY) == TINY_COPY


def expected_counts(M, N, K, m, z, keep, copy, p):
    """Request counts and bytes per kind, derived by hand from the loop nest."""
    V, eb = p.v, p.eb
    nmb, nnb = ceil(M / m), ceil(N / (z * V))
    mbs = [min(m, M - m0) for m0 in range(0, M, m)]
    copied = sum(mb - min(keep, mb) for mb in mbs) if copy else 0
    kblk = ceil(K / V)
    live = M > 0 and N > 0
    return {
        A_LD: ((M - copied) * K * nnb, (M - copied) * K * nnb * eb),
        BUF_LD: (copied * K * nnb, copied * K * nnb * eb),
        B_LD: (nmb * K * ceil(N / V), nmb * K * N * eb),
        COPY_RD: (copied * kblk if live else 0, copied * K * eb if live else 0),
        COPY_WR: (copied * kblk if live else 0, copied * K * eb if live else 0),
        C_WR: (M * ceil(N / V), M * N * eb),
    }


SHAPES = [(1, 1, 1), (6, 64, 16), (7, 65, 17), (13, 40, 33), (28, 129, 5), (5, 16, 48), (30, 200, 31),
          (3, 17, 0), (0, 40, 16), (9, 0, 16), (14, 31, 16)]


@pytest.mark.parametrize("M,N,K", SHAPES)
def test_counts_by_formula(M, N, K):
    for m, z in P.candidates + ((7, 2), (1, 1)):
        for keep, copy in ((m, False), (0, True), (min(m, 6), True), (m, True), (m // 2, True)):
            tr = G.build_trace(M, N, K, max(K, 1) + 3, N + 5, N + 7, 0, 1 << 20, 1 << 21, 1 << 22, m, z, keep, copy, P)
            exp = expected_counts(M, N, K, m, z, keep, copy, P)
            for kind, (n, nbytes) in exp.items():
                sel = tr.kind == kind
                assert int(sel.sum()) == n, (M, N, K, m, z, keep, copy, P.KINDS[kind])
                assert int(tr.nbytes[sel].sum()) == nbytes, (M, N, K, m, z, keep, copy, P.KINDS[kind])
            assert len(tr) == sum(v[0] for v in exp.values())


def test_random_jobs_match_the_literal_loop_nest(seed):
    rng = random.Random(seed)
    geoms = [P, TINY, GemmParams(eb=1, v=8, line=32), GemmParams(eb=2, v=32)]
    for _ in range(40):
        p = rng.choice(geoms)
        m, z = rng.choice(p.candidates + ((3, 2), (1, 1), (5, 4)))
        M, N, K = rng.randrange(0, 3 * m + 2), rng.randrange(0, 3 * z * p.v + 3), rng.randrange(0, 3 * p.v + 3)
        keep, copy = rng.randrange(0, m + 1), rng.random() < 0.6
        lda, ldb, ldc = K + rng.randrange(0, 40), N + rng.randrange(0, 40), N + rng.randrange(0, 40)
        bases = [rng.randrange(0, 1 << 16) * p.eb for _ in range(4)]
        got = G.build_trace(M, N, K, lda, ldb, ldc, *bases, m, z, keep, copy, p).tolist()
        assert got == literal_trace(M, N, K, lda, ldb, ldc, *bases, m, z, keep, copy, p), (M, N, K, m, z, keep, copy)


def test_tails_lanes_and_rows():
    """M % m, N % (zV), K % V: M = 7, m = 3; N = 2*16 + 3 = 35, z = 2; K = 16 + 2."""
    tr = G.build_trace(7, 35, 18, 18, 35, 35, 0, 4096, 8192, 12288, 3, 2, 3, False, P)
    b = tr.nbytes[tr.kind == B_LD].tolist()
    # per (m0, n0=0) block: 18 steps of two full vectors; n0 = 32: 18 steps of one 3-lane vector
    assert b == ([64, 64] * 18 + [12] * 18) * 3
    c = [(a, n) for k, a, n in tr.tolist() if k == C_WR]
    # rows 0..2 of block 0 (n0 = 0): vectors at j*16 then the 3-lane tail block
    assert c[:6] == [(8192 + (r * 35 + 16 * j) * 4, 64) for r in range(3) for j in range(2)]
    assert c[6:9] == [(8192 + (r * 35 + 32) * 4, 12) for r in range(3)]
    assert c[-1] == (8192 + (6 * 35 + 32) * 4, 12)  # the last row (the 1-row tail block)
    # K tail with copy: the copy of k0 = 16 moves kb = 2 elements
    tr = G.build_trace(7, 35, 18, 18, 35, 35, 0, 4096, 8192, 12288, 3, 2, 1, True, P)
    cp = [(k, a, n) for k, a, n in tr.tolist() if k in (COPY_RD, COPY_WR)]
    # m0 = 0: rows 1, 2 at k0 = 0 (64 B) then k0 = 16 (8 B); slots ((k0/V)*2 + r-1)*16
    assert cp[:8] == [(COPY_RD, (1 * 18) * 4, 64), (COPY_WR, 12288, 64),
                      (COPY_RD, (2 * 18) * 4, 64), (COPY_WR, 12288 + 64, 64),
                      (COPY_RD, (1 * 18 + 16) * 4, 8), (COPY_WR, 12288 + 128, 8),
                      (COPY_RD, (2 * 18 + 16) * 4, 8), (COPY_WR, 12288 + 192, 8)]
    # m0 = 6: one row, kept in place (kp = min(1, 1)): no copy
    assert len(cp) == 2 * 2 * 2 * 2


def test_k_zero_writes_only_c():
    tr = G.build_trace(5, 20, 0, 1, 20, 24, 0, 4096, 8192, 12288, 2, 1, 0, True, P)
    assert tr.tolist() == [(C_WR, 8192 + (r * 24 + n0) * 4, min(16, 20 - n0) * 4)
                           for m0 in range(0, 5, 2) for n0 in (0, 16) for r in range(m0, min(m0 + 2, 5))]


def test_empty_jobs():
    for M, N in ((0, 16), (4, 0), (0, 0)):
        assert len(G.build_trace(M, N, 16, 16, 16, 16, 0, 4096, 8192, 12288, 6, 4, 0, True, P)) == 0


def test_copy_keep_zero_and_keep_m():
    """keep = 0 copies every row (classic packing): no A_LD at all; keep = m is no-copy."""
    args = (12, 64, 32, 32, 64, 64, 0, 4096, 8192, 16384)
    full = G.build_trace(*args, 6, 4, 0, True, P)
    assert full.count(A_LD) == 0 and full.count(BUF_LD) == 12 * 32
    assert full.count(COPY_RD) == 12 * 2
    assert G.build_trace(*args, 6, 4, 6, True, P) == G.build_trace(*args, 6, 4, 6, False, P)
    # rows are read from the buffer with stride V: slot(k0, r) = ((k0/16)*6 + r)*16
    rd = [a for k, a, n in full.tolist() if k == BUF_LD][:6]
    assert rd == [16384 + r * 16 * 4 for r in range(6)]


def test_auto_mode_uses_the_selection_and_refused_is_empty():
    big = GemmParams(mem_aw=18)
    cfg = G.GemmCfg(M=28, N=128, K=32, lda=1024, ldb=128, ldc=128, base_a=0, base_b=1 << 17, base_c=(1 << 17) + 16384,
                    base_buf=(1 << 19) + 2048, buf_len=4096, auto=True)
    s = G.select_kernel(128, 1024, 0, big)
    assert (s.prog, s.m, s.z, s.keep) == (G.OVERFLOW_COPY, 14, 2, 6)
    assert G.gen_trace(cfg, big) == G.build_trace(28, 128, 32, 1024, 128, 128, 0, 1 << 17, (1 << 17) + 16384,
                                                  (1 << 19) + 2048, 14, 2, 6, True, big)
    assert len(G.gen_trace(cfg.with_(buf_len=100), big)) == 0          # BUF_OVF
    assert len(G.gen_trace(cfg.with_(lda=10), big)) == 0               # BAD_LD


def test_lookups_expand_lines_in_order():
    t = G.Trace.from_list([(B_LD, 60, 8), (A_LD, 64, 4), (C_WR, 0, 192)])
    lines, kinds = t.lookups(64)
    assert lines.tolist() == [0, 1, 1, 0, 1, 2]
    assert kinds.tolist() == [B_LD, B_LD, A_LD, C_WR, C_WR, C_WR]
