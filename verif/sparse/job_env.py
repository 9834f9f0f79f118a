"""pyuvm environment shared by the sparse family's job-level blocks: the raster blocks
(``sp_encoder``, ``sp_decoder``, ``nnz_profiler``) and the memories (``fm_mem_unit``,
``w_mem``).

These blocks are not one-in, one-out pipelines: a *job* (a map, a descriptor and its
entries, a weight stream) is started, streamed and ended by a pulse, and its result is
partly a stream and partly state read back through a port. A block's testbench supplies
one :class:`JobUnit` subclass (stimulus, how to drive one job, the golden-model check,
cover points); everything else is shared:

* :class:`JobBfm` owns the DUT: one :class:`~lockstep.verif.agents.stream.StreamSource`
  per input stream and one :class:`~lockstep.verif.agents.stream.StreamSink` per output
  stream, whose idle and back-pressure rates each job sets (:class:`Pauses`), and a
  per-cycle :class:`ControlTrace` of the 1-bit handshake and status signals.
* :class:`~lockstep.verif.seq.ListSeq` -> :class:`JobDriver` run the unit's jobs one after the other; the
  driver hands each job to :meth:`JobUnit.drive`, which returns what the job read back.
* :class:`JobMonitor` cuts the control trace and the stream beats into one
  :class:`Observation` per job and publishes ``(job, observation)``.
* :class:`JobScoreboard` asks :meth:`JobUnit.check` (the golden model) about every job;
  :class:`JobCoverage` samples the unit's cover group.
* :class:`JobTest` starts clock and reset, runs everything under a watchdog from the
  unit's cycle budget and writes ``summary.json``.

Cycle numbering: sample ``k`` of the trace holds the values of the ``k``-th cycle after
the test started (read in the read-only phase after its rising edge); a handshake in
sample ``k`` (valid and ready both high) completes at the edge that ends cycle ``k``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator

import cocotb
import numpy as np
from cocotb.triggers import Event, ReadOnly, RisingEdge, SimTimeoutError, with_timeout
from pyuvm import (
    ConfigDB,
    uvm_analysis_port,
    uvm_driver,
    uvm_env,
    uvm_sequencer,
    uvm_subscriber,
    uvm_test,
)

from lockstep.models.sparse.params import SparseParams

from ..agents.stream import Beat, CycleCounter, StreamSink, StreamSource
from ..context import CLOCK_NS, TbContext, start
from ..coverage import Covergroup
from ..seq import ListSeq

__all__ = ["ControlTrace", "JobBfm", "JobTest", "JobUnit", "Observation", "Pauses", "handshakes"]


class Pauses:
    """A reproducible pause generator whose rate the testbench changes between jobs.

    Args:
        seed: seed of the private random generator.
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.rate = 0.0

    def __iter__(self) -> Iterator[bool]:
        return self

    def __next__(self) -> bool:
        return self.rate > 0 and self.rng.random() < self.rate


