"""Stimulus of the STU testbenches (``stu_top``; docs/sparse.md sections 4, 5, 7, 8): the
jobs of each scenario and their golden results, chained through the accumulator the way
the hardware keeps it. Pure Python (numpy and the golden models): the unit tests use it
without a simulator.

Scenarios (the ``scenario`` option of a testbench):

* ``fig18``: the patent's Fig. 18 (p = 3, one weight per round): sub-FM 1805a
  ``[[3, 9], [6, -5]]`` and the weights -6, 6, -9, 3 in arrow-1825 (snake) order, 8
  rounds of 3 + 1 lanes; with and without back-pressure, and pooled.
* ``fig19``: Fig. 19 (p = 3, u = 2): 1905a (two non-zeros: 3 rounds for 4 weights, the
  second iteration overlapping the first) and 1905c (one non-zero: the third multiplier
  idles, 2 rounds).
* ``random``: CONV jobs over densities 0..100%, kernel sparsity (empty to full), every K,
  raster, snake and random weight orders, ReLU, pool modes, shifts, back-pressure; on a
  u = 2 unit first Fig. 20's collision (9 x -6 and -9 x 6 both at (5, 2)).
* ``edges``: K = 1, H or W below K, q around multiples of p, all-zero data, all-zero
  kernel, extreme values (-2^(dw-1) squared), all-negative maps under ReLU, saturation,
  the largest shift; a full kernel's weights run as a smaller-K job (indices beyond K,
  products off the map dropped; one random job in ten does the same).
* ``fc``: FC jobs (1 x W vectors of every density, dense n_out x W matrices); an FC job
  with ``cfg_wnz != 0`` right after a CONV job (the idle u = 2 scheduler counts nothing).
* ``dense``: dense-mode jobs next to the same maps in sparse mode (the speedup baseline).
* ``channels``: channel sequences (emit = 0 ... 0, 1) on one footprint, drain options on
  the last; with ``wrap`` extreme values that overflow ``accw`` (ACC_OVF).
* ``errors``: every CFG class, a start while busy (compute and drain), a reset in the
  middle of a job, each between good jobs.
* ``mixed``: CONV, FC, dense and channel jobs in one run.
* ``sweep``: the largest map at 0..95% zeros, dense and half-sparse kernels, each job
  next to its dense-mode twin (the measured speedup).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from collections.abc import Iterator
from typing import Any

import numpy as np

from lockstep.models import sparse
from lockstep.models.sparse.params import SparseParams

from .raster_env import nonzero_values, random_map

__all__ = ["SCENARIOS", "StuJob", "acc_after", "chain", "make_jobs", "stream_jobs"]

#: Back-pressure rates a random job draws from.
BACKPRESSURE = (0.0, 0.0, 0.3, 0.6)


@dataclass
class StuJob:
    """One STU job and what it must give.

    Attributes:
        cfg: the configuration (``nnz`` = q, ``wnz`` = WNZ are always set).
        data: the data entries loaded at addresses ``0 .. q-1``.
        weights: CONV: ``(a, b, w)`` loaded at ``0 .. WNZ-1``; FC: the ``n_out x W`` matrix.
        kind: the stimulus kind (log, coverage).
        bp: output back-pressure rate.
        poke: cycles after ``start`` at which a second ``start`` pulses (START_BUSY).
        reset_at: cycles after ``start`` at which ``rst`` pulses (the job is cut).
        X, Wk: the dense map and kernel (CONV), for the independent numpy check.
        expect: directed expectations worked out by hand (``entries``, ``cycles``,
            ``rounds``, ``lanes``: the ``acc_we`` bits of each read-modify-write cycle).
        golden: the golden job (:func:`chain`).
        acc_in: the accumulator the job starts from (``None``: all zero).
    """

    cfg: sparse.Cfg
    data: list
    weights: Any
    kind: str
    bp: float = 0.0
    poke: int | None = None
    reset_at: int | None = None
    X: np.ndarray | None = None
    Wk: np.ndarray | None = None
    expect: dict = field(default_factory=dict)
    golden: Any = None
    acc_in: Any = None

    def __repr__(self) -> str:
        c = self.cfg
        what = (f"fc W={c.w} n_out={c.n_out}" if c.mode == sparse.FC
                else f"K={c.k} {c.h}x{c.w} wnz={c.wnz}{' dense' if c.dense else ''}")
        extra = "".join([f" poke={self.poke}" if self.poke is not None else "",
                         f" reset_at={self.reset_at}" if self.reset_at is not None else ""])
        return (f"{self.kind}: {what} q={c.nnz} emit={c.emit} relu={c.relu} pool={c.pool_name} shift={c.shift} "
                f"bp={self.bp}{extra}")

    @property
    def refused(self) -> bool:
        """The configuration raises CFG."""
        return bool(self.golden.errors & sparse.STU_ERR["CFG"])


def conv_job(X: np.ndarray, Wk: np.ndarray, kind: str, *, order: str = "raster", rng: np.random.Generator | None = None,
             dense: bool = False, k: int | None = None, **cfg: Any) -> StuJob:
    """A CONV job of map ``X`` and kernel ``Wk`` (weights in ``order``: raster, snake or
    random, a permutation drawn from ``rng``); ``cfg`` overrides the drain options.
    ``k`` below the kernel's size configures a smaller job that reads the first ``k^2``
    weights, indices beyond ``k`` among them (docs/sparse.md section 4); ``Wk`` keeps
    only those."""
    sub = sparse.encode(X, dense=dense)
    wts = sparse.encode_weights(Wk, "raster" if order == "random" else order, dense=dense)
    if order == "random" and rng is not None:
        wts = [wts[i] for i in rng.permutation(len(wts))]
    if k is not None and k < Wk.shape[0]:
        wts = wts[:k * k]
        Wk = np.zeros_like(Wk)
        for a, b, w in wts:
            Wk[a, b] = w
    H, W = X.shape
    bp = cfg.pop("bp", 0.0)
    c = sparse.Cfg(k=Wk.shape[0] if k is None else k, h=H, w=W, nnz=len(sub.entries), wnz=len(wts),
                   dense=int(dense), **cfg)
    return StuJob(c, sub.entries, wts, kind, bp=bp, X=X, Wk=Wk)


def _fits(c: sparse.Cfg, widths: dict[str, int]) -> bool:
    """Every configuration value fits its ``cfg_*`` port."""
    vals = {"cfg_k": c.k, "cfg_h": c.h, "cfg_w": c.w, "cfg_nnz": c.nnz, "cfg_wnz": c.wnz, "cfg_n_out": c.n_out,
            "cfg_shift": c.shift}
    return all(0 <= v < 1 << widths[n] for n, v in vals.items())


def fc_job(x: np.ndarray, Wm: np.ndarray, kind: str, **cfg: Any) -> StuJob:
    """An FC job: input vector ``x`` (length W), ``n_out x W`` matrix ``Wm``."""
    sub = sparse.encode(x.reshape(1, -1))
    bp = cfg.pop("bp", 0.0)
    c = sparse.Cfg(k=1, h=1, w=len(x), nnz=len(sub.entries), wnz=0, mode=sparse.FC, n_out=Wm.shape[0], **cfg)
    return StuJob(c, sub.entries, np.asarray(Wm, dtype=np.int64), kind, bp=bp)


def refused_job(kind: str, **cfg: Any) -> StuJob:
    """A start the STU must refuse (CFG); no data."""
    c = sparse.Cfg(**{"k": 1, "h": 1, "w": 1, "nnz": 0, "wnz": 0, **cfg})
    return StuJob(c, [], np.zeros((max(c.n_out, 0), max(c.w, 0)), np.int64) if c.mode == sparse.FC else [], kind)


def chain(jobs: list[StuJob], params: SparseParams, acc: np.ndarray | None = None) -> list[StuJob]:
    """Fill each job's golden result, carrying the accumulator from job to job as the
    hardware does (from ``acc``, the accumulator before the first job): a refused start
    leaves it, ``emit = 0`` keeps it, a drain or a reset clears it."""
    for j in jobs:
        if len(j.data) > params.depth:
            raise ValueError(f"{j!r}: {len(j.data)} data entries do not fit the memory (depth {params.depth})")
        j.acc_in = acc
        j.golden = sparse.stu_job(j.cfg, j.data, j.weights, params, acc=acc)
        acc = acc_after(j)
    return jobs


def acc_after(job: StuJob) -> np.ndarray | None:
    """The accumulator after ``job`` (chained: its ``acc_in`` and golden result set)."""
    if job.reset_at is not None:
        return None
    if job.refused:
        return job.acc_in
    return None if job.cfg.emit else job.golden.acc


# ---------------------------------------------------------------------------------------
# scenarios


def _size(rng: np.random.Generator, top: int) -> int:
    r = rng.random()
    return 1 if r < 0.15 else top if r < 0.4 else int(rng.integers(1, top + 1))


def _hw(rng: np.random.Generator, params: SparseParams) -> tuple[int, int]:
    """A random map size (1 and the maximum favoured) whose positions all fit the data
    memory (``H * W <= depth``: a dense map, or a dense-mode job, must fit)."""
    H = min(_size(rng, params.hmax), params.depth)
    return H, min(_size(rng, params.wmax), max(1, params.depth // H))


def _full_hw(params: SparseParams) -> tuple[int, int]:
    """The largest map whose positions all fit the data memory."""
    H = min(params.hmax, params.depth)
    return H, min(params.wmax, max(1, params.depth // H))


def _nnz(rng: np.random.Generator, size: int) -> int:
    """Non-zero count from a density bin: 0, 1-25, 26-50 (around half), 51-90, 91-99, 100%."""
    b = int(rng.integers(0, 6))
    lo, hi = {0: (0, 0), 1: (0.01, 0.25), 2: (0.26, 0.5), 3: (0.51, 0.9), 4: (0.91, 0.99), 5: (1, 1)}[b]
    return int(min(size, max(0 if b == 0 else 1, round(size * rng.uniform(lo, hi)))))


def _kernel(rng: np.random.Generator, K: int, bits: int) -> np.ndarray:
    """A K x K kernel: full, about half, a single weight, or (rarely) empty."""
    r = rng.random()
    n = K * K if r < 0.4 else max(1, (K * K) // 2) if r < 0.75 else 1 if r < 0.93 else 0
    return random_map(rng, K, K, n, bits)


def _drain_opts(rng: np.random.Generator, params: SparseParams) -> dict[str, Any]:
    shift = int(rng.choice([0, 0, 1, 3, params.accw // 2]))
    return {"relu": int(rng.random() < 0.4), "pool": int(rng.integers(0, 4)), "shift": shift,
            "bp": float(rng.choice(BACKPRESSURE))}


def _random_conv(rng: np.random.Generator, params: SparseParams, kind: str = "random") -> StuJob:
    K = int(rng.integers(1, params.kmax + 1))
    H, W = _hw(rng, params)
    if params.u == 2 and rng.random() < 0.5:
        # few non-zeros (a round spans two weights) and a full kernel in random order:
        # the products of neighbouring weights often meet at one address
        K = max(K, min(2, params.kmax))
        X = random_map(rng, H, W, int(rng.integers(1, min(H * W, 2 * params.p) + 1)), params.dw)
        Wk = random_map(rng, K, K, K * K, params.ww)
        return conv_job(X, Wk, "collide", order="random", rng=rng, **_drain_opts(rng, params))
    X = random_map(rng, H, W, _nnz(rng, H * W), params.dw)
    order = str(rng.choice(["raster", "snake", "random"] if params.u == 1 else ["snake", "random", "random"]))
    k = int(rng.integers(1, K)) if K >= 2 and rng.random() < 0.1 else None  # weights beyond K
    return conv_job(X, _kernel(rng, K, params.ww), kind if k is None else f"{kind}-beyond-K", order=order, rng=rng,
                    k=k, **_drain_opts(rng, params))


def fig18(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int]) -> list[StuJob]:
    """Spec 2.7, Fig. 18 (needs p = 3): worked out by hand below."""
    if params.p != 3 or params.u != 1:
        raise ValueError("scenario fig18 needs SparseParams(p=3, u=1)")
    X = np.array([[3, 9], [6, -5]])
    Wk = np.array([[-6, 6], [3, -9]])  # arrow 1825: -6 (0,0), 6 (0,1), -9 (1,1), 3 (1,0)
    # correlate_full by hand: out[R][C] = sum X[R-1+a][C-1+b] * Wk[a][b]
    full = [[3 * -9, 3 * 3 + 9 * -9, 9 * 3],
            [3 * 6 + 6 * -9, 3 * -6 + 9 * 6 + 6 * 3 + -5 * -9, 9 * -6 + -5 * 3],
            [6 * 6, 6 * -6 + -5 * 6, -5 * -6]]
    entries = [(r, c, v) for r, row in enumerate(full) for c, v in enumerate(row)]
    # 4 weights x ceil(4/3) = 8 rounds: lanes 0-2 (3, 9, 6) then lane 0 (-5), per weight;
    # start to done = 1 + 8 + STU_PIPE + 9 positions + 1
    hand = {"entries": entries, "rounds": 8, "lanes": [0b111, 0b001] * 4, "cycles": 1 + 8 + 2 + 9 + 1,
            "n_mults": 16}
    jobs = [conv_job(X, Wk, "fig18", order="snake"), conv_job(X, Wk, "fig18", order="snake", bp=0.6)]
    for j in jobs:
        j.expect = dict(hand)
    pooled = conv_job(X, Wk, "fig18", order="snake", relu=1, pool=1)  # max of [[0, 0], [18, 99]]
    pooled.expect = {"entries": [(0, 0, 99)], "cycles": 1 + 8 + 2 + 1 + 1}
    return jobs + [pooled]


def fig19(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int]) -> list[StuJob]:
    """Spec 2.7, Fig. 19 (needs p = 3, u = 2)."""
    if params.p != 3 or params.u != 2:
        raise ValueError("scenario fig19 needs SparseParams(p=3, u=2)")
    Wk = np.array([[-6, 6], [3, -9]])
    a = conv_job(np.array([[0, 9], [-5, 0]]), Wk, "fig19a", order="snake")
    # (w0,d0) (w0,d1) (w1,d0) | (w1,d1) (w2,d0) (w2,d1) | (w3,d0) (w3,d1): no address
    # repeats inside a round, so 3 rounds instead of 4
    a.expect = {"rounds": 3, "lanes": [0b111, 0b111, 0b011], "n_deferred": 0}
    c = conv_job(np.array([[-2, 0], [0, 0]]), Wk, "fig19c", order="snake")
    # one non-zero, at most two weights per round: the third multiplier idles
    c.expect = {"rounds": 2, "lanes": [0b011, 0b011], "n_deferred": 0}
    return [a, c, conv_job(np.array([[0, 9], [-5, 0]]), Wk, "fig19a", order="snake", bp=0.5, relu=1)]


def fig20(params: SparseParams) -> StuJob:
    """Fig. 20: 9 at (4,1) x -6 at (0,0) and -9 at (4,2) x 6 at (0,1) both land on (5,2)
    (K = 2); with p >= 4 all four products share round 1, the second claimant waits in
    the FIFO for round 2."""
    X = np.zeros((min(params.hmax, 5), min(params.wmax, 3)), dtype=np.int64)
    X[4, 1], X[4, 2] = 9, -9
    j = conv_job(X, np.array([[-6, 6], [0, 0]]), "fig20")
    j.expect = {"rounds": 2, "n_deferred": 1, "lanes": [0b0111, 0b0001]}
    return j


def fifo2(params: SparseParams) -> StuJob:
    """A row of three non-zeros against a 3 x 3 kernel in a scrambled order (found by a
    search over the golden schedule): with p = 4 two deferred items wait in the FIFO
    together."""
    X = np.array([[-5, -1, -97]])
    wts = [(0, 1, 96), (1, 1, -71), (1, 0, 7), (1, 2, 7), (2, 0, -1), (2, 2, -41), (0, 0, 89), (2, 1, 91), (0, 2, -38)]
    Wk = np.zeros((3, 3), np.int64)
    for a, b, w in wts:
        Wk[a, b] = w
    c = sparse.Cfg(k=3, h=1, w=3, nnz=3, wnz=len(wts))
    j = StuJob(c, sparse.encode(X).entries, wts, "fifo2", X=X, Wk=Wk)
    j.expect = {"fifo_max": 2}
    return j


def _values_fit(job: StuJob, params: SparseParams) -> bool:
    """A directed job's fixed values fit ``dw`` / ``ww`` bits."""
    (lo_d, hi_d), (lo_w, hi_w) = sparse.signed_range(params.dw), sparse.signed_range(params.ww)
    return (all(lo_d <= v <= hi_d for _, _, v in job.data)
            and all(lo_w <= int(w) <= hi_w for w in np.asarray(job.Wk).ravel()))


