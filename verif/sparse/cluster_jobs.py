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
  ``start`` while busy, refused descriptors (H just beyond ``hmax``, or every field but
  NNZ drawn over its whole width; the unit refuses with CFG), FC passes
  (every unit a vector, one broadcast matrix; refused with pooling asked for, or a
  unit's vector of two rows), independent maps (once every unit's
  ``hmax x wmax`` under a ``kmax x kmax`` kernel).
* ``route_halo``: ``route`` with halo cells (cells extended by ``K - 1``) where it
  partitions a map: for a cluster whose ``ow``-bit outputs saturate an overlap-add's
  partial sums (the halo configuration), which would otherwise run no FC pass, refusal
  or idle unit at all.
* ``halo``: halo stitching (cells extended by ``K - 1``) with ReLU, 2x2 max/sum/avg
  pooling (``align = 2``), shifts and saturation, against the drained valid correlation
  of the whole map.
* ``channels``: C-channel convolutions (C = 2..4), one partition for all channels (the
  balanced partition of the summed non-zeros, or the equal grid) and one pass per
  channel: each unit's cell of ``X_c`` into its memory unit (the next channel's into
  the other bank while a pass runs), ``Wk_c`` as the broadcast weights, ``emit = 0``
  on every pass but the last, which drains. Overlap-add (no drain options: ``combine``
  refuses them on partial sums) or halo cells (ReLU, 2x2 pooling, shift on the last
  pass). A cell empty in one channel (``q = 0``) but not in another, in a keeping pass
  and in the draining one.
* ``dwsep``: depthwise-separable convolutions as a host runs them: one depthwise pass
  per channel (``Wd_c`` broadcast, ``emit = 1``, ``relu = 0``), either partitioned over
  the units (overlap-add, so ``shift_dw = 0``) or the whole map on one unit (unit
  ``c mod m``, the drain applies ``shift_dw``); the host overlap-adds each channel's
  full footprint ``Z_c``, then runs the pointwise passes in FC mode (each unit one
  pixel vector ``Z[:, r, col]`` of length C, placed by its descriptor's ORG; the
  ``n_out x C`` matrix ``Wp`` loaded once into the FC region) with ReLU and ``shift_pw``
  in the drain. Values small enough that every ``Z`` fits ``dw`` bits.
* ``defects``: loads the memories flag (docs/sparse.md section 7) on independent maps:
  some memory units' data words carry one defect (an index beyond H or W, two entries
  out of order, a zero value, a count that disagrees with NNZ, more words than
  ``depth``), the weights one (an index beyond K, a duplicate, a zero, more than
  ``kmax**2``; or weights loaded for a larger kernel than the job's, which the STUs take
  with their products off the map dropped, or refuse with CFG beyond ``K^2``), or a
  descriptor is refused; each unit against the golden run over what
  its memories stored, ``mem_err`` and ``w_err`` against ``load_data`` and
  ``load_weights``. Clean passes between them; every other pass starts with a reset,
  so a flag is seen apart from the ones earlier passes raised (they are sticky). The
  ``route`` scenario mixes some in.
* ``random``: all of the above mixed (the full tier).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lockstep.models import sparse
from lockstep.models.sparse.params import SparseParams

from .raster_env import nonzero_values, random_map

__all__ = ["ClusterJob", "Flow", "equal_cells", "make_jobs", "skewed_map"]

Cell = tuple[int, int, int, int]
#: Back-pressure rates and input idle rates a pass draws from.
BPS = (0.0, 0.0, 0.3, 0.6)
IDLES = (0.0, 0.0, 0.3)


