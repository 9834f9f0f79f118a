"""pyuvm environment of the GEMM tile, run on ``gemm_top`` (the tile, a flat memory, a
load port and a read-back port; docs/gemm.md).

The jobs of a scenario (:mod:`.jobs`, the ``scenario`` option) run one after the other.
For each job :class:`GemmBfm` optionally pulses ``rst``, loads A, B and the poisoned C and
buffer regions through the load port, writes the registers, writes CTRL with START
(cycle 0) and waits for ``done``. With ``capture`` (every scenario but the sweep) it
samples ``tr_*``, ``busy`` and ``done`` in every cycle of the job; a job may also write a
second START while busy or assert ``rst`` in the middle. After ``done`` it reads every
CSR (counters, ``ERR``, ``SEL_*``, ``DET_*``) and the job's memory regions back.

:class:`GemmScoreboard` holds each job to the golden model (:func:`lockstep.models.gemm.run`,
chained through the memory image and the cache state):

* ``done`` exactly in the predicted cycle; ``busy`` high exactly from cycle 1 to the cycle
  before ``done`` (captured jobs; otherwise at cycle 1 and at ``done``);
* the trace, request by request (kind, byte address, bytes), with the first difference;
* every counter of ``GemmParams.COUNTERS`` (the cache's per-kind lookups, hits and misses
  are the golden cache model's replay of the golden trace);
* the sticky ``ERR`` and the ``SEL_*``/``DET_*`` registers;
* the memory: C and the buffer equal the golden image, A and B unchanged, and a guard
  element on each side of every row unchanged; with ``n_mem_wr`` equal to the model's and
  every C and buffer element poisoned before the job, no write went anywhere else;
* an abandoned job (``rst`` in the middle): afterwards idle, ``ERR`` and the counters 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly, RisingEdge, SimTimeoutError, Timer, with_timeout
from cocotb.utils import get_sim_time
from pyuvm import (
    ConfigDB,
    uvm_analysis_port,
    uvm_driver,
    uvm_subscriber,
    uvm_test,
)

from lockstep.models import gemm
from lockstep.models.gemm.params import GemmParams

from ..context import CLOCK_NS, TbContext, start
from ..coverage import Covergroup
from ..seq import DriverEnv, ListSeq
from .jobs import GemmJob, make_jobs

__all__ = ["GemmTest", "Observation", "budget", "check", "csr_writes", "define_coverage"]

#: CSR write addresses (docs/gemm.md section 9) of the GemmCfg fields.
CSR_W = {"M": 1, "N": 2, "K": 3, "lda": 4, "ldb": 5, "ldc": 6, "base_a": 7, "base_b": 8, "base_c": 9,
         "base_buf": 10, "buf_len": 11, "m": 12, "z": 13, "keep": 14, "shift": 15}
CTRL, STATUS, ERR_ADDR, CNT_BASE = 0, 16, 17, 32
REGS = {"SEL_M": 18, "SEL_Z": 19, "SEL_KEEP": 20, "SEL_PROG": 21, "DET_WORST": 22, "DET_KEEP": 23, "DET_FLAGS": 24}
M32 = (1 << 32) - 1


@dataclass
class Observation:
    """What one job did on the DUT."""

    done_cycle: int | None = None
    busy: list[int] = field(default_factory=list)  # captured: busy per cycle 1 .. done
    trace: list[tuple[int, int, int]] = field(default_factory=list)
    trace_cycles: list[int] = field(default_factory=list)  # captured: the cycle of each request
    counters: dict[str, int] = field(default_factory=dict)
    err: int = 0
    status: int = 0
    regs: dict[str, int] = field(default_factory=dict)
    mem: list[tuple[int, np.ndarray]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def csr_writes(cfg: gemm.GemmCfg, start_only: bool = False) -> list[tuple[int, int]]:
    """The CSR writes of a job, in the order the BFM writes them: every register of
    :data:`CSR_W`, then ``CTRL`` with START (the write that is cycle 0).

    Args:
        cfg: the job's registers.
        start_only: CTRL alone (the registers already hold ``cfg``).

    Returns:
        ``(address, value)`` pairs, values as 32-bit words.
    """
    ctrl = 1 | int(cfg.auto) << 1 | int(cfg.copy) << 2 | int(cfg.limit_m) << 3
    regs = [] if start_only else [(addr, int(getattr(cfg, name)) & M32) for name, addr in CSR_W.items()]
    return regs + [(CTRL, ctrl)]


class GemmBfm:
    """All pin-level access to ``gemm_top``."""

    def __init__(self, dut: Any, params: GemmParams) -> None:
        self.dut = dut
        self.p = params
        self.mask = (1 << params.ew) - 1
        for n in ("csr_we", "csr_addr", "csr_wdata", "csr_raddr", "ld_we", "ld_addr", "ld_data", "rb_addr"):
            getattr(dut, n).value = 0

    async def reset(self, cycles: int = 2) -> None:
        self.dut.rst.value = 1
        for _ in range(cycles):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    async def load(self, loads: list[tuple[int, np.ndarray]]) -> None:
        """One element per clock through the load port."""
        d = self.dut
        we, addr, data, edge = d.ld_we, d.ld_addr, d.ld_data, RisingEdge(d.clk)
        for lo, vals in loads:
            we.value = 1
            for i, v in enumerate((np.asarray(vals, dtype=np.int64) & self.mask).tolist()):
                addr.value = lo + i
                data.value = v
                await edge
        we.value = 0

    async def csr_write(self, addr: int, value: int) -> None:
        d = self.dut
        d.csr_we.value = 1
        d.csr_addr.value = addr
        d.csr_wdata.value = int(value) & M32
        await RisingEdge(d.clk)
        d.csr_we.value = 0

    async def csr_read(self, addr: int) -> int:
        """A combinational read (outside the read-only phase, between clock edges)."""
        self.dut.csr_raddr.value = addr
        await Timer(1, "ns")
        return int(self.dut.csr_rdata.value)

    async def readback(self, regions: list[tuple[int, int]]) -> list[tuple[int, np.ndarray]]:
        out = []
        sign = 1 << (self.p.ew - 1)
        for lo, n in regions:
            vals = np.zeros(n, dtype=np.int64)
            for i in range(n):
                self.dut.rb_addr.value = lo + i
                await Timer(1, "ns")
                v = int(self.dut.rb_data.value)
                vals[i] = v - 2 * sign if v & sign else v
            out.append((lo, vals))
        return out

    async def run(self, job: GemmJob, budget: int) -> Observation:
        """Drive one job (module docstring) and observe it."""
        d, obs = self.dut, Observation()
        if job.reset_before:
            await self.reset()
        await self.load(job.loads)
        *regs, (_, ctrl) = csr_writes(job.cfg, job.start_only)
        for addr, value in regs:
            await self.csr_write(addr, value)
        d.csr_we.value, d.csr_addr.value, d.csr_wdata.value = 1, CTRL, ctrl
        await RisingEdge(d.clk)  # the edge that ends cycle 0 takes the start
        d.csr_we.value = 0
        if job.capture or job.reset_at is not None or job.busy_at is not None:
            await self._capture(job, obs, budget, ctrl)
        else:
            t0 = get_sim_time("ns")
            await ReadOnly()
            obs.busy.append(int(d.busy.value))
            if not int(d.done.value):
                try:
                    await with_timeout(RisingEdge(d.done), budget * CLOCK_NS, "ns")
                except SimTimeoutError:
                    obs.problems.append(f"no done within {budget} cycles")
                    return obs
            obs.done_cycle = int(round((get_sim_time("ns") - t0) / CLOCK_NS)) + 1
            await ReadOnly()
            if int(d.busy.value):
                obs.problems.append("busy is high in the cycle of done")
        await RisingEdge(d.clk)
        obs.status = await self.csr_read(STATUS)
        obs.err = await self.csr_read(ERR_ADDR)
        for i, name in enumerate(GemmParams.COUNTERS):
            obs.counters[name] = await self.csr_read(CNT_BASE + i)
        for name, addr in REGS.items():
            obs.regs[name] = await self.csr_read(addr)
        obs.mem = await self.readback(job.check)
        await RisingEdge(d.clk)
        return obs

    async def _capture(self, job: GemmJob, obs: Observation, budget: int, ctrl: int) -> None:
        d = self.dut
        cyc = 1
        while True:
            await ReadOnly()
            busy, done = int(d.busy.value), int(d.done.value)
            if int(d.tr_valid.value):
                obs.trace.append((int(d.tr_kind.value), int(d.tr_addr.value), int(d.tr_bytes.value)))
                obs.trace_cycles.append(cyc)
            obs.busy.append(busy)
            if done:
                obs.done_cycle = cyc
                return
            await RisingEdge(d.clk)
            if job.busy_at is not None and cyc == job.busy_at:
                d.csr_we.value, d.csr_addr.value, d.csr_wdata.value = 1, CTRL, ctrl
            else:
                d.csr_we.value = 0
            if job.reset_at is not None and cyc == job.reset_at:
                d.rst.value = 1
                await RisingEdge(d.clk)
                d.rst.value = 0
                return
            cyc += 1
            if cyc > budget:
                obs.problems.append(f"no done within {budget} cycles")
                return


class GemmDriver(uvm_driver):
    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)

    def connect_phase(self) -> None:
        self.bfm: GemmBfm = ConfigDB().get(self, "", "BFM")

    async def run_phase(self) -> None:
        while True:
            item = await self.seq_item_port.get_next_item()
            job = item.obj
            obs = await self.bfm.run(job, budget(job))
            self.ap.write((job, obs))
            self.seq_item_port.item_done()


def budget(job: GemmJob) -> int:
    """The watchdog of one job: its predicted cycles (or the most an abandoned one may
    take before its reset) with a margin."""
    g = job.golden
    base = g.cycles if g is not None else (job.reset_at or 0) + 2
    return 2 * base + 64


def _first_diff(got: list[tuple[int, int, int]], want: list[tuple[int, int, int]],
                cycles: list[int] | None = None) -> str:
    """The first request that differs (with the cycle it was seen in, when ``cycles``
    gives the recorded requests' cycles), or the lengths."""
    names = GemmParams.KINDS
    fmt = lambda r: f"{names[r[0]] if r[0] < len(names) else r[0]} addr={r[1]:#x} bytes={r[2]}"  # noqa: E731
    at = lambda i: f" (cycle {cycles[i]})" if cycles and i < len(cycles) else ""  # noqa: E731
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return f"request {i}{at(i)}: got {fmt(a)}, want {fmt(b)}"
    n = min(len(got), len(want))
    extra = f"; first extra: {fmt(got[n])}{at(n)}" if len(got) > n else f"; first missing: {fmt(want[n])}"
    return f"lengths differ: got {len(got)} requests, want {len(want)}{extra}"


def check(job: GemmJob, obs: Observation, mem: np.ndarray | None) -> list[str]:
    """Every check of the module docstring; ``mem`` is the golden image after the job."""
    errs = list(obs.problems)
    if job.reset_at is not None:  # abandoned: idle, err and counters cleared by rst
        if obs.status & 1:
            errs.append("busy after a reset in the job")
        if obs.err:
            errs.append(f"ERR = {obs.err:#x} after rst (want 0)")
        bad = {k: v for k, v in obs.counters.items() if v}
        if bad:
            errs.append(f"counters not cleared by rst: {bad}")
        return errs
    g = job.golden
    assert g is not None
    if obs.done_cycle != g.cycles:
        errs.append(f"done in cycle {obs.done_cycle}, want {g.cycles}")
    if obs.busy and obs.done_cycle is not None:
        want = [1] * (g.cycles - 1) + [0]
        got = obs.busy if len(obs.busy) == len(want) else None
        if job.capture and got != want:
            errs.append(f"busy per cycle 1..done: got {obs.busy[:8]}..., want {want[:8]}... "
                        f"(first difference at cycle {next((i + 1 for i, (a, b) in enumerate(zip(obs.busy, want)) if a != b), min(len(obs.busy), len(want)))})")
        if not job.capture and obs.busy[0] != want[0]:
            errs.append(f"busy in cycle 1 is {obs.busy[0]}, want {want[0]}")
    if job.capture:
        want_tr = g.trace.tolist()
        if obs.trace != want_tr:
            errs.append("trace: " + _first_diff(obs.trace, want_tr, obs.trace_cycles))
    diff = {k: (obs.counters.get(k), v) for k, v in g.counters.items() if obs.counters.get(k) != v}
    if diff:
        errs.append("counters (got, want): " + ", ".join(f"{k}={a},{b}" for k, (a, b) in diff.items()))
    if obs.err != job.sticky:
        errs.append(f"ERR = {gemm.err_names(obs.err)}, want {gemm.err_names(job.sticky)}")
    if obs.regs != job.regs:
        errs.append(f"registers (got, want): {obs.regs} {job.regs}")
    if obs.status & 1:
        errs.append("busy after done")
    if mem is not None:
        for lo, vals in obs.mem:
            want = mem[lo:lo + len(vals)]
            bad = np.flatnonzero(vals != want)
            if bad.size:
                i = int(bad[0])
                errs.append(f"memory: {bad.size} element(s) differ in [{lo}, {lo + len(vals)}); first at "
                            f"element {lo + i}: got {int(vals[i])}, want {int(want[i])}")
    return errs


class GemmScoreboard(uvm_subscriber):
    def build_phase(self) -> None:
        self.errors: list[str] = []
        self.jobs = 0
        self.bad = 0
        self.perf: list[dict[str, Any]] = []

    def write(self, msg: tuple[GemmJob, Observation]) -> None:
        job, obs = msg
        errs = check(job, obs, job.golden.mem if job.golden is not None else None)
        self.jobs += 1
        if errs:
            self.bad += 1
            self.errors += [f"job {self.jobs - 1} ({job!r}): {e}" for e in errs]
        if job.golden is not None:
            self.perf.append({"tag": job.tag, "klass": job.klass, "cycles": obs.done_cycle, **obs.counters,
                              "M": job.cfg.M, "N": job.cfg.N, "K": job.cfg.K, "lda": job.cfg.lda,
                              "m": job.regs["SEL_M"], "z": job.regs["SEL_Z"], "keep": job.regs["SEL_KEEP"],
                              "prog": job.regs["SEL_PROG"], "ok": not errs})


def _hit_bin(job: GemmJob) -> str:
    c = job.golden.counters
    lk = sum(c[f"{k}_lookups"] for k in GemmParams.KINDS)
    if not lk:
        return "none"
    r = sum(c[f"{k}_hits"] for k in GemmParams.KINDS) / lk
    return "<10%" if r < 0.1 else "<50%" if r < 0.5 else "<90%" if r < 0.9 else ">=90%"


def _copy_bin(job: GemmJob) -> str:
    k = job.golden.kernel
    if not k.copy or k.keep >= k.m:
        return "none"
    return "all" if k.keep == 0 else "one" if k.m - k.keep == 1 else "some"


def define_coverage(cg: Covergroup, params: GemmParams) -> None:
    ran = lambda j: j.golden is not None and j.golden.err == 0  # noqa: E731
    cg.point("prog", lambda j: GemmParams.PROGS[j.golden.kernel.prog] if ran(j) else None, list(GemmParams.PROGS))
    cg.point("copied_rows", lambda j: _copy_bin(j) if ran(j) else None, ["none", "one", "some", "all"])
    cg.point("z", lambda j: j.golden.kernel.z if ran(j) else None, [z for z in (1, 2, 4, 8, 16) if z <= params.z_max])
    cg.point("tail", lambda j: ("M" if j.cfg.M % j.golden.kernel.m else "")
             + ("N" if j.cfg.N % (j.golden.kernel.z * params.v) else "") + ("K" if j.cfg.K % params.v else "")
             if ran(j) and j.cfg.M and j.cfg.N else None, ["", "M", "N", "K", "MN", "MK", "NK", "MNK"])
    cg.point("stride", lambda j: j.klass if ran(j) else None, ["multiple", "fraction", "odd", "unaligned"])
    cg.point("hit_rate", lambda j: _hit_bin(j) if ran(j) else None, ["none", "<10%", "<50%", "<90%", ">=90%"])
    cg.point("mode", lambda j: ("auto+limit" if j.cfg.limit_m else "auto") if j.cfg.auto else "explicit",
             ["explicit", "auto", "auto+limit"])
    cg.point("error", lambda j: next(iter(gemm.err_names(j.golden.err)), None) if j.golden is not None else None,
             [n for n in GemmParams.ERR_NAMES if n != "START_BUSY"])
    cg.point("control", lambda j: ("busy" if j.busy_at is not None else "reset" if j.reset_at is not None else None),
             ["busy", "reset"])


class GemmCoverage(uvm_subscriber):
    def build_phase(self) -> None:
        params: GemmParams = ConfigDB().get(self, "", "PARAMS")
        self.cg = Covergroup("gemm.tile")
        define_coverage(self.cg, params)

    def write(self, msg: tuple[GemmJob, Observation]) -> None:
        self.cg.sample(msg[0])


class GemmEnv(DriverEnv):
    DRIVER, SCOREBOARD, COVERAGE = GemmDriver, GemmScoreboard, GemmCoverage


class GemmTest(uvm_test):
    """The scenario's jobs against the golden model (module docstring)."""

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        params = GemmParams.from_dict(ctx.params)
        ConfigDB().set(None, "*", "PARAMS", params)
        ConfigDB().set(None, "*", "BFM", GemmBfm(cocotb.top, params))
        rng = np.random.default_rng(ctx.seed)
        self.jobs = make_jobs(str(ctx.opt("scenario", "random")), params, rng, int(ctx.opt("jobs", 12)), ctx.opts)
        ConfigDB().set(None, "*", "JOBS", self.jobs)
        self.ctx = ctx
        self.env = GemmEnv("env", self)

    async def run_phase(self) -> None:
        self.raise_objection()
        await start(cocotb.top)
        total = sum(budget(j) + sum(len(v) for _, v in j.loads) + 64 for j in self.jobs) * 2 + 1000
        try:
            await with_timeout(ListSeq("seq", "JOBS").start(self.env.seqr), total * CLOCK_NS, "ns")
        except SimTimeoutError as exc:
            raise AssertionError(f"watchdog: {self.env.scoreboard.jobs}/{len(self.jobs)} jobs done") from exc
        self.drop_objection()

    def check_phase(self) -> None:
        sb = self.env.scoreboard
        errors = list(sb.errors)
        if sb.jobs != len(self.jobs):
            errors.append(f"{sb.jobs} of {len(self.jobs)} jobs checked")
        self.ctx.summary.update(blocks=sb.jobs, mismatches=sb.bad, errors=errors[:20], perf=sb.perf,
                                cycles=sum(p["cycles"] or 0 for p in sb.perf))
        self.ctx.finish(errors, self.logger)

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)
