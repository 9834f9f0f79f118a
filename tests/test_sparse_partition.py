"""The balanced partitioner (docs/sparse.md section 3; spec 001 section 4.4).

balance_1d is checked move by move on vectors worked by hand; partition against the
properties spec 4.4 lists, with loads recounted directly from the map."""

from __future__ import annotations

import numpy as np
import pytest

from lockstep.models import sparse as S
from lockstep.models.sparse.params import SparseParams


def count(X: np.ndarray, cell, halo: int = 0) -> int:
    r0, r1, c0, c1 = cell
    return int(np.count_nonzero(X[r0:r1 + halo, c0:c1 + halo]))


# ---- balance_1d, by hand ----------------------------------------------------------

def test_moves_from_the_heavier_side():
    steps = []
    # [0,4,8]: S = [20, 0]; move 1 line (5) -> [15, 5]; move 1 line (5) -> [10, 10]
    assert S.balance_1d([5, 5, 5, 5, 0, 0, 0, 0], 2, 0, steps=steps) == ([0, 2, 8], True)
    assert steps == [[0, 3, 8], [0, 2, 8]]


def test_zero_lines_ride_along_and_threshold():
    # S = [1, 9]: the right side gives lines 4 (0) and 5 (3) -> [4, 6]; then a line of 3
    # would not improve |d| = 2, so it stops; 100*2*2 = 400 <= 50*10 is met at 50 %
    v = [1, 0, 0, 0, 0, 3, 3, 3]
    assert S.balance_1d(v, 2, 0) == ([0, 6, 8], False)
    assert S.balance_1d(v, 2, 50) == ([0, 6, 8], True)
    assert S.balance_1d(v, 2, 159) == ([0, 6, 8], True)  # 100*2*8 = 1600 > 1590: one move
    assert S.balance_1d(v, 2, 160) == ([0, 4, 8], True)  # 1600 <= 1600: the equal split


def test_no_move_when_delta_is_not_below_d():
    # S = [6, 2]: the fewest lines carrying a non-zero carry 6 >= 4: no move
    assert S.balance_1d([0, 0, 6, 0, 0, 0, 0, 2], 2, 0) == ([0, 4, 8], False)


def test_worst_pair_first_ties_to_lowest_k():
    # [0,2,4,6]: S = [8, 0, 8], pairs k=0 and k=1 tie at 8 -> k = 0 moves first
    assert S.balance_1d([4, 4, 0, 0, 4, 4], 3, 0) == ([0, 1, 4, 6], False)
    # [0,3,6,9]: S = [6, 0, 9]; the worst pair is k = 1 (9): [0,3,7,9], S = [6, 3, 6];
    # then no pair can improve
    steps = []
    assert S.balance_1d([3, 3, 0, 0, 0, 0, 3, 3, 3], 3, 0, steps=steps) == ([0, 3, 7, 9], False)
    assert steps == [[0, 3, 7, 9]]


def test_min_len():
    assert S.balance_1d([5, 5, 0, 0], 2, 0) == ([0, 1, 4], True)
    assert S.balance_1d([5, 5, 0, 0], 2, 0, min_len=2) == ([0, 2, 4], False)


def test_align():
    # units of 2 lines: [8, 8, 0, 0, 0]; [0,2,5] units = [0,4,10] lines; one unit moves
    steps = []
    assert S.balance_1d([4, 4, 4, 4, 0, 0, 0, 0, 0, 0], 2, 0, align=2, steps=steps) == ([0, 2, 10], True)
    assert steps == [[0, 2, 10]]
    b, _ = S.balance_1d([1] * 9, 2, 0, align=2)  # odd length: only the end is odd
    assert b[-1] == 9 and all(x % 2 == 0 for x in b[:-1])
    assert S.equal_split(9, 2, 2) == [0, 4, 9] and S.equal_split(10, 3) == [0, 3, 6, 10]


def test_total_zero_is_the_equal_split():
    assert S.balance_1d([0] * 7, 3, 0) == ([0, 2, 4, 7], True)


@pytest.mark.parametrize("args", [([1, 2, 3], 0, 5, {}), ([1, 2, 3], 4, 5, {}), ([1] * 5, 3, 5, {"min_len": 2}),
                                  ([1] * 8, 3, 5, {"align": 4}), ([1, -1, 2], 2, 5, {}), ([1, 2, 3], 2, -1, {})])