@dataclass
class Flow:
    """A sequence of passes that the host runs for one result (``channels``, ``dwsep``).

    Attributes:
        kind: ``channels`` or ``dwsep``.
        id: the flow's number in the run.
        X: the input, ``C x H x W``.
        Wk: the channel kernels (``channels``) or the depthwise kernels (``dwsep``),
            ``C x K x K``.
        mode: ``overlap`` or ``halo`` (``channels``); ``partitioned`` or ``whole``, the
            depthwise passes (``dwsep``).
        cfg: the drain of the last channel pass (``channels``).
        Wp: the pointwise matrix, ``n_out x C`` (``dwsep``).
        shift_dw: drain shift of the depthwise passes (``dwsep``).
        shift_pw: drain shift of the pointwise passes (``dwsep``).
        Z: the depthwise results the pointwise passes are built from, ``C x Ho x Wo``:
            the golden units' drained outputs overlap-added (``dwsep``).
        Y: ``depthwise_separable(X, Wk, Wp, params, shift_dw, shift_pw)`` (``dwsep``).
        passes: the flow's number of passes.
        depthwise: the number of depthwise passes (``dwsep``).
    """

    kind: str
    id: int
    X: np.ndarray
    Wk: np.ndarray
    mode: str = "overlap"
    cfg: sparse.Cfg | None = None
    Wp: np.ndarray | None = None
    shift_dw: int = 0
    shift_pw: int = 0
    Z: np.ndarray | None = None
    Y: np.ndarray | None = None
    passes: int = 0
    depthwise: int = 0

    @property
    def C(self) -> int:
        """Channels."""
        return int(self.X.shape[0])

    @property
    def K(self) -> int:
        """Kernel size."""
        return int(self.Wk.shape[1])


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
        shadow_dense: the next pass's ``dense``, which those loads take (``wr_dense``).
        bad: memory units whose descriptor the memory refuses (the unit refuses: CFG).
        tag: free-form labels (``map``: the map's number in a balance/makespan run,
            ``grid``: its ``R x C``).
        golden: the :class:`~lockstep.models.sparse.ClusterRun`, or ``None`` if refused.
        loads: memory unit -> the golden :class:`~lockstep.models.sparse.Load` (or None).
        flow: the :class:`Flow` this pass belongs to (``channels``, ``dw``, ``pw``).
        step: the pass's number in its flow.
        keep_weights: the weights are in the weight memory already (an earlier pass of
            the flow loaded the FC matrix): no weight load.
        empty: memory units whose cell is empty in this pass but not in every pass of
            the flow (a channel with ``q = 0``).
        corrupt: memory units whose data words carry a defect the memory flags.
        w_words: the weight words sent when they carry a defect (``weights`` is then
            what the weight memory stored), else ``None`` (``pack_weights(weights)``).
        w_err: the ``W_ERR`` bits the weight load raises.
        w_k: the weight memory's ``K`` for the load (``w_cfg_k``) when it is not the
            job's: weights of a larger kernel, indices beyond the job's ``K`` among them
            (docs/sparse.md section 4), or more than ``K^2`` of them (CFG in every unit).
        reset: ``rst`` pulses before the pass (its loads included): every sticky flag
            starts clear, so each flag the pass raises is seen on its own (a flag an
            earlier pass raised would hide a mutant that raises it too).
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
    shadow_dense: int = 0
    bad: list[int] = field(default_factory=list)
    tag: dict[str, Any] = field(default_factory=dict)
    golden: sparse.ClusterRun | None = None
    loads: list[sparse.Load | None] = field(default_factory=list)
    flow: Flow | None = None
    step: int = 0
    keep_weights: bool = False
    empty: list[int] = field(default_factory=list)
    corrupt: list[int] = field(default_factory=list)
    w_words: list[int] | None = None
    w_err: int = 0
    w_k: int | None = None
    reset: bool = False

    def __repr__(self) -> str:
        act = "".join("1" if d is not None else "." for d in self.descs)
        c = self.cfg
        return (f"{self.kind} part={self.part} K={c.k} active={act} route={''.join(map(str, self.route_sel))} "
                f"bank={self.bank} dense={c.dense} relu={c.relu} pool={c.pool_name} shift={c.shift} bp={self.bp} "
                f"idle={self.idle} poke={self.poke} preloaded={int(self.preloaded)} bad={self.bad}"
                + (f" emit={c.emit}" if not c.emit else "")
                + (f" flow={self.flow.kind}#{self.flow.id} step={self.step}/{self.flow.passes}" if self.flow else "")
                + (f" empty={self.empty}" if self.empty else "")
                + (f" corrupt={self.corrupt}" if self.corrupt else "")
                + (" reset" if self.reset else "")
                + (f" w_err={self.w_err:#x}" if self.w_words is not None else "")
                + (f" w_k={self.w_k}" if self.w_k is not None else "")
                + (f" tag={self.tag}" if self.tag else ""))

    @property
    def last(self) -> bool:
        """The last pass of its flow (or a pass without one)."""
        return self.flow is None or self.step == self.flow.passes - 1

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
        return sparse.Cfg(self.cfg.k, d.h, d.w, mode=self.cfg.mode, n_out=self.cfg.n_out, emit=self.cfg.emit,
                          relu=self.cfg.relu, pool=self.cfg.pool, shift=self.cfg.shift, dense=self.cfg.dense)


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

    def finish(self, job: ClusterJob, units: list[tuple[int, int, int, np.ndarray] | None],
               acc: list[np.ndarray | None] | None = None) -> ClusterJob:
        """Encode and load each memory unit's map (``units[i] = (org_row, org_col, dense,
        map)``), then ask the golden model; ``acc``: the units' accumulators before the
        pass (``ClusterRun.acc`` of the flow's pass before). A pass of a flow is never
        refused: any ``ValueError`` of the model is raised."""
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
            if i in job.bad:  # a descriptor the memory refuses (the unit: CFG): H or W just
                d = sub.desc  # beyond hmax or wmax, or every field drawn over its whole width (NNZ >= 1 with words)
                over = 1 + int(self.rng.integers(0, 4)) * int(self.rng.random() < 0.5)
                h, w = (p.hmax + over, d.w) if self.rng.random() < 0.5 else (d.h, p.wmax + over)
                desc = sparse.pack_desc(sparse.Desc(d.org_row, d.org_col, h, w, d.nnz))
                for _ in range(100 * int(self.rng.random() < 0.5)):
                    f = {n: int(self.rng.integers(0, 1 << b)) for n, b in p.DESC_FIELDS if n != "nnz"}
                    f["rsvd"] *= int(self.rng.random() < 0.5)
                    if f["rsvd"] or not 1 <= f["h"] <= p.hmax or not 1 <= f["w"] <= p.wmax:
                        # NNZ too, as long as words follow (the refused job takes them to LAST)
                        nnz = int(self.rng.integers(1, 1 << 16)) if d.nnz and self.rng.random() < 0.5 else d.nnz
                        desc = sparse.pack_desc(sparse.Desc(nnz=nnz, **f))
                        break
            job.descs[i], job.words[i], job.maps[i] = desc, sparse.pack_data(sub.entries, p), M
            if i in job.corrupt:
                job.descs[i], job.words[i] = _defect(self.rng, sub.entries, desc, p, bool(dense))
            load = sparse.load_data(job.descs[i], job.words[i], p, dense=dense)
            job.loads[i] = load
            jobs[i] = (job.unit_cfg(i), list(load.entries))
        if job.flow is not None:
            job.golden = sparse.cluster_run(jobs, job.weights, p, job.route_sel, acc)
            return job
        try:
            job.golden = sparse.cluster_run(jobs, job.weights, p, job.route_sel, acc)
        except ValueError:
            job.golden = None
        return job

    def grid_cells(self, X: np.ndarray, n: int, halo: int, part: str, align: int = 1,
                   grid: tuple[int, int] | None = None) -> tuple[list[Cell], str]:
        """``(cells, label)``: ``X`` (a map, or a ``C x H x W`` channel stack: its summed
        non-zeros) on ``n`` cells, the golden partition (``balanced``; ``fallback`` when
        it returned the equal grid) or the equal grid (``equal``); a random ``R x C``
        grid of ``n`` cells unless ``grid`` is given."""
        H, W = X.shape[-2:]
        fits = _fitting(n, H, W, align)
        R, C = grid or fits[int(self.rng.integers(0, len(fits)))]
        pt = sparse.partition(X, R, C, 10, align=align, halo=halo)
        cells = pt.cells if part == "balanced" else equal_cells(H, W, R, C, align)
        return cells, "fallback" if part == "balanced" and pt.fallback else part

    # ---- one map, partitioned
    def partitioned(self, X: np.ndarray, Wk: np.ndarray, n: int, mode: str, part: str, *, relu: int = 0,
                    pool: str = "none", shift: int = 0, dense: bool = False, grid: tuple[int, int] | None = None,
                    route_sel: list[int] | None = None, active: list[int] | None = None) -> ClusterJob:
        """``X`` on ``n`` cells (``balanced``/``equal``), loaded into memory units
        ``active`` (the first ``n`` by default)."""
        rng = self.rng
        K = Wk.shape[0]
        halo = K - 1 if mode == "halo" else 0
        cells, kind = self.grid_cells(X, n, halo, part, 2 if pool != "none" else 1, grid)
        if mode == "overlap":
            self._partial_sums_fit(X, Wk, cells, shift)
        cfg = self.base_cfg(K, relu=relu, pool=pool, shift=shift, dense=int(dense))
        job = ClusterJob(mode, cfg, _weights(rng, Wk, dense), Wk=Wk, X=X, part=kind,
                         route_sel=list(route_sel or []))
        return self.load_cells(job, X, cells, list(range(n)) if active is None else active, halo)

    def _partial_sums_fit(self, X: np.ndarray, Wk: np.ndarray, cells: list[Cell], shift: int) -> None:
        """Overlap-add adds the units' partial sums as they leave: a partial sum the
        ``ow``-bit output saturates makes the combined map another than the whole map's,
        a wrong result no RTL could match. Refuse such a pass here, naming ``ow``.

        Raises:
            ValueError: a cell's ``correlate_full >> shift`` leaves the ``ow``-bit range.
        """
        lo, hi = sparse.signed_range(self.p.ow)
        for r0, r1, c0, c1 in cells:
            part = sparse.correlate_full(X[r0:r1, c0:c1], Wk) >> shift
            if part.size and (part.min() < lo or part.max() > hi):
                bad = int(part.min()) if part.min() < lo else int(part.max())
                raise ValueError(f"cluster stimulus: overlap-add on ow = {self.p.ow}: a unit's partial sum is {bad}, "
                                 f"beyond the output's [{lo}, {hi}] (it saturates, so the combined map is not the "
                                 "whole map's); use a halo scenario, or an ow that holds the partial sums "
                                 "(the quick tier's overlap-add clusters have ow = 20)")

    def load_cells(self, job: ClusterJob, X: np.ndarray, cells: list[Cell], active: list[int], halo: int,
                   acc: list[np.ndarray | None] | None = None) -> ClusterJob:
        """Memory unit ``active[j]`` takes cell ``cells[j]`` of ``X``, extended by
        ``halo``; then :meth:`finish`."""
        job.cells = [None] * self.m
        units: list[tuple[int, int, int, np.ndarray] | None] = [None] * self.m
        for i, cell in zip(active, cells, strict=True):
            r0, r1, c0, c1 = _extend(cell, halo, X.shape)
            job.cells[i] = cell
            units[i] = (r0, c0, job.cfg.dense, X[r0:r1, c0:c1])
        return self.finish(job, units, acc)

    # ---- independent maps / vectors
    def independent(self, maps: list[np.ndarray | None], Wk: np.ndarray | None, *, dense: bool = False,
                    fc: np.ndarray | None = None, route_sel: list[int] | None = None,
                    relu: int = 0, shift: int = 0, orgs: list[tuple[int, int] | None] | None = None,
                    flow: Flow | None = None, pool: str = "none") -> ClusterJob:
        """Each memory unit its own map (or FC vector) at ``orgs[i]`` (``(0, 0)`` by
        default); ``pool`` other than ``none`` on an FC pass: every unit refuses it (CFG)."""
        if fc is not None:
            cfg = self.base_cfg(1, mode=sparse.FC, n_out=fc.shape[0], relu=relu, shift=shift, pool=pool)
            job = ClusterJob("fc", cfg, fc, route_sel=list(route_sel or []), flow=flow)
        else:
            cfg = self.base_cfg(Wk.shape[0], relu=relu, shift=shift, dense=int(dense))
            job = ClusterJob("maps", cfg, _weights(self.rng, Wk, dense), Wk=Wk, route_sel=list(route_sel or []),
                             flow=flow)
        job.cells = [None] * self.m
        orgs = orgs or [(0, 0)] * len(maps)
        return self.finish(job, [None if M is None else (*orgs[i], dense, M) for i, M in enumerate(maps)])

    # ---- random parts
    def random_maps(self, act: list[int]) -> list[np.ndarray | None]:
        """A map of random size (1..hmax x 1..wmax) and non-zero count for each memory
        unit in ``act``, ``None`` for the others."""
        p, rng = self.p, self.rng
        return [random_map(rng, h := int(rng.integers(1, p.hmax + 1)), w := int(rng.integers(1, p.wmax + 1)),
                           int(rng.integers(0, h * w + 1)), p.dw) if i in act else None for i in range(self.m)]

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


