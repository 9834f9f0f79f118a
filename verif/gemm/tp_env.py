"""Throughput mode of the GEMM tile: whole job streams at simulator speed, each job's
record checked in bulk against the golden model.

``gemm_top`` runs inside its generated harness (:mod:`lockstep.gen.gemm.harness`):
clock, reset, the memory loads, the CSR writes and START, the run to ``done``, the
recording of every request and the read-back of every CSR and of the job's memory
regions are HDL; Python wakes once per job (an *episode*):

* :class:`JobSeq` -> :class:`JobDriver`: the run's jobs, built by the per-edge
  testbench's own builder (:func:`lockstep.verif.gemm.jobs.make_jobs` with the
  ``scenario`` option, ``jobs`` jobs, the run's seed), which runs the golden model
  (:func:`lockstep.models.gemm.run`) job after job, chained through the memory image and
  the cache model as for the per-edge scoreboard -- so seed ``s`` with ``jobs = n`` is
  the very stream the per-edge testbench of seed ``s`` with ``jobs = n`` runs. The
  driver writes each job's files (:func:`write_job`, the per-edge watchdog
  :func:`~lockstep.verif.gemm.tile_env.budget`), at most two jobs ahead of the harness;
* :class:`GemmTpBfm` owns the harness: ``n_jobs``, ``n_ready``, ``go``, and one wake
  per finished job (a change of ``ep``, or ``ended``), with a Python watchdog behind
  the harness's own;
* :class:`RecordMonitor` parses each finished job's records (:func:`read_trace`,
  :func:`read_final`: every line must parse, every field must be 0/1, never a silent
  drop), rebuilds the per-edge :class:`~lockstep.verif.gemm.tile_env.Observation`
  (:func:`observation`) and publishes a :class:`JobRecord` to
* :class:`GemmTpScoreboard`: exactly the per-edge checks
  (:func:`lockstep.verif.gemm.tile_env.check`: done's cycle, busy in every cycle, the
  trace request by request, every counter, ``ERR``, ``SEL_*``/``DET_*``, the memory with
  its guards and poison, an abandoned job's cleared state), each message naming the job,
  the cycle where it has one, and a replay command; and
* :class:`GemmTpCoverage`: the per-edge cover points
  (:func:`~lockstep.verif.gemm.tile_env.define_coverage`), sampled per job
  (:func:`sample_bulk`).

``summary.json`` reports ``transactions`` (trace requests checked plus jobs checked),
``cycles`` (every harness clock edge of every job: resets, loads, CSR writes, runs and
read-backs), ``run_cycles``, ``jobs``, ``errors``, ``mismatches`` and ``python_s``. Job
and record files are deleted once used (``keep=1`` keeps them); ``dump_stream=1`` writes
every job's observation (:func:`stream_entry`) to ``stream.json``.

The ``sweep`` scenario is per-edge only (see :mod:`lockstep.gen.gemm.harness`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import cocotb
import numpy as np
from pyuvm import ConfigDB, uvm_subscriber

from lockstep.gen.gemm.harness import REASONS, TopPorts, load_depth, top_ports_of
from lockstep.models.gemm.params import GemmParams

from ..context import TbContext
from ..episodes import (
    EpisodeBfm, EpisodeDriver, EpisodeEnv, EpisodeMonitor, EpisodeScoreboard, EpisodeSeq, EpisodeTest, RecordError,
    hex_field, run_entries, write_episode_files,
)
from ..throughput import spent
from ..coverage import Covergroup
from .jobs import GemmJob, make_jobs, stream_jobs
from .tile_env import (
    CNT_BASE, ERR_ADDR, REGS, STATUS, GemmTest, Observation, budget, check, csr_writes, define_coverage,
)

__all__ = [
    "EdgeStreamTest", "Final", "GemmTpBfm", "GemmTpCoverage", "GemmTpEnv", "GemmTpScoreboard", "GemmTpTest",
    "JobDriver", "JobItem", "JobRecord", "JobSeq", "RecordMonitor", "build_jobs", "observation",
    "read_final", "read_trace", "sample_bulk", "stream_entry", "write_job",
]



# ---- jobs and their files -------------------------------------------------------------------
def build_jobs(params: GemmParams, seed: int, opts: dict[str, Any], stream: bool = False) -> list[GemmJob] | Iterator[GemmJob]:
    """The run's jobs: the per-edge testbench's ``make_jobs(scenario, params,
    default_rng(seed), jobs, opts)`` (golden predictions included); with ``stream``
    (a streamed run) :func:`~lockstep.verif.gemm.jobs.stream_jobs`'s iterator: those
    jobs, then more of the scenario, ``jobs`` at a time.

    Raises:
        ValueError: the ``sweep`` scenario (per-edge only), or an unknown one.
    """
    scenario = str(opts.get("scenario", "random"))
    if scenario == "sweep":
        raise ValueError("the gemm sweep is per-edge only (its jobs capture no trace; see lockstep.gen.gemm.harness)")
    make = stream_jobs if stream else make_jobs
    return make(scenario, params, np.random.default_rng(seed), int(opts.get("jobs", 12)), opts)


def _geometry(tp: TopPorts, p: GemmParams) -> list[str]:
    """Where the testbench's parameters ``p`` cannot drive the top ``tp`` (element
    width and memory size; the cache and the kernels may differ: a negative testbench)."""
    bad = []
    if p.ew != tp.w("ld_data"):
        bad.append(f"elements of {p.ew} bits (the top has {tp.w('ld_data')})")
    if p.mem_elems != tp.mem_elems:
        bad.append(f"mem_elems={p.mem_elems} (the top has {tp.mem_elems})")
    return bad


def write_job(folder: Path, e: int, job: GemmJob, tp: TopPorts, max_cycles: int) -> None:
    """Write job ``e``'s files for the harness (see :mod:`lockstep.gen.gemm.harness`):
    ``tp_load_<e>.hex`` (the job's loads, element by element, values masked to the
    element width as the per-edge load port writes them), ``tp_csr_<e>.hex``
    (:func:`~lockstep.verif.gemm.tile_env.csr_writes`), ``tp_rb_<e>.hex`` (the job's
    check regions, element by element) and, last, ``tp_cfg_<e>.txt``. Each file is
    written under a temporary name first, so the harness never reads half a job.

    Raises:
        ValueError: more loads or read-back elements than the harness holds, or an
            element outside the memory (naming the job).
    """
    ma, ew, ca, cw = tp.w("ld_addr"), tp.w("ld_data"), tp.w("csr_addr"), tp.w("csr_wdata")
    depth = load_depth(tp.mem_elems)
    emask = (1 << ew) - 1
    addrs = [np.arange(lo, lo + len(v), dtype=np.int64) for lo, v in job.loads]
    vals = [np.asarray(v, dtype=np.int64) & emask for _, v in job.loads]
    la = np.concatenate(addrs) if addrs else np.zeros(0, np.int64)
    lv = np.concatenate(vals) if vals else np.zeros(0, np.int64)
    rb = np.concatenate([np.arange(lo, lo + n, dtype=np.int64) for lo, n in job.check]) if job.check \
        else np.zeros(0, np.int64)
    who = f"job {e} ({job!r})"
    if len(la) > depth or len(rb) > depth:
        raise ValueError(f"{who}: {len(la)} loads and {len(rb)} read-back elements; the harness holds {depth} of each")
    for what, a in (("load", la), ("read-back", rb)):
        if a.size and (a.min() < 0 or a.max() >= tp.mem_elems):
            raise ValueError(f"{who}: a {what} element outside 0..{tp.mem_elems - 1}")
    csr = csr_writes(job.cfg, job.start_only)
    lw, cwd = -(-(ma + ew) // 4), -(-(ca + cw) // 4)
    files = {
        f"tp_load_{e}.hex": [f"{w:0{lw}x}" for w in ((la << ew) | lv).tolist()],
        f"tp_csr_{e}.hex": [f"{(a << cw) | v:0{cwd}x}" for a, v in csr],
        f"tp_rb_{e}.hex": [f"{a:x}" for a in rb.tolist()],
        f"tp_cfg_{e}.txt": [f"{len(la)} {len(csr)} {len(rb)} {int(max_cycles)} {job.busy_at or 0} "
                            f"{job.reset_at or 0} {int(job.reset_before)}"],
    }
    write_episode_files(folder, files)


#: Fields (after the kind letter) of each trace record line.
_FIELDS = {"T": 4, "Y": 2, "U": 1}


@dataclass
class Trace:
    """One job's ``tp_trace_<e>.log``.

    Attributes:
        requests: ``(kind, addr, bytes)`` of every request, in order.
        cycles: the cycle of each request.
        busy: ``(cycle, busy)`` at cycle 1 and at every change.
        problems: X or Z on a tap (the per-edge monitor would have failed to read it).
    """

    requests: list[tuple[int, int, int]] = field(default_factory=list)
    cycles: list[int] = field(default_factory=list)
    busy: list[tuple[int, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_trace(path: Path) -> Trace:
    """Parse a ``tp_trace_<e>.log`` (see :mod:`lockstep.gen.gemm.harness`).

    Raises:
        RecordError: a missing file, an unknown kind, a wrong field count, a field that
            is not hex (X or Z bits), a busy value other than 0/1, cycles that go back.
    """
    if not path.exists():
        raise RecordError(f"{path.name}: no such record file (the harness did not write it)")
    tr = Trace()
    last = 0
    for n, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split()
        if not parts or parts[0] not in _FIELDS or len(parts) != _FIELDS[parts[0]] + 1:
            raise RecordError(f"{path.name} line {n} does not parse: {line[:100]!r}")
        v = [hex_field(tok, f"field {i + 1}", path, n, line) for i, tok in enumerate(parts[1:])]
        c = v[0]
        if c < last or c < 1:
            raise RecordError(f"{path.name} line {n}: cycle {c} after cycle {last}: {line!r}")
        last = c
        if parts[0] == "T":
            tr.requests.append((v[1], v[2], v[3]))
            tr.cycles.append(c)
        elif parts[0] == "Y":
            if v[1] > 1:
                raise RecordError(f"{path.name} line {n}: busy is {v[1]}, not 0 or 1: {line!r}")
            tr.busy.append((c, v[1]))
        else:
            tr.problems.append(f"a tap (tr_*, busy, done) holds X or Z bits in cycle {c}")
    return tr


@dataclass
class Final:
    """One job's end (``tp_final_<e>.log``).

    Attributes:
        reason: ``done``, ``reset`` or ``timeout``.
        run_cycles: the cycle the run ended in (done's, the reset's, the watchdog's).
        start: harness edges since ``go`` before the START edge (a waves window's origin).
        edges: clock edges of the whole episode.
        csr: every CSR read address's value.
        rb: the read-back elements (raw ``8*eb``-bit words).
    """

    reason: str
    run_cycles: int
    start: int
    edges: int
    csr: list[int]
    rb: np.ndarray


def read_final(path: Path, ncsr: int, n_rb: int) -> Final:
    """Parse a ``tp_final_<e>.log`` of ``ncsr`` CSR values and ``n_rb`` elements.

    Raises:
        RecordError: a missing file, a missing or extra line, a line that does not
            parse (X or Z included).
    """
    if not path.exists():
        raise RecordError(f"{path.name}: no such record file (the harness did not write it)")
    lines = path.read_text().splitlines()
    want = ncsr + n_rb + 1
    if len(lines) != want:
        raise RecordError(f"{path.name}: {len(lines)} lines, not {want} ({ncsr} CSRs, {n_rb} elements, R)")
    tail = lines[-1].split()
    if len(tail) != 5 or tail[0] != "R" or tail[1] not in REASONS:
        raise RecordError(f"{path.name} line {want} does not parse: {lines[-1]!r}")
    run_cycles, start, edges = (hex_field(t, "R field", path, want, lines[-1]) for t in tail[2:])
    csr = [hex_field(w, f"CSR {a}", path, a + 1, w) for a, w in enumerate(lines[:ncsr])]
    words = lines[ncsr:ncsr + n_rb]
    try:
        rb = np.array([int(w, 16) for w in words], dtype=np.int64)
    except ValueError:
        i = next(i for i, w in enumerate(words) if not w or not all(ch in "0123456789abcdefABCDEF" for ch in w))
        raise RecordError(f"{path.name} line {ncsr + i + 1}: read-back element {i} reads {words[i]!r}: X or Z bits, "
                          "or not hex") from None
    return Final(tail[1], run_cycles, start, edges, csr, rb)


def observation(job: GemmJob, tr: Trace, fin: Final, p: GemmParams, max_cycles: int) -> Observation:
    """The per-edge BFM's :class:`~lockstep.verif.gemm.tile_env.Observation` of a job,
    rebuilt from its records: done's cycle, busy in every cycle 1..end, the requests
    (with their cycles), STATUS, ERR, the counters, the SEL/DET registers and the check
    regions (signed), so :func:`~lockstep.verif.gemm.tile_env.check` runs unchanged."""
    obs = Observation()
    obs.problems = list(tr.problems)
    if fin.reason == "done":
        obs.done_cycle = fin.run_cycles
    elif fin.reason == "timeout":
        obs.problems.append(f"no done within {max_cycles} cycles")
    busy: list[int] = []
    marks = tr.busy + [(fin.run_cycles + 1, -1)]
    for (c, b), (c2, _) in zip(marks, marks[1:]):
        busy += [b] * (c2 - c)
    obs.busy = busy
    obs.trace, obs.trace_cycles = list(tr.requests), list(tr.cycles)
    obs.status, obs.err = fin.csr[STATUS], fin.csr[ERR_ADDR]
    obs.counters = {name: fin.csr[CNT_BASE + i] for i, name in enumerate(GemmParams.COUNTERS)}
    obs.regs = {name: fin.csr[a] for name, a in REGS.items()}
    sign = 1 << (p.ew - 1)
    vals = np.where(fin.rb & sign, fin.rb - 2 * sign, fin.rb)
    k = 0
    for lo, n in job.check:
        obs.mem.append((lo, vals[k:k + n]))
        k += n
    return obs


def stream_entry(obs: Observation) -> dict[str, Any]:
    """What a job showed, as JSON (both modes write it; their streams must be equal)."""
    return {"done": obs.done_cycle, "busy": obs.busy, "trace": [[c, *r] for c, r in zip(obs.trace_cycles, obs.trace)],
            "status": obs.status, "err": obs.err, "counters": obs.counters, "regs": obs.regs,
            "mem": [[lo, [int(x) for x in v]] for lo, v in obs.mem], "problems": obs.problems}


def sample_bulk(cg: Covergroup, jobs: list[GemmJob]) -> None:
    """The per-edge coverage of finished jobs: every point of
    :func:`~lockstep.verif.gemm.tile_env.define_coverage` sampled with each job (a job
    is the per-edge sample: the same hits)."""
    for job in jobs:
        cg.sample(job)


# ---- the pyuvm environment -----------------------------------------------------------------
@dataclass
class JobItem:
    """One episode's job and its watchdog.

    Attributes:
        episode: its index in the run.
        job: the job (with its golden prediction).
        max_cycles: the harness's watchdog (the per-edge :func:`budget`).
    """

    episode: int
    job: GemmJob
    max_cycles: int = 0


@dataclass
class JobRecord:
    """One finished job as the monitor read it."""

    item: JobItem
    obs: Observation | None
    final: Final | None
    errors: list[str] = field(default_factory=list)   # record errors (the files did not parse)


class GemmTpBfm(EpisodeBfm):
    """Owns the harness (:class:`~lockstep.verif.episodes.EpisodeBfm`): one episode per job.

    Args:
        dut: the harness handle (the top is ``dut.dut``).
        ctx: the runner context.
        tp: the top the harness wraps (from the DUT's record).
        count: jobs in the run.
    """

    noun = "job"
    count_port = "n_jobs"
    end_port = "ended"
    budget_what = "loads, CSR writes, the job's budget and the read-back"

    def __init__(self, dut: Any, ctx: TbContext, tp: TopPorts, count: int | None) -> None:
        super().__init__(dut, ctx, count)
        self.tp = tp

    def write_files(self, item: JobItem) -> None:
        write_job(self.folder, item.episode, item.job, self.tp, item.max_cycles)

    def budget(self, item: JobItem) -> int:
        job = item.job
        io = sum(len(v) for _, v in job.loads) + sum(n for _, n in job.check)
        return 16 + io + 2 * (1 << self.tp.w("csr_addr")) + item.max_cycles + 64


class JobSeq(EpisodeSeq):
    """The run's jobs (:func:`build_jobs`), one sequence item per job."""

    def item(self, e: int, job: GemmJob) -> JobItem:
        return JobItem(e, job)


class JobDriver(EpisodeDriver):
    """Sets each job's watchdog (the per-edge :func:`budget`) and writes its files."""

    def prepare(self, item: JobItem) -> None:
        item.max_cycles = budget(item.job)


class RecordMonitor(EpisodeMonitor):
    """Reads each finished job's records and publishes a :class:`JobRecord` on ``ap``."""

    files = ("cfg", "load", "csr", "rb", "trace", "final")

    def connect_phase(self) -> None:
        super().connect_phase()
        self.p: GemmParams = ConfigDB().get(self, "", "TB_PARAMS")

    def read(self, e: int, item: JobItem) -> JobRecord:
        folder = self.bfm.folder
        tr = read_trace(folder / f"tp_trace_{e}.log")
        final = read_final(folder / f"tp_final_{e}.log", 1 << self.bfm.tp.w("csr_addr"),
                           sum(n for _, n in item.job.check))
        return JobRecord(item, observation(item.job, tr, final, self.p, item.max_cycles), final)

    def broken(self, e: int, item: JobItem, message: str) -> JobRecord:
        return JobRecord(item, None, None, [f"job {e} ({item.job!r}): {message}"])


class GemmTpScoreboard(EpisodeScoreboard):
    """Checks each job as it arrives (nothing is kept but counts and messages)."""

    def build_phase(self) -> None:
        super().build_phase()
        self.checked = 0     # trace requests checked
        self.jobs = 0        # jobs checked
        self.bad = 0         # jobs with a mismatch
        self.run_cycles = 0
        self.cycles = 0
        self.stream: list[dict[str, Any]] = []
        self.last: tuple[int, int] | None = None  # (job, its edges) of the last job checked

    def check(self, rec: JobRecord) -> None:
        """Check one job: the per-edge checks on what its records show."""
        it, job = rec.item, rec.item.job
        who = f"job {it.episode} ({job!r})"
        if rec.errors:
            self.mismatches += 1
            self.bad += 1
            for e in rec.errors:
                self.error(e)
            return
        fin, obs = rec.final, rec.obs
        self.jobs += 1
        self.cycles += fin.edges
        self.run_cycles += fin.run_cycles
        self.last = (it.episode, fin.edges)
        if self.ctx.opt("dump_stream", False):
            self.stream.append(stream_entry(obs))
        errs = check(job, obs, job.golden.mem if job.golden is not None else None)
        if job.capture and job.golden is not None:
            self.checked += len(job.golden.trace)
        if errs:
            self.bad += 1
            self.mismatches += len(errs)
            self.error(f"{who}: {errs[0]}\n    replay: {self._replay(it, obs, fin)}")
            for m in errs[1:]:
                self.error(f"{who}: {m}")

    @staticmethod
    def _cycle(job: GemmJob, obs: Observation, fin: Final) -> int:
        """The run cycle to look at: the first request that differs, else the end."""
        if job.golden is not None:
            want = job.golden.trace.tolist()
            i = next((k for k, (a, b) in enumerate(zip(obs.trace, want)) if tuple(a) != tuple(b)), None)
            if i is not None:
                return obs.trace_cycles[i]
        return fin.run_cycles

    def _replay(self, it: JobItem, obs: Observation, fin: Final) -> str:
        """Commands that replay the run up to job ``it`` (a job depends on the jobs
        before it: the memory and the cache), with waves around the cycle of the first
        difference (``WINDOW`` in harness edges since ``go``), and per-edge."""
        tb = self.ctx.opts.get("testbench", "<test>")
        at = fin.start + self._cycle(it.job, obs, fin)
        lo, hi = max(at - 100, 1), at + 50
        cmd = f"make sim TEST={tb} SEED={self.ctx.seed} WAVES=1 WINDOW={lo}:{hi}"
        if tb.endswith("_tp"):
            cmd += (f"; per-edge: python -m lockstep.verif.runner {tb.removesuffix('_tp')} --seed {self.ctx.seed} "
                    f"--opt jobs={self.ctx.opt('jobs', 12)}")
        return cmd


class GemmTpCoverage(uvm_subscriber):
    """The per-edge cover points, sampled from each finished job."""

    def build_phase(self) -> None:
        params: GemmParams = ConfigDB().get(self, "", "TB_PARAMS")
        self.cg = Covergroup("gemm.tile")
        define_coverage(self.cg, params)

    def write(self, rec: JobRecord) -> None:
        """Sample one job (the per-edge coverage samples the job, whatever it showed)."""
        if rec.obs is None:
            return
        with spent("coverage"):
            sample_bulk(self.cg, [rec.item.job])


class GemmTpEnv(EpisodeEnv):
    """Sequencer and job driver; record monitor feeding scoreboard and coverage."""

    driver_type = JobDriver
    monitor_type = RecordMonitor
    scoreboard_type = GemmTpScoreboard
    coverage_type = GemmTpCoverage


class GemmTpTest(EpisodeTest):
    """The tile in throughput mode: ``jobs`` jobs (option, default 12) of the
    ``scenario`` option (default ``random``), each loaded, started, run to done,
    recorded, read back and checked in bulk."""

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        tp = top_ports_of(ctx.record)
        p = GemmParams.from_dict(ctx.params)
        bad = _geometry(tp, p)
        if bad:
            raise ValueError(f"the testbench's parameters cannot drive this top: {', '.join(bad)}")
        self.ctx, self.params = ctx, p
        self.jobs, self.count = run_entries(ctx.opts, lambda: build_jobs(p, ctx.seed, ctx.opts),
                                            lambda: build_jobs(p, ctx.seed, ctx.opts, stream=True))
        self.bfm = GemmTpBfm(cocotb.top, ctx, tp, self.count)
        for k, v in (("CTX", ctx), ("BFM", self.bfm), ("TB_PARAMS", p), ("PARAMS", p), ("EPISODES", self.jobs)):
            ConfigDB().set(None, "*", k, v)
        self.env = GemmTpEnv("env", self)

    seq_type = JobSeq
    inputs = ("cfg", "load", "csr", "rb")

    def check_phase(self) -> None:
        sb, bfm = self.env.scoreboard, self.bfm
        last = f"; the last job checked was {sb.last[0]} ({sb.last[1]} cycles)" if sb.last else ""
        errors = self.run_errors(sb.jobs, last, "the job's 'no done' message")
        self.finish(errors, blocks=sb.jobs, transactions=sb.checked + sb.jobs, requests=sb.checked, jobs=sb.jobs,
                    bad_jobs=sb.bad, mismatches=sb.mismatches + int(bfm.failed), cycles=sb.cycles,
                    run_cycles=sb.run_cycles, scenario=str(self.ctx.opt("scenario", "random")))

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)


class _StreamRecorder(uvm_subscriber):
    """Keeps every job's observation as :func:`stream_entry` (the per-edge side)."""

    def build_phase(self) -> None:
        self.stream: list[dict[str, Any]] = []

    def write(self, msg: tuple[GemmJob, Observation]) -> None:
        self.stream.append(stream_entry(msg[1]))


class EdgeStreamTest(GemmTest):
    """The per-edge test (:class:`~lockstep.verif.gemm.tile_env.GemmTest`) that also
    writes what its BFM observed of every job to ``stream.json``:
    ``tests/test_gemm_throughput.py`` runs it on the bare top to hold the per-edge and
    throughput streams of one seed equal."""

    def build_phase(self) -> None:
        super().build_phase()
        self.recorder = _StreamRecorder("recorder", self)

    def connect_phase(self) -> None:
        self.env.driver.ap.connect(self.recorder.analysis_export)

    def check_phase(self) -> None:
        (self.ctx.results / "stream.json").write_text(json.dumps(self.recorder.stream))
        super().check_phase()