def test_balance_1d_errors(args):
    v, n, t, kw = args
    with pytest.raises(ValueError):
        S.balance_1d(v, n, t, **kw)


def test_every_move_lowers_the_sum_of_squares(seed):
    rng = np.random.default_rng(seed)
    moves = 0
    for _ in range(300):
        L = int(rng.integers(2, 40))
        n = int(rng.integers(1, min(L, 6) + 1))
        v = (rng.integers(0, 10, L) * (rng.random(L) < rng.random())).tolist()
        steps = []
        t = int(rng.integers(0, 30))
        b, met = S.balance_1d(v, n, t, steps=steps)
        seq = [S.equal_split(L, n)] + steps
        sums = [[sum(v[s[k]:s[k + 1]]) for k in range(n)] for s in seq]
        for before, after in zip(sums, sums[1:]):
            assert sum(x * x for x in after) < sum(x * x for x in before)
            assert max(after) <= max(before)
            moves += 1
        assert seq[-1] == b and b[0] == 0 and b[-1] == L
        assert all(b[k] < b[k + 1] for k in range(n))
        assert met == (100 * n * (max(sums[-1]) - min(sums[-1])) <= t * sum(v))
    assert moves > 100


# ---- partition ----------------------------------------------------------------------

def test_partition_properties(seed):
    rng = np.random.default_rng(seed + 1)
    for _ in range(150):
        H, W = (int(x) for x in rng.integers(4, 40, 2))
        R, C = int(rng.integers(1, min(H, 4) + 1)), int(rng.integers(1, min(W, 4) + 1))
        X = rng.random((H, W)) < rng.random() * rng.random((H, 1)) * rng.random((1, W)) * 2
        t = int(rng.integers(0, 20))
        pt = S.partition(X, R, C, t)
        cover = np.zeros((H, W), dtype=int)
        for r0, r1, c0, c1 in pt.cells:
            assert r1 > r0 and c1 > c0
            cover[r0:r1, c0:c1] += 1
        assert (cover == 1).all()  # disjoint and covering
        assert pt.loads == [count(X, c) for c in pt.cells]
        assert sum(pt.loads) == np.count_nonzero(X)  # NNZ preserved
        er, ec = S.equal_split(H, R), S.equal_split(W, C)
        assert pt.equal_loads == [count(X, (er[r], er[r + 1], ec[c], ec[c + 1])) for r in range(R) for c in range(C)]
        assert max(pt.loads) <= max(pt.equal_loads)  # never worse than the equal grid
        assert pt.met == (100 * R * C * (max(pt.loads) - min(pt.loads)) <= t * sum(pt.loads))
        bands = sorted({(r0, r1) for r0, r1, _, _ in pt.cells})
        assert len(bands) == R  # rows are bands, every band has C cells
        assert S.partition(X, R, C, t) == pt  # deterministic


def test_fallback_by_hand():
    # rows [1,1,1,1,2]: stage A moves the band boundary to 3, which puts 3 non-zeros in
    # column 0 of band 0; the equal grid's largest cell has 2 -> the equal grid is returned
    X = np.array([[1, 0], [1, 0], [1, 0], [0, 1], [1, 1]])
    pt = S.partition(X, 2, 2, 0)
    assert pt.fallback
    assert pt.cells == [(0, 2, 0, 1), (0, 2, 1, 2), (2, 5, 0, 1), (2, 5, 1, 2)]
    assert pt.loads == pt.equal_loads == [2, 0, 2, 2]
    assert pt.met is False


def test_zero_map_and_errors():
    pt = S.partition(np.zeros((6, 6)), 2, 3, 0)
    assert pt.met and not pt.fallback and pt.loads == [0] * 6
    assert pt.cells == [(0, 3, 0, 2), (0, 3, 2, 4), (0, 3, 4, 6), (3, 6, 0, 2), (3, 6, 2, 4), (3, 6, 4, 6)]
    for args, kw in [((7, 1), {}), ((1, 7), {}), ((4, 1), {"min_h": 2}), ((3, 2), {"align": 4}),
                     ((2, 2), {"halo": -1})]:
        with pytest.raises(ValueError):
            S.partition(np.ones((6, 6)), *args, 0, **kw)