def _preload(a: ClusterJob, b: ClusterJob) -> None:
    """Pass ``b``'s cells written into the other bank while pass ``a`` runs, in ``b``'s
    dense mode."""
    b.bank = 1 - a.bank
    b.preloaded = True
    a.shadow, a.shadow_dense = [(i, b.descs[i], b.words[i]) for i in b.active], b.cfg.dense


def _pair_preload(jobs: list[ClusterJob], m: int) -> None:
    """Load every other pass's data into the other bank while the pass before it runs
    (the two passes read different banks)."""
    for a, b in zip(jobs[0::2], jobs[1::2]):
        if a.refused or b.refused or a.poke is not None or b.bad or a.kind == "fc":
            continue
        _preload(a, b)


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
        # each pooling in turn, ReLU on every other round of them (max pooling without
        # ReLU compares values of both signs: stc_cluster@8f3e m046, the signed compare of
        # unit 1's max pool, survived when max came only with ReLU); sum always with ReLU
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
                                str(rng.choice(["balanced", "equal"])), relu=int((i // len(pools)) % 2 == 0 or pool == "sum"),
                                pool=pool, shift=int(rng.integers(0, 4)))
            job.bank = int(rng.integers(0, 2))
            jobs.append(b.stalls(job))
        return jobs
    if scenario in ("route", "route_halo"):
        return _route_jobs(b, count, "halo" if scenario == "route_halo" else "overlap")
    if scenario == "defects":
        return [_defect_job(b, defects=i % 3 != 0, reset=i % 2 == 0) for i in range(count)]
    if scenario == "channels":
        return _channel_jobs(b, count)
    if scenario == "dwsep":
        return _dwsep_jobs(b, count)
    if scenario == "random":
        fifth = max(2, count // 5)
        return (make_jobs("balance", params, rng, fifth, widths) + make_jobs("halo", params, rng, fifth, widths)
                + make_jobs("channels", params, rng, fifth, widths) + make_jobs("dwsep", params, rng, fifth, widths)
                + make_jobs("route", params, rng, max(8, count - 4 * fifth), widths))
    raise ValueError(f"cluster testbench: unknown scenario {scenario!r}")


def _defect(rng: np.random.Generator, entries: list, desc: int, p: SparseParams, dense: bool) -> tuple[int, list[int]]:
    """``(descriptor, words)`` of a cell's load with one defect the memory unit flags
    (docs/sparse.md section 7): an index beyond H or W (IDX_OOB), two entries swapped
    (ORDER), a zero value in sparse mode (ZERO), the last entry left out or one more (NNZ:
    LAST early or late), or more words than ``depth`` (OVERFLOW, the NNZ field saying so).
    Every word ends with LAST, so the load never waits for more."""
    e, d = [tuple(x) for x in entries], sparse.unpack_desc(desc)
    kinds = ["overflow"] + (["nnz"] if e else []) + (["order"] if len(e) >= 2 else [])
    kinds += (["zero"] if e and not dense else []) + (["oob"] if e and (d.h < 1 << p.rb or d.w < 1 << p.cb) else [])
    kind = kinds[int(rng.integers(0, len(kinds)))]
    i = int(rng.integers(0, max(1, len(e))))
    if kind == "oob":
        r, c, v = e[i]
        if d.h < 1 << p.rb and (d.w >= 1 << p.cb or rng.random() < 0.5):
            r = int(rng.integers(d.h, 1 << p.rb))
        else:
            c = int(rng.integers(d.w, 1 << p.cb))
        e[i] = (r, c, v)
    elif kind == "order":
        i = min(i, len(e) - 2)
        e[i], e[i + 1] = e[i + 1], e[i]
    elif kind == "zero":
        e[i] = (*e[i][:2], 0)
    elif kind == "nnz":
        e = e[:-1] if len(e) >= 2 and rng.random() < 0.5 else e + [e[-1]]
        return desc, sparse.pack_data(e, p)
    else:  # overflow: words up to depth + 1..3, the last entry repeated
        e = (e or [(0, 0, 1)]) + [e[-1] if e else (0, 0, 1)] * (p.depth + int(rng.integers(1, 4)) - len(e or [0]))
        return sparse.pack_desc(sparse.Desc(d.org_row, d.org_col, d.h, d.w, len(e), d.rsvd)), sparse.pack_data(e, p)
    return desc, sparse.pack_data(e, p)


def _bad_weights(rng: np.random.Generator, job: ClusterJob, p: SparseParams) -> None:
    """Give a CONV pass weight words with one defect the weight memory flags: an index
    beyond K (W_IDX_OOB), a duplicate position (W_DUP), a zero in sparse mode (W_ZERO) or
    more than ``kmax**2`` words (W_OVERFLOW); or (``wide``, no flag) weights loaded for a
    larger kernel (``w_k``): up to ``K^2`` of them with indices beyond ``K``, whose
    products off the map the STUs drop, or more than ``K^2`` (every unit refuses with
    CFG). ``weights`` becomes what the memory stores."""
    w, k, dense = [tuple(x) for x in job.weights], job.cfg.k, bool(job.cfg.dense)
    kinds = ["overflow"] + (["dup"] if w else []) + (["zero"] if w and not dense else [])
    kinds += ["oob"] if k < 1 << p.kb else []
    kinds += ["wide"] * 2 if k < p.kmax and not dense else []
    kind = kinds[int(rng.integers(0, len(kinds)))]
    i = int(rng.integers(0, max(1, len(w))))
    if kind == "wide":
        job.w_k = int(rng.integers(k + 1, p.kmax + 1))
        w = [tuple(x) for x in sparse.encode_weights(_kernel(rng, job.w_k, p.ww, job.w_k ** 2), "raster")]
        n = k * k if rng.random() < 0.7 else int(rng.integers(k * k + 1, len(w) + 1))
        perm = [int(j) for j in rng.permutation(len(w))]
        beyond = next(j for j in perm if max(w[j][:2]) >= k)  # at least one among the n read
        perm.remove(beyond)
        perm.insert(int(rng.integers(0, n)), beyond)
        w = [w[j] for j in perm[:n]]
    elif kind == "oob":
        w.insert(i, (int(rng.integers(k, 1 << p.kb)), int(rng.integers(0, 1 << p.kb)), 1))
    elif kind == "dup":
        w.insert(int(rng.integers(i, len(w) + 1)), (*w[i][:2], int(nonzero_values(rng, 1, p.ww)[0])))
    elif kind == "zero":
        w[i] = (*w[i][:2], 0)
    else:
        w += [(0, 0, 1)] * (p.kmax * p.kmax + int(rng.integers(1, 3)) - len(w))
    job.w_words = sparse.pack_weights(w, p)
    load = sparse.load_weights(job.w_words, job.w_k or k, p, dense=dense)
    job.weights, job.w_err = list(load.entries), load.err


def _defect_job(b: _Builder, defects: bool = True, reset: bool = False) -> ClusterJob:
    """Independent maps with defects in some units' data, the weights or a descriptor
    (``defects`` scenario); the same pass without them when not ``defects``; after a
    reset when ``reset``."""
    p, rng, m = b.p, b.rng, b.m
    sel, act = b.route_pattern(conflict=False) if m > 1 else ([0], [0])
    dense = rng.random() < 0.3
    maps = b.random_maps(act)
    job = b.independent(maps, _kernel(rng, int(rng.integers(1, p.kmax + 1)), p.ww), dense=dense, route_sel=sel)
    job.reset = reset
    job.bank = int(rng.integers(0, 2))  # both banks' stored descriptors take the random fields
    if not defects:
        return b.stalls(job)
    r = rng.random()
    if r < 0.7:
        job.corrupt = [i for i in act if rng.random() < 0.5] or [act[int(rng.integers(0, len(act)))]]
    if r > 0.4:
        _bad_weights(rng, job, p)
    if rng.random() < 0.35:
        job.bad = [act[int(rng.integers(0, len(act)))]]
    return b.stalls(b.finish(job, [None if M is None else (0, 0, int(dense), M) for M in maps]))


def _route_jobs(b: _Builder, count: int, flow: str = "overlap") -> list[ClusterJob]:
    """The ``route`` scenario's passes; ``flow`` (``overlap`` or ``halo``) is how a
    partitioned map's cells are made and combined."""
    p, rng, m = b.p, b.rng, b.m
    K = p.kmax
    jobs: list[ClusterJob] = []

    def one(sel: list[int], act: list[int], **kw: Any) -> ClusterJob:
        X = b.skewed(n=len(act))
        Wk = _kernel(rng, int(rng.integers(1, K + 1)), p.ww)
        job = b.partitioned(X, Wk, len(act), flow, str(rng.choice(["balanced", "equal"])), route_sel=sel,
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
    # refused FC passes (CFG), every unit active on its own memory unit: pooling asked
    # for (every unit refuses), then each unit in turn given a vector of two rows
    vecs = [random_map(rng, 1, w, int(rng.integers(0, w + 1)), p.dw) for _ in range(m)]
    jobs.append(b.stalls(b.independent(vecs, None, fc=fcw, pool=str(rng.choice(["max", "avg", "sum"])))))
    for i in range(m if p.hmax > 1 else 0):
        tall = list(vecs)
        tall[i] = random_map(rng, 2, w, int(rng.integers(1, 2 * w + 1)), p.dw)
        jobs.append(b.stalls(b.independent(tall, None, fc=fcw)))
    # every unit a full hmax x wmax map under a kmax x kmax kernel: the walks' row and
    # column bounds at their edges
    sel, act = b.route_pattern(conflict=False) if m > 1 else ([0], [0])
    full = [random_map(rng, p.hmax, p.wmax, int(rng.integers(1, p.hmax * p.wmax + 1)), p.dw) if i in act else None
            for i in range(m)]
    jobs.append(b.stalls(b.independent(full, _kernel(rng, K, p.ww), route_sel=sel)))
    while len(jobs) < count:
        r = rng.random()
        if r < 0.1:  # refused descriptors on some units
            bad = one([0] * m, everyone)
            bad.bad = [i for i in range(m) if rng.random() < 0.5] or [int(rng.integers(0, m))]
            jobs.append(b.finish(bad, [None if bad.cells[i] is None else _unit_of(bad, i) for i in range(m)]))
        elif r < 0.17:  # loads the memories flag
            jobs.append(_defect_job(b))
        elif r < 0.27:  # independent maps, dense mode now and then
            dense = rng.random() < 0.4
            sel, act = b.route_pattern(conflict=False) if m > 1 else ([0], [0])
            maps = b.random_maps(act)
            Wk = _kernel(rng, int(rng.integers(1, K + 1)), p.ww)
            jobs.append(b.stalls(b.independent(maps, Wk, dense=dense, route_sel=sel)))
        else:
            sel, act = b.route_pattern(conflict=m > 1 and r < 0.4) if m > 1 else ([0], [0])
            jobs.append(one(sel, act))
    jobs = jobs[:count]
    _pair_preload(jobs, m)
    return jobs


def _unit_of(job: ClusterJob, i: int) -> tuple[int, int, int, np.ndarray]:
    r0, r1, c0, c1 = job.cells[i]
    return r0, c0, job.cfg.dense, job.X[r0:r1, c0:c1]



# ---- flows: channel sequences and depthwise-separable convolutions -------------------------
def _chain_preload(jobs: list[ClusterJob], rng: np.random.Generator, rate: float = 0.75) -> None:
    """Load a pass's data into the other bank while the pass before it runs (most of
    the time; passes of one dense mode)."""
    for a, b in zip(jobs, jobs[1:]):
        if a.refused or b.refused or a.poke is not None or b.bad or a.cfg.dense != b.cfg.dense:
            continue
        if rng.random() < rate:
            _preload(a, b)


def _mark_empty(jobs: list[ClusterJob]) -> None:
    """``empty``: the memory units whose cell is empty in a pass but not in the flow."""
    busy = {i for j in jobs for i in j.active if j.loads[i].entries}
    for j in jobs:
        j.empty = [i for i in j.active if not j.loads[i].entries and i in busy]


def _routes(b: _Builder, n_seq: int) -> tuple[list[int], list[int]]:
    """``(route_sel, active memory units)`` of a flow: every unit with the identity or
    the rotation, or a random pattern without a conflict (idle memory units)."""
    m = b.m
    if m == 1 or n_seq % 3 == 0:
        return [0] * m, list(range(m))
    if n_seq % 3 == 1:
        return [1] * m, list(range(m))
    return b.route_pattern(conflict=False)


def _channel_jobs(b: _Builder, count: int) -> list[ClusterJob]:
    """C-channel convolutions (module docstring: ``channels``)."""
    p, rng = b.p, b.rng
    jobs: list[ClusterJob] = []
    pools = ["max", "avg", "sum", "none"]
    n_seq = 0
    while len(jobs) < count:
        C = 2 + n_seq % 3 if n_seq < 3 else int(rng.integers(2, 5))
        halo_mode = n_seq % 4 == 3
        part = "equal" if n_seq % 2 == 0 else "balanced"
        pool = pools[(n_seq // 4) % len(pools)] if halo_mode else "none"
        kk = p.kmax if p.kmax % 2 else p.kmax - 1  # pooling needs an even K - 1
        K = kk if pool != "none" else int(rng.integers(1, p.kmax + 1))
        halo = K - 1 if halo_mode else 0
        h = int(rng.integers(max(2, p.hmax // 2), p.hmax + 1))
        w = int(rng.integers(max(2, p.wmax // 2), p.wmax + 1))
        X = np.stack([skewed_map(rng, h, w, p.dw) for _ in range(C)])
        Wks = np.stack([_kernel(rng, K, p.ww) for _ in range(C)])
        sel, act = _routes(b, n_seq)
        cells, label = b.grid_cells(X, len(act), halo, part, 2 if pool != "none" else 1)
        if part == "equal":  # one cell empty in one channel: a keeping pass, or the draining one
            c_e = int(rng.integers(0, C - 1)) if n_seq % 4 == 0 else C - 1
            r0, r1, c0, c1 = _extend(cells[int(rng.integers(0, len(cells)))], halo, (h, w))
            X[c_e, r0:r1, c0:c1] = 0
        drain = dict(relu=int(rng.integers(0, 2)) if halo_mode else 0, pool=pool,
                     shift=int(rng.integers(0, 4)) if halo_mode else 0)
        flow = Flow("channels", n_seq, X, Wks, mode="halo" if halo_mode else "overlap",
                    cfg=b.base_cfg(K, **drain), passes=C)
        seq: list[ClusterJob] = []
        acc = None
        for c in range(C):
            last = c == C - 1
            cfg = b.base_cfg(K, emit=int(last), **(drain if last else {}))
            job = ClusterJob("channels", cfg, _weights(rng, Wks[c], False), Wk=Wks[c], X=X[c], part=label,
                             route_sel=list(sel), flow=flow, step=c, bank=int(rng.integers(0, 2)),
                             tag={"flow": n_seq, "channel": f"{c + 1}/{C}"})
            b.load_cells(job, X[c], cells, act, halo, acc)
            acc = job.golden.acc
            seq.append(b.stalls(job))
        _mark_empty(seq)
        jobs += seq
        n_seq += 1
    _chain_preload(jobs, rng)
    return jobs


def _bounded(rng: np.random.Generator, shape: tuple[int, ...], amp: int, density: float) -> np.ndarray:
    """Values in ``[-amp, amp]``, non-zero with probability ``density``; ``+-amp`` now and then."""
    v = rng.integers(1, amp + 1, size=shape) * rng.choice(np.array([-1, 1]), size=shape)
    v = np.where(rng.random(shape) < 0.15, np.sign(v) * amp, v)
    return (v * (rng.random(shape) < density)).astype(np.int64)


def _dwsep_jobs(b: _Builder, count: int) -> list[ClusterJob]:
    """Depthwise-separable convolutions (module docstring: ``dwsep``)."""
    p, rng, m = b.p, b.rng, b.m
    jobs: list[ClusterJob] = []
    lo_d, hi_d = sparse.signed_range(p.dw)
    hi_w = sparse.signed_range(p.ww)[1]
    n_seq = 0
    while len(jobs) < count:
        whole = n_seq % 2 == 1  # the depthwise passes: the whole map on one unit, or partitioned
        C = int(rng.integers(2, min(4, p.wmax) + 1))
        N = int(rng.integers(1, min(6, p.nmax_out) + 1))
        K = p.kmax if n_seq == 0 else int(rng.integers(1, p.kmax + 1))
        H = int(rng.integers(2, min(p.hmax, 6) + 1))
        W = int(rng.integers(2, min(p.wmax, 6) + 1))
        sd = int(rng.integers(1, 4)) if whole else 0  # a shift on partial sums is wrong: whole maps only
        sp = int(rng.integers(0, 4))
        # every Z = (correlate_full >> sd) fits dw bits: K^2 * ax * aw <= hi_d * 2^sd
        aw = min(hi_w, 3 if not whole else 7)
        ax = max(1, min(hi_d, (hi_d << sd) // (K * K * aw)))
        X = np.stack([_bounded(rng, (H, W), ax, float(rng.uniform(0.2, 0.9))) for _ in range(C)])
        if n_seq % 3 == 0:
            X[0, : H // 2] = 0  # part of a channel empty: zero pixel vectors, empty cells
        Wd = np.stack([_bounded(rng, (K, K), aw, 0.7) for _ in range(C)])
        for c in range(C):
            if not Wd[c].any():
                Wd[c, int(rng.integers(0, K)), int(rng.integers(0, K))] = aw
        Wp = _bounded(rng, (N, C), hi_w, 0.8)
        Y = sparse.depthwise_separable(X, Wd, Wp, p, shift_dw=sd, shift_pw=sp)
        Ho, Wo = H + K - 1, W + K - 1
        flow = Flow("dwsep", n_seq, X, Wd, mode="whole" if whole else "partitioned", Wp=Wp, shift_dw=sd,
                    shift_pw=sp, Y=Y, depthwise=C)
        seq: list[ClusterJob] = []
        Z = np.zeros((C, Ho, Wo), dtype=np.int64)
        sel, act = _routes(b, n_seq)
        if not whole and not _fitting(len(act), H, W):
            continue  # no grid of len(act) cells fits this small map (seed 305416707 of sparse_cluster_dwsep): draw again
        for c in range(C):  # depthwise: emit = 1, relu = 0
            if whole:  # channel c on unit c mod m
                job = b.partitioned(X[c], Wd[c], 1, "overlap", "equal", shift=sd, grid=(1, 1), active=[c % m])
            else:
                job = b.partitioned(X[c], Wd[c], len(act), "overlap", str(rng.choice(["balanced", "equal"])),
                                    route_sel=sel, active=act)
            job.kind, job.flow, job.step, job.bank = "dw", flow, c, int(rng.integers(0, 2))
            job.tag = {"flow": n_seq, "channel": f"{c + 1}/{C}"}
            g = job.golden
            run = [u for u in range(m) if g.units[u] is not None]
            # the host: overlap-add the units' drained outputs (placed by their cells)
            Z[c] = sparse.overlap_add([job.cells[g.source[u]] for u in run], [g.units[u].out for u in run],
                                      (H, W), K)
            seq.append(b.stalls(job))
        flow.Z = Z
        pixels = [(r, col) for r in range(Ho) for col in range(Wo)]
        sel, act = _routes(b, n_seq + 1)
        for k in range(0, len(pixels), len(act)):  # pointwise: one pixel vector per unit, FC mode, ReLU
            chunk = pixels[k:k + len(act)]
            vecs: list[np.ndarray | None] = [None] * m
            orgs: list[tuple[int, int] | None] = [None] * m
            for i, (r, col) in zip(act, chunk):
                vecs[i], orgs[i] = Z[None, :, r, col], (r, col)
            job = b.independent(vecs, None, fc=Wp, route_sel=sel, relu=1, shift=sp, orgs=orgs, flow=flow)
            job.kind, job.step, job.keep_weights = "pw", len(seq), k > 0
            job.bank = int(rng.integers(0, 2))
            job.tag = {"flow": n_seq, "pixels": f"{k}..{k + len(chunk) - 1}/{len(pixels)}"}
            seq.append(b.stalls(job))
        flow.passes = len(seq)
        _mark_empty(seq)
        jobs += seq
        n_seq += 1
    _chain_preload(jobs, rng)
    return jobs
