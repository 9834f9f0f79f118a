"""Combining the cells' results and the cluster (docs/sparse.md section 6): overlap-add,
halo stitching, crops, the ``route_sel`` mapping, the makespan, and the
depthwise-separable flow.

Decisions where the contract is silent (written into docs/sparse.md section 6):

* ``same(full, K)`` starts at ``(K-1)//2`` (the pad ``(K-1)/2`` convention for odd K).
* Halo stitching takes each unit's drained footprint, keeps its valid part (from
  ``K-1``; with pooling from ``(K-1)/2``, which needs an even ``K-1`` and even cell
  origins) and places it at the cell's origin in the valid map ``(H-K+1) x (W-K+1)``
  (pooled: half of it, floor).
* In overlap-add mode :func:`combine` refuses ``relu``, pooling and ``shift != 0`` (all
  wrong on partial sums) and a drained partial sum that saturated at ``ow`` bits.
* Cluster: memory unit ``i`` feeds unit ``i`` (``route_sel[i] = 0``) or ``(i+1) mod m``
  (``1``); two memory units with a job routed to one unit are refused.
* Channel passes: the accumulators belong to the units (the STUs), not to the memory
  units. :func:`cluster_run` takes each unit's accumulator before the pass and returns
  it after (``ClusterRun.acc``); a unit no job is routed to keeps its own, and so does
  every unit of a refused pass (the caller keeps the state when ``cluster_run`` raises).
  An all-zero accumulator is ``None`` and fits a job of any footprint.
* :func:`depthwise_separable` returns the full footprint ``(H+K-1) x (W+K-1)`` of every
  output channel: ``Y[n] = sat(relu(sum_c Wp[n, c] * Z[c]) >> shift_pw)`` with
  ``Z[c] = sat(correlate_full(X[c], Wd[c]) >> shift_dw)`` (``sat`` to ``ow`` bits; the
  intermediates must fit ``dw`` bits, they are the pointwise jobs' data).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .params import SparseParams
from .format import encode, encode_weights
from .partition import Cell
from .stu import FC, Cfg, Job, cycles, stu_job

__all__ = [
    "ClusterRun",
    "cluster_run",
    "combine",
    "depthwise_separable",
    "halo_stitch",
    "makespan",
    "overlap_add",
    "route_units",
    "same",
    "valid",
]


def valid(full: np.ndarray, K: int) -> np.ndarray:
    """The valid correlation ``full[K-1:H, K-1:W]`` of a full ``(H+K-1) x (W+K-1)`` one."""
    full = np.asarray(full)
    return full[K - 1:full.shape[0] - K + 1, K - 1:full.shape[1] - K + 1]


def same(full: np.ndarray, K: int) -> np.ndarray:
    """The ``H x W`` 'same' correlation: rows and columns from ``(K-1)//2``."""
    full = np.asarray(full)
    s = (K - 1) // 2
    return full[s:s + full.shape[0] - K + 1, s:s + full.shape[1] - K + 1]


def overlap_add(cells: Sequence[Cell], maps: Sequence[np.ndarray], shape: tuple[int, int], K: int) -> np.ndarray:
    """``full[r0:r1+K-1, c0:c1+K-1] += maps[i]`` over non-overlapping cells.

    Args:
        cells: ``(r0, r1, c0, c1)`` of each cell.
        maps: each cell's full correlation (or partial sums), ``(r1-r0+K-1) x (c1-c0+K-1)``.
        shape: ``(H, W)`` of the whole map.
        K: kernel size.

    Returns:
        The ``(H+K-1) x (W+K-1)`` int64 sum.

    Raises:
        ValueError: on a map of the wrong shape.
    """
    H, W = shape
    full = np.zeros((H + K - 1, W + K - 1), dtype=np.int64)
    for (r0, r1, c0, c1), m in zip(cells, maps, strict=True):
        m, want = np.asarray(m, dtype=np.int64), (r1 - r0 + K - 1, c1 - c0 + K - 1)
        if m.shape != want:
            raise ValueError(f"overlap_add: cell {(r0, r1, c0, c1)} needs a {want} map, got {m.shape}")
        full[r0:r1 + K - 1, c0:c1 + K - 1] += m
    return full


