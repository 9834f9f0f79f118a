"""The sparse tensor compute unit (STU): schedule, accumulate, drain, and its cycle
model (docs/sparse.md sections 4, 5 and 8).

:func:`correlate_full` is the reference the STU scatter is checked against; it is an
independent shifted-add over the dense map and never looks at the schedule.

Decisions where the contract is silent (written into docs/sparse.md sections 4 and 5):

* ``q = cfg.nnz`` and ``WNZ = cfg.wnz`` (``None``: the length of the given lists). The
  STU reads data entries ``0..q-1`` and weights ``0..WNZ-1``; an entry or weight that
  the memory did not store (after a dropped entry) is an idle lane. In u = 1 the rounds
  are still ``WNZ * ceil(q/p)``; the u = 2 work list holds only stored pairs.
* Dense mode always uses the u = 1 schedule (``K**2 * ceil(H*W/p)`` rounds).
* FC mode: ``cfg.k`` and ``cfg.wnz`` are ignored; CFG also covers ``H != 1``. A round
  is listed as its lanes ``(0, o, x_i * W[o][i])``; the accumulator takes their sum.
* ``Job.acc`` is the footprint-sized accumulator (``(H+K-1) x (W+K-1)`` or
  ``1 x n_out``) after the job: all zero after a drain. A job refused by CFG leaves
  ``acc`` as given. ``Job.full`` is the accumulator after the compute phase, before
  the drain.
* ACC_OVF: per output address the adds happen in round order (u = 1: weight-major; FC:
  group order, one add of the adder-tree sum per round), each in ``accw`` bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .params import SparseParams
from .format import signed_range
from .mem import STU_ERR

__all__ = [
    "CONV",
    "FC",
    "Cfg",
    "Job",
    "cfg_error",
    "correlate_full",
    "counter_reads",
    "cycles",
    "drain",
    "drain_entries",
    "footprint",
    "stu_job",
    "stu_schedule",
]

CONV = "conv"
FC = "fc"

Item = tuple[int, int, int]  # (out_row, out_col, product)


@dataclass(frozen=True)
class Cfg:
    """One STU job's configuration (sampled at ``start``).

    Attributes:
        k: kernel size K (CONV).
        h: sub-FM height H (1 in FC mode).
        w: sub-FM width W (the vector length in FC mode).
        nnz: data entries the STU reads (q); ``None`` means all that are given.
        wnz: weights the STU reads (CONV); ``None`` means all that are given.
        mode: :data:`CONV` or :data:`FC`.
        n_out: output neurons (FC).
        emit: 1 drains (and clears) the accumulator; 0 keeps it for the next channel.
        relu: apply ReLU in the drain.
        pool: a name of ``SparseParams.POOL_MODES`` or its index.
        shift: arithmetic right shift of the drain (``>= 0``).
        dense: dense mode (zeros included, u = 1 schedule).
    """

    k: int
    h: int
    w: int
    nnz: int | None = None
    wnz: int | None = None
    mode: str = CONV
    n_out: int = 1
    emit: int = 1
    relu: int = 0
    pool: str | int = "none"
    shift: int = 0
    dense: int = 0

    @property
    def pool_name(self) -> str:
        """The pool mode's name (``"none"``, ``"max"``, ``"sum"`` or ``"avg"``)."""
        modes = SparseParams.POOL_MODES
        if isinstance(self.pool, int) and not isinstance(self.pool, bool) and 0 <= self.pool < len(modes):
            return modes[self.pool]
        if self.pool in SparseParams.POOL_MODES:
            return str(self.pool)
        raise ValueError(f"Cfg.pool={self.pool!r}: must be one of {SparseParams.POOL_MODES} or its index")


