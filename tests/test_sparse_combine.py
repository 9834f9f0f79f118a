"""Combination and the cluster (docs/sparse.md section 6): overlap-add, halo stitch,
crops, the refusal of ReLU/pooling on partial sums, routing, depthwise separable.

References are independent numpy formulations (direct loops over the definition)."""

from __future__ import annotations

import numpy as np
import pytest

from lockstep.models import sparse as S
from lockstep.models.sparse.params import SparseParams
from lockstep.models.sparse import Cfg

BIG = SparseParams(hmax=64, wmax=64, kmax=5, ow=32, m=4)


def valid_loops(X: np.ndarray, Wk: np.ndarray) -> np.ndarray:
    """Valid cross-correlation: out[i, j] = sum_{a,b} X[i+a, j+b] * Wk[a, b]."""
    H, W = X.shape
    K = Wk.shape[0]
    out = np.zeros((max(H - K + 1, 0), max(W - K + 1, 0)), dtype=np.int64)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = int((X[i:i + K, j:j + K].astype(np.int64) * Wk).sum())
    return out


def pool_ref(v: np.ndarray, mode: str) -> np.ndarray:
    h, w = v.shape[0] // 2, v.shape[1] // 2
    out = np.zeros((h, w), dtype=np.int64)
    for i in range(h):
        for j in range(w):
            win = [int(v[2 * i + a, 2 * j + b]) for a in (0, 1) for b in (0, 1)]
            out[i, j] = max(win) if mode == "max" else sum(win) if mode == "sum" else sum(win) // 4
    return out


def rand_map(rng, H, W, d=0.4):
    return rng.integers(-128, 128, (H, W)) * (rng.random((H, W)) < d)


def cell_job(X, cell, Wk, cfg_kw, params=BIG):
    r0, r1, c0, c1 = cell
    sub = X[r0:r1, c0:c1]
    K = Wk.shape[0]
    return S.stu_job(Cfg(K, r1 - r0, c1 - c0, **cfg_kw), S.encode(sub, org=(r0, c0)).entries,
                     S.encode_weights(Wk, "snake"), params)


def test_crops():
    rng = np.random.default_rng(4)
    for K in (1, 2, 3, 5):
        X, Wk = rand_map(rng, 9, 7), rng.integers(-5, 6, (K, K))
        full = S.correlate_full(X, Wk)
        assert np.array_equal(S.valid(full, K), valid_loops(X, Wk))
        if K % 2:
            pad = (K - 1) // 2
            assert np.array_equal(S.same(full, K), valid_loops(np.pad(X, pad), Wk))


@pytest.mark.parametrize("K", [1, 2, 3, 5])
def test_overlap_add_of_uneven_cells(K, seed):
    rng = np.random.default_rng(seed + K)
    for _ in range(6):
        H, W = (int(x) for x in rng.integers(8, 40, 2))
        X = rand_map(rng, H, W, d=0.3) * (rng.random((H, 1)) < 0.8)
        Wk = rng.integers(-128, 128, (K, K)) * (rng.random((K, K)) < 0.7)
        pt = S.partition(X, 2, 3, 3)
        jobs = [cell_job(X, c, Wk, {"emit": 0}) for c in pt.cells]
        whole = S.correlate_full(X, Wk)
        assert np.array_equal(S.overlap_add(pt.cells, [j.acc for j in jobs], (H, W), K), whole)
        drained = [cell_job(X, c, Wk, {}) for c in pt.cells]
        assert np.array_equal(S.combine(pt.cells, drained, (H, W), K), whole)


@pytest.mark.parametrize("K", [1, 2, 3])
def test_halo_stitch_is_the_valid_correlation(K, seed):
    rng = np.random.default_rng(seed + 10 + K)
    for _ in range(6):
        H, W = (int(x) for x in rng.integers(K + 4, 30, 2))
        X, Wk = rand_map(rng, H, W), rng.integers(-128, 128, (K, K))
        pt = S.partition(X, 2, 2, 3, halo=K - 1)
        jobs = [cell_job(X, c, Wk, {}) for c in pt.extended]
        assert np.array_equal(S.combine(pt.cells, jobs, (H, W), K, mode="halo"), valid_loops(X, Wk))


