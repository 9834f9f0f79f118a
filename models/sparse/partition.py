"""The host-side balanced partitioner (docs/sparse.md section 3; spec 001 section 4.4).

Deterministic and integer-only. :func:`balance_1d` is the spec's greedy over line
counts; :func:`partition` applies it to row bands (stage A), then to the columns of each
band (stage B), and never returns a partition whose largest load exceeds the equal
grid's.

Decisions where the contract is silent (written into docs/sparse.md section 3):

* ``align``: the lines are grouped into units of ``align`` lines (the last unit may be
  shorter); the equal split and every move work on units, so every boundary but the
  map's end is a multiple of ``align``. The equal grid is that aligned equal split.
  ``min_len`` still counts lines. An equal split with a segment shorter than
  ``min_len`` lines raises ``ValueError`` (too many segments).
* ``loads`` are the workload of each unit: the non-zeros of the cell extended by
  ``halo``. The fallback and ``met`` are judged on these loads (and ``equal_loads`` on
  the equal grid's with the same halo); the balancing itself uses the cells' own
  line counts.
* A ``C x H x W`` stack of channel maps is partitioned once for all channels: each
  position counts its non-zero channels, so the line counts and ``loads`` are the
  summed non-zeros of a channel sequence (one cell per unit for every channel).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Partition", "balance_1d", "equal_split", "partition"]

Cell = tuple[int, int, int, int]  # (r0, r1, c0, c1), half-open


@dataclass
class Partition:
    """The result of :func:`partition`.

    Attributes:
        cells: ``(r0, r1, c0, c1)`` half-open; unit index ``i = r*C + c``.
        met: ``100*R*C*(max(loads) - min(loads)) <= t_pct*sum(loads)``.
        loads: non-zeros of each cell (of its halo extension when ``halo > 0``).
        equal_loads: the same for the equal grid.
        fallback: the equal grid was returned (the balanced one had a larger maximum).
        over_cap: unit indices whose load exceeds ``cap``.
        halo: the halo the cells were extended by.
        shape: ``(H, W)`` of the map.
    """

    cells: list[Cell]
    met: bool
    loads: list[int]
    equal_loads: list[int]
    fallback: bool
    over_cap: list[int]
    halo: int
    shape: tuple[int, int]

    @property
    def extended(self) -> list[Cell]:
        """The cells extended by ``halo`` rows below and columns to the right (clipped)."""
        H, W = self.shape
        return [(r0, min(r1 + self.halo, H), c0, min(c1 + self.halo, W)) for r0, r1, c0, c1 in self.cells]


def equal_split(L: int, n: int, align: int = 1) -> list[int]:
    """Boundaries ``b[0..n]`` of the equal split of ``L`` lines in units of ``align``:
    ``b[k] = min(((k*U)//n) * align, L)`` with ``U = ceil(L/align)``."""
    return [min(x * align, L) for x in _unit_split(-(-L // align), n)]


def _unit_split(U: int, n: int) -> list[int]:
    """The equal split of ``U`` units into ``n`` segments: ``(k*U)//n``."""
    return [(k * U) // n for k in range(n + 1)]


def balance_1d(v: Sequence[int], n: int, t_pct: int, min_len: int = 1, *, align: int = 1,
               steps: list[list[int]] | None = None) -> tuple[list[int], bool]:
    """Split lines into ``n`` contiguous segments of similar non-zero count.

    Starts from :func:`equal_split`. While the segments are not balanced
    (``100*n*(max S - min S) <= t_pct * sum S``), it tries the adjacent pairs from the
    largest ``|S[k] - S[k+1]|`` down (ties: lowest ``k``) and accepts the first move of
    the fewest whole units carrying a non-zero from the heavier side whose transferred
    count ``delta`` satisfies ``0 < delta < |d|``; it stops when none is accepted.

    Args:
        v: non-negative count of each line.
        n: segments.
        t_pct: threshold in percent (``>= 0``).
        min_len: fewest lines per segment.
        align: boundaries are multiples of ``align`` (except the end); moves are whole
            units of ``align`` lines.
        steps: if a list, the boundaries after each accepted move are appended to it.

    Returns:
        ``(b, met)``: boundaries ``b[0] = 0 < ... < b[n] = len(v)`` and whether the
        threshold was met.

    Raises:
        ValueError: on ``n < 1``, ``min_len < 1``, ``align < 1``, ``t_pct < 0``, a
            negative count, or more segments than ``min_len``/``align`` allow.
    """
    v = [int(x) for x in v]
    L = len(v)
    if n < 1 or min_len < 1 or align < 1 or t_pct < 0 or any(x < 0 for x in v):
        raise ValueError(f"balance_1d: bad arguments n={n}, min_len={min_len}, align={align}, t_pct={t_pct}")
    U = -(-L // align)
    vu = [sum(v[j * align:(j + 1) * align]) for j in range(U)]

    def lines(u0: int, u1: int) -> int:
        return min(u1 * align, L) - u0 * align

    b = _unit_split(U, n)  # in units
    if any(lines(b[k], b[k + 1]) < min_len for k in range(n)):
        raise ValueError(f"balance_1d: {n} segments of >= {min_len} lines (align {align}) do not fit {L} lines")
    tot = sum(vu)
    while True:
        S = [sum(vu[b[k]:b[k + 1]]) for k in range(n)]
        if 100 * n * (max(S) - min(S)) <= t_pct * tot:
            return [min(x * align, L) for x in b], True
        moved = False
        for k in sorted(range(n - 1), key=lambda k: (-abs(S[k] - S[k + 1]), k)):
            d = S[k] - S[k + 1]
            if d == 0:
                continue
            t = delta = 0  # the fewest units with delta > 0 (zero units ride along)
            while delta == 0:
                t += 1
                if d > 0:  # left heavier: the boundary moves left
                    if lines(b[k], b[k + 1] - t) < min_len:
                        break
                    delta += vu[b[k + 1] - t]
                else:  # right heavier: the boundary moves right
                    if lines(b[k + 1] + t, b[k + 2]) < min_len:
                        break
                    delta += vu[b[k + 1] + t - 1]
            if 0 < delta < abs(d):  # strict improvement only, so the loop terminates
                b[k + 1] += -t if d > 0 else t
                moved = True
                if steps is not None:
                    steps.append([min(x * align, L) for x in b])
                break
        if not moved:
            return [min(x * align, L) for x in b], False


def _loads(ii: np.ndarray, cells: list[Cell], halo: int) -> list[int]:
    """Non-zeros of each cell extended by ``halo`` (``ii`` is the padded integral image)."""
    H, W = ii.shape[0] - 1, ii.shape[1] - 1
    out = []
    for r0, r1, c0, c1 in cells:
        r1, c1 = min(r1 + halo, H), min(c1 + halo, W)
        out.append(int(ii[r1, c1] - ii[r0, c1] - ii[r1, c0] + ii[r0, c0]))
    return out


def partition(X: np.ndarray, R: int, C: int, t_pct: int, *, min_h: int = 1, min_w: int = 1, align: int = 1,
              halo: int = 0, cap: int | None = None) -> Partition:
    """Partition a map into ``R x C`` cells of balanced non-zero count.

    Args:
        X: the 2-D map (non-zero entries count), or a ``C x H x W`` stack of channel
            maps (each position counts its non-zero channels: the summed load).
        R: row bands.
        C: cells per band.
        t_pct: threshold in percent.
        min_h: fewest rows per cell.
        min_w: fewest columns per cell.
        align: boundaries are multiples of ``align`` (e.g. 2 for fused pooling).
        halo: rows and columns each cell is extended by (``K - 1`` for halo stitching).
        cap: the memory unit's depth; cells whose load exceeds it are listed in
            ``over_cap``.

    Returns:
        The :class:`Partition`.

    Raises:
        ValueError: on a map that is neither 2-D nor a 3-D stack, ``R > H``, ``C > W``, too many segments for
            ``min_h``/``min_w``/``align``, a negative ``halo`` or ``cap``.
    """
    nz = np.asarray(X) != 0
    if nz.ndim not in (2, 3):
        raise ValueError(f"partition: need a 2-D map or a C x H x W stack, got shape {nz.shape}")
    nzi = nz.sum(axis=0, dtype=np.int64) if nz.ndim == 3 else nz.astype(np.int64)
    H, W = nzi.shape
    if R > H or C > W or halo < 0 or (cap is not None and cap < 0):
        raise ValueError(f"partition: R={R}, C={C} on a {H} x {W} map, halo={halo}, cap={cap}")
    rb, _ = balance_1d(nzi.sum(axis=1), R, t_pct, min_h, align=align)  # stage A: row bands
    cells = []
    for r in range(R):  # stage B: the columns of each band
        cb, _ = balance_1d(nzi[rb[r]:rb[r + 1]].sum(axis=0), C, t_pct, min_w, align=align)
        cells += [(rb[r], rb[r + 1], cb[c], cb[c + 1]) for c in range(C)]
    er, ec = equal_split(H, R, align), equal_split(W, C, align)
    equal = [(er[r], er[r + 1], ec[c], ec[c + 1]) for r in range(R) for c in range(C)]
    ii = np.zeros((H + 1, W + 1), dtype=np.int64)
    ii[1:, 1:] = nzi.cumsum(axis=0).cumsum(axis=1)
    loads, equal_loads = _loads(ii, cells, halo), _loads(ii, equal, halo)
    fallback = max(loads) > max(equal_loads)
    if fallback:
        cells, loads = equal, equal_loads
    met = 100 * R * C * (max(loads) - min(loads)) <= t_pct * sum(loads)
    over = [] if cap is None else [i for i, x in enumerate(loads) if x > cap]
    return Partition(cells, met, loads, equal_loads, fallback, over, halo, (H, W))
