"""Testbench knowledge of the gemm family's start/done blocks: ``ld_detect`` and
``kernel_select`` (docs/gemm.md sections 2, 3 and 9); the shared environment is
:mod:`.block_env`.

A *job* is one ``start``: its inputs, the idle cycles before it (0: the start is in the
previous job's ``done`` cycle), and optionally a second ``start`` while busy with other
inputs (must be ignored), random inputs in every cycle after the start (the start
samples them; nothing may follow them later), or ``rst`` in the middle. The gap cycles
drive random inputs with ``start`` low.

Stimulus: directed jobs first (the patent's way-multiple stride, a quarter way, line
strides of every period, unaligned bases where segments straddle two lines, ``ld < V``
where rows overlap, the largest ``ld`` and ``base``, ``m = 1`` and ``m_max``, every
refusal; the selector: ``N`` on both sides of each candidate's task-balance edge
``(ncores - 1)*z*V``, limit_m on and off on conflicting strides), then random jobs with
a fixed-seed generator over stride classes (:data:`STRIDES`), base alignments and ``m``.

Checks, against :func:`~lockstep.models.gemm.ld_conflict`, :func:`closed_form` and
:func:`select_kernel` (never against numbers taken from the RTL):

* ``done`` exactly in the model's cycle (``visits + 1``; ``sel_cycles``; 1 when refused)
  and in no other; ``busy`` high exactly from cycle 1 to the cycle before ``done`` and low
  in the start cycle; ``err`` low in between and equal to the model's at ``done``;
* at ``done``: ``ld_detect``'s ``worst``, ``keep``, ``conflict``, ``visits`` (0 when
  refused); ``kernel_select``'s ``prog``, ``m``, ``z``, ``keep``, ``worst``, ``keep_all``,
  ``conflict``, the three flags and ``sel_cycles`` (0s and ``sel_cycles = 1`` when
  refused); the selector's detector outputs from the detector's ``done`` (cycle
  ``visits + 1``) on;
* ``ld_detect``'s closed form (``way_multiple``, ``way_fraction``, ``aligned``,
  ``period``, ``worst_cf``) in every cycle, against the inputs of that cycle;
* the registered outputs hold from ``done`` through the gap cycles and the next start's
  cycle, with ``done`` and ``busy`` low;
* ``rst`` in a walk: ``busy`` and ``done`` low afterwards, and the next job runs normally.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from lockstep.models import gemm
from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import clog2

from ..coverage import Covergroup
from .block_env import BlockBfm, BlockUnit

__all__ = ["DetectUnit", "SelectUnit", "STRIDES", "StartJob", "stride"]

#: Stride classes of the random jobs.
STRIDES = ("multiple", "fraction", "line", "odd", "overlap", "any")


def stride(rng: np.random.Generator, p: GemmParams, klass: str) -> int:
    """A leading dimension (elements, ``1 .. 2**aw - 1``) of stride class ``klass``:
    ``multiple`` of the way (the patent's condition), ``fraction`` of it (a power of two
    no larger), ``line``-aligned (an odd number of lines times ``2**j``, every period),
    ``odd``, ``overlap`` (``ld < V``: rows overlap), or ``any``."""
    top = (1 << p.aw) - 1
    way = p.way_bytes // p.eb
    if klass == "multiple":
        return way * int(rng.integers(1, min(8, top // way) + 1))
    if klass == "fraction":
        return way >> int(rng.integers(0, clog2(way) + 1))
    if klass == "line":
        ll = max(1, p.line // p.eb)
        ld = ll * int(rng.choice([1, 3, 5, 7, 9, 15])) << int(rng.integers(0, clog2(p.sets) + 2))
        return min(ld, top)
    if klass == "odd":
        return int(rng.integers(0, min(4 * way, top) // 2)) * 2 + 1
    if klass == "overlap":
        return int(rng.integers(1, p.v)) if p.v > 1 else 1
    return int(rng.integers(1, top + 1))


def base_addr(rng: np.random.Generator, p: GemmParams) -> tuple[int, str]:
    """A byte address and its alignment: a line, an element, or any byte."""
    top = 1 << p.aw
    how = str(rng.choice(["line", "line", "elem", "byte"]))
    a = int(rng.integers(0, top))
    if how == "line":
        a -= a % p.line
    elif how == "elem":
        a -= a % p.eb
        a += p.eb if a % p.line == 0 and a + p.eb < top else 0
    return a, how


def m_rows(rng: np.random.Generator, p: GemmParams) -> int:
    r = rng.random()
    return 1 if r < 0.15 else p.m_max if r < 0.4 else int(rng.integers(1, p.m_max + 1))


@dataclass
class StartJob:
    """One ``start`` of a start/done block.

    Attributes:
        tag: the stimulus class (coverage and messages).
        ins: the inputs sampled by the start.
        gap: idle cycles between the previous job's ``done`` and this start.
        poke: cycle of a second ``start`` while busy, with :attr:`poke_ins`.
        noise: seed of random inputs driven in every cycle after the start (else the
            inputs hold).
        reset_at: cycle of a one-cycle ``rst`` (the job is abandoned).
    """

    tag: str
    ins: dict[str, int]
    gap: int = 1
    poke: int | None = None
    poke_ins: dict[str, int] = field(default_factory=dict)
    noise: int | None = None
    reset_at: int | None = None

    def __repr__(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in (("gap", self.gap), ("poke", self.poke), ("noise", self.noise),
                                                  ("reset_at", self.reset_at)) if v is not None)
        return f"{self.tag} {self.ins}{extra}"


@dataclass
class StartObs:
    """What one job did: per cycle ``(inputs driven, outputs read)``."""

    gap_rows: list[tuple[dict[str, int], dict[str, int]]] = field(default_factory=list)
    rows: list[tuple[dict[str, int], dict[str, int]]] = field(default_factory=list)  # cycle 0, 1, ..
    done_cycle: int | None = None
    prev: dict[str, int] | None = None  # the registered outputs at the previous job's done
    problems: list[str] = field(default_factory=list)


class StartDoneUnit(BlockUnit):
    """What ``ld_detect`` and ``kernel_select`` share: jobs, the start/done protocol,
    holding outputs, the per-cycle checks. Subclasses name the ports and the model."""

    inputs: ClassVar[tuple[str, ...]]
    regs: ClassVar[tuple[str, ...]]  # held from done to the next start
    combs: ClassVar[tuple[str, ...]] = ()  # combinational on the inputs of the cycle
    default_items = 240

    def __init__(self, ctx: Any, params: GemmParams, widths: dict[str, int]) -> None:
        super().__init__(ctx, params, widths)
        self.prev: dict[str, int] | None = None
        self.forced: set[str] = set()
        self.decorated = 0
        self.gap_rng = np.random.default_rng(ctx.seed + 1)  # the gap cycles' inputs

    # ---- model (subclasses) -----------------------------------------------------------
    def predict(self, ins: dict[str, int]) -> tuple[int, dict[str, int]]:
        """``done``'s cycle and the registered outputs at ``done`` for a start with ``ins``."""
        raise NotImplementedError

    def comb(self, ins: dict[str, int]) -> dict[str, int]:
        """The combinational outputs for inputs ``ins``."""
        return {}

    def noise(self, rng: np.random.Generator) -> dict[str, int]:
        """Random inputs (any value the ports can carry)."""
        return {n: int(rng.integers(0, 1 << self.widths[n])) for n in self.inputs}

    def extra_checks(self, job: StartJob, obs: StartObs) -> list[str]:
        return []

    # ---- stimulus helpers ---------------------------------------------------------------
    def decorate(self, rng: np.random.Generator, jobs: list[StartJob]) -> list[StartJob]:
        """Random gaps, pokes, noise and resets over the jobs; the first job that can
        take each gets it, so every run has them."""
        def want(kind: str, rate: float, ok: bool = True) -> bool:
            if not ok or self.decorated == 0:  # the first job runs plain
                return False
            if kind not in self.forced:
                self.forced.add(kind)
                return True
            return bool(rng.random() < rate)

        for j in jobs:
            dc, _ = self.predict(j.ins)
            j.gap = 0 if want("gap0", 0.2) else int(rng.integers(1, 4))
            if want("reset", 0.03, dc > 2):
                j.reset_at = int(rng.integers(1, dc))
            elif want("poke", 0.15, dc > 2):
                j.poke = int(rng.integers(1, dc))
                j.poke_ins = self.noise(rng)
            if want("noise", 0.3, dc > 2):
                j.noise = int(rng.integers(0, 2**31))
            self.decorated += 1
        return jobs

    def budget(self, job: StartJob) -> int:
        return self.max_cycles() + job.gap + 8

    def max_cycles(self) -> int:
        raise NotImplementedError

    # ---- driving ------------------------------------------------------------------------
    async def drive(self, bfm: BlockBfm, job: StartJob) -> StartObs:
        obs = StartObs(prev=self.prev)
        outs = ("done", "busy", "err") + self.regs + self.combs
        nrng = np.random.default_rng(job.noise if job.noise is not None else 0)
        for _ in range(job.gap):
            ins = self.noise(self.gap_rng)
            await bfm.next_cycle(ins)
            await bfm.settle()
            obs.gap_rows.append((ins, bfm.read(outs)))
        if job.gap:
            await bfm.next_cycle({"start": 1, **job.ins})
        else:  # the start shares the previous done's cycle
            bfm.drive({"start": 1, **job.ins})
        await bfm.settle()
        obs.rows.append(({"start": 1, **job.ins}, bfm.read(outs)))
        limit = self.max_cycles() + 4
        for cyc in range(1, limit + 1):
            ins = self.noise(nrng) if job.noise is not None else dict(job.ins)
            drv: dict[str, int] = dict(ins)
            if job.poke == cyc:
                drv.update(job.poke_ins)
                drv["start"] = 1
            if job.reset_at == cyc:
                drv["rst"] = 1
            await bfm.next_cycle(drv)
            await bfm.settle()
            out = bfm.read(outs)
            obs.rows.append((drv, out))
            if job.reset_at is not None:
                if cyc == job.reset_at + 2:
                    break
            elif out["done"]:
                obs.done_cycle = cyc
                break
        else:
            obs.problems.append(f"no done within {limit} cycles")
        self.prev = None if job.reset_at is not None or obs.done_cycle is None else \
            {n: obs.rows[-1][1][n] for n in ("err",) + self.regs}
        return obs

    # ---- checks -------------------------------------------------------------------------
    def check(self, job: StartJob, obs: StartObs) -> list[str]:
        errs = list(obs.problems)
        held = ("err",) + self.regs
        # holding from the previous done to this start, and the closed form in the gap
        if obs.prev is not None:
            for k, (_, out) in enumerate(obs.gap_rows + obs.rows[:1]):
                moved = {n: (out[n], obs.prev[n]) for n in held if out[n] != obs.prev[n]}
                if moved:
                    errs.append(f"{k + 1} cycle(s) after the previous done: outputs moved (got, at done): {moved}")
        for k, (_, out) in enumerate(obs.gap_rows):
            if out["done"] or out["busy"]:
                errs.append(f"gap cycle {k + 1}: done={out['done']} busy={out['busy']} while idle")
        for k, (ins, out) in enumerate(obs.gap_rows + obs.rows):
            want = self.comb({n: ins[n] for n in self.inputs})
            bad = {n: (out[n], v) for n, v in want.items() if out[n] != v}
            if bad:
                where = f"gap cycle {k + 1}" if k < len(obs.gap_rows) else f"cycle {k - len(obs.gap_rows)}"
                errs.append(f"{where}: combinational outputs (got, want) {bad} for inputs {ins}")
        if obs.rows[0][1]["busy"]:
            errs.append("busy in the start cycle: the start was not taken")
        if job.reset_at is not None:
            for cyc in (job.reset_at + 1, job.reset_at + 2):
                if cyc < len(obs.rows):
                    out = obs.rows[cyc][1]
                    if out["busy"] or out["done"]:
                        errs.append(f"cycle {cyc} after rst in cycle {job.reset_at}: busy={out['busy']} "
                                    f"done={out['done']}")
            return errs
        dc, want = self.predict(job.ins)
        if obs.done_cycle != dc:
            errs.append(f"done in cycle {obs.done_cycle}, want {dc}")
        for cyc in range(1, len(obs.rows)):
            out = obs.rows[cyc][1]
            if cyc < dc and (out["done"] or not out["busy"] or out["err"]):
                errs.append(f"cycle {cyc} (before done in {dc}): done={out['done']} busy={out['busy']} "
                            f"err={out['err']}, want 0 1 0")
                break
        if obs.done_cycle == dc:
            out = obs.rows[dc][1]
            if out["busy"]:
                errs.append("busy in the cycle of done")
            bad = {n: (out[n], v) for n, v in want.items() if out[n] != v}
            if bad:
                errs.append(f"at done (got, want): {bad}")
        errs += self.extra_checks(job, obs)
        return errs

    # ---- coverage helpers ---------------------------------------------------------------
    @staticmethod
    def control(job: StartJob, obs: StartObs) -> list[str]:
        out = []
        if job.gap == 0 and obs.prev is not None:
            out.append("back_to_back")
        if job.poke is not None and job.poke < len(obs.rows) and obs.rows[job.poke][1]["busy"]:
            out.append("start_while_busy")
        if job.noise is not None:
            out.append("inputs_change")
        if job.reset_at is not None:
            out.append("reset")
        return out


