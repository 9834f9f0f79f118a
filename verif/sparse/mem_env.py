"""Testbench knowledge of the memories: ``fm_mem_unit`` and ``w_mem`` (docs/sparse.md
sections 7 and 9; behaviour in :mod:`lockstep.gen.sparse.memory`).

``fm_mem_unit`` jobs write one descriptor and its data words into a bank (both banks,
sparse and dense mode) with input bubbles: clean maps whose non-zero count sits around
multiples of ``p``, empty maps (``NNZ = 0``), and every error class of section 7 (a bad
descriptor, indices out of range, out-of-order and repeated entries, stored zeros, LAST
early or late, more than ``depth`` entries, just past it or far past it), alone or two
at a time; each class first alone, the highest ``err`` bit first (``err`` is sticky: a
class that also raised a lower bit shows only while that bit is clear), bad descriptors
last, among them ``H = hmax + 1`` and ``W = wmax + 1``, and half the indices out of range
the first one out (row ``H`` or column ``W``); then classes again after a reset (``err``
clear), with streams of exactly ``depth`` words and past it, and NNZ fields of the words
plus each power of two above a map's largest count. While a job writes
one bank, the other bank is read every cycle (ping-pong) and must not change. After the
job both banks are read back group by group through the ``p``-wide port.

``w_mem`` jobs write a weight stream (raster, snake or shuffled order; dense mode;
``K`` from 0 to beyond ``kmax``) with the same error classes of the weight memory (each
first alone, the highest ``err`` bit first, then each again after a reset, ``err`` clear;
an index out of range often ``K`` itself), some
after an abandoned job (``wr_start`` again before LAST), and read all entries back through
the ``u`` read lanes; FC jobs write a dense matrix through the FC port and gather random
index vectors through the ``p``-wide read.

The checks ask the golden model: the stored entries, their count and the sticky ``err``
after every job are those of :func:`lockstep.models.sparse.load_data` /
:func:`~lockstep.models.sparse.load_weights` (a bank holds the entries of the last load
into it, with its descriptor); an invalid lane reads 0. Timing: ``wr_ready`` is high all
the while a job is open (one entry per cycle) and low before and after, the descriptor port is not ready then, and
``wr_done`` pulses one cycle after the last handshake. The FC region is a plain memory:
a gather returns the last value written at ``[o][idx]`` (0 after reset).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cocotb import start_soon
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from lockstep.models import sparse
from lockstep.models.sparse.params import SparseParams

from ..context import pulse_reset
from ..coverage import Covergroup
from ..packing import pack_lanes, unpack_lanes
from .job_env import JobBfm, JobTest, JobUnit, Observation, handshakes
from .raster_env import nonzero_values, random_map

__all__ = ["FmMemTest", "WMemTest", "FM_KINDS", "W_KINDS"]

#: fm_mem_unit stimulus kinds (weights).
FM_KINDS: dict[str, float] = {"clean": 4, "dense": 1.5, "empty": 0.5, "desc": 1, "oob": 1, "order": 1, "zero": 1,
                              "nnz": 1.5, "overflow": 1, "mixed": 1.5}
#: w_mem stimulus kinds (weights).
W_KINDS: dict[str, float] = {"clean": 3, "dense": 1.5, "oob": 1, "dup": 1, "zero": 1, "overflow": 1, "k_edge": 1,
                             "restart": 1, "fc": 1.5}
#: Input idle rates a job draws from.
IDLES = [0.0, 0.0, 0.3, 0.6]

Word = tuple[int, int, int, bool]


def _pick(rng: np.random.Generator, weights: dict[str, float]) -> str:
    names = list(weights)
    w = np.array([weights[n] for n in names], dtype=float)
    return names[int(rng.choice(len(names), p=w / w.sum()))]


def _with_last(entries: list[tuple[int, int, int]]) -> list[Word]:
    return [(r, c, v, i == len(entries) - 1) for i, (r, c, v) in enumerate(entries)]


def _relast(words: list[Word]) -> list[Word]:
    """LAST on the final word only."""
    return [(a, b, v, i == len(words) - 1) for i, (a, b, v, _) in enumerate(words)]


# ---- fm_mem_unit ----------------------------------------------------------------------
@dataclass
class FmJob:
    """One write job of ``fm_mem_unit``.

    Attributes:
        bank: bank written.
        dense: ``wr_dense``.
        desc: the 64-bit descriptor word.
        words: the data words sent (up to and including the LAST that ends the load).
        kind: stimulus kind(s).
        idle: input idle rate.
        reset: ``rst`` pulses before the job: both banks empty and ``err`` clear, so the
            job's own flags are checked bit by bit.
    """

    bank: int
    dense: bool
    desc: int
    words: list[int]
    kind: str
    idle: float = 0.0
    reset: bool = False

    def __repr__(self) -> str:
        d = sparse.unpack_desc(self.desc)
        return (f"{self.kind} bank={self.bank} dense={int(self.dense)} desc=(h={d.h}, w={d.w}, nnz={d.nnz}, "
                f"rsvd={d.rsvd}) words={len(self.words)} idle={self.idle}" + (" reset" if self.reset else ""))


class FmMemUnit(JobUnit):
    """``fm_mem_unit``: descriptor and data streams in, banks read back."""

    sources = {"wr_desc": ["data"], "wr": ["data"]}
    controls = ["wr_done"]
    idle_inputs = {"wr_bank": 0, "wr_dense": 0, "rd_bank": 0, "rd_group": 0}
    covergroup = "sparse.fm_mem"
    default_jobs = 64

    def __init__(self, ctx: Any, params: SparseParams) -> None:
        super().__init__(ctx, params)
        self.groups = -(-params.depth // params.p)
        self.banks: list[tuple[int, list[tuple[int, int, int]]]] = [(0, []), (0, [])]
        self.sticky = 0
        self.rng = np.random.default_rng(ctx.seed + 7)

    # ---- stimulus -------------------------------------------------------------------
    def _nnz(self, rng: np.random.Generator, size: int) -> int:
        """A non-zero count: around a multiple of p (k*p - 1, k*p, k*p + 1) or uniform."""
        p = self.params.p
        if rng.random() < 0.6:
            k = int(rng.integers(1, max(1, size // p) + 1))
            return int(np.clip(k * p + int(rng.integers(-1, 2)), 0, size))
        return int(rng.integers(0, size + 1))

    def _map(self, rng: np.random.Generator, big: bool = False, fit: bool = False) -> np.ndarray:
        """A random map (``hmax x wmax`` when ``big``); with ``fit``, at most ``depth - 1``
        non-zeros (one at least), so the load with one word more still fits and a check
        after the first words is reached: the forced error classes (with depth 16 < 8 x 8
        most random loads overflow and stop first; fm_mem_unit@adda: five mutants of the
        order, bound and last-position checks and the stored descriptor survived)."""
        p = self.params
        h = p.hmax if big or rng.random() < 0.3 else int(rng.integers(1, p.hmax + 1))
        w = p.wmax if big or rng.random() < 0.3 else int(rng.integers(1, p.wmax + 1))
        return random_map(rng, h, w, self._nnz(rng, min(h * w, max(1, p.depth - 1)) if fit else h * w), p.dw)

    def _corrupt(self, rng: np.random.Generator, kind: str, d: sparse.Desc, ws: list[Word],
                 how: int | None = None) -> tuple[sparse.Desc, list[Word]]:
        """Break a clean load in one way (``how`` picks the variant; the model predicts
        what follows)."""
        p = self.params
        if kind == "desc":  # RSVD != 0, H = 0, H > hmax, W = 0, W > wmax, H = hmax + 1, W = wmax + 1
            how = int(rng.integers(0, 7)) if how is None else how   # (a bound written > max + 1 passes 2 and 4)
            d = sparse.Desc(d.org_row, d.org_col,
                            0 if how == 1 else int(rng.integers(p.hmax + 1, 256)) if how == 2 else p.hmax + 1 if how == 5
                            else d.h,
                            0 if how == 3 else int(rng.integers(p.wmax + 1, 256)) if how == 4 else p.wmax + 1 if how == 6
                            else d.w,
                            d.nnz, int(rng.integers(1, 256)) if how == 0 else 0)
            return d, ws
        if kind == "oob" and ws:  # how: 0 row H, 1 column W, 2 a row past H, 3 a column past W
            i = int(rng.integers(0, len(ws)))
            r, c, v, last = ws[i]
            # half the time the first index out of range: row H or column W
            edge = rng.random() < 0.5 if how is None else how < 2
            row = rng.random() < 0.5 if how is None else how % 2 == 0
            if d.h < (1 << p.rb) and (row or d.w >= (1 << p.cb)):
                r = d.h if edge else int(rng.integers(d.h, 1 << p.rb))
            elif d.w < (1 << p.cb):
                c = d.w if edge else int(rng.integers(d.w, 1 << p.cb))
            ws[i] = (r, c, v, last)
            return d, ws
        if kind == "order" and ws:
            i = int(rng.integers(0, len(ws)))
            if len(ws) >= 2 and rng.random() < 0.5:
                j = min(i + 1, len(ws) - 1) if i + 1 < len(ws) else i - 1
                ws[i], ws[j] = ws[j], ws[i]
            else:
                ws.insert(i, ws[i])
            ws = _relast(ws)
            return sparse.Desc(d.org_row, d.org_col, d.h, d.w, len(ws)), ws
        if kind == "zero":
            used = {(r, c) for r, c, _, _ in ws}
            free = [(r, c) for r in range(min(d.h, 1 << p.rb)) for c in range(min(d.w, 1 << p.cb))
                    if (r, c) not in used]
            if free:
                r, c = free[int(rng.integers(0, len(free)))]
                ws = _relast(sorted(ws + [(r, c, 0, False)], key=lambda e: (e[0], e[1])))
                return sparse.Desc(d.org_row, d.org_col, d.h, d.w, len(ws)), ws
            return d, ws
        if kind == "nnz" and ws:
            how = int(rng.integers(0, 4 + p.NNZ_BITS)) if how is None else how
            if how == 0 and len(ws) >= 2:  # LAST early: the load ends there
                i = int(rng.integers(0, len(ws) - 1))
                return d, _relast(ws[: i + 1])
            if how == 3:  # an NNZ field far beyond the words (up to 2**16 - 1)
                return sparse.Desc(d.org_row, d.org_col, d.h, d.w, int(rng.integers(len(ws) + 2, 1 << 16))), ws
            if how >= 4:  # NNZ = the words + 2**b: bit b of NNZ - 1 decides where LAST must be
                nnz = len(ws) + (1 << (how - 4))
                if nnz < 1 << p.NNZ_BITS:
                    return sparse.Desc(d.org_row, d.org_col, d.h, d.w, nnz), ws
                how = 1
            delta = 1 if how == 1 else -1  # NNZ one more / one fewer than the words
            return sparse.Desc(d.org_row, d.org_col, d.h, d.w, max(0, d.nnz + delta)), ws
        if kind == "overflow":
            # how: 0 exactly depth words (no overflow: an entry per word slot), 1 just past
            # it, 2 two or three past, 3 far past (the NNZ's high bits then count too)
            how = int(rng.choice([1, 1, 2, 3, 3, 0])) if how is None else how
            total = p.depth + (how > 0) + (int(rng.integers(1, 3)) if how == 2 else
                                           int(rng.integers(p.depth, 3 * p.depth)) if how == 3 else 0)
            ws = ws[:total]
            pad = [ws[-1][:3] + (False,) if ws else (0, 0, 1, False)] * (total - len(ws))
            ws = _relast(ws + pad)
            return sparse.Desc(d.org_row, d.org_col, d.h, d.w, len(ws)), ws
        return d, ws

    def _job(self, rng: np.random.Generator, kind: str, bank: int, how: int | None = None,
             fit: bool = False, reset: bool = False) -> FmJob:
        p = self.params
        idle = IDLES[int(rng.integers(0, len(IDLES)))]
        org = (int(rng.integers(0, 1 << 12)), int(rng.integers(0, 1 << 12)))
        if kind == "empty":
            sub = sparse.encode(np.zeros((int(rng.integers(1, p.hmax + 1)), int(rng.integers(1, p.wmax + 1))),
                                         np.int64), org)
            return FmJob(bank, False, sparse.pack_desc(sub), [], kind, idle, reset)
        dense = kind == "dense" or (kind in ("oob", "order", "nnz") and rng.random() < 0.25)
        X = self._map(rng, big=kind == "overflow", fit=fit and kind != "overflow")
        sub = sparse.encode(X, org, dense=dense)
        d, ws = sub.desc, _with_last(sub.entries)
        kinds = [kind]
        if kind == "mixed":
            pool = ["oob", "order", "zero", "nnz", "overflow", "desc"]  # desc last: the others use H and W
            kinds = sorted(rng.choice(pool, size=2, replace=False).tolist(), key=pool.index)
        for k in kinds:
            d, ws = self._corrupt(rng, k, d, ws, how)
        if d.nnz == 0:
            ws = []
        elif not ws or not ws[-1][3]:
            ws = _relast(ws) if ws else [(0, 0, 1, True)]
        words = sparse.pack_data(ws, p)
        load = sparse.load_data(sparse.pack_desc(d), words, p, dense=dense)
        return FmJob(bank, dense, sparse.pack_desc(d), words[: load.consumed], "+".join(kinds), idle, reset)

    def jobs(self, rng: np.random.Generator, count: int) -> list[FmJob]:
        p = self.params
        full = sparse.encode(random_map(rng, p.hmax, p.wmax, min(p.depth, p.hmax * p.wmax), p.dw))
        jobs = [
            self._job(rng, "empty", 0),
            FmJob(1, False, sparse.pack_desc(full), sparse.pack_data(full.entries, p), "full"),
            self._job(rng, "clean", 0),
        ]
        # each error class once, the highest err bit first: err is sticky, so a class that
        # also raised a lower bit (OVERFLOW's 32 written 31, OOB's 2 written 3) shows only
        # while that bit is still clear
        forced = ([("dense", None, False), ("overflow", None, False)] + [("nnz", h, False) for h in range(4)]
                  + [("zero", None, False), ("order", None, False)] + [("oob", h, False) for h in range(4)]
                  + [("desc", h, False) for h in range(7)])
        # then classes again after a reset, err clear (a class that also raised a higher bit
        # shows): the memory filled to exactly depth words, then 1, 2 or 3 and far past it
        # (fm_mem_unit@76b5 m006, m030: the bound k >= depth off by one either way), and an
        # NNZ field of the words + 2**b for every bit b above the most entries a map can
        # have (m058, fm_mem_unit@5aec m023: a bit of NNZ - 1 stuck at 0, where LAST must be)
        top = min(p.depth, p.hmax * p.wmax).bit_length()
        forced += ([("overflow", h, True) for h in range(4)] + [("nnz", 4 + b, True) for b in range(top, p.NNZ_BITS)]
                   + [("zero", None, True), ("order", None, True), ("oob", 0, True), ("desc", 0, True)])
        while len(jobs) < count:  # the forced ones on maps that fit (their check is reached)
            kind, how, reset, fit = (*forced.pop(0), True) if forced else (_pick(rng, FM_KINDS), None, False, False)
            jobs.append(self._job(rng, kind, int(rng.integers(0, 2)), how, fit=fit, reset=reset))
        return jobs

    def budget(self, job: FmJob) -> int:
        return int((len(job.words) + 4) / (1 - job.idle)) + 4 * self.groups + 16

    # ---- driving --------------------------------------------------------------------
    def _lanes(self, dut: Any) -> dict[str, int]:
        return {n: int(getattr(dut, f"rd_{n}").value) for n in ("row", "col", "val", "lane_valid", "q", "desc")}

    async def _ping_pong(self, bfm: JobBfm, bank: int, log: list, stop: list) -> None:
        """Read random groups of ``bank`` every cycle until ``stop`` is set."""
        dut = bfm.dut
        while not stop:
            await RisingEdge(dut.clk)
            g = int(self.rng.integers(0, self.groups))
            dut.rd_bank.value = bank
            dut.rd_group.value = g
            await ReadOnly()
            log.append((g, self._lanes(dut)))

    async def drive(self, bfm: JobBfm, job: FmJob) -> tuple[int, int, dict[str, Any]]:
        dut = bfm.dut
        bfm.set_rates(job.idle, 0.0)
        if job.reset:
            await pulse_reset(dut, 2)
        await RisingEdge(dut.clk)
        first = bfm.now
        dut.wr_bank.value = job.bank
        dut.wr_dense.value = int(job.dense)
        done = start_soon(bfm.wait_high("wr_done"))
        log: list = []
        stop: list = []
        reader = start_soon(self._ping_pong(bfm, 1 - job.bank, log, stop))
        await bfm.send("wr_desc", [{"data": job.desc}])
        if job.words:
            await bfm.send("wr", [{"data": w} for w in job.words])
        last = await done
        read: dict[str, Any] = {"err": int(dut.err.value), "ping_pong": log}
        stop.append(True)
        await reader
        await Timer(1, "ns")  # leave the read-only phase
        for b in range(2):
            groups = []
            for g in range(self.groups):
                dut.rd_bank.value = b
                dut.rd_group.value = g
                await Timer(1, "ns")
                groups.append(self._lanes(dut))
            read[f"bank{b}"] = groups
        return first, last, read

    # ---- checks ---------------------------------------------------------------------
    def _bank_errors(self, what: str, b: int, groups: list[tuple[int, dict[str, int]]]) -> list[str]:
        """Lanes read from bank ``b`` against the model's content of that bank."""
        p = self.params
        desc, entries = self.banks[b]
        errs = []
        for g, got in groups:
            if got["q"] != len(entries):
                errs.append(f"{what}: bank {b} rd_q = {got['q']}, expected {len(entries)}")
            if got["desc"] != desc:
                errs.append(f"{what}: bank {b} rd_desc = {got['desc']:#x}, expected {desc:#x}")
            rows = unpack_lanes(got["row"], p.rb, p.p)
            cols = unpack_lanes(got["col"], p.cb, p.p)
            vals = unpack_lanes(got["val"], p.dw, p.p, signed=True)
            for lane in range(p.p):
                e = g * p.p + lane
                want = entries[e] if e < len(entries) else (0, 0, 0)
                have = (int(rows[lane]), int(cols[lane]), int(vals[lane]))
                valid = got["lane_valid"] >> lane & 1
                if valid != (e < len(entries)) or have != want:
                    errs.append(f"{what}: bank {b} group {g} lane {lane}: valid={valid} {have}, "
                                f"expected valid={int(e < len(entries))} {want}")
            if errs:
                return errs[:4]
        return errs

    def check(self, job: FmJob, obs: Observation) -> list[str]:
        p = self.params
        errs: list[str] = []
        load = sparse.load_data(job.desc, job.words, p, dense=job.dense)
        if load.consumed != len(job.words) or not load.ended:
            return [f"stimulus bug: the model's load consumes {load.consumed} of {len(job.words)} words"]
        if job.reset:  # the state after rst: both banks empty, err clear
            self.banks, self.sticky = [(0, []), (0, [])], 0
        other = 1 - job.bank
        errs += self._bank_errors("ping-pong read during the write", other, obs.read["ping_pong"])
        self.sticky |= load.err
        self.banks[job.bank] = (job.desc, list(load.entries))
        self.last_load = load
        if obs.read["err"] != self.sticky:
            errs.append(f"err = {sparse.err_names(obs.read['err'], p.MEM_ERR_NAMES)}, expected "
                        f"{sparse.err_names(self.sticky, p.MEM_ERR_NAMES)}")
        for b in range(2):
            errs += self._bank_errors("read-back", b, list(enumerate(obs.read[f"bank{b}"])))
        tr = obs.trace
        dh, wh = handshakes(tr, "wr_desc"), handshakes(tr, "wr")
        d = len(tr["wr_done"]) - 1
        if len(dh) != 1 or len(wh) != len(job.words):
            return errs + [f"{len(dh)} descriptor and {len(wh)} data handshakes, expected 1 and {len(job.words)}"]
        t0 = int(dh[0])
        end = int(wh[-1]) if len(wh) else t0
        if tr["wr_done"][:d].any() or d != end + 1:
            errs.append(f"wr_done at +{d}, expected one cycle after the last handshake (+{end})")
        if len(wh) and (not tr["wr_ready"][t0 + 1 : end + 1].all() or tr["wr_desc_ready"][t0 + 1 : end + 1].any()):
            errs.append("wr_ready low (or wr_desc_ready high) while the job was open")
        if tr["wr_ready"][: t0 + 1].any() or tr["wr_ready"][d]:
            errs.append("wr_ready high with no job open (up to the descriptor's handshake, or at wr_done)")
        return errs

    # ---- coverage -------------------------------------------------------------------
    def q_bin(self, q: int) -> str:
        """``empty``, ``full`` (``depth``) or ``q mod p`` (``p - 1``, 0, 1, other for p > 4)."""
        p = self.params
        if q == 0:
            return "empty"
        if q == p.depth:
            return "full"
        r = q % p.p
        if p.p <= 4:
            return f"mod{r}"
        return {0: "mod0", 1: "mod1", p.p - 1: "mod-1"}.get(r, "other")

    def define_coverage(self, cg: Covergroup) -> None:
        p = self.params
        for name in p.MEM_ERR_NAMES:
            cg.point(f"raised_{name}", lambda s, n=name: s["raised"].get(n, False), [False, True])
        reachable = min(p.depth, p.hmax * p.wmax)  # most entries a load can store
        cg.point("q", lambda s: s["q"], sorted({self.q_bin(q) for q in range(reachable + 1)}))
        cg.point("bank", lambda s: s["bank"], [0, 1])
        cg.point("dense", lambda s: s["dense"], [False, True])
        cg.point("input_idle", lambda s: s["idle"], [False, True])
        cg.point("ping_pong_reads", lambda s: s["pp"], [True])

    def sample(self, job: FmJob, obs: Observation) -> dict[str, Any]:
        p = self.params
        load = self.last_load
        wh = handshakes(obs.trace, "wr")
        idle = len(wh) > 1 and int(wh[-1] - wh[0]) + 1 > len(wh)
        return {"raised": {n: bool(load.err >> i & 1) for i, n in enumerate(p.MEM_ERR_NAMES)},
                "q": self.q_bin(len(load.entries)), "bank": job.bank, "dense": job.dense, "idle": idle,
                "pp": bool(obs.read["ping_pong"])}