@pytest.mark.parametrize("pool", ["max", "sum", "avg"])
def test_halo_stitch_with_relu_pool_shift(pool, seed):
    rng = np.random.default_rng(seed + 20)
    K, params = 3, SparseParams(hmax=64, wmax=64, ow=12)
    for _ in range(6):
        H, W = (int(x) for x in rng.integers(9, 30, 2))
        X, Wk = rand_map(rng, H, W), rng.integers(-128, 128, (K, K))
        pt = S.partition(X, 2, 2, 3, halo=K - 1, align=2)
        kw = {"relu": 1, "pool": pool, "shift": 6}
        jobs = [cell_job(X, c, Wk, kw, params) for c in pt.extended]
        got = S.combine(pt.cells, jobs, (H, W), K, mode="halo")
        want = np.clip(pool_ref(np.maximum(valid_loops(X, Wk), 0), pool) >> 6, -2048, 2047)
        assert np.array_equal(got, want)


def test_combine_refuses_relu_on_partial_sums():
    # Two cells split a 1 x 2 map between its columns; with K = 2 both cells feed the
    # outputs of column 1. A ReLU per cell clips a negative partial sum the other cell
    # would have cancelled.
    X = np.array([[3, 2]])
    Wk = np.array([[1, -2], [0, 0]])
    cells = [(0, 1, 0, 1), (0, 1, 1, 2)]
    whole = S.correlate_full(X, Wk)  # row 1: [-6, 3 - 4, 2] = [-6, -1, 2]
    assert whole[1].tolist() == [-6, -1, 2]
    relu_jobs = [cell_job(X, c, Wk, {"relu": 1}) for c in cells]
    with pytest.raises(ValueError, match="partial sum"):
        S.combine(cells, relu_jobs, (1, 2), 2)
    # what relu-before-combine would give, against relu-after-combine
    early = S.overlap_add(cells, [j.out for j in relu_jobs], (1, 2), 2)
    assert not np.array_equal(early, np.maximum(whole, 0))  # column 1: 3 + 0 != max(-1, 0)
    assert early[1, 1] == 3
    for kw in ({"pool": "max"}, {"shift": 1}):
        with pytest.raises(ValueError):
            S.combine(cells, [cell_job(X, c, Wk, kw) for c in cells], (1, 2), 2)
    with pytest.raises(ValueError, match="saturated"):  # int8 output of a partial sum
        S.combine([(0, 1, 0, 1)], [cell_job(np.array([[100]]), (0, 1, 0, 1), np.array([[100]]), {}, SparseParams())],
                  (1, 1), 1)


def test_halo_stitch_refuses_misaligned_pooling():
    X = np.ones((8, 8), dtype=int)
    cells = [(0, 3, 0, 8), (3, 8, 0, 8)]
    with pytest.raises(ValueError):
        S.halo_stitch(cells, [np.zeros((2, 5)), np.zeros((3, 5))], X.shape, 3, pooled=True)
    with pytest.raises(ValueError):
        S.halo_stitch([(0, 8, 0, 8)], [np.zeros((4, 4))], X.shape, 2, pooled=True)  # K-1 odd


def test_routing():
    assert S.route_units(None, 4) == [0, 1, 2, 3]
    assert S.route_units([1, 1, 1, 1], 4) == [1, 2, 3, 0]
    assert S.route_units([0, 1, 0, 1], 4) == [0, 2, 2, 0]
    with pytest.raises(ValueError):
        S.route_units([0, 2, 0, 0], 4)
    with pytest.raises(ValueError):
        S.route_units([0, 0], 4)


