"""Stimulus of the cluster testbench (verif/sparse/cluster_env.py): cluster passes and
the golden model's prediction of each.

A pass is what the host does once: take a map, partition it (the golden
:func:`~lockstep.models.sparse.partition`, or the equal grid it is compared with),
encode each cell (its halo extension in halo mode), load one cell per memory unit, load
the broadcast weights and run every unit. Its golden result is
:func:`~lockstep.models.sparse.cluster_run` over the stored entries (``None`` when two
memory units are routed to one unit: the pass is refused).

Scenarios (the ``scenario`` option):

* ``balance``: skewed maps, each run twice, with the balanced partition and with the
  equal grid (overlap-add of the full correlations); banks, back-pressure, input idles,
  the next pass's cells loaded into the other bank while a pass runs (ping-pong).
* ``makespan``: ``balance`` on ``hmax x wmax`` maps with full ``kmax x kmax`` kernels,
  without stalls or ping-pong (the report's fixed set).
* ``route``: ``route_sel`` patterns (identity, the rotation, mixed ones with idle memory
  units), fewer cells than units, refused passes (two memory units on one unit), a
  ``start`` while busy, a refused descriptor (its unit refuses with CFG), FC passes
  (every unit a vector, one broadcast matrix) and independent maps.
* ``halo``: halo stitching (cells extended by ``K - 1``) with ReLU, 2x2 max/sum/avg
  pooling (``align = 2``), shifts and saturation, against the drained valid correlation
  of the whole map.
* ``random``: all of the above mixed (the full tier).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lockstep.models import sparse
from lockstep.models.formats import SparseParams

from .raster_env import nonzero_values, random_map

__all__ = ["ClusterJob", "equal_cells", "make_jobs", "skewed_map"]

Cell = tuple[int, int, int, int]
#: Back-pressure rates and input idle rates a pass draws from.
BPS = (0.0, 0.0, 0.3, 0.6)
IDLES = (0.0, 0.0, 0.3)


@dataclass
class ClusterJob:
    """One cluster pass and its golden result.

    Attributes:
        kind: ``overlap`` / ``halo`` (one map, partitioned), ``maps`` (independent maps)
            or ``fc`` (one vector per unit).
        cfg: the broadcast configuration (``h``/``w`` are each unit's own).
        weights: CONV: the weight entries in stream order; FC: the ``n_out x W`` matrix.
        Wk: the kernel (CONV).
        X: the whole map (``overlap``/``halo``).
        cells: memory unit -> its cell (not extended), or ``None`` when idle.
        maps: memory unit -> the map (or vector) it holds, or ``None``.
        descs: memory unit -> the 64-bit descriptor loaded (``None`` when idle).
        words: memory unit -> the data words loaded.
        route_sel: one bit per memory unit.
        bank: the bank every unit reads.
        part: ``balanced``, ``equal``, ``fallback`` or ``-``.
        bp: output back-pressure rate.
        idle: input idle rate of the loads.
        poke: cycles after ``start`` at which a second ``start`` pulses, or ``None``.
        preloaded: the data was loaded during the previous pass (no load now).
        shadow: ``(memory unit, descriptor, words)`` written into the other bank while
            this pass runs (the next pass's data).
        bad: memory units whose descriptor the memory refuses (the unit refuses: CFG).
        tag: free-form labels (``map``: the map's number in a balance/makespan run,
            ``grid``: its ``R x C``).
        golden: the :class:`~lockstep.models.sparse.ClusterRun`, or ``None`` if refused.
        loads: memory unit -> the golden :class:`~lockstep.models.sparse.Load` (or None).
    """

    kind: str
    cfg: sparse.Cfg
    weights: Any
    Wk: np.ndarray | None = None
    X: np.ndarray | None = None
    cells: list[Cell | None] = field(default_factory=list)
    maps: list[np.ndarray | None] = field(default_factory=list)
    descs: list[int | None] = field(default_factory=list)
    words: list[list[int]] = field(default_factory=list)
    route_sel: list[int] = field(default_factory=list)
    bank: int = 0
    part: str = "-"
    bp: float = 0.0
    idle: float = 0.0
    poke: int | None = None
    preloaded: bool = False
    shadow: list[tuple[int, int, list[int]]] = field(default_factory=list)
    bad: list[int] = field(default_factory=list)
    tag: dict[str, Any] = field(default_factory=dict)
    golden: sparse.ClusterRun | None = None
    loads: list[sparse.Load | None] = field(default_factory=list)

    def __repr__(self) -> str:
        act = "".join("1" if d is not None else "." for d in self.descs)
        c = self.cfg
        return (f"{self.kind} part={self.part} K={c.k} active={act} route={''.join(map(str, self.route_sel))} "
                f"bank={self.bank} dense={c.dense} relu={c.relu} pool={c.pool_name} shift={c.shift} bp={self.bp} "
                f"idle={self.idle} poke={self.poke} preloaded={int(self.preloaded)} bad={self.bad}"
                + (f" tag={self.tag}" if self.tag else ""))

    @property
    def active(self) -> list[int]:
        """Memory units holding a job."""
        return [i for i, d in enumerate(self.descs) if d is not None]

    @property
    def refused(self) -> bool:
        """Two memory units are routed to one unit (the golden model refuses the pass)."""
        return self.golden is None

    def unit_cfg(self, i: int) -> sparse.Cfg:
        """Memory unit ``i``'s job configuration (its descriptor's H and W)."""
        d = sparse.unpack_desc(self.descs[i])
        return sparse.Cfg(self.cfg.k, d.h, d.w, mode=self.cfg.mode, n_out=self.cfg.n_out, relu=self.cfg.relu,
                          pool=self.cfg.pool, shift=self.cfg.shift, dense=self.cfg.dense)


# ---- maps and partitions -----------------------------------------------------------------
def skewed_map(rng: np.random.Generator, h: int, w: int, bits: int, kind: str | None = None) -> np.ndarray:
    """An ``h x w`` map whose density varies over it: a ``blob`` (Gaussian hot spot), a
    ``corner`` (gradient from one corner) or a ``band`` (a few dense rows or columns),
    from nearly empty to nearly full."""
    kind = kind or str(rng.choice(["blob", "corner", "band"]))
    r, c = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    lo, hi = rng.uniform(0.0, 0.1), rng.uniform(0.7, 1.0)
    if kind == "blob":
        r0, c0, s = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(0.25, 0.6) * max(h, w)
        dens = lo + (hi - lo) * np.exp(-((r - r0) ** 2 + (c - c0) ** 2) / (2 * s * s))
    elif kind == "corner":
        fr = r / max(h - 1, 1) if rng.random() < 0.5 else 1 - r / max(h - 1, 1)
        fc = c / max(w - 1, 1) if rng.random() < 0.5 else 1 - c / max(w - 1, 1)
        dens = lo + (hi - lo) * (fr * fc) ** rng.uniform(0.5, 2.0)
    else:
        rows = rng.random() < 0.5
        n = h if rows else w
        hot = rng.choice(n, size=max(1, n // 4), replace=False)
        line = np.full(n, lo)
        line[hot] = hi
        dens = line[r] if rows else line[c]
    X = nonzero_values(rng, h * w, bits).reshape(h, w)
    X[rng.random((h, w)) >= dens] = 0
    return X


def _grids(n: int) -> list[tuple[int, int]]:
    """The ``R x C`` grids of ``n`` cells."""
    return [(r, n // r) for r in range(1, n + 1) if n % r == 0]


def _fitting(n: int, h: int, w: int, align: int = 1) -> list[tuple[int, int]]:
    """The grids of ``n`` cells the partitioner can lay on an ``h x w`` map (at most one
    segment per ``align`` lines)."""
    return [(r, c) for r, c in _grids(n) if r <= -(-h // align) and c <= -(-w // align)]


def equal_cells(H: int, W: int, R: int, C: int, align: int = 1) -> list[Cell]:
    """The equal grid (the partitioner's, :func:`~lockstep.models.sparse.equal_split`)."""
    er, ec = sparse.equal_split(H, R, align), sparse.equal_split(W, C, align)
    return [(er[r], er[r + 1], ec[c], ec[c + 1]) for r in range(R) for c in range(C)]


def _extend(cell: Cell, halo: int, shape: tuple[int, int]) -> Cell:
    r0, r1, c0, c1 = cell
    return r0, min(r1 + halo, shape[0]), c0, min(c1 + halo, shape[1])


def _kernel(rng: np.random.Generator, k: int, bits: int, wnz: int | None = None) -> np.ndarray:
    """A ``k x k`` kernel: ``wnz`` non-zeros (random count when ``None``, at least one)."""
    n = int(rng.integers(1, k * k + 1)) if wnz is None else wnz
    Wk = np.zeros(k * k, dtype=np.int64)
    Wk[rng.choice(k * k, size=n, replace=False)] = nonzero_values(rng, n, bits)
    return Wk.reshape(k, k)


def _weights(rng: np.random.Generator, Wk: np.ndarray, dense: bool) -> list:
    order = "raster" if dense else str(rng.choice(["raster", "snake"]))
    return sparse.encode_weights(Wk, order, dense=dense)


# ---- building a pass -------------------------------------------------------------------
class _Builder:
    def __init__(self, params: SparseParams, rng: np.random.Generator, widths: dict[str, int]) -> None:
        self.p = params
        self.rng = rng
        self.widths = widths
        self.m = params.m

    def base_cfg(self, k: int, **kw: Any) -> sparse.Cfg:
        return sparse.Cfg(k, 1, 1, **kw)

    def finish(self, job: ClusterJob, units: list[tuple[int, int, int, np.ndarray] | None]) -> ClusterJob:
        """Encode and load each memory unit's map (``units[i] = (org_row, org_col, dense,
        map)``), then ask the golden model."""
        p = self.p
        m = self.m
        job.descs, job.words, job.loads, job.maps = [None] * m, [[] for _ in range(m)], [None] * m, [None] * m
        if not job.route_sel:
            job.route_sel = [0] * m
        jobs: list[tuple[sparse.Cfg, list] | None] = [None] * m
        for i, u in enumerate(units):
            if u is None:
                continue
            r0, c0, dense, M = u
            sub = sparse.encode(M, (r0, c0), dense=dense)
            desc = sparse.pack_desc(sub)
            if i in job.bad:  # a descriptor the memory refuses: H beyond hmax (the unit: CFG)
                d = sub.desc
                desc = sparse.pack_desc(sparse.Desc(d.org_row, d.org_col, p.hmax + 1 + int(self.rng.integers(0, 4)),
                                                    d.w, d.nnz))
            job.descs[i], job.words[i], job.maps[i] = desc, sparse.pack_data(sub.entries, p), M
            load = sparse.load_data(desc, job.words[i], p, dense=dense)
            job.loads[i] = load
            jobs[i] = (job.unit_cfg(i), list(load.entries))
        try:
            job.golden = sparse.cluster_run(jobs, job.weights, p, job.route_sel)
        except ValueError:
            job.golden = None
        return job

    # ---- one map, partitioned
    def partitioned(self, X: np.ndarray, Wk: np.ndarray, n: int, mode: str, part: str, *, relu: int = 0,
                    pool: str = "none", shift: int = 0, dense: bool = False, grid: tuple[int, int] | None = None,
                    route_sel: list[int] | None = None, active: list[int] | None = None) -> ClusterJob:
        """``X`` on ``n`` cells (``balanced``/``equal``), loaded into memory units
        ``active`` (the first ``n`` by default)."""
        p, rng = self.p, self.rng
        K = Wk.shape[0]
        halo = K - 1 if mode == "halo" else 0
        align = 2 if pool != "none" else 1
        fits = _fitting(n, *X.shape, align)
        R, C = grid or fits[int(rng.integers(0, len(fits)))]
        pt = sparse.partition(X, R, C, 10, align=align, halo=halo)
        cells = pt.cells if part == "balanced" else equal_cells(*X.shape, R, C, align)
        kind = "fallback" if part == "balanced" and pt.fallback else part
        cfg = self.base_cfg(K, relu=relu, pool=pool, shift=shift, dense=int(dense))
        job = ClusterJob(mode, cfg, _weights(rng, Wk, dense), Wk=Wk, X=X, part=kind,
                         route_sel=list(route_sel or []))
        active = list(range(n)) if active is None else active
        job.cells = [None] * self.m
        units: list[tuple[int, int, int, np.ndarray] | None] = [None] * self.m
        for i, cell in zip(active, cells, strict=True):
            r0, r1, c0, c1 = _extend(cell, halo, X.shape)
            job.cells[i] = cell
            units[i] = (r0, c0, dense, X[r0:r1, c0:c1])
        return self.finish(job, units)

    # ---- independent maps / vectors
    def independent(self, maps: list[np.ndarray | None], Wk: np.ndarray | None, *, dense: bool = False,
                    fc: np.ndarray | None = None, route_sel: list[int] | None = None,
                    relu: int = 0, shift: int = 0) -> ClusterJob:
        if fc is not None:
            cfg = self.base_cfg(1, mode=sparse.FC, n_out=fc.shape[0], relu=relu, shift=shift)
            job = ClusterJob("fc", cfg, fc, route_sel=list(route_sel or []))
        else:
            cfg = self.base_cfg(Wk.shape[0], relu=relu, shift=shift, dense=int(dense))
            job = ClusterJob("maps", cfg, _weights(self.rng, Wk, dense), Wk=Wk, route_sel=list(route_sel or []))
        job.cells = [None] * self.m
        return self.finish(job, [None if M is None else (0, 0, dense, M) for M in maps])

    # ---- random parts
    def stalls(self, job: ClusterJob, allow: bool = True) -> ClusterJob:
        if allow:
            job.bp = float(self.rng.choice(BPS))
            job.idle = float(self.rng.choice(IDLES))
        return job

    def skewed(self, h: int | None = None, w: int | None = None, n: int = 1, align: int = 1) -> np.ndarray:
        """A skewed map (random size from half the maximum up, unless given) on which some
        grid of ``n`` cells fits: when none fits the size drawn, the map grows to a grid
        drawn from those that fit ``hmax x wmax``.

        Raises:
            ValueError: no grid of ``n`` cells fits ``hmax x wmax`` (``n`` prime and
                beyond both, e.g. 7 cells of a cluster of 8 on 6 x 6 maps).
        """
        p, rng = self.p, self.rng
        h = h or int(rng.integers(max(2, p.hmax // 2), p.hmax + 1))
        w = w or int(rng.integers(max(2, p.wmax // 2), p.wmax + 1))
        if not _fitting(n, h, w, align):
            grids = _fitting(n, p.hmax, p.wmax, align)
            if not grids:
                raise ValueError(f"cluster stimulus: no grid of {n} cells fits a {p.hmax} x {p.wmax} map "
                                 f"(align {align}): SparseParams.hmax or wmax too small for m = {p.m}")
            R, C = grids[int(rng.integers(0, len(grids)))]
            h, w = max(h, min(R * align, p.hmax)), max(w, min(C * align, p.wmax))
        return skewed_map(rng, h, w, p.dw)

    def route_pattern(self, conflict: bool) -> tuple[list[int], list[int]]:
        """``(route_sel, active memory units)``: with ``conflict`` two active memory units
        share a unit, else none does (and at least one unit is active)."""
        m, rng = self.m, self.rng
        for _ in range(1000):
            sel = [int(x) for x in rng.integers(0, 2, size=m)]
            act = [i for i in range(m) if rng.random() < 0.75]
            if not act:
                continue
            dest = [(i + sel[i]) % m for i in act]
            if (len(set(dest)) < len(dest)) == conflict:
                return sel, act
        raise ValueError(f"no route pattern with conflict={conflict} for m = {m}")


def _pair_preload(jobs: list[ClusterJob], m: int) -> None:
    """Load every other pass's data into the other bank while the pass before it runs
    (the two passes read different banks)."""
    for a, b in zip(jobs[0::2], jobs[1::2]):
        if a.refused or b.refused or a.poke is not None or b.bad or a.kind == "fc":
            continue
        b.bank = 1 - a.bank
        b.preloaded = True
        a.shadow = [(i, b.descs[i], b.words[i]) for i in b.active]


def make_jobs(scenario: str, params: SparseParams, rng: np.random.Generator, count: int,
              widths: dict[str, int]) -> list[ClusterJob]:
    """The passes of a scenario (module docstring).

    Raises:
        ValueError: on an unknown scenario.
    """
    b = _Builder(params, rng, widths)
    p, m = params, params.m
    K = params.kmax
    jobs: list[ClusterJob] = []
    if scenario in ("balance", "makespan"):
        plain = scenario == "makespan"
        while len(jobs) < count:
            X = b.skewed(p.hmax, p.wmax, m) if plain else b.skewed(n=m)
            Wk = _kernel(rng, K, p.ww, K * K if plain else None)
            grids = _fitting(m, *X.shape)
            grid = grids[int(rng.integers(0, len(grids)))] if not plain else (
                (2, m // 2) if m % 2 == 0 and m > 2 else (1, m))
            for part in ("balanced", "equal"):
                job = b.partitioned(X, Wk, m, "overlap", part, grid=grid)
                job.bank = int(rng.integers(0, 2))
                job.tag = {"map": len(jobs) // 2, "grid": list(grid)}
                jobs.append(b.stalls(job, not plain))
        jobs = jobs[:count]
        if not plain:
            _pair_preload(jobs, m)
        return jobs
    if scenario == "halo":
        pools = ["max", "avg", "sum", "none"]
        k = K if K % 2 else K - 1  # pooling needs an even K - 1
        for i in range(count):
            pool = pools[i % len(pools)]
            X = b.skewed()
            align = 2 if pool != "none" else 1
            # cell counts some grid fits on the largest map (pooling: 2-line units)
            ns = [n for n in range(1, m + 1) if _fitting(n, p.hmax, p.wmax, align)]
            n = ns[int(rng.integers(0, len(ns)))] if i % 3 else ns[-1]
            if not _fitting(n, *X.shape, align):  # too small for n cells: a map that fits
                X = b.skewed(n=n, align=align)
            job = b.partitioned(X, _kernel(rng, k if pool != "none" else int(rng.integers(1, K + 1)), p.ww), n, "halo",
                                str(rng.choice(["balanced", "equal"])), relu=int(i % 2 == 0 or pool == "sum"),
                                pool=pool, shift=int(rng.integers(0, 4)))
            job.bank = int(rng.integers(0, 2))
            jobs.append(b.stalls(job))
        return jobs
    if scenario == "route":
        return _route_jobs(b, count)
    if scenario == "random":
        third = max(2, count // 3)
        return (make_jobs("balance", params, rng, third, widths) + make_jobs("halo", params, rng, third, widths)
                + make_jobs("route", params, rng, max(8, count - 2 * third), widths))
    raise ValueError(f"cluster testbench: unknown scenario {scenario!r}")


def _route_jobs(b: _Builder, count: int) -> list[ClusterJob]:
    p, rng, m = b.p, b.rng, b.m
    K = p.kmax
    jobs: list[ClusterJob] = []

    def one(sel: list[int], act: list[int], **kw: Any) -> ClusterJob:
        X = b.skewed(n=len(act))
        Wk = _kernel(rng, int(rng.integers(1, K + 1)), p.ww)
        job = b.partitioned(X, Wk, len(act), "overlap", str(rng.choice(["balanced", "equal"])), route_sel=sel,
                            active=act, **kw)
        job.bank = int(rng.integers(0, 2))
        return b.stalls(job)

    everyone = list(range(m))
    jobs.append(one([0] * m, everyone))  # static binding
    jobs.append(one([1] * m, everyone))  # the rotation
    if m > 1:
        sel, act = b.route_pattern(conflict=True)
        jobs.append(one(sel, act))  # refused: ROUTE
        busy = one([0] * m, everyone)
        busy.poke = 3
        jobs.append(busy)  # a start while busy: START_BUSY
    bad = one([0] * m, everyone)
    bad.bad = [int(rng.integers(0, m))]
    jobs.append(b.finish(bad, [None if bad.cells[i] is None else _unit_of(bad, i) for i in range(m)]))
    # FC: every unit a vector, one broadcast matrix
    n_out, w = int(rng.integers(1, p.nmax_out + 1)), int(rng.integers(1, p.wmax + 1))
    fcw = nonzero_values(rng, n_out * w, p.ww).reshape(n_out, w)
    fcw[rng.random((n_out, w)) < 0.3] = 0
    sel, act = b.route_pattern(conflict=False) if m > 1 else ([0], [0])
    vecs = [random_map(rng, 1, w, int(rng.integers(0, w + 1)), p.dw) if i in act else None for i in range(m)]
    jobs.append(b.stalls(b.independent(vecs, None, fc=fcw, route_sel=sel, relu=int(rng.integers(0, 2)),
                                       shift=int(rng.integers(0, 3)))))
    while len(jobs) < count:
        r = rng.random()
        if r < 0.15:  # independent maps, dense mode now and then
            dense = rng.random() < 0.4
            sel, act = b.route_pattern(conflict=False) if m > 1 else ([0], [0])
            maps = [random_map(rng, h := int(rng.integers(1, p.hmax + 1)), w := int(rng.integers(1, p.wmax + 1)),
                               int(rng.integers(0, h * w + 1)), p.dw) if i in act else None for i in range(m)]
            Wk = _kernel(rng, int(rng.integers(1, K + 1)), p.ww)
            jobs.append(b.stalls(b.independent(maps, Wk, dense=dense, route_sel=sel)))
        else:
            sel, act = b.route_pattern(conflict=m > 1 and r < 0.3) if m > 1 else ([0], [0])
            jobs.append(one(sel, act))
    jobs = jobs[:count]
    _pair_preload(jobs, m)
    return jobs


def _unit_of(job: ClusterJob, i: int) -> tuple[int, int, int, np.ndarray]:
    r0, r1, c0, c1 = job.cells[i]
    return r0, c0, job.cfg.dense, job.X[r0:r1, c0:c1]