class FmMemTest(JobTest):
    UNIT = FmMemUnit


# ---- w_mem ----------------------------------------------------------------------------
@dataclass
class WJob:
    """One job of ``w_mem``: a weight stream, or FC writes and gathers.

    Attributes:
        k: ``cfg_k``.
        dense: ``cfg_dense``.
        words: the weight words (LAST on the final one).
        kind: stimulus kind(s).
        idle: input idle rate.
        abandoned: ``(k, words)`` of a job started before and never ended (no LAST), or None.
        fc_writes: ``(o, i, w)`` written through the FC port (FC jobs).
        fc_reads: ``(o, [idx_0 .. idx_p-1])`` gathered (FC jobs).
        reset: ``rst`` pulses before the job: ``err`` starts clear, so the job's own flags
            are checked bit by bit (a class that also raised another bit, higher or lower).
    """

    k: int
    dense: bool
    words: list[int]
    kind: str
    idle: float = 0.0
    abandoned: tuple[int, list[int]] | None = None
    fc_writes: list[tuple[int, int, int]] = field(default_factory=list)
    fc_reads: list[tuple[int, list[int]]] = field(default_factory=list)
    reset: bool = False

    def __repr__(self) -> str:
        if self.kind == "fc":
            return f"fc writes={len(self.fc_writes)} gathers={len(self.fc_reads)}" + (" reset" if self.reset else "")
        return (f"{self.kind} K={self.k} dense={int(self.dense)} words={len(self.words)} idle={self.idle}"
                + (" reset" if self.reset else ""))