@pytest.mark.parametrize("route_sel", [None, [1, 1, 1, 1], [1, 0, 0, 1]])
def test_cluster_run(route_sel, seed):
    rng = np.random.default_rng(seed + 30)
    X, Wk = rand_map(rng, 16, 16), rng.integers(-128, 128, (3, 3))
    pt = S.partition(X, 2, 2, 3)
    ws = S.encode_weights(Wk)
    jobs = [(Cfg(3, r1 - r0, c1 - c0), S.encode(X[r0:r1, c0:c1]).entries) for r0, r1, c0, c1 in pt.cells]
    if route_sel == [1, 0, 0, 1]:  # memory units 0 and 1 both feed unit 1
        with pytest.raises(ValueError):
            S.cluster_run(jobs, ws, BIG, route_sel)
        jobs[1] = None
    run = S.cluster_run(jobs, ws, BIG, route_sel)
    route = S.route_units(route_sel, 4)
    for i, jb in enumerate(jobs):
        if jb is None:
            continue
        unit = run.units[route[i]]
        assert run.source[route[i]] == i
        r0, r1, c0, c1 = pt.cells[i]
        assert np.array_equal(unit.full, S.correlate_full(X[r0:r1, c0:c1], Wk))
    done = [j for j in run.units if j is not None]
    assert run.cluster_cycles == max(S.cycles(j) for j in done)
    assert run.makespan == max(j.cyc_compute for j in done)
    if route_sel is None:
        assert run.makespan == S.makespan(pt.loads, len(ws), BIG)


def full_loops(X: np.ndarray, Wk: np.ndarray) -> np.ndarray:
    """Full cross-correlation by loops: the valid one of X padded by K - 1 on every side."""
    K = Wk.shape[0]
    return valid_loops(np.pad(np.asarray(X, dtype=np.int64), K - 1), Wk)


@pytest.mark.parametrize("route_sel", [None, [1, 1, 1, 1], [0, 1, 1, 0]])
def test_cluster_run_channel_passes(route_sel, seed):
    """A C-channel convolution on one partition: emit = 0 passes keep each unit's
    accumulator (also through a cell that is empty in one channel, q = 0), the last pass
    drains sum_c correlate_full(X_c cell, Wk_c) per unit, and the units overlap-add to the
    whole map's sum; against explicit loops."""
    rng = np.random.default_rng(seed + 35)
    K = 3
    for C in (2, 3, 4):
        H, W = (int(x) for x in rng.integers(6, 14, 2))
        X = np.stack([rand_map(rng, H, W) for _ in range(C)])
        Wks = rng.integers(-128, 128, (C, K, K))
        n = 3 if route_sel == [0, 1, 1, 0] else 4  # memory units 0, 1, 2 -> units 0, 2, 3; unit 1 idle
        cells = S.partition(X, 1, 3, 5).cells if n == 3 else S.partition(X, 2, 2, 5).cells
        X[0][cells[1][0]:cells[1][1], cells[1][2]:cells[1][3]] = 0  # empty in the first channel
        X[C - 1][cells[0][0]:cells[0][1], cells[0][2]:cells[0][3]] = 0  # empty in the last (drain) channel
        route = S.route_units(route_sel, 4)
        acc, want = None, [np.zeros((r1 - r0 + K - 1, c1 - c0 + K - 1), dtype=np.int64) for r0, r1, c0, c1 in cells]
        for c in range(C):
            emit = int(c == C - 1)
            jobs = [(Cfg(K, r1 - r0, c1 - c0, emit=emit), S.encode(X[c][r0:r1, c0:c1]).entries)
                    for r0, r1, c0, c1 in cells]
            run = S.cluster_run(jobs, S.encode_weights(Wks[c], "snake"), BIG, route_sel, acc)
            for i, (r0, r1, c0, c1) in enumerate(cells):
                want[i] += full_loops(X[c][r0:r1, c0:c1], Wks[c])
                u = route[i]
                assert run.source[u] == i
                if emit:
                    assert np.array_equal(run.units[u].out, want[i]) and run.acc[u] is None
                    assert run.units[u].cyc_drain == want[i].size
                else:
                    assert run.units[u].out is None and run.units[u].out_entries == []
                    assert np.array_equal(run.acc[u], want[i]) if want[i].any() else run.acc[u] is None
            if n == 3:
                assert run.units[1] is None and run.acc[1] is None  # the unit nothing feeds
            acc = run.acc
        whole = sum(full_loops(X[c], Wks[c]) for c in range(C))
        outs = [run.units[route[i]].out for i in range(len(cells))]
        assert np.array_equal(S.overlap_add(cells, outs, (H, W), K), whole)


