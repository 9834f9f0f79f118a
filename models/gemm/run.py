"""The whole tile: configuration checks, values, timing and one job on a flat memory
(docs/gemm.md sections 6, 7, 8 and 10).

:func:`gemm_ref` is the value reference (wrapping int64 matmul, independent of the
trace). :func:`run` checks a :class:`GemmCfg`, builds the trace, replays it on the cache
model, and writes C and the copy buffer into a copy of the memory.

Decisions where the contract is silent (written into docs/gemm.md section 7):

* The model's inputs are what the registers hold: ``M``, ``N``, ``K``, ``buf_len``,
  ``m``, ``z``, ``keep``, ``shift`` in ``[0, 2**32)``, ``lda``, ``ldb``, ``ldc`` signed
  32-bit, the bases in ``[0, 2**aw)``; anything else raises ``ValueError``.
* OOB and OVERLAP are evaluated only when BAD_DIM and BAD_LD are both clear (their
  extents are not defined otherwise); they read 0 then.
* The buffer extent is empty when copy is off; its length uses ``max(0, m - keep)``
  (``keep > m`` is BAD_BLOCK, never BUF_OVF). An empty extent is never OOB.
* An ``auto`` start refused before the selection reports only the failing bits among
  BAD_DIM, BAD_LD and MISALIGNED.
* ``SEL_*`` and ``DET_*`` change only at a start that is not refused.
* The cache is not invalidated by a start (only by ``rst``): :func:`run` starts from a
  cold cache unless it is given one.
* Counters are ``cnt_bits`` wide (reported modulo ``2**cnt_bits``; 32 by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..record import pow2
from .cache import CacheSim
from .params import GemmParams
from .select import NORMAL, OVERFLOW_COPY, Selection, select_kernel
from .trace import COPY_WR, C_WR, Trace, build_trace

__all__ = ["ERR", "GemmCfg", "Kernel", "Resolved", "Run", "check_cfg", "cycles", "err_names", "extents",
           "gemm_ref", "gen_trace", "load_matrix", "resolve", "run", "store_matrix"]

#: Bit masks of the sticky error flags, by name (docs/gemm.md section 7).
ERR: dict[str, int] = {n: 1 << i for i, n in enumerate(GemmParams.ERR_NAMES)}
_M32 = (1 << 32) - 1


def err_names(bits: int) -> list[str]:
    """The names of the set bits of an error vector."""
    return [n for i, n in enumerate(GemmParams.ERR_NAMES) if bits >> i & 1]


@dataclass(frozen=True)
class GemmCfg:
    """The tile's registers at a start (docs/gemm.md section 7).

    Attributes:
        M, N, K: the problem (each ``< 2**dimw``).
        lda, ldb, ldc: leading dimensions in elements (signed 32-bit).
        base_a, base_b, base_c, base_buf: byte addresses.
        buf_len: bytes available for the copy buffer.
        m, z, keep, copy: the kernel (explicit mode; ignored in ``auto`` mode).
        shift: right shift of the accumulator before saturation.
        auto: the selector chooses ``m``, ``z``, ``keep`` and ``copy``.
        limit_m: the selector's flag (section 3).
    """

    M: int = 0
    N: int = 0
    K: int = 0
    lda: int = 0
    ldb: int = 0
    ldc: int = 0
    base_a: int = 0
    base_b: int = 0
    base_c: int = 0
    base_buf: int = 0
    buf_len: int = 0
    m: int = 1
    z: int = 1
    keep: int = 1
    copy: bool = False
    shift: int = 0
    auto: bool = False
    limit_m: bool = False

    def with_(self, **kw) -> GemmCfg:
        """A copy with some registers changed."""
        return replace(self, **kw)


@dataclass(frozen=True)
class Kernel:
    """The kernel a job runs: ``prog`` (``GemmParams.PROGS`` code), ``m``, ``z``,
    ``keep`` and ``copy``."""

    prog: int
    m: int
    z: int
    keep: int
    copy: bool


@dataclass(frozen=True)
class Resolved:
    """A start's checks: ``err`` bits, the kernel (``None`` when refused before a
    selection), the selection (``auto`` mode) and ``sel`` (selection cycles spent)."""

    err: int
    kernel: Kernel | None
    selection: Selection | None
    sel: int


def _check_domain(cfg: GemmCfg, params: GemmParams) -> None:
    for f in ("M", "N", "K", "buf_len", "m", "z", "keep", "shift"):
        v = getattr(cfg, f)
        if not 0 <= v <= _M32:
            raise ValueError(f"GemmCfg.{f}={v}: a 32-bit register holds 0..2**32-1")
    for f in ("lda", "ldb", "ldc"):
        v = getattr(cfg, f)
        if not -(1 << 31) <= v < 1 << 31:
            raise ValueError(f"GemmCfg.{f}={v}: a signed 32-bit register")
    for f in ("base_a", "base_b", "base_c", "base_buf"):
        v = getattr(cfg, f)
        if not 0 <= v < 1 << params.aw:
            raise ValueError(f"GemmCfg.{f}={v}: a byte address of aw = {params.aw} bits")


def extents(cfg: GemmCfg, k: Kernel, params: GemmParams) -> dict[str, tuple[int, int]]:
    """The half-open byte extents of A, B, C and the buffer (section 7; the buffer is
    empty when copy is off). An empty extent is ``(base, base)``."""
    eb, V = params.eb, params.v
    M, N, K = cfg.M, cfg.N, cfg.K

    def ext(base: int, rows: int, cols: int, ld: int) -> tuple[int, int]:
        return (base, base) if rows == 0 or cols == 0 else (base, base + ((rows - 1) * ld + cols) * eb)

    buf = -(-K // V) * max(0, k.m - k.keep) * V * eb if k.copy else 0
    return {"A": ext(cfg.base_a, M, K, cfg.lda), "B": ext(cfg.base_b, K, N, cfg.ldb),
            "C": ext(cfg.base_c, M, N, cfg.ldc), "BUF": (cfg.base_buf, cfg.base_buf + buf)}


def _meet(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < a[1] and b[0] < b[1] and a[0] < b[1] and b[0] < a[1]


def _early(cfg: GemmCfg, params: GemmParams) -> int:
    """BAD_DIM, BAD_LD and MISALIGNED: the checks that need no kernel."""
    err = 0
    lim = 1 << params.dimw
    if cfg.M >= lim or cfg.N >= lim or cfg.K >= lim:
        err |= ERR["BAD_DIM"]
    if (cfg.lda < max(cfg.K, 1) or cfg.ldb < max(cfg.N, 1) or cfg.ldc < max(cfg.N, 1)
            or max(cfg.lda, cfg.ldb, cfg.ldc) * params.eb >= 1 << params.aw):
        err |= ERR["BAD_LD"]
    if any(b % params.eb for b in (cfg.base_a, cfg.base_b, cfg.base_c, cfg.base_buf)):
        err |= ERR["MISALIGNED"]
    return err


def _late(cfg: GemmCfg, k: Kernel, params: GemmParams, early: int) -> int:
    """BAD_BLOCK, BUF_OVF, OOB and OVERLAP on a kernel."""
    err = 0
    if (not 1 <= k.m <= params.m_max or not pow2(k.z) or k.z > params.z_max
            or (k.m + 1) * k.z + 1 > params.r_hw or k.keep > k.m or cfg.shift >= params.accw):
        err |= ERR["BAD_BLOCK"]
    ex = extents(cfg, k, params)
    if k.copy and ex["BUF"][1] - ex["BUF"][0] > cfg.buf_len:
        err |= ERR["BUF_OVF"]
    if not early & (ERR["BAD_DIM"] | ERR["BAD_LD"]):
        end = params.mem_elems * params.eb
        if any(e[1] > e[0] and e[1] > end for e in ex.values()):
            err |= ERR["OOB"]
        if (_meet(ex["C"], ex["A"]) or _meet(ex["C"], ex["B"])
                or (k.copy and any(_meet(ex["BUF"], ex[x]) for x in "ABC"))):
            err |= ERR["OVERLAP"]
    return err


def resolve(cfg: GemmCfg, params: GemmParams) -> Resolved:
    """Every check of a start in idle (section 7), with the selection in ``auto`` mode."""
    _check_domain(cfg, params)
    early = _early(cfg, params)
    if cfg.auto:
        if early:
            return Resolved(early, None, None, 0)
        s = select_kernel(cfg.N, cfg.lda, cfg.base_a, params, cfg.limit_m)
        k = Kernel(s.prog, s.m, s.z, s.keep, s.copy)
        return Resolved(_late(cfg, k, params, early), k, s, s.sel_cycles)
    k = Kernel(OVERFLOW_COPY if cfg.copy else NORMAL, cfg.m, cfg.z, cfg.keep, bool(cfg.copy))
    return Resolved(early | _late(cfg, k, params, early), k, None, 0)


def check_cfg(cfg: GemmCfg, params: GemmParams) -> int:
    """The error bits a start in idle raises (0: the job runs). START_BUSY is the tile's
    own (a start while busy) and never comes from here."""
    return resolve(cfg, params).err


def gen_trace(cfg: GemmCfg, params: GemmParams, check: bool = True) -> Trace:
    """The AGU's trace of the job ``cfg`` (a :class:`GemmCfg`).

    In ``auto`` mode the kernel comes from the selector. With ``check`` (the default) a
    configuration the tile refuses gives the empty trace; ``check=False`` skips the
    range checks (model studies beyond the flat memory), but the kernel must be usable.
    """
    res = resolve(cfg, params)
    if res.kernel is None or (check and res.err):
        return Trace.empty()
    k = res.kernel
    return build_trace(cfg.M, cfg.N, cfg.K, cfg.lda, cfg.ldb, cfg.ldc, cfg.base_a, cfg.base_b, cfg.base_c,
                       cfg.base_buf, k.m, k.z, k.keep, k.copy, params)


# ---- values ------------------------------------------------------------------------
def _signed_check(X: np.ndarray, bits: int, what: str) -> None:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if X.size and (int(X.min()) < lo or int(X.max()) > hi):
        raise ValueError(f"{what}: elements must be signed {bits}-bit")


def gemm_ref(A, B, params: GemmParams, shift: int = 0) -> np.ndarray:
    """``sat(wrap(A @ B) >> shift)`` of section 8: signed ``8*eb``-bit elements, every
    product and sum modulo ``2**accw``, arithmetic shift, saturation to ``8*eb`` bits.
    Returns int64."""
    A = np.asarray(A, np.int64)
    B = np.asarray(B, np.int64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"gemm_ref: shapes {A.shape} @ {B.shape}")
    if not 0 <= shift < params.accw:
        raise ValueError(f"gemm_ref: shift={shift} not in 0..accw-1")
    _signed_check(A, params.ew, "gemm_ref A")
    _signed_check(B, params.ew, "gemm_ref B")
    # unsigned 64-bit arithmetic wraps modulo 2**64 by definition, and 2**accw divides it
    acc = A.astype(np.uint64) @ B.astype(np.uint64)
    sh = 64 - params.accw  # keep the low accw bits and sign-extend them
    acc = (acc << np.uint64(sh)).view(np.int64) >> sh
    acc = acc >> shift
    lim = 1 << (params.ew - 1)
    return np.clip(acc, -lim, lim - 1)


def load_matrix(mem: np.ndarray, base: int, rows: int, cols: int, ld: int, params: GemmParams) -> np.ndarray:
    """The ``rows x cols`` matrix at byte ``base`` with leading dimension ``ld`` (int64)."""
    if rows == 0 or cols == 0:
        return np.zeros((rows, cols), np.int64)
    idx = base // params.eb + np.arange(rows)[:, None] * ld + np.arange(cols)[None, :]
    return np.asarray(mem)[idx].astype(np.int64)


def store_matrix(mem: np.ndarray, base: int, X, ld: int, params: GemmParams) -> None:
    """Write ``X`` at byte ``base`` with leading dimension ``ld``, in place."""
    X = np.asarray(X)
    if X.size == 0:
        return
    idx = base // params.eb + np.arange(X.shape[0])[:, None] * ld + np.arange(X.shape[1])[None, :]
    mem[idx] = X


# ---- timing ------------------------------------------------------------------------
def cycles(lookups: int, misses: int, params: GemmParams, sel: int = 0) -> int:
    """The cycle of ``done`` after ``start`` in cycle 0 (section 6):
    ``1 + sel + lookups + miss_pen*misses`` (a refused start has no lookups)."""
    return 1 + sel + lookups + params.miss_pen * misses


# ---- the job -----------------------------------------------------------------------
@dataclass
class Run:
    """One start of the tile on a flat memory.

    Attributes:
        mem: the memory after the job (a copy; the input is not modified).
        trace: the requests, in order (empty when refused).
        hits: the hit of each lookup, in order.
        kernel: the kernel that ran (``None`` when refused).
        selection: the selector's result (``auto`` mode, when it ran).
        counters: the counters of section 10, keyed by ``GemmParams.COUNTERS``.
        cycles: ``done``'s cycle after ``start``.
        err: the error bits this start raised (0: it ran).
        regs: the read-only CSRs ``SEL_*`` and ``DET_*`` after the job (``None`` when
            refused: they keep their previous value).
    """

    mem: np.ndarray
    trace: Trace
    hits: np.ndarray
    kernel: Kernel | None
    selection: Selection | None
    counters: dict[str, int]
    cycles: int
    err: int
    regs: dict[str, int] | None = field(default=None)


def _write_buffer(mem: np.ndarray, cfg: GemmCfg, k: Kernel, params: GemmParams) -> None:
    """The buffer after the job: each slot holds its last COPY_WR (section 4). Only the
    last two M-blocks can be the last writer of a slot."""
    V, eb = params.v, params.eb
    nrow = k.m - k.keep
    if not k.copy or nrow <= 0 or cfg.K == 0 or cfg.M == 0 or cfg.N == 0:
        return
    m0s = list(range(0, cfg.M, k.m))[-2:]
    kk = np.arange(cfg.K)
    q, lane = kk // V, kk % V
    for m0 in m0s:  # the later block overwrites
        mb = min(k.m, cfg.M - m0)
        for r in range(min(k.keep, mb), mb):
            src = load_matrix(mem, cfg.base_a + (m0 + r) * cfg.lda * eb, 1, cfg.K, cfg.lda, params)[0]
            dst = cfg.base_buf // eb + (q * nrow + (r - k.keep)) * V + lane
            mem[dst] = src


def run(cfg: GemmCfg, mem, params: GemmParams, cache: CacheSim | None = None) -> Run:
    """The whole job of ``cfg`` on the flat memory ``mem`` (``mem_elems`` signed
    elements). ``cache``: the cache state to start from (default: cold, as after
    ``rst``); it is updated in place."""
    mem = np.array(mem, copy=True)
    if mem.shape != (params.mem_elems,):
        raise ValueError(f"run: mem must hold mem_elems = {params.mem_elems} elements, not {mem.shape}")
    res = resolve(cfg, params)
    cnt = dict.fromkeys(GemmParams.COUNTERS, 0)
    if res.err:
        cnt["sel_cycles"] = res.sel
        cnt["cycles"] = dur = cycles(0, 0, params, res.sel)
        cnt = {n: v & params.cnt_mask for n, v in cnt.items()}  # each counter wraps in cnt_bits
        return Run(mem, Trace.empty(), np.zeros(0, bool), None, res.selection, cnt, dur, res.err)
    k = res.kernel
    assert k is not None
    tr = build_trace(cfg.M, cfg.N, cfg.K, cfg.lda, cfg.ldb, cfg.ldc, cfg.base_a, cfg.base_b, cfg.base_c,
                     cfg.base_buf, k.m, k.z, k.keep, k.copy, params)
    if cache is None:
        cache = CacheSim(params.sets, params.ways, params.line)
    before = (list(cache.lookups), list(cache.hits), cache.evictions)
    hits = cache.replay(tr)
    for i, name in enumerate(GemmParams.KINDS):
        lk = cache.lookups[i] - before[0][i]
        h = cache.hits[i] - before[1][i]
        cnt[f"{name}_req"] = tr.count(i)
        cnt[f"{name}_lookups"] = lk
        cnt[f"{name}_hits"] = h
        cnt[f"{name}_misses"] = lk - h
    cnt["n_evict"] = cache.evictions - before[2]
    cnt["n_fma"] = cfg.M * cfg.K * -(-cfg.N // params.v)  # one per A_LD/BUF_LD and j < zb
    cnt["n_mem_wr"] = tr.count(COPY_WR) + tr.count(C_WR)
    cnt["sel_cycles"] = res.sel
    cnt["cycles"] = dur = cycles(len(hits), int(len(hits) - np.count_nonzero(hits)), params, res.sel)
    cnt = {n: v & params.cnt_mask for n, v in cnt.items()}  # each counter wraps in cnt_bits (not dur)
    # values: A and B as they are before the job (C and the buffer never meet them)
    A = load_matrix(mem, cfg.base_a, cfg.M, cfg.K, cfg.lda, params)
    B = load_matrix(mem, cfg.base_b, cfg.K, cfg.N, cfg.ldb, params)
    _write_buffer(mem, cfg, k, params)
    if cfg.M and cfg.N:
        store_matrix(mem, cfg.base_c, gemm_ref(A, B, params, cfg.shift).astype(mem.dtype), cfg.ldc, params)
    s = res.selection
    regs = {"SEL_M": k.m, "SEL_Z": k.z, "SEL_KEEP": k.keep, "SEL_PROG": k.prog,
            "DET_WORST": s.det.worst if s else 0, "DET_KEEP": s.det.keep if s else 0,
            "DET_FLAGS": (int(s.det.conflict) | int(s.cf.aligned) << 1 | int(s.cf.way_multiple) << 2
                          | int(s.cf.way_fraction) << 3) if s else 0}
    return Run(mem, tr, hits, k, s, cnt, dur, 0, regs)