class ControlTrace:
    """Samples named 1-bit signals once per cycle (read-only phase after each rising
    edge) into :attr:`rows`; sets :attr:`pulse` events when a watched signal is high.

    Args:
        clk: the clock.
        signals: name -> handle (X or Z after reset is an error, not a zero).
    """

    def __init__(self, clk: Any, signals: dict[str, Any]) -> None:
        self.clk = clk
        self.names = list(signals)
        self.handles = list(signals.values())
        self.rows: list[tuple[int, ...]] = []
        self.events: dict[str, Event] = {}
        self.problems: list[str] = []
        self._task = cocotb.start_soon(self._run())

    def col(self, name: str) -> int:
        """Column of ``name`` in a row."""
        return self.names.index(name)

    def watch(self, name: str) -> Event:
        """An event set in every cycle in which ``name`` is high (clear it before waiting)."""
        return self.events.setdefault(name, Event())

    async def _run(self) -> None:
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            row = []
            for name, h in zip(self.names, self.handles):
                v = h.value
                if not v.is_resolvable:
                    if len(self.problems) < 10:
                        self.problems.append(f"cycle {len(self.rows)}: {name} is {v} after reset")
                    row.append(0)
                else:
                    row.append(int(v))
            self.rows.append(tuple(row))
            for name, ev in self.events.items():
                if row[self.names.index(name)]:
                    ev.set()

    def window(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        """Columns of samples ``lo .. hi - 1`` as arrays, by name."""
        block = np.array(self.rows[lo:hi], dtype=np.int64).reshape(-1, len(self.names))
        return {n: block[:, i] for i, n in enumerate(self.names)}


def handshakes(win: dict[str, np.ndarray], prefix: str) -> np.ndarray:
    """Sample indices (within the window) of the handshakes of stream ``prefix``."""
    return np.flatnonzero(win[f"{prefix}_valid"] & win[f"{prefix}_ready"])


@dataclass
class Observation:
    """What one job did on the DUT.

    Attributes:
        first: trace sample where the job began (its start / descriptor / wr_start cycle).
        last: trace sample where the job ended (its end pulse), inclusive.
        trace: the control signals of samples ``first .. last`` (by name).
        inputs: payload beats accepted on each input stream during the job.
        outputs: payload beats taken from each output stream during the job.
        read: what the unit's :meth:`JobUnit.drive` read back after the job.
    """

    first: int
    last: int
    trace: dict[str, np.ndarray]
    inputs: dict[str, list[dict[str, int]]] = field(default_factory=dict)
    outputs: dict[str, list[dict[str, int]]] = field(default_factory=dict)
    read: dict[str, Any] = field(default_factory=dict)


class JobUnit:
    """What a testbench knows about one job-level block. Subclass and fill in.

    Class attributes:
        sources / sinks: stream prefix -> payload fields driven / sampled.
        controls: 1-bit signals sampled every cycle (the stream handshakes are added).
        idle_inputs: input ports (not stream payloads) -> value driven after reset.
        covergroup: name of the unit's cover group.
        default_jobs: jobs per run unless the ``jobs`` option says otherwise.

    Args:
        ctx: the runner context.
        params: the parameters the testbench checks against.
    """

    sources: ClassVar[dict[str, list[str]]] = {}
    sinks: ClassVar[dict[str, list[str]]] = {}
    controls: ClassVar[list[str]] = []
    idle_inputs: ClassVar[dict[str, int]] = {}
    covergroup: ClassVar[str]
    default_jobs: ClassVar[int] = 40

    def __init__(self, ctx: TbContext, params: SparseParams) -> None:
        self.ctx = ctx
        self.params = params

    def jobs(self, rng: np.random.Generator, count: int) -> list[Any]:
        """The run's jobs (any objects :meth:`drive` understands), corners first."""
        raise NotImplementedError

    def budget(self, job: Any) -> int:
        """Most cycles the job may take (the watchdog; stalls included)."""
        raise NotImplementedError

    async def drive(self, bfm: "JobBfm", job: Any) -> tuple[int, int, dict[str, Any]]:
        """Run one job on the DUT: returns the trace samples where it began and where it
        ended (its end pulse), and what was read back after it."""
        raise NotImplementedError

    def check(self, job: Any, obs: Observation) -> list[str]:
        """Compare one job with the golden model; the errors (empty when it matched)."""
        raise NotImplementedError

    def define_coverage(self, cg: Covergroup) -> None:
        """Add cover points to ``cg``."""

    def sample(self, job: Any, obs: Observation) -> dict[str, Any]:
        """The cover-point sample of one job."""
        return {}


class JobBfm:
    """Owns the DUT's signals: cycle counter, stream agents, control trace."""

    def __init__(self, dut: Any, ctx: TbContext, unit: JobUnit) -> None:
        self.dut = dut
        self.unit = unit
        self.counter = CycleCounter(dut.clk)
        self.pauses: dict[str, Pauses] = {}
        self.sources: dict[str, StreamSource] = {}
        self.sinks: dict[str, StreamSink] = {}
        for i, (prefix, fields) in enumerate({**unit.sources, **unit.sinks}.items()):
            self.pauses[prefix] = Pauses(ctx.seed * 31 + i + 1)
            agent = StreamSource if prefix in unit.sources else StreamSink
            (self.sources if prefix in unit.sources else self.sinks)[prefix] = agent(
                dut, self.counter, prefix, fields, self.pauses[prefix])
        for name, value in unit.idle_inputs.items():
            getattr(dut, name).value = value
        names = [*unit.controls]
        for prefix in [*unit.sources, *unit.sinks]:
            names += [f"{prefix}_valid", f"{prefix}_ready"]
        self.trace = ControlTrace(dut.clk, {n: getattr(dut, n) for n in names})
        self.accepted: dict[str, list[dict[str, int]]] = {prefix: [] for prefix in unit.sources}

    def set_rates(self, idle: float, backpressure: float) -> None:
        """Pause rates of every input stream (idle) and output stream (back-pressure)."""
        for prefix in self.sources:
            self.pauses[prefix].rate = idle
        for prefix in self.sinks:
            self.pauses[prefix].rate = backpressure

    @property
    def now(self) -> int:
        """Index of the trace sample of the current cycle."""
        return len(self.trace.rows)

    async def wait_high(self, name: str) -> int:
        """Wait for the next cycle with ``name`` high; returns its trace sample."""
        ev = self.trace.watch(name)
        ev.clear()
        await ev.wait()
        return len(self.trace.rows) - 1

    async def send(self, prefix: str, words: list[dict[str, int]]) -> None:
        """Queue words on input stream ``prefix`` and wait until all are accepted."""
        src = self.sources[prefix]
        for w in words:
            await src.send(Beat(w))
        for _ in words:
            self.accepted[prefix].append((await src.sent.get()).fields)

    def take(self, prefix: str) -> list[dict[str, int]]:
        """The beats taken from output stream ``prefix`` since the last call."""
        out = []
        q = self.sinks[prefix].received
        while not q.empty():
            out.append(q.get_nowait().fields)
        return out


class JobDriver(uvm_driver):
    """Runs each job through :meth:`JobUnit.drive` and tells the monitor where it was."""

    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)

    def connect_phase(self) -> None:
        self.bfm: JobBfm = ConfigDB().get(self, "", "BFM")

    async def run_phase(self) -> None:
        while True:
            item = await self.seq_item_port.get_next_item()
            first, last, read = await self.bfm.unit.drive(self.bfm, item.obj)
            self.ap.write((item.obj, first, last, read))
            self.seq_item_port.item_done()