def test_cluster_run_keeps_the_accumulator_of_idle_and_refused_units():
    P = SparseParams(m=2, hmax=4, wmax=4)
    X, Wk = np.array([[1, 2], [3, 4]]), np.array([[1, -1], [2, 0]])
    ws = S.encode_weights(Wk)
    keep = (Cfg(2, 2, 2, emit=0), S.encode(X).entries)
    run = S.cluster_run([keep, None], ws, P)
    assert np.array_equal(run.acc[0], full_loops(X, Wk)) and run.acc[1] is None
    idle = S.cluster_run([None, keep], ws, P, acc=run.acc)  # unit 0 idle: keeps its sum
    assert np.array_equal(idle.acc[0], full_loops(X, Wk)) and np.array_equal(idle.acc[1], full_loops(X, Wk))
    empty = S.cluster_run([(Cfg(2, 2, 2, emit=0), []), None], ws, P, acc=idle.acc)  # q = 0
    assert empty.units[0].cyc_compute == 0 and np.array_equal(empty.acc[0], full_loops(X, Wk))
    refused = S.cluster_run([(Cfg(2, 5, 2, emit=0), []), None], ws, P, acc=idle.acc)  # H > hmax: CFG
    assert refused.units[0].errors == S.STU_ERR["CFG"] and np.array_equal(refused.acc[0], full_loops(X, Wk))
    last = S.cluster_run([(Cfg(2, 2, 2), S.encode(X).entries), None], ws, P, acc=empty.acc)
    assert np.array_equal(last.units[0].out, 2 * full_loops(X, Wk)) and last.acc[0] is None
    with pytest.raises(ValueError):  # a held sum of another footprint
        S.cluster_run([(Cfg(2, 1, 2), [(0, 0, 1)]), None], ws, P, acc=idle.acc)
    with pytest.raises(ValueError):
        S.cluster_run([keep, None], ws, P, acc=[None])
    other = S.cluster_run([(Cfg(1, 1, 1), [(0, 0, 1)]), None], S.encode_weights(np.array([[1]])), P, acc=last.acc)
    assert other.units[0].out.tolist() == [[1]]  # a cleared accumulator fits any footprint


def test_depthwise_separable(seed):
    rng = np.random.default_rng(seed + 40)
    params = SparseParams(ow=8, dw=8)
    for K, C, N, sd, sp in [(3, 3, 4, 5, 7), (2, 2, 5, 4, 6), (1, 4, 2, 0, 8)]:
        H, W = 6, 5
        X = np.stack([rand_map(rng, H, W, d=0.5) for _ in range(C)])
        Wd = rng.integers(-128, 128, (C, K, K))
        Wp = rng.integers(-128, 128, (N, C))
        got = S.depthwise_separable(X, Wd, Wp, params, shift_dw=sd, shift_pw=sp)
        # reference: per-channel correlation by loops, requantise, 1x1 combination, ReLU
        Z = np.stack([np.clip(valid_loops(np.pad(X[c], K - 1), Wd[c]) >> sd, -128, 127)
                      for c in range(C)])
        Y = np.einsum("nc,chw->nhw", Wp, Z)
        want = np.clip(np.maximum(Y, 0) >> sp, -128, 127)
        assert got.shape == (N, H + K - 1, W + K - 1)
        assert np.array_equal(got, want)
        assert (got >= 0).all()