def test_align_halo_and_cap():
    rng = np.random.default_rng(3)
    X = rng.random((21, 19)) < np.linspace(0.05, 0.9, 21)[:, None]
    pt = S.partition(X, 3, 2, 5, align=2, halo=2, cap=60)
    for r0, r1, c0, c1 in pt.cells:
        assert r0 % 2 == 0 and c0 % 2 == 0
        assert r1 % 2 == 0 or r1 == 21
        assert c1 % 2 == 0 or c1 == 19
    assert pt.loads == [count(X, c, halo=2) for c in pt.cells]
    assert pt.extended == [(r0, min(r1 + 2, 21), c0, min(c1 + 2, 19)) for r0, r1, c0, c1 in pt.cells]
    assert pt.over_cap == [i for i, x in enumerate(pt.loads) if x > 60]
    # halo loads by hand: an all-ones 4 x 4 map, 2 x 2 cells, halo 1 -> 3x3, 3x2, 2x3, 2x2
    pt = S.partition(np.ones((4, 4)), 2, 2, 0, halo=1, cap=5)
    assert pt.loads == [9, 6, 6, 4] and pt.over_cap == [0, 1, 2] and pt.met is False


def test_channel_stack_balances_the_summed_non_zeros(seed):
    """A C x H x W stack is partitioned once for all channels, on the summed non-zeros:
    the same cells as the balancer run on the per-line sums by hand, loads summed over
    the channels; a one-channel stack is the 2-D map."""
    rng = np.random.default_rng(seed + 7)
    for _ in range(40):
        H, W = (int(x) for x in rng.integers(4, 20, 2))
        C = int(rng.integers(2, 5))
        R, Cc = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        stack = np.stack([rng.random((H, W)) < rng.random() * rng.random((H, 1)) for _ in range(C)])
        t, halo = int(rng.integers(0, 20)), int(rng.integers(0, 3))
        pt = S.partition(stack, R, Cc, t, halo=halo)
        assert pt.loads == [sum(count(stack[c], cell, halo=halo) for c in range(C)) for cell in pt.cells]
        counts = stack.sum(axis=0)  # by hand: stage A on the row sums, stage B per band
        rb, _ = S.balance_1d(counts.sum(axis=1), R, t)
        cells = []
        for r in range(R):
            cb, _ = S.balance_1d(counts[rb[r]:rb[r + 1]].sum(axis=0), Cc, t)
            cells += [(rb[r], rb[r + 1], cb[c], cb[c + 1]) for c in range(Cc)]
        hand = [sum(count(stack[c], cell, halo=halo) for c in range(C)) for cell in cells]
        assert pt.fallback == (max(hand) > max(pt.equal_loads))
        er, ec = S.equal_split(H, R), S.equal_split(W, Cc)
        assert pt.cells == ([(er[r], er[r + 1], ec[c], ec[c + 1]) for r in range(R) for c in range(Cc)]
                            if pt.fallback else cells)
        assert S.partition(stack[:1], R, Cc, t, halo=halo) == S.partition(stack[0], R, Cc, t, halo=halo)
    with pytest.raises(ValueError):
        S.partition(np.ones((2, 2, 2, 2)), 1, 1, 0)


def skewed_map(rng, H: int, W: int) -> np.ndarray:
    """A sparse map with a dense hot spot and a density gradient (ReLU maps are like this)."""
    r, c = np.mgrid[0:H, 0:W]
    r0, c0 = rng.uniform(0, H), rng.uniform(0, W)
    s = rng.uniform(0.1, 0.4) * min(H, W)
    dens = 0.03 + 0.7 * np.exp(-((r - r0) ** 2 + (c - c0) ** 2) / (2 * s * s))
    dens *= np.linspace(rng.uniform(0.3, 1), rng.uniform(0.3, 1), W)[None, :]
    return rng.random((H, W)) < dens


def test_makespan_claim_on_skewed_maps():
    """Spec 001 4.4 prototype: mean makespan ratio balanced / equal 0.70 on 300 skewed maps."""
    params = SparseParams(p=4)
    rng = np.random.default_rng(1)
    ratios = []
    for _ in range(300):
        X = skewed_map(rng, 64, 64)
        pt = S.partition(X, 2, 2, 3)
        ratios.append(S.makespan(pt.loads, 9, params) / S.makespan(pt.equal_loads, 9, params))
    ratios = np.array(ratios)
    print(f"makespan balanced/equal over 300 skewed 64x64 maps, 2x2 cells: mean {ratios.mean():.3f}, "
          f"min {ratios.min():.3f}, max {ratios.max():.3f}")
    assert ratios.max() <= 1.0
    assert ratios.mean() < 0.85