def random_conv(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int]) -> list[StuJob]:
    jobs = [fig20(params)] if params.u == 2 and params.p >= 4 and params.kmax >= 2 and params.hmax >= 5 \
        and params.wmax >= 3 else []
    if params.u == 2 and params.p == 4 and params.kmax >= 3 and params.wmax >= 3:
        jobs.append(fifo2(params))
    jobs = [j for j in jobs if _values_fit(j, params)]  # fixed values: Fig. 20 needs dw >= 5, ww >= 4; fifo2 8 bits
    while len(jobs) < count:
        jobs.append(_random_conv(rng, params))
    return jobs


def edges(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int]) -> list[StuJob]:
    p, dw, ww = params.p, params.dw, params.ww
    (H, W), K = _full_hw(params), params.kmax
    lo_d, lo_w = sparse.signed_range(dw)[0], sparse.signed_range(ww)[0]
    jobs = []
    # q around multiples of p on a full-size map, a full kernel
    for q in sorted({n for n in (1, p - 1, p, p + 1, 2 * p - 1, 2 * p, 2 * p + 1) if 1 <= n <= H * W}):
        jobs.append(conv_job(random_map(rng, H, W, q, dw), random_map(rng, K, K, K * K, ww), f"q={q}"))
    jobs.append(conv_job(random_map(rng, H, W, H * W // 2, dw), random_map(rng, 1, 1, 1, ww), "K=1"))
    if K >= 2:  # maps smaller than the kernel
        jobs.append(conv_job(random_map(rng, 1, min(W, 2), 1, dw), random_map(rng, K, K, K * K, ww), "H<K"))
        jobs.append(conv_job(random_map(rng, min(H, K - 1), 1, 1, dw), random_map(rng, K, K, K * K - 1, ww), "W<K",
                             pool=2))
    jobs.append(conv_job(np.zeros((H, W), np.int64), random_map(rng, K, K, K * K, ww), "zero-data"))
    for k in sorted({1, K - 1}) if K >= 2 else ():  # a full K-kernel's weights run as a k x k job
        jobs.append(conv_job(random_map(rng, H, W, H * W, dw), random_map(rng, K, K, K * K, ww), "beyond-K",
                             order="random", rng=rng, k=k))
    jobs.append(conv_job(random_map(rng, H, W, H * W, dw), np.zeros((K, K), np.int64), "zero-kernel"))
    jobs.append(conv_job(np.zeros((H, W), np.int64), np.zeros((K, K), np.int64), "zero-both", pool=1, relu=1))
    ext = np.full((H, W), lo_d, np.int64)
    jobs.append(conv_job(ext, np.full((K, K), lo_w, np.int64), "extreme", relu=1))  # (-2^(dw-1))^2 * K^2
    jobs.append(conv_job(ext, np.full((K, K), lo_w, np.int64), "extreme-sum", pool=2))
    neg = np.abs(random_map(rng, H, W, H * W, dw - 1))
    jobs.append(conv_job(neg, -np.abs(random_map(rng, K, K, K * K, ww - 1)), "all-negative", relu=1))
    jobs.append(conv_job(neg, -np.abs(random_map(rng, K, K, K * K, ww - 1)), "negative-avg", pool=3, shift=1))
    jobs.append(conv_job(random_map(rng, H, W, H * W, dw), random_map(rng, K, K, K * K, ww), "saturate",
                         pool=2, bp=0.3))
    big_shift = (1 << widths["cfg_shift"]) - 1
    jobs.append(conv_job(random_map(rng, H, W, H * W // 3, dw), random_map(rng, K, K, K * K, ww), "max-shift",
                         shift=big_shift))
    while len(jobs) < count:
        jobs.append(_random_conv(rng, params, "random"))
    return jobs


def fc_after_conv(params: SparseParams) -> list[StuJob]:
    """A CONV job with the weights (0, 1) then (0, 0), then an FC job of two entries with
    ``cfg_wnz = 2`` (FC ignores WNZ; the cluster drives it from the weight memory). The
    u = 2 scheduler idles in FC mode, but its slots still see the stored weights: entry 1
    under the first and entry 0 under the second meet at one address (p >= 3). No
    deferral may be counted: the walker runs FC rounds."""
    X, Wk = np.array([[1, 1]]), np.array([[1, 1], [0, 0]])
    conv = StuJob(sparse.Cfg(k=2, h=1, w=2, nnz=2, wnz=2), sparse.encode(X).entries, [(0, 1, 1), (0, 0, 1)],
                  "conv-before-fc", X=X, Wk=Wk)
    after = fc_job(np.array([1, 1]), np.array([[1, 1]]), "fc-after-conv")
    after.cfg = replace(after.cfg, wnz=2)
    return [conv, after]


def fc(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int]) -> list[StuJob]:
    jobs = []
    W, N = min(params.wmax, params.depth), params.nmax_out
    jobs.append(fc_job(random_map(rng, 1, W, W, params.dw).ravel(), random_map(rng, N, W, N * W, params.ww), "fc-full"))
    jobs.append(fc_job(np.zeros(W, np.int64), random_map(rng, N, W, N * W, params.ww), "fc-zero"))
    jobs.append(fc_job(random_map(rng, 1, 1, 1, params.dw).ravel(), random_map(rng, 1, 1, 1, params.ww), "fc-1x1"))
    # the nonzeros of x go to the gather lanes in turn: l + 1 of them ending at W - 1 put the
    # last index on lane l (a lane that never read it let a bound mutant through)
    for l in range(min(params.p, W)):
        x = np.zeros(W, np.int64)
        x[W - 1 - l:] = nonzero_values(rng, l + 1, params.dw)
        jobs.append(fc_job(x, random_map(rng, N, W, N * W, params.ww), f"fc-tail-lane{l}"))
    if params.p >= 3 and params.kmax >= 2 and params.wmax >= 2 and params.depth >= 2:
        jobs += fc_after_conv(params)
    while len(jobs) < count:
        w, n = _size(rng, W), _size(rng, N)
        x = random_map(rng, 1, w, _nnz(rng, w), params.dw).ravel()
        Wm = random_map(rng, n, w, _nnz(rng, n * w), params.ww)
        opts = _drain_opts(rng, params)
        opts["pool"] = 0
        jobs.append(fc_job(x, Wm, "fc", **opts))
    return jobs


def dense(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int]) -> list[StuJob]:
    jobs = []
    while len(jobs) < count:
        K = int(rng.integers(1, params.kmax + 1))
        H, W = _hw(rng, params)
        X = random_map(rng, H, W, _nnz(rng, H * W), params.dw)
        Wk = _kernel(rng, K, params.ww)
        opts = _drain_opts(rng, params)
        jobs.append(conv_job(X, Wk, "dense", dense=True, **dict(opts)))
        jobs.append(conv_job(X, Wk, "sparse-twin", **opts))
    return jobs


def channels(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int],
             wrap: bool = False) -> list[StuJob]:
    jobs: list[StuJob] = []
    lo_d, lo_w = sparse.signed_range(params.dw)[0], sparse.signed_range(params.ww)[0]
    first = True
    while len(jobs) < count:
        K = int(rng.integers(1, params.kmax + 1))
        H, W = _hw(rng, params)
        C = int(rng.integers(2, 5)) if not wrap else params.cmax + int(rng.integers(1, 4))
        if wrap and first:
            # the first sequence surely overflows: K^2 extreme products per channel at an
            # inner address, 2^(accw-1) / 2^(dw+ww-2) of them fit, two channels more
            K, (H, W) = params.kmax, _full_hw(params)
            C = (1 << (params.accw - params.dw - params.ww + 1)) // (K * K) + 2
        first = False
        for c in range(C):
            last = c == C - 1
            opts = _drain_opts(rng, params) if last else {"bp": 0.0}
            if wrap:  # every product at its extreme: the sum leaves accw bits after cmax channels
                X, Wk = np.full((H, W), lo_d, np.int64), np.full((K, K), lo_w, np.int64)
            else:
                X, Wk = random_map(rng, H, W, _nnz(rng, H * W), params.dw), _kernel(rng, K, params.ww)
            jobs.append(conv_job(X, Wk, f"channel{c}/{C}", emit=int(last), **opts))
    return jobs


def errors(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int]) -> list[StuJob]:
    K, N = params.kmax, params.nmax_out
    H, W = _full_hw(params)
    good = lambda: _random_conv(rng, params, "good")  # noqa: E731
    bad = [refused_job("K=0", k=0), refused_job("K>kmax", k=K + 1), refused_job("H=0", h=0),
           refused_job("W=0", w=0), refused_job("WNZ>K^2", k=1, wnz=2)]
    bad += [refused_job("H>hmax", h=params.hmax + 1), refused_job("W>wmax", w=params.wmax + 1)]
    if K >= 2:
        bad.append(refused_job("WNZ>K^2", k=2, wnz=5))
    bad += [refused_job("fc n_out=0", mode=sparse.FC, n_out=0, w=2),
            refused_job("fc pool", mode=sparse.FC, n_out=1, pool=1),
            refused_job("fc H!=1", mode=sparse.FC, n_out=1, h=2)]
    bad.append(refused_job("fc n_out>nmax", mode=sparse.FC, n_out=N + 1, w=1))
    jobs = []
    for b in bad:
        if _fits(b.cfg, widths):  # a value its port cannot carry is not a test
            jobs += [b, good()]
    # a start while busy, in the compute phase and in the drain
    for where in ("compute", "drain"):
        X = random_map(rng, H, W, H * W // 2, params.dw)
        j = conv_job(X, random_map(rng, K, K, K * K, params.ww), f"busy-{where}", relu=1)
        jobs.append(j)
    # a reset in the middle of a job (after the first rounds), then a fresh job
    X = random_map(rng, H, W, H * W, params.dw)
    cut = conv_job(X, random_map(rng, K, K, K * K, params.ww), "reset", emit=0)
    cut.reset_at = 3
    jobs += [cut, good()]
    chain(jobs, params)
    for j in jobs:
        if j.kind == "busy-compute":
            j.poke = max(1, j.golden.cyc_compute // 2)
        elif j.kind == "busy-drain":
            j.poke = j.golden.cyc_compute + 3 + j.golden.cyc_drain // 2
    while len(jobs) < count:
        jobs.append(good())
    return jobs


#: Activation sparsity (percent zeros) of the sweep (docs/sparse.md section 10).
SWEEP = (0, 50, 75, 90, 95)


def sweep(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int]) -> list[StuJob]:
    """The largest map at 0, 50, 75, 90 and 95% zeros against a dense and a half-sparse
    kmax x kmax kernel, each job next to its dense-mode twin (the speedup baseline)."""
    (H, W), K = _full_hw(params), params.kmax
    jobs = []
    for half in (False, True):
        Wk = random_map(rng, K, K, max(1, K * K // 2) if half else K * K, params.ww)
        for pct in SWEEP:
            X = random_map(rng, H, W, round(H * W * (100 - pct) / 100), params.dw)
            jobs += [conv_job(X, Wk, f"sweep{pct}{'-half' if half else ''}"),
                     conv_job(X, Wk, f"sweep{pct}{'-half' if half else ''}-dense", dense=True)]
    return jobs


def mixed(params: SparseParams, rng: np.random.Generator, count: int, widths: dict[str, int]) -> list[StuJob]:
    """CONV, FC, dense and channel jobs in one run (a u = 2 unit's three compute paths).
    An FC job's ``cfg_wnz`` is the count of the CONV weights left in the weight memory,
    as the cluster drives it (from ``w_mem``'s ``wnz``); FC mode ignores it."""
    jobs: list[StuJob] = []
    if params.kmax >= 2 and params.wmax >= 2:  # first, weights (0, 0), (0, 1) left for an FC job whose
        # vector has non-zeros in columns 0 and 1: read as CONV items they would collide
        Wk = np.zeros((2, 2), np.int64)
        Wk[0, 0], Wk[0, 1] = 3, -2
        jobs += [conv_job(np.array([[1, 2], [3, 4]]), Wk, "stale-weights", order="raster"),
                 fc_job(np.array([5, -7]), np.array([[1, 2], [-3, 4]]), "fc-after-conv")]
    kinds = (random_conv, fc, dense, channels)
    while len(jobs) < count:
        jobs += kinds[int(rng.integers(0, len(kinds)))](params, rng, 2, widths)
    stale = 0
    for j in jobs:
        if j.cfg.mode == sparse.FC:
            j.cfg = replace(j.cfg, wnz=stale)
        else:
            stale = len(j.weights)
    return jobs


#: Scenario name -> jobs(params, rng, count, widths).
SCENARIOS = {
    "fig18": fig18,
    "fig19": fig19,
    "random": random_conv,
    "edges": edges,
    "fc": fc,
    "dense": dense,
    "channels": channels,
    "wrap": lambda params, rng, count, widths: channels(params, rng, count, widths, wrap=True),
    "errors": errors,
    "mixed": mixed,
    "sweep": sweep,
}


def make_jobs(scenario: str, params: SparseParams, rng: np.random.Generator, count: int,
              widths: dict[str, int]) -> list[StuJob]:
    """The jobs of ``scenario`` with their golden results (``widths``: the DUT's port
    widths, from its record, for the values the ports can carry).

    Raises:
        ValueError: an unknown scenario, or parameters the scenario cannot use.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown STU scenario {scenario!r}; use one of {sorted(SCENARIOS)}")
    return chain(SCENARIOS[scenario](params, rng, count, widths), params)


def stream_jobs(scenario: str, params: SparseParams, rng: np.random.Generator, count: int,
                widths: dict[str, int]) -> Iterator[StuJob]:
    """:func:`make_jobs` repeated without end, ``count`` jobs at a time from the same
    ``rng``, the accumulator chained across the repetitions: the jobs of a streamed
    throughput run (the first ``count`` are ``make_jobs``'s), built as they are taken.

    Raises:
        ValueError: as :func:`make_jobs`, or a repetition with no job.
    """
    jobs = make_jobs(scenario, params, rng, count, widths)
    while True:
        if not jobs:
            raise ValueError(f"STU scenario {scenario!r} made no job ({count} asked): nothing to stream")
        yield from jobs
        jobs = chain(SCENARIOS[scenario](params, rng, count, widths), params, acc_after(jobs[-1]))