@dataclass
class Job:
    """The golden result of one STU job.

    Attributes:
        cfg: the job's configuration.
        out_entries: ``(row, col, val)`` of the output stream, raster order (LAST on the
            final one); empty without a drain.
        acc: the accumulator after the job (footprint-sized; zero after a drain).
        full: the accumulator after the compute phase, before the drain.
        out: the drained map (``drain(full, cfg, params)``), or ``None`` if ``emit = 0``.
        rounds: the compute rounds, each a list of ``(out_row, out_col, product)``.
        cyc_compute: compute cycles (``len(rounds)``).
        cyc_drain: drain cycles with ``o_ready`` high.
        n_mults: products of two non-zero operands that reach the accumulator.
        n_deferred: pushes into the collision FIFO (u = 2).
        fifo_max: largest collision-FIFO occupancy after a round.
        errors: ``STU_ERR`` bits the job raised.
    """

    cfg: Cfg
    out_entries: list[Item]
    acc: np.ndarray
    full: np.ndarray
    out: np.ndarray | None
    rounds: list[list[Item]] = field(repr=False)
    cyc_compute: int
    cyc_drain: int
    n_mults: int
    n_deferred: int
    fifo_max: int
    errors: int

    @property
    def nnz_out(self) -> int:
        """Output entries emitted."""
        return len(self.out_entries)

    @property
    def n_rounds(self) -> int:
        """Compute rounds (equal to :attr:`cyc_compute`)."""
        return len(self.rounds)


def correlate_full(X: np.ndarray, Wk: np.ndarray, k: int | None = None) -> np.ndarray:
    """Full 2-D cross-correlation, exact int64.

    ``out[R, C] = sum_{a,b} X[R-(K-1)+a, C-(K-1)+b] * Wk[a, b]`` (out-of-range ``X`` is
    zero); size ``(H+K-1) x (W+K-1)``.

    ``k`` below the kernel's size ``K`` is a job configured for a ``k x k`` kernel whose
    stored weights reach beyond it (docs/sparse.md section 4): the ``(H+k-1) x (W+k-1)``
    map that ends where the ``K``-kernel's ends (its first ``K-k`` rows and columns cut).

    Raises:
        ValueError: on a non-2-D map, a non-square kernel or ``k`` not in ``1..K``.
    """
    X, Wk = np.asarray(X, dtype=np.int64), np.asarray(Wk, dtype=np.int64)
    if X.ndim != 2 or Wk.ndim != 2 or Wk.shape[0] != Wk.shape[1] or Wk.shape[0] < 1:
        raise ValueError(f"correlate_full: need a 2-D map and a square kernel, got {X.shape} and {Wk.shape}")
    (H, W), K = X.shape, Wk.shape[0]
    if k is not None and not 1 <= k <= K:
        raise ValueError(f"correlate_full: k={k} must be in 1..{K} (the kernel's size)")
    out = np.zeros((H + K - 1, W + K - 1), dtype=np.int64)
    for a in range(K):
        for b in range(K):
            out[K - 1 - a:K - 1 - a + H, K - 1 - b:K - 1 - b + W] += X * Wk[a, b]
    cut = 0 if k is None else K - k
    return out[cut:, cut:]


def _schedule(data: Sequence[Sequence[int]], weights: Sequence[Sequence[int]], K: int, p: int,
              u: int) -> tuple[list[list[Item]], int, int]:
    """Spec 001 section 4.7; also returns (FIFO pushes, largest FIFO occupancy)."""
    if p < 1 or u < 1:
        raise ValueError(f"stu_schedule: need p >= 1 and u >= 1, got p={p}, u={u}")
    nd, pos = len(data), 0
    n_work = nd * len(weights)
    fifo: list[Item] = []
    rounds: list[list[Item]] = []
    pushes = fifo_max = 0
    while pos < n_work or fifo:
        items, fifo, used = fifo, [], []  # deferred products first
        slots = len(items)
        while slots < p and pos < n_work:
            j, i = divmod(pos, nd)  # weight-major work list
            if j not in used:
                if len(used) == u:
                    break  # cap on unique weights: the lane idles
                used.append(j)
            (r, c, x), (a, b, w) = data[i][:3], weights[j][:3]
            R, C = r + K - 1 - a, c + K - 1 - b
            if R >= 0 and C >= 0:  # else a weight beyond K put it off the map: the slot drops it
                items.append((R, C, x * w))
            slots += 1
            pos += 1
        seen: set[tuple[int, int]] = set()
        emit: list[Item] = []
        for it in items:  # write arbiter: the first claimant of an address wins
            (fifo if it[:2] in seen else emit).append(it)
            seen.add(it[:2])
        rounds.append(emit)
        pushes += len(fifo)
        fifo_max = max(fifo_max, len(fifo))
    return rounds, pushes, fifo_max