class WMemUnit(JobUnit):
    """``w_mem``: weight stream and FC port in, entries and gathers read back."""

    sources = {"wr": ["data"]}
    controls = ["wr_start", "wr_done"]
    idle_inputs = {"cfg_k": 0, "cfg_dense": 0, "wr_start": 0, "rd_idx": 0, "fc_we": 0, "fc_row": 0, "fc_col": 0,
                   "fc_data": 0, "fc_rd_row": 0, "fc_rd_idx": 0}
    covergroup = "sparse.w_mem"
    default_jobs = 40

    def __init__(self, ctx: Any, params: SparseParams) -> None:
        super().__init__(ctx, params)
        self.cap = params.kmax * params.kmax
        self.jslots = 1 << max(1, (self.cap - 1).bit_length())  # rd_idx values (2**jb)
        self.entries: list[tuple[int, int, int]] = []
        self.fc = np.zeros((params.nmax_out, params.wmax), dtype=np.int64)  # 0 after reset
        self.sticky = 0

    # ---- stimulus -------------------------------------------------------------------
    def _kernel(self, rng: np.random.Generator, k: int, dense: bool) -> list[Word]:
        Wk = nonzero_values(rng, k * k, self.params.ww).reshape(k, k)
        Wk[rng.random((k, k)) < rng.uniform(0.0, 0.8)] = 0
        order = str(rng.choice(["raster", "snake", "shuffled"]))
        ent = sparse.encode_weights(Wk, "raster" if order == "shuffled" else order, dense=dense)
        if order == "shuffled":
            ent = [ent[i] for i in rng.permutation(len(ent))]
        if not ent:  # all zero: one zero weight keeps the stream non-empty (W_ZERO unless dense)
            ent = [(0, 0, 0)]
        return _with_last(ent)

    def _job(self, rng: np.random.Generator, kind: str, k_edge: int | None = None, how: int | None = None,
             reset: bool = False) -> WJob:
        """One job of ``kind``; ``k_edge`` sets K (``k_edge`` jobs), ``how`` picks the index an
        ``oob`` job puts out of range: ``a = K``, ``b = K``, ``a > K``, ``b > K`` (random when None)."""
        p = self.params
        kb = p.kb
        idle = IDLES[int(rng.integers(0, len(IDLES)))]
        if kind == "fc":
            n_out, w = int(rng.integers(1, p.nmax_out + 1)), int(rng.integers(1, p.wmax + 1))
            vals = nonzero_values(rng, n_out * w, p.ww)
            vals[rng.random(n_out * w) < 0.2] = 0
            writes = [(o, i, int(vals[o * w + i])) for o in range(n_out) for i in range(w)]
            # gathers from the rows and columns just written, and (one in four) from anywhere
            # in the region: what no job wrote reads 0 after reset
            reads = [(int(rng.integers(0, n_out)), [int(x) for x in rng.integers(0, w, size=p.p)])
                     if rng.random() < 0.75 else
                     (int(rng.integers(0, p.nmax_out)), [int(x) for x in rng.integers(0, p.wmax, size=p.p)])
                     for _ in range(min(16, 2 * n_out))]
            return WJob(0, False, [], kind, fc_writes=writes, fc_reads=reads, reset=reset)
        k = int(rng.integers(1, p.kmax + 1))
        if how is not None:  # an index past K must fit the index field
            k = int(rng.integers(1, min(p.kmax, (1 << kb) - 1 - how // 2) + 1))
        if kind == "k_edge":
            k = int(rng.choice([0, 1, p.kmax, p.kmax + 1])) if k_edge is None else k_edge
        dense = kind == "dense" or (kind in ("oob", "dup", "overflow") and rng.random() < 0.25)
        # K = 0 refuses every index; K > kmax allows indices up to min(K, 2**kb) - 1
        ws = self._kernel(rng, min(max(k, 1), 1 << kb), dense)
        if kind == "oob":
            i = int(rng.integers(0, len(ws)))
            a, b, w, last = ws[i]
            way = int(rng.integers(0, 4)) if how is None else how
            big = (k if way < 2 else int(rng.integers(k + 1, 1 << kb))) if k + way // 2 < (1 << kb) else None
            if big is not None:  # often the first index out: K itself
                ws[i] = (big, b, w, last) if way % 2 == 0 else (a, big, w, last)
        if kind == "dup":
            i = int(rng.integers(0, len(ws)))
            ws = _relast(ws[: i + 1] + [ws[i][:2] + (int(nonzero_values(rng, 1, p.ww)[0]), False)] + ws[i + 1:])
        if kind == "zero":
            used = {(a, b) for a, b, _, _ in ws}
            free = [(a, b) for a in range(k) for b in range(k) if (a, b) not in used]
            if free:
                a, b = free[int(rng.integers(0, len(free)))]
                ws = _relast(ws + [(a, b, 0, False)])
            else:  # every position holds a weight (K = 1, say): one of them becomes the zero
                i = int(rng.integers(0, len(ws)))
                ws[i] = ws[i][:2] + (0, ws[i][3])
        if kind == "overflow":
            extra = max(0, self.cap + 1 - len(ws)) + int(rng.integers(0, 3))
            ws = _relast(ws + [ws[-1][:3] + (False,)] * extra)
        abandoned = None
        if kind == "restart":
            k0 = int(rng.integers(1, p.kmax + 1))
            part = self._kernel(rng, k0, False)
            abandoned = (k0, sparse.pack_weights([e[:3] + (False,) for e in part], p))
        return WJob(k, dense, sparse.pack_weights(ws, p), kind, idle, abandoned, reset=reset)

    def jobs(self, rng: np.random.Generator, count: int) -> list[WJob]:
        p = self.params
        # the highest err bit first (OVERFLOW 8, ZERO 4, DUP 2, IDX_OOB 1: err is sticky), K edges last (K = 0 is OOB)
        jobs = [self._job(rng, kind) for kind in ("dense", "restart", "fc", "overflow", "zero", "dup", "oob")]
        jobs += [self._job(rng, "k_edge", k) for k in (0, 1, p.kmax, p.kmax + 1)]
        # then each class again after a reset, err clear: a class that also raised a higher
        # bit shows (w_mem@5121 m058: IDX_OOB written as OVERFLOW | IDX_OOB), and an index
        # out of range four ways (m040: b = K let through)
        jobs += [self._job(rng, kind, reset=True) for kind in ("overflow", "zero", "dup")]
        jobs += [self._job(rng, "oob", how=how, reset=True) for how in range(4)]
        while len(jobs) < count:
            jobs.append(self._job(rng, _pick(rng, W_KINDS)))
        return jobs

    def budget(self, job: WJob) -> int:
        n = len(job.words) + (len(job.abandoned[1]) if job.abandoned else 0)
        return int((n + 8) / (1 - job.idle)) + len(job.fc_writes) + self.jslots + 16

    # ---- driving --------------------------------------------------------------------
    async def _start(self, dut: Any, k: int, dense: bool) -> None:
        await RisingEdge(dut.clk)
        dut.cfg_k.value = k
        dut.cfg_dense.value = int(dense)
        dut.wr_start.value = 1
        await RisingEdge(dut.clk)
        dut.wr_start.value = 0

    async def drive(self, bfm: JobBfm, job: WJob) -> tuple[int, int, dict[str, Any]]:
        dut, p = bfm.dut, self.params
        bfm.set_rates(job.idle, 0.0)
        read: dict[str, Any] = {}
        if job.reset:
            await pulse_reset(dut, 2)
        if job.kind == "fc":
            await RisingEdge(dut.clk)
            first = bfm.now
            for o, i, w in job.fc_writes:
                dut.fc_we.value = 1
                dut.fc_row.value = o
                dut.fc_col.value = i
                dut.fc_data.value = w & ((1 << p.ww) - 1)
                await RisingEdge(dut.clk)
            dut.fc_we.value = 0
            await ReadOnly()
            last = bfm.now
            await Timer(1, "ns")
            gathers = []
            ib = len(dut.fc_rd_idx) // p.p
            for o, idx in job.fc_reads:
                dut.fc_rd_row.value = o
                dut.fc_rd_idx.value = pack_lanes(idx, ib)
                await Timer(1, "ns")
                gathers.append(unpack_lanes(int(dut.fc_rd_w.value), p.ww, p.p, signed=True))
            read["fc"] = gathers
        else:
            if job.abandoned is not None:
                await self._start(dut, job.abandoned[0], False)
                await bfm.send("wr", [{"data": w} for w in job.abandoned[1]])
                bfm.accepted["wr"].clear()
            await RisingEdge(dut.clk)
            first = bfm.now
            dut.cfg_k.value = job.k
            dut.cfg_dense.value = int(job.dense)
            dut.wr_start.value = 1
            feed = start_soon(bfm.send("wr", [{"data": w} for w in job.words]))
            await RisingEdge(dut.clk)
            dut.wr_start.value = 0
            last = await bfm.wait_high("wr_done")
            await feed
        read["err"] = int(dut.err.value)
        read["wnz"] = int(dut.wnz.value)
        await Timer(1, "ns")
        jb = len(dut.rd_idx) // p.u
        lanes = []
        for j0 in range(0, self.jslots, p.u):
            idx = [(j0 + i) % self.jslots for i in range(p.u)][::-1] if p.u > 1 else [j0]
            dut.rd_idx.value = pack_lanes(idx, jb)
            await Timer(1, "ns")
            a = unpack_lanes(int(dut.rd_a.value), p.kb, p.u)
            b = unpack_lanes(int(dut.rd_b.value), p.kb, p.u)
            w = unpack_lanes(int(dut.rd_w.value), p.ww, p.u, signed=True)
            v = int(dut.rd_valid.value)
            lanes += [(j, v >> i & 1, (int(a[i]), int(b[i]), int(w[i]))) for i, j in enumerate(idx)]
        read["lanes"] = lanes
        return first, last, read

    # ---- checks ---------------------------------------------------------------------
    def check(self, job: WJob, obs: Observation) -> list[str]:
        p = self.params
        errs: list[str] = []
        self.last_load = None
        if job.reset:  # the state after rst: no entries, err clear, the FC region 0
            self.entries, self.sticky = [], 0
            self.fc[:] = 0
        if job.kind == "fc":
            for o, i, w in job.fc_writes:
                self.fc[o, i] = w
            for (o, idx), got in zip(job.fc_reads, obs.read["fc"]):
                want = self.fc[o, idx]
                if not np.array_equal(got, want):
                    errs.append(f"FC gather row {o} at {idx}: {got.tolist()}, expected {want.tolist()}")
                    break
        else:
            if job.abandoned is not None:
                part = sparse.load_weights(job.abandoned[1], job.abandoned[0], p)
                self.sticky |= part.err
            load = sparse.load_weights(job.words, job.k, p, dense=job.dense)
            if load.consumed != len(job.words) or not load.ended:
                return [f"stimulus bug: the model's load consumes {load.consumed} of {len(job.words)} words"]
            self.sticky |= load.err
            self.entries = list(load.entries)
            self.last_load = load
            tr = obs.trace
            wh = handshakes(tr, "wr")
            d = len(tr["wr_done"]) - 1
            if len(wh) != len(job.words):
                errs.append(f"{len(wh)} weight handshakes, expected {len(job.words)}")
            elif d != int(wh[-1]) + 1 or tr["wr_done"][:d].any():
                errs.append(f"wr_done at +{d}, expected one cycle after the LAST handshake (+{int(wh[-1])})")
            elif not tr["wr_ready"][1 : d].all():
                errs.append("wr_ready low while the job was open")
            elif tr["wr_ready"][0] or tr["wr_ready"][d]:
                errs.append(f"wr_ready high {'in the wr_start cycle' if tr['wr_ready'][0] else 'at wr_done'}, "
                            "with no job open")
        if obs.read["err"] != self.sticky:
            errs.append(f"err = {sparse.err_names(obs.read['err'], p.W_ERR_NAMES)}, expected "
                        f"{sparse.err_names(self.sticky, p.W_ERR_NAMES)}")
        if obs.read["wnz"] != len(self.entries):
            errs.append(f"wnz = {obs.read['wnz']}, expected {len(self.entries)}")
        for j, valid, got in obs.read["lanes"]:
            ok = j < len(self.entries)
            want = self.entries[j] if ok else (0, 0, 0)
            if valid != ok or got != want:
                errs.append(f"entry {j}: valid={valid} {got}, expected valid={int(ok)} {want}")
                break
        return errs

    # ---- coverage -------------------------------------------------------------------
    def define_coverage(self, cg: Covergroup) -> None:
        p = self.params
        for name in p.W_ERR_NAMES:
            cg.point(f"raised_{name}", lambda s, n=name: s["raised"].get(n, False), [False, True])
        cg.point("k", lambda s: s["k"], sorted({"0", "1", "kmax", ">kmax"} | ({"mid"} if p.kmax > 2 else set())))
        cg.point("wnz_full", lambda s: s["full"], [False, True])
        cg.point("dense", lambda s: s["dense"], [False, True])
        cg.point("restart", lambda s: s["restart"], [False, True])
        cg.point("fc", lambda s: s["fc"], [False, True])
        cg.point("input_idle", lambda s: s["idle"], [False, True])
        cg.point("after_reset", lambda s: s["reset"], [False, True])

    def sample(self, job: WJob, obs: Observation) -> dict[str, Any]:
        p = self.params
        load = self.last_load
        if load is None:
            return {"raised": {}, "k": None, "full": None, "dense": None, "restart": None, "fc": True, "idle": None,
                    "reset": None}
        wh = handshakes(obs.trace, "wr")
        k = job.k
        return {
            "raised": {n: bool(load.err >> i & 1) for i, n in enumerate(p.W_ERR_NAMES)},
            "k": "0" if k == 0 else "1" if k == 1 else "kmax" if k == p.kmax else ">kmax" if k > p.kmax else "mid",
            "full": len(load.entries) == min(k, p.kmax) ** 2 if k else False,
            "dense": job.dense,
            "restart": job.abandoned is not None,
            "fc": False,
            "idle": len(wh) > 1 and int(wh[-1] - wh[0]) + 1 > len(wh),
            "reset": job.reset,
        }


class WMemTest(JobTest):
    UNIT = WMemUnit