# ---------------------------------------------------------------------------------------
# ld_detect


class DetectUnit(StartDoneUnit):
    """``ld_detect`` against :func:`ld_conflict` and :func:`closed_form`."""

    idle: ClassVar[dict[str, int]] = {"start": 0, "rst": 0, "base": 0, "ld": 0, "m": 0}
    inputs = ("base", "ld", "m")
    regs = ("worst", "keep", "conflict", "visits")
    combs = ("way_multiple", "way_fraction", "aligned", "period", "worst_cf")
    covergroup = "gemm.detect"

    def max_cycles(self) -> int:
        p = self.params
        return p.m_max * (-(-(p.v * p.eb - 1) // p.line) + 1) + 1

    def predict(self, ins: dict[str, int]) -> tuple[int, dict[str, int]]:
        d = gemm.ld_conflict(ins["base"], ins["ld"], ins["m"], self.params)
        return d.done_cycle, {"worst": d.worst, "keep": d.keep, "conflict": int(d.conflict), "visits": d.visits,
                              "err": int(d.err)}

    def comb(self, ins: dict[str, int]) -> dict[str, int]:
        c = gemm.closed_form(ins["base"], ins["ld"], ins["m"], self.params)
        return {"way_multiple": int(c.way_multiple), "way_fraction": int(c.way_fraction), "aligned": int(c.aligned),
                "period": c.period, "worst_cf": c.worst_cf}

    def noise(self, rng: np.random.Generator) -> dict[str, int]:
        p = self.params
        r = rng.random()
        ld = 0 if r < 0.05 else stride(rng, p, STRIDES[int(rng.integers(0, len(STRIDES)))])
        return {"base": base_addr(rng, p)[0], "ld": ld, "m": int(rng.integers(0, 1 << self.widths["m"]))}

    def items(self, rng: np.random.Generator, count: int) -> list[StartJob]:
        p = self.params
        S, L, eb, V, mm = p.sets, p.line, p.eb, p.v, p.m_max
        top = (1 << p.aw) - 1
        way = p.way_bytes // eb
        ll = max(1, L // eb)
        J = lambda tag, base, ld, m: StartJob(tag, {"base": base, "ld": ld, "m": m})  # noqa: E731
        jobs = [
            J("patent", 0, way, mm),  # the 4 KiB way, lda = 1024 fp32 with the defaults: period 1
            J("patent", 0, way, 1),
            J("patent", 0, way, min(mm, p.budget)),
            J("patent", 0, way, min(mm, p.budget + 1)),
            J("multiple", 5 * L, 2 * way, mm),
            J("quarter_way", 0, max(1, way // 4), mm),  # a 1 KiB stride with the defaults: period 4
            J("fraction", 0, ll, mm),  # one line per row: period S
            J("fraction", 3 * L, 1, mm),  # s = eb: rows overlap
            J("overlap", L, max(1, V // 2), mm),
            J("overlap", 3 * eb, max(1, V - 1), mm),
            J("straddle", 5 * L + L - eb, way, mm),  # every segment straddles two lines
            J("straddle", 7 * L + 1, way + 1, mm),  # not even element-aligned
            J("straddle", L // 2, 2 * ll + ll // 2 if ll > 1 else 3, mm),
            J("line", 0, 3 * ll, mm),
            J("max", 0, top, mm),
            J("max", top - top % L, way, mm),
            J("max", top, top, mm),
            J("refused", 0, 0, mm),
            J("refused", L, way, 0),
            J("refused", 0, way, mm + 1),
            J("refused", 0, way, (1 << self.widths["m"]) - 1),
        ]
        for j in range(clog2(S) + 1):  # every period S / 2**j
            jobs.append(J("line", L * int(rng.integers(0, 64)), ll << j, mm))
        jobs = self.decorate(rng, jobs)
        while len(jobs) < count:
            if rng.random() < 0.05:
                base, _ = base_addr(rng, p)
                j = J("refused", base, *[(0, m_rows(rng, p)), (stride(rng, p, "any"), 0),
                                         (stride(rng, p, "any"), mm + 1)][int(rng.integers(0, 3))])
            else:
                klass = STRIDES[int(rng.integers(0, len(STRIDES)))]
                base, _ = base_addr(rng, p)
                j = J(klass, base, stride(rng, p, klass), m_rows(rng, p))
            jobs += self.decorate(rng, [j])
        return jobs

    # ---- coverage -----------------------------------------------------------------------
    def define_coverage(self, cg: Covergroup) -> None:
        p = self.params
        cg.point("outcome", lambda s: s["outcome"], ["conflict", "no_conflict", "ld0", "m0", "m_big"])
        cg.point("period", lambda s: s["period"], [0] + [1 << i for i in range(clog2(p.sets) + 1)])
        cg.point("segments", lambda s: s["segments"], ["aligned", "straddling"])
        cg.point("rows", lambda s: s["rows"], ["overlapping", "disjoint"])
        cg.point("m", lambda s: s["m"], ["1", "mid", "m_max"] if p.m_max > 2 else ["1", "m_max"])
        cg.point("stride", lambda s: s["stride"], list(STRIDES))
        cg.point("control", lambda s: s["control"], ["back_to_back", "start_while_busy", "inputs_change", "reset"])

    def samples(self, job: StartJob, obs: StartObs) -> list[dict[str, Any]]:
        p = self.params
        b, ld, m = job.ins["base"], job.ins["ld"], job.ins["m"]
        s: dict[str, Any] = dict.fromkeys(("outcome", "period", "segments", "rows", "m", "stride", "control"))
        out = [{**s, "control": c} for c in self.control(job, obs)]
        if job.reset_at is not None:
            return out
        d = gemm.ld_conflict(b, ld, m, p)
        if d.err:
            s["outcome"] = "ld0" if ld == 0 else "m0" if m == 0 else "m_big"
            return out + [s]
        seg = p.v * p.eb
        min_lines = -(-seg // p.line)
        s.update(outcome="conflict" if d.conflict else "no_conflict",
                 period=gemm.closed_form(b, ld, m, p).period,
                 segments="straddling" if any((b + r * ld * p.eb) % p.line + seg > min_lines * p.line
                                              for r in range(m)) else "aligned",
                 rows="overlapping" if ld * p.eb < seg and m > 1 else "disjoint",
                 m="1" if m == 1 else "m_max" if m == p.m_max else "mid",
                 stride=job.tag if job.tag in STRIDES else None)
        return out + [s]


# ---------------------------------------------------------------------------------------
# kernel_select


class SelectUnit(StartDoneUnit):
    """``kernel_select`` against :func:`select_kernel`."""

    idle: ClassVar[dict[str, int]] = {"start": 0, "rst": 0, "n": 0, "lda": 0, "base_a": 0, "limit_m": 0}
    inputs = ("n", "lda", "base_a", "limit_m")
    regs = ("prog", "m", "z", "keep", "worst", "keep_all", "conflict", "aligned", "way_multiple", "way_fraction",
            "sel_cycles")
    covergroup = "gemm.select"
    default_items = 150

    def max_cycles(self) -> int:
        p = self.params
        return p.m_max * (-(-(p.v * p.eb - 1) // p.line) + 1) + len(p.candidates) + 1

    def select(self, ins: dict[str, int]) -> gemm.Selection:
        return gemm.select_kernel(ins["n"], ins["lda"], ins["base_a"], self.params, bool(ins["limit_m"]))

    def predict(self, ins: dict[str, int]) -> tuple[int, dict[str, int]]:
        s = self.select(ins)
        return s.sel_cycles, {
            "prog": s.prog, "m": s.m, "z": s.z, "keep": s.keep, "worst": s.det.worst, "keep_all": s.det.keep,
            "conflict": int(s.det.conflict), "aligned": int(s.cf.aligned), "way_multiple": int(s.cf.way_multiple),
            "way_fraction": int(s.cf.way_fraction), "sel_cycles": s.sel_cycles, "err": int(s.err)}

    def extra_checks(self, job: StartJob, obs: StartObs) -> list[str]:
        """The detector's outputs are final from the detector's done (cycle visits + 1)."""
        s = self.select(job.ins)
        if s.err or obs.done_cycle is None:
            return []
        want = {"worst": s.det.worst, "keep_all": s.det.keep, "conflict": int(s.det.conflict)}
        for cyc in range(s.det.visits + 1, min(obs.done_cycle, len(obs.rows) - 1) + 1):
            out = obs.rows[cyc][1]
            bad = {n: (out[n], v) for n, v in want.items() if out[n] != v}
            if bad:
                return [f"cycle {cyc} (detector done in {s.det.visits + 1}): detector outputs (got, want) {bad}"]
        return []

    def noise(self, rng: np.random.Generator) -> dict[str, int]:
        p = self.params
        r = rng.random()
        lda = 0 if r < 0.05 else stride(rng, p, STRIDES[int(rng.integers(0, len(STRIDES)))])
        return {"n": int(rng.integers(0, 1 << p.dimw)), "lda": lda, "base_a": base_addr(rng, p)[0],
                "limit_m": int(rng.integers(0, 2))}

    def edges(self) -> list[int]:
        """``N`` on both sides of each candidate's task-balance edge, and the extremes."""
        p = self.params
        top = (1 << p.dimw) - 1
        out = {0, 1, p.v, top}
        for _, z in p.candidates:
            e = (p.ncores - 1) * z * p.v
            out |= {min(e, top), min(e + 1, top), min(e + z * p.v, top), min(e + z * p.v + 1, top)}
        return sorted(out)

    _limited: list[tuple[int, int, int]] | None = None

    def limited(self) -> list[tuple[int, int, int]]:
        """``(keep, lda, base_a)``: for each ``keep`` below ``m_max`` that a conflicting
        leading dimension gives the detector, one such ``lda`` and base, found by a fixed
        search (12000 draws, the same for every seed) over ``lda`` in ``1 .. 8 ways`` and element
        bases. With ``limit_m`` the kernel is then picked over ROM rows capped at
        ``keep``: every cap is a different race between the candidates' balance ratios
        (kernel_select@f7a20 m006, m013, m031: the capped pick's denominator, its
        remembered z, its balance test, survived the stride classes' few caps)."""
        if self._limited is None:
            p = self.params
            rng = np.random.default_rng(20261129)
            top = (1 << p.aw) - 1
            found: dict[int, tuple[int, int, int]] = {}
            for _ in range(12000):
                lda = int(rng.integers(1, min(8 * p.way_bytes // p.eb, top) + 1))
                base = int(rng.integers(0, (top + 1) // p.eb)) * p.eb
                d = gemm.select_kernel(1, lda, base, p, True).det
                if d.conflict and d.keep < p.m_max:
                    found.setdefault(d.keep, (d.keep, lda, base))
            self._limited = [found[k] for k in sorted(found)]
        return self._limited

    def items(self, rng: np.random.Generator, count: int) -> list[StartJob]:
        p = self.params
        L, eb = p.line, p.eb
        way = p.way_bytes // eb
        def J(tag: str, n: int, lda: int, base: int, lim: int) -> StartJob:  # noqa: N802
            return StartJob(tag, {"n": n, "lda": lda, "base_a": base, "limit_m": lim})

        edges = self.edges()
        big = edges[-2]
        jobs = [
            J("multiple", big, way, 0, 0),  # the patent's stride: a conflict, copy
            J("multiple", big, way, 0, 1),  # ... limit m instead
            J("line", big, max(1, L // eb) * 3, 0, 0),
            J("fraction", big, way // 2 or 1, 0, 1),
            J("multiple", big, 2 * way, L // 2, 1),  # unaligned base
            J("odd", big, way + 1, 0, 0),
            J("overlap", big, 1, eb, 1),
            J("refused", big, 0, 0, 0),
            J("refused", 0, 0, L, 1),
            J("any", (1 << p.dimw) - 1, (1 << p.aw) - 1, (1 << p.aw) - 1, 1),
        ]
        for n in edges:  # the balance edge, for a clean stride and a conflicting one
            jobs.append(J("odd", n, way + 1, 0, int(rng.integers(0, 2))))
            jobs.append(J("multiple", n, way, 0, int(rng.integers(0, 2))))
        for keep, lda, base in self.limited():  # every cap, at two edges where the capped pick decides
            capped = [n for n in edges if gemm.pick(p.m_max, n, p)[0] > keep]
            for n in rng.permutation(capped)[:2].tolist():
                jobs.append(J("keep", n, lda, base, 1))
        jobs = self.decorate(rng, jobs)
        while len(jobs) < count:
            if rng.random() < 0.04:
                j = J("refused", int(rng.integers(0, 1 << p.dimw)), 0, base_addr(rng, p)[0], int(rng.integers(0, 2)))
            else:
                klass = STRIDES[int(rng.integers(0, len(STRIDES)))]
                n = int(rng.choice(edges)) if rng.random() < 0.5 else int(rng.integers(0, 1 << p.dimw))
                j = J(klass, n, stride(rng, p, klass), base_addr(rng, p)[0], int(rng.integers(0, 2)))
            jobs += self.decorate(rng, [j])
        return jobs

    # ---- coverage -----------------------------------------------------------------------
    def define_coverage(self, cg: Covergroup) -> None:
        p = self.params
        cg.point("prog", lambda s: s["prog"], list(GemmParams.PROGS))
        cg.point("kernel", lambda s: s["kernel"], [f"{m}x{z}" for m, z in p.candidates])
        cg.point("choice", lambda s: s["choice"], ["balanced", "fallback"])
        cg.point("balance", lambda s: s["balance"], ["N=0", "below", "at", "above"])
        cg.point("limit_m", lambda s: s["limit_m"], ["off", "on_no_conflict", "on_limited"])
        cg.point("stride", lambda s: s["stride"], list(STRIDES))
        cg.point("aligned", lambda s: s["aligned"], [False, True])
        cg.point("refused", lambda s: s["refused"], [True])
        cg.point("control", lambda s: s["control"], ["back_to_back", "start_while_busy", "inputs_change", "reset"])
        if self.limited():
            cg.point("keep_limited", lambda s: s["keep_limited"], [k for k, _, _ in self.limited()])

    def samples(self, job: StartJob, obs: StartObs) -> list[dict[str, Any]]:
        p = self.params
        keys = ("prog", "kernel", "choice", "balance", "limit_m", "stride", "aligned", "refused", "control",
                "keep_limited")
        s: dict[str, Any] = dict.fromkeys(keys)
        out = [{**s, "control": c} for c in self.control(job, obs)]
        if job.reset_at is not None:
            return out
        sel = self.select(job.ins)
        if sel.err:
            return out + [{**s, "refused": True}]
        n = job.ins["n"]
        nb = -(-n // (sel.z * p.v))
        rom = {z: m for m, z in p.candidates}
        limited = sel.det.keep < gemm.pick(p.m_max, n, p)[0]  # a conflict at the uncapped pick
        s.update(prog=GemmParams.PROGS[sel.prog], kernel=f"{rom[sel.z]}x{sel.z}",
                 choice="balanced" if nb >= p.ncores else "fallback",
                 balance="N=0" if n == 0 else "below" if nb < p.ncores else "at" if nb == p.ncores else "above",
                 limit_m="off" if not job.ins["limit_m"] else "on_no_conflict" if not limited
                 else "on_limited" if sel.prog == gemm.NO_COPY else None,
                 stride=job.tag if job.tag in STRIDES else None, aligned=sel.cf.aligned,
                 keep_limited=sel.det.keep if job.ins["limit_m"] and limited and sel.prog == gemm.NO_COPY else None)
        return out + [s]
