"""Stimulus of the GEMM tile testbench (verif/gemm/tile_env.py): jobs and the golden
model's prediction of each (docs/gemm.md).

A job is what a host does once: place A and B in the flat memory (and poison the C and
buffer regions, so an element the tile fails to write shows), write the registers and
start. Its prediction is :func:`~lockstep.models.gemm.run` on the golden memory image,
with the cache model carried from job to job as the tile carries its cache (only ``rst``
invalidates it).

Scenarios (the ``scenario`` option):

* ``keeps``: one shape with an aliasing ``lda`` (a multiple of the way size), run without
  copy and then with inline copy for every ``keep`` in ``0..m`` (with the option
  ``keep_step=k``, every ``k``-th and ``m``): C must be the same every time, only the
  trace, the counters and the cycles change;
* ``random``: explicit kernels (any legal ``(m, z)``, ``keep``, copy, shift) on shapes
  with tails in M, N and K, strides of every class (way multiples, fractions, odd,
  line-unaligned bases), and direct-mapped or set-associative geometry per build;
* ``auto``: the selector chooses (``auto``, with and without ``limit_m``) over the same
  stride classes, ``N`` around one candidate's task-balance edge or below every one, and
  (with ``limit_m``) strides whose conflict keeps each number of rows in turn;
* ``errors``: every bad configuration of section 7 alone and combined (refused, nothing
  written, ``done`` as predicted), each matrix one element past the memory's end and C
  on the last element of A and of B (and the neighbours one element off), refused
  starts with every register drawn over its whole width (``keeps`` ends with a few,
  ``random`` draws one now and then), ``M = 0``, ``N = 0``, ``K = 0``, a start while
  busy, a reset in the middle of a job, the same job again from a cold cache and once more with START
  written alone (the registers kept, the counters cleared by the start);
* ``sweep``: the report's jobs (``ld`` list, kernels and modes from the options), no
  trace capture (the counters and cycles are still checked).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterator
from typing import Any

import numpy as np

from lockstep.models import gemm
from lockstep.models.gemm.params import GemmParams

__all__ = ["GemmJob", "JobBuilder", "make_jobs", "stream_jobs"]

#: Poison written into C and the buffer before a job (an unwritten element shows).
POISON = 0x5A


@dataclass
class GemmJob:
    """One start of the tile and its golden result.

    Attributes:
        tag: what the job is for (coverage and messages).
        cfg: the registers.
        loads: ``(first element, values)`` written through the load port before the job.
        check: ``(first element, count)`` regions read back and compared after the job.
        capture: record the trace and ``busy`` cycle by cycle and compare them.
        busy_at: write a second START in this cycle after the start (START_BUSY).
        reset_at: assert ``rst`` in this cycle after the start (the job is abandoned).
        reset_before: pulse ``rst`` before the job (a cold cache, ``err`` cleared).
        golden: the model's run (``None`` for an abandoned job).
        sticky: the ``ERR`` register the tile must show after the job.
        regs: the ``SEL_*``/``DET_*`` registers the tile must show after the job.
        start_only: write CTRL alone (the registers hold the previous job's values,
            which are this job's).
    """

    tag: str
    cfg: gemm.GemmCfg
    loads: list[tuple[int, np.ndarray]] = field(default_factory=list, repr=False)
    check: list[tuple[int, int]] = field(default_factory=list, repr=False)
    capture: bool = True
    busy_at: int | None = None
    reset_at: int | None = None
    reset_before: bool = False
    golden: gemm.Run | None = field(default=None, repr=False)
    sticky: int = 0
    regs: dict[str, int] = field(default_factory=dict, repr=False)
    klass: str = ""
    start_only: bool = False

    def __repr__(self) -> str:
        c = self.cfg
        mode = ("auto" + ("+limit" if c.limit_m else "")) if c.auto else f"m={c.m} z={c.z} keep={c.keep} copy={int(c.copy)}"
        return (f"{self.tag}: M={c.M} N={c.N} K={c.K} lda={c.lda} ldb={c.ldb} ldc={c.ldc} base_a={c.base_a:#x} "
                f"{mode} shift={c.shift}")


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class JobBuilder:
    """Places jobs in the memory and predicts them in order (the golden memory image and
    cache model are carried from job to job).

    Args:
        params: the tile's parameters.
        rng: the run's random generator.
    """

    def __init__(self, params: GemmParams, rng: np.random.Generator) -> None:
        self.p = params
        self.rng = rng
        self.mem = np.zeros(params.mem_elems, dtype=np.int64)
        self.cache = gemm.CacheSim(params.sets, params.ways, params.line)
        self.sticky = 0
        #: (the detector's ``keep`` over ``m_max`` rows, below every balance edge) of the
        #: auto jobs with ``limit_m`` so far
        self.limit_keeps: set[tuple[int, bool]] = set()
        self.regs = dict.fromkeys(("SEL_M", "SEL_Z", "SEL_KEEP", "SEL_PROG", "DET_WORST", "DET_KEEP", "DET_FLAGS"), 0)
        self.jobs: list[GemmJob] = []
        lo, hi = -(1 << (params.ew - 1)), 1 << (params.ew - 1)
        self.vrange = (max(lo, -100), min(hi, 100))

    # ---- layout -------------------------------------------------------------------
    def values(self, shape: tuple[int, int], full: bool = False) -> np.ndarray:
        """Random signed elements (``full``: the whole ``8*eb``-bit range, to reach the
        accumulator's wrap and the saturation)."""
        if full:
            lo, hi = -(1 << (self.p.ew - 1)), 1 << (self.p.ew - 1)
        else:
            lo, hi = self.vrange
        return self.rng.integers(lo, hi, size=shape, dtype=np.int64)

    def layout(self, M: int, N: int, K: int, lda: int, *, ldb: int | None = None, ldc: int | None = None,
               a_off: int = 0, buf_elems: int = 0) -> dict[str, int] | None:
        """Byte bases for A, B, C and the buffer, one after the other from element
        ``a_off`` with a line between them; ``None`` when they do not fit the memory."""
        p = self.p
        ldb = N if ldb is None else ldb
        ldc = N if ldc is None else ldc
        gap = p.line // p.eb + 1
        a = a_off
        a_end = a + ((M - 1) * lda + K if M and K else 0)
        b = a_end + gap
        b_end = b + ((K - 1) * ldb + N if K and N else 0)
        c = b_end + gap
        c_end = c + ((M - 1) * ldc + N if M and N else 0)
        buf = c_end + gap
        end = buf + buf_elems + gap
        if end > p.mem_elems:
            return None
        eb = p.eb
        return {"base_a": a * eb, "base_b": b * eb, "base_c": c * eb, "base_buf": buf * eb, "ldb": ldb, "ldc": ldc}

    def buf_need(self, K: int, m: int, keep: int) -> int:
        """Elements of the copy buffer (docs/gemm.md section 4)."""
        return _ceil(K, self.p.v) * max(0, m - keep) * self.p.v

    # ---- one job ------------------------------------------------------------------
    def add(self, tag: str, cfg: gemm.GemmCfg, *, full: bool = False, capture: bool = True,
            busy_at: int | None = None, reset_at: int | None = None, reset_before: bool = False,
            klass: str = "", load: bool = True, start_only: bool = False) -> GemmJob:
        """Load fresh A and B for ``cfg`` (unless ``load`` is off: a refused start reads
        nothing), poison C and the buffer, and predict the job. ``start_only``: the BFM
        writes CTRL alone, so the previous job must have had the same registers and no
        reset since.

        Raises:
            ValueError: ``start_only`` where the registers would not be ``cfg``'s.
        """
        p, eb = self.p, self.p.eb
        if start_only:
            prev = self.jobs[-1] if self.jobs else None
            if prev is None or prev.cfg != cfg or prev.reset_at is not None or reset_before:
                raise ValueError(f"{tag}: start_only needs the previous job's registers equal to these, no reset between")
        job = GemmJob(tag, cfg, capture=capture, busy_at=busy_at, reset_at=reset_at, reset_before=reset_before,
                      klass=klass, start_only=start_only)
        if reset_before:
            self._reset()
        ok_regs = cfg.lda > 0 and cfg.ldb > 0 and cfg.ldc > 0 and all(
            b % eb == 0 for b in (cfg.base_a, cfg.base_b, cfg.base_c, cfg.base_buf))

        def rows(base: int, X: np.ndarray, ld: int) -> None:
            for i in range(X.shape[0]):
                lo = base // eb + i * ld
                if 0 <= lo and lo + X.shape[1] <= p.mem_elems and X.shape[1]:
                    job.loads.append((lo, X[i]))

        def region(base: int, r: int, c: int, ld: int) -> None:
            for i in range(r):
                lo = max(0, base // eb + i * ld - 1)  # a guard element on each side
                hi = min(p.mem_elems, base // eb + i * ld + c + 1)
                if hi > lo and c:
                    job.check.append((lo, hi - lo))

        if load and ok_regs and cfg.M < 1 << p.dimw and cfg.N < 1 << p.dimw and cfg.K < 1 << p.dimw:
            rows(cfg.base_a, self.values((cfg.M, cfg.K), full), cfg.lda)
            rows(cfg.base_b, self.values((cfg.K, cfg.N), full), cfg.ldb)
            poison = np.full((cfg.M, cfg.N), POISON, dtype=np.int64)
            rows(cfg.base_c, poison, cfg.ldc)
            nb = min(cfg.buf_len // eb, p.mem_elems - cfg.base_buf // eb)
            if nb > 0:
                job.loads.append((cfg.base_buf // eb, np.full(nb, -POISON, dtype=np.int64)))
                job.check.append((cfg.base_buf // eb, nb))
            for base, r, c, ld in ((cfg.base_a, cfg.M, cfg.K, cfg.lda), (cfg.base_b, cfg.K, cfg.N, cfg.ldb),
                                   (cfg.base_c, cfg.M, cfg.N, cfg.ldc)):
                region(base, r, c, ld)
        for lo, vals in job.loads:
            self.mem[lo:lo + len(vals)] = vals
        if reset_at is not None:
            job.golden = None
            self._reset()
            job.check = []  # an abandoned job leaves C and the buffer partly written
        else:
            g = gemm.run(cfg, self.mem, p, cache=self.cache)
            job.golden = g
            self.mem = g.mem.copy()  # the next job's loads must not change this job's image
            self.sticky |= g.err | (gemm.ERR["START_BUSY"] if busy_at is not None else 0)
            if g.regs is not None:
                self.regs = dict(g.regs)
        job.sticky = self.sticky
        job.regs = dict(self.regs)
        self.jobs.append(job)
        return job

    def _reset(self) -> None:
        """What ``rst`` does to the state the model carries: cold cache, ``err`` and the
        read-only registers 0, and ``gemm_top``'s flat memory all zero."""
        self.mem[:] = 0
        self.cache.reset()
        self.sticky = 0
        self.regs = dict.fromkeys(self.regs, 0)

    # ---- kernels ------------------------------------------------------------------
    def kernels(self) -> list[tuple[int, int]]:
        """Every legal explicit ``(m, z)``: ``z`` a power of two, registers, ``m_max``."""
        p = self.p
        out = []
        z = 1
        while z <= p.z_max:
            for m in range(1, p.m_max + 1):
                if (m + 1) * z + 1 <= p.r_hw:
                    out.append((m, z))
            z *= 2
        return out

    def aliasing_ld(self, K: int) -> int:
        """The smallest multiple of the way size (in elements) that holds a row of K."""
        w = self.p.way_bytes // self.p.eb
        return max(1, _ceil(max(K, 1), w)) * w

    def stride(self, K: int, klass: str) -> int:
        """A leading dimension ``>= K`` of a class: ``multiple`` (of the way size),
        ``fraction`` (way size / 2^k), ``odd`` (anything else)."""
        p = self.p
        wel = p.way_bytes // p.eb
        if klass == "multiple":
            return self.aliasing_ld(K) * int(self.rng.integers(1, 3))
        if klass == "fraction":
            f = wel
            while f // 2 >= max(K, 1) and self.rng.random() < 0.6:
                f //= 2
            return max(f, K, 1)
        return int(max(K, 1) + self.rng.integers(0, 3 * p.v + 1))


def _shape(b: JobBuilder, m: int, z: int, big: bool = False) -> tuple[int, int, int]:
    """``M, N, K`` around multiples of ``m``, ``z*V`` and ``V`` (tails or not)."""
    p, rng = b.p, b.rng
    V = p.v
    M = int(m * rng.integers(1, 3) + rng.choice([0, 0, 1, m - 1 if m > 1 else 0]))
    N = int(z * V * rng.integers(1, 2 + int(big)) + rng.choice([0, 0, 1, V - 1, V + 1]))
    K = int(V * rng.integers(1, 3 + int(big)) + rng.choice([0, 0, 1, V - 1]))
    return max(1, M), max(1, N), max(1, K)


def _explicit(b: JobBuilder, tag: str, M: int, N: int, K: int, lda: int, m: int, z: int, keep: int,
              copy: bool, *, a_off: int = 0, shift: int = 0, full: bool = False, klass: str = "",
              capture: bool = True, extra_buf: int = 0) -> GemmJob | None:
    need = b.buf_need(K, m, keep) if copy else 0
    lay = b.layout(M, N, K, lda, a_off=a_off, buf_elems=need + extra_buf)
    if lay is None:
        return None
    cfg = gemm.GemmCfg(M=M, N=N, K=K, lda=lda, buf_len=(need + extra_buf) * b.p.eb, m=m, z=z, keep=keep, copy=copy,
                       shift=shift, **lay)
    return b.add(tag, cfg, full=full, klass=klass, capture=capture)


def _fit(b: JobBuilder, M: int, K: int, lda: int) -> int:
    """``M`` reduced until the A block fits a quarter of the memory (large strides)."""
    while M > 1 and (M - 1) * lda + K > b.p.mem_elems // 2:
        M -= 1
    return M


def _keeps(b: JobBuilder, count: int, step: int = 1) -> None:
    if step < 1:
        raise ValueError(f"keep_step={step}: must be at least 1")
    p = b.p
    cands = [mz for mz in p.candidates if mz[0] > p.budget] or list(p.candidates)
    m, z = cands[0]
    M, N, K = m + (m > 1), z * p.v + 1, p.v + 3
    lda = b.aliasing_ld(K)
    M = _fit(b, M, K, lda)
    _explicit(b, "keeps no-copy", M, N, K, lda, m, z, m, False, klass="multiple")
    for keep in sorted({*range(0, m + 1, step), m}):   # every keep, or every step-th and m itself
        _explicit(b, f"keeps copy keep={keep}", M, N, K, lda, m, z, keep, True, klass="multiple")
    # the same kernels on a harmless stride (the baseline's C is the same numbers' product)
    _explicit(b, "keeps odd stride", M, N, K, lda + 1, m, z, m, False, klass="odd")
    # the ROM's widest kernel (z = the largest power of two) on the aliasing stride
    mw, zw = p.candidates[0]
    _explicit(b, "keeps widest kernel", _fit(b, mw + 1, K, lda), zw * p.v + 1, K, lda, mw, zw, mw, False,
              klass="multiple")
    # a cold cache streaming one row of four N-blocks: every B and C line is a first touch,
    # only the repeated A element hits (the hit-rate bin below 10 %)
    # (line-aligned B and C, so each vector is one line of its own)
    Ns, L = 4 * zw * p.v, p.line
    bb = L
    bc = bb + _ceil(Ns * p.eb, L) * L + L
    if bc + _ceil(Ns * p.eb, L) * L + L <= p.mem_elems * p.eb:
        b.add("keeps cold stream", gemm.GemmCfg(M=1, N=Ns, K=1, lda=1, ldb=Ns, ldc=Ns, base_b=bb, base_c=bc,
                                                base_buf=bc + _ceil(Ns * p.eb, L) * L, m=mw, z=zw, keep=mw),
              reset_before=True, klass="odd")
    _wide(b, 8)


def _random(b: JobBuilder, count: int, capture: bool = True) -> None:
    rng, p = b.rng, b.p
    ks = b.kernels()
    for i in range(count):
        if rng.random() < 0.15:  # now and then a refused start with wide registers
            _wide(b, 1, f"random {i}: wide registers")
            continue
        m, z = ks[int(rng.integers(len(ks)))]
        M, N, K = _shape(b, m, z)
        klass = str(rng.choice(["multiple", "fraction", "odd", "unaligned"]))
        lda = b.stride(K, "odd" if klass == "unaligned" else klass)
        M = _fit(b, M, K, lda)
        a_off = int(rng.integers(1, p.line // p.eb)) if klass == "unaligned" and p.line > p.eb else 0
        copy = bool(rng.random() < 0.6)
        keep = int(rng.integers(0, m + 1)) if copy else m
        shift = int(rng.choice([0, 0, 1, p.accw - 1])) if rng.random() < 0.3 else 0
        full = bool(rng.random() < 0.25)
        _explicit(b, f"random {i}", M, N, K, lda, m, z, keep, copy, a_off=a_off, shift=shift, full=full,
                  klass=klass, capture=capture, extra_buf=int(rng.integers(0, 3)))


def _auto(b: JobBuilder, count: int) -> None:
    """``count`` auto-mode jobs, stratified so that a handful covers the selector's paths:
    job ``i`` takes the stride classes in turn (from a random first), ``N`` alternately
    around one candidate's balance edge and below every candidate's (no entry balanced:
    the pick with the most N-blocks, the first on a tie), and ``limit_m`` on and off in
    pairs (from a random first)."""
    rng, p = b.rng, b.p
    V = p.v
    classes = ["multiple", "fraction", "odd", "unaligned"]
    k0, l0 = int(rng.integers(len(classes))), int(rng.integers(2))
    # ceil(N / (z V)) < ncores for every candidate: N <= z V (ncores - 1) for the least z
    none_max = min(z for _, z in p.candidates) * V * (p.ncores - 1)
    for i in range(count):
        klass = classes[(k0 + i) % len(classes)]
        limit = bool((l0 + i // 2) % 2)
        none = bool(i % 2 and none_max >= 1)
        # with limit_m, a stride whose conflict keeps a number of rows (1 .. m_max - 1) not
        # seen yet with this balance class: the pick over the kept rows sees every cap with
        # and without a balanced entry (a few draws at most, the later ones of the classes
        # that alias)
        for t in range(8 if limit else 1):
            klass = klass if t == 0 else ("multiple", "fraction")[t % 2]
            K = int(V * rng.integers(1, 3) + rng.choice([0, 1, V - 1]))
            lda = b.stride(K, "odd" if klass == "unaligned" else klass)
            keep_all = gemm.ld_conflict(0, lda, p.m_max, p).keep
            if 1 <= keep_all < p.m_max and (keep_all, none) not in b.limit_keeps:
                break
        if limit:
            b.limit_keeps.add((keep_all, none))
        if none:  # below every balance edge: 1, the edge itself or between
            N = int(rng.choice([1, none_max, int(rng.integers(1, none_max + 1))]))
        else:  # around the balance edge of one candidate: ceil(N / (z V)) vs ncores
            z = p.candidates[int(rng.integers(len(p.candidates)))][1]
            N = max(1, int(z * V * p.ncores + rng.choice([-V, -1, 0, 1])))
        N = min(N, (1 << p.dimw) - 1, 4 * p.z_max * V)
        sel = gemm.select_kernel(N, lda, 0, p, limit_m=limit)
        M = _fit(b, int(sel.m * rng.integers(1, 3) + rng.integers(0, 2)) if sel.m else 1, K, lda)
        a_off = int(rng.integers(1, p.line // p.eb)) if klass == "unaligned" and p.line > p.eb else 0
        # the selection depends on base_a: predict with the real layout
        need = b.buf_need(K, p.m_max, 0)
        lay = b.layout(M, N, K, lda, a_off=a_off, buf_elems=need)
        if lay is None:
            continue
        cfg = gemm.GemmCfg(M=M, N=N, K=K, lda=lda, buf_len=need * p.eb, auto=True, limit_m=limit, **lay)
        b.add(f"auto {i}", cfg, klass=klass)


def _wide(b: JobBuilder, count: int, tag: str = "wide registers") -> None:
    """``count`` refused starts with every register drawn over its whole width: uniform,
    around a power of two, small or near the top (half the draws keep M, N, K, the strides
    and the alignment legal, so the kernel checks and the selector see wide values too).
    The checks' adders and comparators see every bit; the model gives each start's ERR
    bits, the selector's registers and its cycles. A draw the model would run is drawn
    again (a legal start with 16-bit dimensions could run for hours). Each follows a
    reset, so the sticky ERR shows its bits alone."""
    p, rng = b.p, b.rng

    def val(bits: int, signed: bool = False) -> int:
        k = int(rng.integers(0, 4))
        if k == 0:
            v = int(rng.integers(0, 1 << bits))
        elif k == 1:
            v = (1 << int(rng.integers(0, bits))) + int(rng.integers(-1, 2))
        elif k == 2:
            v = int(rng.integers(0, 64))
        else:
            v = (1 << bits) - 1 - int(rng.integers(0, 4))
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    n = 0
    for _ in range(50 * count):
        if n == count:
            break
        legalish = rng.random() < 0.5
        dims = [val(p.dimw) if legalish else val(32) for _ in range(3)]
        lds = [max(d, 1) + val(8) if legalish else val(32, True) for d in (dims[2], dims[1], dims[1])]
        bases = [val(p.aw) & ~(p.eb - 1) if legalish else val(p.aw) for _ in range(4)]
        cfg = gemm.GemmCfg(M=dims[0], N=dims[1], K=dims[2], lda=lds[0], ldb=lds[1], ldc=lds[2], base_a=bases[0],
                           base_b=bases[1], base_c=bases[2], base_buf=bases[3], buf_len=val(32), m=val(32),
                           z=val(32), keep=val(32), copy=bool(rng.random() < 0.5), shift=val(32),
                           auto=bool(rng.random() < 0.4), limit_m=bool(rng.random() < 0.5))
        if max(lds) >= 1 << 31 or gemm.check_cfg(cfg, p) == 0:
            continue
        b.add(f"{tag} {n}" if count > 1 else tag, cfg, klass="error", load=False, reset_before=True)  # ERR: its bits alone
        n += 1


def _errors(b: JobBuilder, count: int) -> None:
    p = b.p
    m, z = p.candidates[0]
    M, N, K = m + 1, z * p.v, p.v + 1
    lda = K + 1
    good = _explicit(b, "errors: a good job first", M, N, K, lda, m, z, m, False)
    assert good is not None
    c = good.cfg
    eb = p.eb
    bad: list[tuple[str, dict[str, Any]]] = [
        ("BAD_DIM M", {"M": 1 << p.dimw}), ("BAD_DIM K", {"K": 1 << p.dimw}),
        ("BAD_LD lda < K", {"lda": K - 1}), ("BAD_LD lda 0", {"lda": 0}), ("BAD_LD lda < 0", {"lda": -lda}),
        ("BAD_LD ldb < N", {"ldb": N - 1}), ("BAD_LD ldc 0", {"ldc": 0}),
        *([("BAD_LD lda >= 2**aw", {"lda": 1 << p.aw})] if p.aw < 31 else []),
        ("MISALIGNED base_a", {"base_a": c.base_a + 1} if eb > 1 else {"lda": 0}),
        ("BAD_BLOCK m 0", {"m": 0}), ("BAD_BLOCK m > m_max", {"m": p.m_max + 1}), ("BAD_BLOCK z 0", {"z": 0}),
        ("BAD_BLOCK z not 2^k", {"z": 3} if p.z_max >= 4 else {"z": p.z_max * 2}),
        ("BAD_BLOCK registers", {"m": p.m_max, "z": p.z_max}), ("BAD_BLOCK keep > m", {"keep": m + 1}),
        ("BAD_BLOCK shift", {"shift": p.accw}),
        ("BUF_OVF", {"copy": True, "keep": 0, "buf_len": b.buf_need(K, m, 0) * eb - 1}),
        ("OOB C", {"base_c": (p.mem_elems - 1) * eb}), ("OOB A", {"base_a": (p.mem_elems - K // 2) * eb}),
        ("OVERLAP C on A", {"base_c": c.base_a}), ("OVERLAP C on B", {"base_c": c.base_b + eb}),
        ("OVERLAP buf on C", {"copy": True, "keep": 0, "base_buf": c.base_c, "buf_len": b.buf_need(K, m, 0) * eb}),
        ("combined BAD_BLOCK + OVERLAP + MISALIGNED", {"m": 0, "base_c": c.base_a, "base_buf": c.base_buf + 1}),
        ("auto BAD_LD", {"auto": True, "lda": 0}),
        ("auto BUF_OVF", {"auto": True, "lda": b.aliasing_ld(K), "buf_len": 0}),
    ]
    for tag, kw in bad:
        cfg = c.with_(**kw)
        if "lda" in kw and kw["lda"] > 0 and (M - 1) * kw["lda"] + K > p.mem_elems:
            cfg = cfg.with_(M=1) if tag.startswith("auto") else cfg
        if not 0 <= cfg.base_a < 1 << p.aw:
            continue
        b.add(f"errors: {tag}", cfg, klass="error")
    # legal corner jobs
    for tag, kw in (("M = 0", {"M": 0}), ("N = 0", {"N": 0}), ("K = 0 (C = 0)", {"K": 0}),
                    ("copy keep = m (copies nothing)", {"copy": True, "keep": m}),
                    ("m*z = 1", {"m": 1, "z": 1, "keep": 1}) if (2 * 1 + 1 <= p.r_hw) else ("", {})):
        if tag:
            b.add(f"corner: {tag}", c.with_(**kw), klass="corner")
    # the extents' edges (section 7), taken from the model: a matrix one element past the
    # memory's end is OOB, one ending on it is not; C starting on the last element of A or
    # B overlaps it, C starting right after does not (each after a reset: ERR shows its bits)
    ex = gemm.extents(c, gemm.resolve(c, p).kernel, p)
    end = p.mem_elems * eb
    for x, f in (("A", "base_a"), ("B", "base_b"), ("C", "base_c")):
        size = ex[x][1] - ex[x][0]
        for tag, d in (("one element past the memory's end", eb), ("ending at the memory's end", 0)):
            b.add(f"edge: {x} {tag}", c.with_(**{f: end - size + d}), klass="edge", reset_before=True)
    for x in "AB":
        for tag, d in (("on the last element of", eb), ("right after", 0)):
            b.add(f"edge: C {tag} {x}", c.with_(base_c=ex[x][1] - d), klass="edge", reset_before=True)
    _wide(b, max(count, 24))
    # a start while busy, then a reset in the middle and the same job again (cold cache)
    b.add("start while busy", c, busy_at=3, klass="busy")
    b.add("reset in a job", c, reset_at=5, klass="reset")
    b.add("the same job after the reset", c, klass="after_reset")
    # START alone: the registers kept, the counters cleared by the start (not by a write)
    b.add("the same job again, START alone", c, klass="start_only", start_only=True)


def _sweep(b: JobBuilder, opts: dict[str, Any]) -> None:
    p = b.p
    lds = [int(x) for x in opts.get("lds", [1000, 1024])]
    kernels = [tuple(int(v) for v in mz) for mz in opts.get("kernels", [p.candidates[1]])]
    M_blocks, N_blocks, K = int(opts.get("m_blocks", 2)), int(opts.get("n_blocks", 2)), int(opts.get("k", 4 * p.v))
    keep = int(opts.get("keep", p.budget))
    pad = p.line // p.eb
    for m, z in kernels:
        M, N = M_blocks * m, N_blocks * z * p.v
        for ld in lds:
            modes = [("nocopy", ld, False, m), ("copy", ld, True, min(keep, m)), ("padded", ld + pad, False, m)]
            for mode, lda, copy, kp in modes:
                need = b.buf_need(K, m, kp) if copy else 0
                lay = b.layout(M, N, K, lda, buf_elems=need)
                if lay is None:
                    raise ValueError(f"gemm sweep: ld={lda} with M={M}, K={K} does not fit mem_aw={p.mem_aw}")
                cfg = gemm.GemmCfg(M=M, N=N, K=K, lda=lda, buf_len=need * p.eb, m=m, z=z, keep=kp, copy=copy,
                                   **lay)
                # every measurement from a cold cache: rst before the job
                b.add(f"sweep {mode} m={m} z={z} ld={ld}", cfg, capture=False, reset_before=True, klass=mode)


def make_jobs(scenario: str, params: GemmParams, rng: np.random.Generator, count: int,
              opts: dict[str, Any] | None = None) -> list[GemmJob]:
    """The jobs of a scenario (module docstring), each with its golden prediction.

    Raises:
        ValueError: on an unknown scenario.
    """
    b = JobBuilder(params, rng)
    _fill(b, scenario, count, opts or {})
    return b.jobs


def stream_jobs(scenario: str, params: GemmParams, rng: np.random.Generator, count: int,
                opts: dict[str, Any] | None = None) -> Iterator[GemmJob]:
    """:func:`make_jobs` repeated without end, ``count`` jobs at a time from the same
    builder (its memory image, cache model and registers chained across the
    repetitions): the jobs of a streamed throughput run, built as they are taken.

    Raises:
        ValueError: on an unknown scenario, or a repetition with no job.
    """
    b = JobBuilder(params, rng)
    while True:
        _fill(b, scenario, count, opts or {})
        jobs, b.jobs = b.jobs, []
        if not jobs:
            raise ValueError(f"gemm scenario {scenario!r} made no job ({count} asked): nothing to stream")
        yield from jobs


def _fill(b: JobBuilder, scenario: str, count: int, opts: dict[str, Any]) -> None:
    """Add the jobs of ``scenario`` to ``b``."""
    step = int(opts.get("keep_step", 1))
    if scenario == "keeps":
        _keeps(b, count, step)
    elif scenario == "random":
        _random(b, count)
    elif scenario == "auto":
        _auto(b, count)
    elif scenario == "errors":
        _errors(b, count)
    elif scenario == "mixed":
        _keeps(b, count, step)
        _random(b, count // 2)
        _auto(b, count // 2)
        _errors(b, count)
    elif scenario == "sweep":
        _sweep(b, opts)
    else:
        raise ValueError(f"gemm testbench: unknown scenario {scenario!r}")