def stu_schedule(data: Sequence[Sequence[int]], weights: Sequence[Sequence[int]], K: int, p: int,
                 u: int = 1) -> list[list[Item]]:
    """The compute rounds of a CONV job (spec 001 section 4.7, exactly).

    Args:
        data: ``(r, c, x)`` data entries in stream order.
        weights: ``(a, b, w)`` weights in stream order.
        K: kernel size.
        p: multipliers.
        u: unique weights per round (1: STU 1300; 2: STU 1400 with the collision FIFO).

    Returns:
        One list per round of ``(out_row, out_col, product)`` sent to the accumulator;
        the addresses of a round are distinct.

    Raises:
        ValueError: if ``p < 1`` or ``u < 1``.
    """
    return _schedule(data, weights, K, p, u)[0]


def footprint(cfg: Cfg) -> tuple[int, int]:
    """The job's output map before pooling: ``(H+K-1, W+K-1)`` (CONV) or ``(1, n_out)`` (FC)."""
    return (1, cfg.n_out) if cfg.mode == FC else (cfg.h + cfg.k - 1, cfg.w + cfg.k - 1)


def cfg_error(cfg: Cfg, params: SparseParams) -> int:
    """The STU_ERR bits a configuration raises at ``start`` (CFG or 0).

    Raises:
        ValueError: on a value no configuration register can hold (unknown mode or
            pool, negative shift or count).
    """
    if cfg.mode not in (CONV, FC):
        raise ValueError(f"Cfg.mode={cfg.mode!r}: must be {CONV!r} or {FC!r}")
    pool = cfg.pool_name
    if cfg.shift < 0 or (cfg.nnz is not None and cfg.nnz < 0) or (cfg.wnz is not None and cfg.wnz < 0):
        raise ValueError(f"Cfg: shift, nnz and wnz must be >= 0, got {cfg}")
    bad = not 1 <= cfg.w <= params.wmax
    if cfg.mode == FC:
        bad |= cfg.h != 1 or not 1 <= cfg.n_out <= params.nmax_out or pool != "none"
    else:
        bad |= not 1 <= cfg.k <= params.kmax or not 1 <= cfg.h <= params.hmax
        bad |= cfg.wnz is not None and cfg.wnz > cfg.k * cfg.k
    return STU_ERR["CFG"] if bad else 0


def _acc_add(acc: np.ndarray, R: np.ndarray, C: np.ndarray, prod: np.ndarray, accw: int) -> bool:
    """``acc[R, C] += prod`` in ``accw``-bit two's complement (distinct addresses);
    True if a signed result overflowed."""
    old = acc[R, C]
    if accw == 64:
        new = old + prod  # int64 array arithmetic wraps modulo 2**64
        ovf = ((old ^ new) & (prod ^ new)) < 0
    else:
        s = old + prod  # exact: |old| <= 2**62, |prod| <= 2**34
        h = 1 << (accw - 1)
        new = ((s & ((1 << accw) - 1)) ^ h) - h
        ovf = new != s
    acc[R, C] = new
    return bool(np.any(ovf))


def _checked_entries(entries: Sequence[Sequence[int]], lim: tuple[int, int], bits: int, what: str) -> np.ndarray:
    """``n x 3`` int64 array of ``(x, y, val)``; indices below ``lim``, values in ``bits``."""
    arr = np.array([tuple(e[:3]) for e in entries], dtype=np.int64).reshape(-1, 3)
    lo, hi = signed_range(bits)
    bad = (arr[:, 0] < 0) | (arr[:, 0] >= lim[0]) | (arr[:, 1] < 0) | (arr[:, 1] >= lim[1])
    bad |= (arr[:, 2] < lo) | (arr[:, 2] > hi)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"stu_job: {what} entry {i} {tuple(arr[i])} is outside {lim} or {bits} bits")
    return arr