def halo_stitch(cells: Sequence[Cell], maps: Sequence[np.ndarray], shape: tuple[int, int], K: int,
                pooled: bool = False) -> np.ndarray:
    """Place each unit's valid result at its cell's origin.

    Args:
        cells: ``(r0, r1, c0, c1)`` of each (non-extended) cell.
        maps: each unit's drained footprint of its cell extended by ``K - 1`` rows and
            columns (clipped at the map's edge); halved by 2x2 pooling if ``pooled``.
        shape: ``(H, W)`` of the whole map.
        K: kernel size.
        pooled: the units pooled 2x2.

    Returns:
        The valid map ``(H-K+1) x (W-K+1)`` (halved, floor, if ``pooled``).

    Raises:
        ValueError: if ``pooled`` and ``K-1`` or a cell origin is odd, or a map is too small.
    """
    H, W = shape
    f = 2 if pooled else 1
    off = (K - 1) // f
    if pooled and ((K - 1) % 2 or any(r0 % 2 or c0 % 2 for r0, _, c0, _ in cells)):
        raise ValueError("halo_stitch: pooling needs an even K-1 and even cell origins (align = 2)")
    out = np.zeros((max(H - K + 1, 0) // f, max(W - K + 1, 0) // f), dtype=np.int64)
    for (r0, r1, c0, c1), m in zip(cells, maps, strict=True):
        m = np.asarray(m)
        vh = min(r1, H - K + 1) - r0  # the cell's own valid rows
        vw = min(c1, W - K + 1) - c0
        if vh <= 0 or vw <= 0:
            continue
        nh, nw = min(vh // f, out.shape[0] - r0 // f), min(vw // f, out.shape[1] - c0 // f)
        if m.shape[0] < off + nh or m.shape[1] < off + nw:
            raise ValueError(f"halo_stitch: the map of cell {(r0, r1, c0, c1)} is too small: {m.shape}")
        out[r0 // f:r0 // f + nh, c0 // f:c0 // f + nw] = m[off:off + nh, off:off + nw]
    return out


def combine(cells: Sequence[Cell], jobs: Sequence[Job], shape: tuple[int, int], K: int,
            mode: str = "overlap") -> np.ndarray:
    """Combine the units' jobs into the whole map's result.

    Args:
        cells: the cells (non-extended).
        jobs: one :class:`Job` per cell.
        shape: ``(H, W)`` of the whole map.
        K: kernel size.
        mode: ``"overlap"`` (non-overlapping cells: the full correlation by overlap-add)
            or ``"halo"`` (cells run extended by ``K-1``: the stitched valid result, with
            the jobs' ReLU/pool/shift applied).

    Returns:
        The combined map.

    Raises:
        ValueError: on ReLU, pooling, a shift or a saturated value on partial sums
            (overlap mode), a job that did not drain (halo mode), or an unknown mode.
    """
    if mode == "overlap":
        maps = []
        for i, j in enumerate(jobs):
            if j.cfg.relu or j.cfg.pool_name != "none" or j.cfg.shift:
                raise ValueError(f"combine: job {i} applies ReLU/pooling/shift to a partial sum "
                                 "(wrong by construction: use halo mode or combine first)")
            if j.out is not None and not np.array_equal(j.out, j.full):
                raise ValueError(f"combine: job {i}'s partial sum saturated at ow bits")
            maps.append(j.full)
        return overlap_add(cells, maps, shape, K)
    if mode == "halo":
        if any(j.out is None for j in jobs):
            raise ValueError("combine: halo mode needs drained jobs (emit = 1)")
        pooled = {j.cfg.pool_name != "none" for j in jobs}
        if len(pooled) > 1:
            raise ValueError("combine: the jobs disagree on pooling")
        return halo_stitch(cells, [j.out for j in jobs], shape, K, pooled=pooled.pop() if pooled else False)
    raise ValueError(f"combine: mode must be 'overlap' or 'halo', got {mode!r}")


# ---- the cluster ------------------------------------------------------------------

def route_units(route_sel: Sequence[int] | None, m: int) -> list[int]:
    """The unit each memory unit feeds: ``i`` if ``route_sel[i] = 0``, ``(i+1) mod m`` if 1.

    Raises:
        ValueError: on a ``route_sel`` that is not ``m`` bits.
    """
    sel = [0] * m if route_sel is None else [int(s) for s in route_sel]
    if len(sel) != m or any(s not in (0, 1) for s in sel):
        raise ValueError(f"route_units: route_sel must be {m} values in {{0, 1}}, got {route_sel!r}")
    return [(i + s) % m for i, s in enumerate(sel)]


@dataclass
class ClusterRun:
    """The golden result of one cluster pass.

    Attributes:
        units: the :class:`Job` each unit ran (``None`` if idle), by unit index.
        source: the memory unit that fed each unit (``None`` if idle).
        cluster_cycles: ``max_i cycles_i`` (start to done).
        makespan: ``max_i cyc_compute_i``.
        acc: the accumulator each unit holds after the pass, by unit index (``None``: all
            zero); the next channel pass's ``acc``.
    """

    units: list[Job | None]
    source: list[int | None]
    cluster_cycles: int
    makespan: int
    acc: list[np.ndarray | None] = field(default_factory=list)


def _held(acc: np.ndarray | None) -> np.ndarray | None:
    """``None`` for an all-zero (or no) accumulator, else the array."""
    return None if acc is None or not np.any(acc) else np.asarray(acc, dtype=np.int64)


def cluster_run(jobs: Sequence[tuple[Cfg, Sequence] | None], weights, params: SparseParams,
                route_sel: Sequence[int] | None = None,
                acc: Sequence[np.ndarray | None] | None = None) -> ClusterRun:
    """Run one pass of the cluster: memory unit ``i`` holds ``jobs[i]`` (``(cfg, data)``
    or ``None``); every unit gets the broadcast ``weights``.

    Args:
        jobs: each memory unit's job.
        weights: the broadcast weights (CONV entries, or the FC matrix).
        params: the cluster's parameters.
        route_sel: one bit per memory unit (``None``: all 0).
        acc: each unit's accumulator before the pass, by unit index (``ClusterRun.acc``
            of the pass before: channel passes with ``emit = 0``); ``None`` (or a
            ``None`` entry) is the cleared accumulator.

    Raises:
        ValueError: on more than ``m`` jobs, two jobs routed to one unit, ``acc`` not
            ``m`` entries, or an accumulator whose shape is not its job's footprint.
    """
    m = params.m
    if len(jobs) > m:
        raise ValueError(f"cluster_run: {len(jobs)} jobs for {m} memory units")
    held = [None] * m if acc is None else [_held(a) for a in acc]
    if len(held) != m:
        raise ValueError(f"cluster_run: acc needs one entry per unit ({m}), got {len(held)}")
    route = route_units(route_sel, m)
    units: list[Job | None] = [None] * m
    source: list[int | None] = [None] * m
    for i, jb in enumerate(jobs):
        if jb is None:
            continue
        u = route[i]
        if source[u] is not None:
            raise ValueError(f"cluster_run: memory units {source[u]} and {i} are both routed to unit {u}")
        source[u] = i
    for u, i in enumerate(source):  # every route checked before a unit runs
        if i is not None:
            units[u] = stu_job(jobs[i][0], jobs[i][1], weights, params, acc=held[u])
    done = [j for j in units if j is not None]
    return ClusterRun(units, source, max((cycles(j) for j in done), default=0),
                      max((j.cyc_compute for j in done), default=0),
                      [held[u] if j is None else _held(j.acc) for u, j in enumerate(units)])


def makespan(loads: Sequence[int], wnz: int, params: SparseParams) -> int:
    """The u = 1 compute makespan of cells with these loads: ``max_i WNZ * ceil(q_i/p)``."""
    return max((wnz * -(-int(q) // params.p) for q in loads), default=0)


def depthwise_separable(X: np.ndarray, Wd: np.ndarray, Wp: np.ndarray, params: SparseParams, *,
                        shift_dw: int = 0, shift_pw: int = 0) -> np.ndarray:
    """Depthwise-separable convolution on the STU: per channel a CONV job (no ReLU),
    then per pixel an FC job over the channels (the 1x1 pointwise pass) with ReLU.

    Args:
        X: input, ``C x H x W``.
        Wd: depthwise kernels, ``C x K x K``.
        Wp: pointwise weights, ``N x C``.
        params: the STU's parameters (``C <= wmax``, ``N <= nmax_out``).
        shift_dw: drain shift of the depthwise jobs.
        shift_pw: drain shift of the pointwise jobs.

    Returns:
        ``N x (H+K-1) x (W+K-1)`` int64.

    Raises:
        ValueError: on inconsistent shapes, a refused job, or an intermediate value that
            does not fit ``dw`` bits.
    """
    X, Wd, Wp = (np.asarray(a, dtype=np.int64) for a in (X, Wd, Wp))
    if X.ndim != 3 or Wd.ndim != 3 or Wp.ndim != 2 or Wd.shape[0] != X.shape[0] or Wp.shape[1] != X.shape[0]:
        raise ValueError(f"depthwise_separable: shapes {X.shape}, {Wd.shape}, {Wp.shape} do not fit")
    C, H, W = X.shape
    K, N = Wd.shape[1], Wp.shape[0]
    Z = []
    for c in range(C):
        job = stu_job(Cfg(K, H, W, shift=shift_dw), encode(X[c]).entries, encode_weights(Wd[c]), params)
        if job.errors:
            raise ValueError(f"depthwise_separable: depthwise job {c} raised {job.errors:#x}")
        Z.append(job.out)
    Z = np.stack(Z)
    Y = np.zeros((N, H + K - 1, W + K - 1), dtype=np.int64)
    pw = Cfg(1, 1, C, mode=FC, n_out=N, relu=1, shift=shift_pw)
    for r in range(H + K - 1):
        for col in range(W + K - 1):
            job = stu_job(pw, encode(Z[None, :, r, col]).entries, Wp, params)
            if job.errors:
                raise ValueError(f"depthwise_separable: pointwise job at {(r, col)} raised {job.errors:#x}")
            Y[:, r, col] = job.out[0]
    return Y