class JobMonitor(uvm_subscriber):
    """Turns each finished job into an :class:`Observation` (trace window, stream beats,
    read-back) and publishes ``(job, observation)`` on :attr:`ap`."""

    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)

    def connect_phase(self) -> None:
        self.bfm: JobBfm = ConfigDB().get(self, "", "BFM")

    def write(self, msg: tuple[Any, int, int, dict[str, Any]]) -> None:
        job, first, last, read = msg
        bfm = self.bfm
        inputs = {prefix: list(beats) for prefix, beats in bfm.accepted.items()}
        for beats in bfm.accepted.values():
            beats.clear()
        outputs = {prefix: bfm.take(prefix) for prefix in bfm.sinks}
        obs = Observation(first, last, bfm.trace.window(first, last + 1), inputs, outputs, read)
        self.ap.write((job, obs))


class JobScoreboard(uvm_subscriber):
    """Golden-model comparison of every job (through :meth:`JobUnit.check`)."""

    def build_phase(self) -> None:
        self.errors: list[str] = []
        self.jobs = 0
        self.bad = 0

    def write(self, msg: tuple[Any, Observation]) -> None:
        job, obs = msg
        unit: JobUnit = ConfigDB().get(self, "", "UNIT")
        errs = unit.check(job, obs)
        self.jobs += 1
        if errs:
            self.bad += 1
            self.errors += [f"job {self.jobs - 1} ({job}): {e}" for e in errs]


class JobCoverage(uvm_subscriber):
    """Samples the unit's cover group with every job."""

    def build_phase(self) -> None:
        unit: JobUnit = ConfigDB().get(self, "", "UNIT")
        self.cg = Covergroup(unit.covergroup)
        unit.define_coverage(self.cg)

    def write(self, msg: tuple[Any, Observation]) -> None:
        job, obs = msg
        unit: JobUnit = ConfigDB().get(self, "", "UNIT")
        self.cg.sample(unit.sample(job, obs))


class JobEnv(uvm_env):
    """Sequencer, driver, monitor, scoreboard and coverage for one job-level block."""

    def build_phase(self) -> None:
        self.seqr = uvm_sequencer("seqr", self)
        self.driver = JobDriver("driver", self)
        self.monitor = JobMonitor("monitor", self)
        self.scoreboard = JobScoreboard("scoreboard", self)
        self.coverage = JobCoverage("coverage", self)

    def connect_phase(self) -> None:
        self.driver.seq_item_port.connect(self.seqr.seq_item_export)
        self.driver.ap.connect(self.monitor.analysis_export)
        self.monitor.ap.connect(self.scoreboard.analysis_export)
        self.monitor.ap.connect(self.coverage.analysis_export)


class JobTest(uvm_test):
    """Every job of the unit, checked against the golden model. Subclasses set :attr:`UNIT`."""

    UNIT: ClassVar[type[JobUnit]]

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        unit = self.UNIT(ctx, SparseParams.from_dict(ctx.params))
        ConfigDB().set(None, "*", "CTX", ctx)
        ConfigDB().set(None, "*", "UNIT", unit)
        ConfigDB().set(None, "*", "BFM", JobBfm(cocotb.top, ctx, unit))
        self.jobs = unit.jobs(np.random.default_rng(ctx.seed), int(ctx.opt("jobs", unit.default_jobs)))
        ConfigDB().set(None, "*", "JOBS", self.jobs)
        self.ctx, self.unit = ctx, unit
        self.env = JobEnv("env", self)

    async def run_phase(self) -> None:
        self.raise_objection()
        bfm: JobBfm = ConfigDB().get(self, "", "BFM")
        await start(cocotb.top)
        jobs = self.jobs
        budget = 4 * sum(self.unit.budget(j) for j in jobs) + 100  # x4 margin; a hang fails here
        t0 = bfm.counter.cycle
        try:
            await with_timeout(ListSeq("seq", "JOBS").start(self.env.seqr), budget * CLOCK_NS, "ns")
        except SimTimeoutError as exc:
            raise AssertionError(f"watchdog: {self.env.scoreboard.jobs}/{len(jobs)} jobs done after {budget} "
                                 f"cycles (limit from the jobs' cycle budgets)") from exc
        self.ctx.summary["cycles"] = bfm.counter.cycle - t0
        self.drop_objection()

    def check_phase(self) -> None:
        sb = self.env.scoreboard
        bfm: JobBfm = ConfigDB().get(self, "", "BFM")
        errors = list(bfm.trace.problems) + sb.errors
        if sb.jobs == 0:
            errors.append("no job was checked")
        self.ctx.summary.update(blocks=sb.jobs, mismatches=sb.bad, errors=errors[:20])
        self.ctx.finish(errors, self.logger)

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)