def _conv(cfg: Cfg, data: np.ndarray, q: int, weights: list, acc: np.ndarray,
          params: SparseParams) -> tuple[list[list[Item]], int, int, int, bool]:
    K, p = cfg.k, params.p
    wnz = len(weights) if cfg.wnz is None else cfg.wnz
    wts = _checked_entries(weights[:wnz], (1 << params.kb,) * 2, params.ww, "weight")
    R = data[None, :, 0] + K - 1 - wts[:, 0, None]  # weight j, entry i: the product's address
    C = data[None, :, 1] + K - 1 - wts[:, 1, None]
    on = (R >= 0) & (C >= 0)  # a weight index beyond K can put a product off the map: dropped
    n_mults = int(np.count_nonzero(on & (data[None, :, 2] != 0) & (wts[:, 2, None] != 0)))
    ovf = False
    if params.u == 2 and not cfg.dense:
        rounds, pushes, fifo_max = _schedule(data.tolist(), wts.tolist(), K, p, 2)
        for rnd in rounds:
            if rnd:
                it = np.array(rnd, dtype=np.int64)
                ovf |= _acc_add(acc, it[:, 0], it[:, 1], it[:, 2], params.accw)
        return rounds, n_mults, pushes, fifo_max, ovf
    # u = 1 (and dense): weight j, group g is one round; a weight's addresses are a
    # translation of the data's, hence distinct, so one weight is one vector add.
    rounds = []
    groups = -(-q // p)
    for j in range(wnz):
        if j >= len(wts):  # a weight the memory did not store: idle rounds
            rounds += [[] for _ in range(groups)]
            continue
        m, prod = on[j], data[:, 2] * wts[j, 2]
        ovf |= _acc_add(acc, R[j][m], C[j][m], prod[m], params.accw)
        items = list(zip(R[j].tolist(), C[j].tolist(), prod.tolist(), m.tolist()))
        rounds += [[it[:3] for it in items[g * p:(g + 1) * p] if it[3]] for g in range(groups)]
    return rounds, n_mults, 0, 0, ovf


def _fc(cfg: Cfg, data: np.ndarray, q: int, weights, acc: np.ndarray,
        params: SparseParams) -> tuple[list[list[Item]], int, bool]:
    Wm = np.asarray(weights, dtype=np.int64)
    if Wm.shape != (cfg.n_out, cfg.w):
        raise ValueError(f"stu_job: FC weights must be n_out x W = {(cfg.n_out, cfg.w)}, got {Wm.shape}")
    lo, hi = signed_range(params.ww)
    if (Wm < lo).any() or (Wm > hi).any():
        raise ValueError(f"stu_job: an FC weight does not fit {params.ww} bits")
    p = params.p
    groups = -(-q // p)
    gather = Wm[:, data[:, 1]]  # W[o][i] for each data entry, n_out x q_stored
    prods = gather * data[None, :, 2]
    n_mults = int(np.count_nonzero((gather != 0) & (data[None, :, 2] != 0)))
    sums = np.zeros((cfg.n_out, groups), dtype=np.int64)
    np.add.at(sums, (slice(None), np.arange(len(data)) // p), prods)  # the adder tree
    ovf = False
    o = np.arange(cfg.n_out)
    for g in range(groups):  # the special accumulator, one add per output per round
        ovf |= _acc_add(acc, np.zeros_like(o), o, sums[:, g], params.accw)
    rounds = [[(0, int(oo), int(v)) for v in prods[oo, g * p:(g + 1) * p]]
              for oo in range(cfg.n_out) for g in range(groups)]
    return rounds, n_mults, ovf


def stu_job(cfg: Cfg, data: Sequence[Sequence[int]], weights, params: SparseParams,
            acc: np.ndarray | None = None) -> Job:
    """Run one STU job: compute (CONV u = 1/u = 2, dense, or FC), then drain if ``emit``.

    Args:
        cfg: the job's :class:`Cfg`.
        data: the stored data entries ``(row, col, val)`` (FC: ``(0, i, x_i)``).
        weights: CONV: the stored weights ``(a, b, w)`` in schedule order; FC: the dense
            ``n_out x W`` matrix.
        params: the STU's parameters.
        acc: the accumulator left by the previous job (``emit = 0``); ``None`` is the
            all-zero accumulator after reset or a drain.

    Returns:
        The :class:`Job`.

    Raises:
        ValueError: on data entries outside the configured map, weight indices the weight
            port cannot carry (``>= 2^kb``), values that do not fit ``dw``/``ww``, or an
            ``acc`` of the wrong shape or width.
    """
    if cfg.mode == CONV and cfg.wnz is None:  # all the given weights: CFG checks their count too
        weights = list(weights)
        cfg = replace(cfg, wnz=len(weights))
    err = cfg_error(cfg, params)
    if err:  # start is ignored
        a = np.zeros((0, 0), dtype=np.int64) if acc is None else np.array(acc, dtype=np.int64)
        return Job(cfg, [], a, a.copy(), None, [], 0, 0, 0, 0, 0, err)
    shape = footprint(cfg)
    if acc is None:
        acc = np.zeros(shape, dtype=np.int64)
    else:
        acc = np.array(acc, dtype=np.int64)
        lo, hi = signed_range(params.accw)
        if acc.shape != shape or (acc < lo).any() or (acc > hi).any():
            raise ValueError(f"stu_job: acc must be {shape} with {params.accw}-bit values")
    q = len(data) if cfg.nnz is None else cfg.nnz
    dat = _checked_entries(list(data)[:q], (cfg.h, cfg.w), params.dw, "data")
    pushes = fifo_max = 0
    if cfg.mode == FC:
        rounds, n_mults, ovf = _fc(cfg, dat, q, weights, acc, params)
    else:
        rounds, n_mults, pushes, fifo_max, ovf = _conv(cfg, dat, q, list(weights), acc, params)
    err |= STU_ERR["ACC_OVF"] if ovf else 0
    err |= STU_ERR["FIFO_OVF"] if fifo_max > params.fifo_d else 0
    full = acc.copy()
    out, entries, cyc_drain = None, [], 0
    if cfg.emit:
        out = drain(full, cfg, params)
        entries = drain_entries(out)
        cyc_drain = out.size
        acc = np.zeros(shape, dtype=np.int64)
    return Job(cfg, entries, acc, full, out, rounds, len(rounds), cyc_drain, n_mults, pushes, fifo_max, err)


def drain(acc: np.ndarray, cfg: Cfg, params: SparseParams) -> np.ndarray:
    """The drain stage, in its fixed order: ReLU, 2x2 stride-2 pool (max, sum in
    ``accw + 2`` bits, or avg = floor(sum / 4); an odd trailing row or column is
    dropped), arithmetic right shift by ``cfg.shift``, saturation to signed ``ow`` bits.

    Args:
        acc: the accumulator (signed ``accw``-bit values).
        cfg: ``relu``, ``pool`` and ``shift``.
        params: ``accw`` and ``ow``.

    Returns:
        The output map, int64 (a SUM pool with ``accw > 62`` is summed in Python ints).
    """
    pool = cfg.pool_name
    wide = pool in ("sum", "avg") and params.accw + 2 > 64
    v = np.array(acc, dtype=object if wide else np.int64)
    if cfg.relu:
        v = np.maximum(v, 0)
    if pool != "none":
        h2, w2 = v.shape[0] // 2, v.shape[1] // 2
        blk = v[:2 * h2, :2 * w2].reshape(h2, 2, w2, 2)
        if h2 == 0 or w2 == 0:
            v = v[:h2, :w2]
        elif pool == "max":
            v = blk.max(axis=(1, 3))
        else:
            v = blk.sum(axis=(1, 3))
            if pool == "avg":
                v = v >> 2
    v = v >> (cfg.shift if wide else min(cfg.shift, 63))  # an int64 shift of >= 63 floors to 0 / -1
    lo, hi = signed_range(params.ow)  # ow <= 64 (SparseParams), so the result is int64
    return np.minimum(np.maximum(v, lo), hi).astype(np.int64)


def drain_entries(out: np.ndarray) -> list[Item]:
    """The non-zero ``(row, col, val)`` of a drained map, in raster order."""
    rows, cols = np.nonzero(out)
    return [(int(r), int(c), int(out[r, c])) for r, c in zip(rows, cols)]


def cycles(job: Job, stalls: int = 0) -> int:
    """``start`` to ``done`` of a job (docs/sparse.md section 8):
    ``1 + cyc_compute + STU_PIPE + cyc_drain + 1``, plus ``stalls`` cycles with
    ``o_ready`` low while an output word waits; 1 for a job refused by CFG (``done``
    pulses one cycle after the ignored ``start``)."""
    if job.errors & STU_ERR["CFG"]:
        return 1
    return 1 + job.cyc_compute + SparseParams.STU_PIPE + job.cyc_drain + stalls + 1


def counter_reads(job: Job, params: SparseParams, stalls: int = 0) -> dict[str, int]:
    """What the STU's counters (:attr:`SparseParams.COUNTERS`) read at ``done``: each
    count modulo ``2**cnt_bits``; ``cyc_drain`` counts the ``stalls`` cycles too
    (docs/sparse.md section 8)."""
    whole = {n: getattr(job, n) for n in SparseParams.COUNTERS}
    whole["cyc_drain"] += stalls
    return {n: v & params.cnt_mask for n, v in whole.items()}
