"""Throughput mode of the STU (``stu_top``): whole job streams at simulator speed, each
job's record checked in bulk against the golden model by the per-edge check.

``stu_top`` runs inside its generated harness (:mod:`lockstep.gen.sparse.harness`):
clock, reset, the loads, ``cfg_*`` and ``start`` (a second start while busy, a reset in
the job), the output back-pressure, the run to ``done`` and the recording of every
output beat, stall, busy change, ``done``, accumulator-write tap and the end state are
HDL; Python wakes once per job (an *episode*):

* :class:`JobSeq` -> :class:`JobDriver`: the run's jobs, built by the per-edge
  testbench's own builder (:func:`lockstep.verif.sparse.stu_jobs.make_jobs` with the
  ``scenario`` option, ``jobs`` jobs, the run's seed; golden results chained through the
  accumulator), so seed ``s`` with ``jobs = n`` is the very stream the per-edge
  testbench of seed ``s`` with ``jobs = n`` runs; with ``pauses=cycle`` the per-edge
  sink also draws the harness's back-pressure
  (:class:`~lockstep.verif.sparse.stu_env.JobPauses`), and the two runs see the same
  thing cycle for cycle. The driver writes each job's files (:func:`write_job`; the
  watchdog :func:`max_cycles` from the per-edge budget), at most two jobs ahead;
* :class:`StuTpBfm` owns the harness (:class:`~lockstep.verif.episodes.EpisodeBfm`);
* :class:`RecordMonitor` (an :class:`~lockstep.verif.episodes.EpisodeMonitor`) parses
  each finished job's record (:func:`read_record`: every
  line must parse, every flag must be 0/1, the ``E`` line must end it, X or Z is a
  :class:`~lockstep.verif.episodes.RecordError`, never a silent drop), rebuilds the
  per-edge :class:`~lockstep.verif.sparse.job_env.Observation` (:func:`observation`:
  the control trace of every cycle, the output beats, the counters, ``err``, the second
  start's ``busy``, the cleared state after a reset, the tap of every cycle) and
  publishes a :class:`JobRecord` to
* :class:`StuTpScoreboard` (an :class:`~lockstep.verif.episodes.EpisodeScoreboard`):
  exactly the per-edge checks
  (:meth:`lockstep.verif.sparse.stu_env.StuUnit.check`: the words bit-exact, start to
  done against the cycle model with the recorded stalls, busy, the counters, the
  sticky ``err``, the per-cycle invariants on ``acc_we``/``acc_addr``/``fifo_occ``, the
  numbers worked by hand and numpy's correlation), each message naming the job, and the
  first of a job with a replay command; and
* :class:`StuTpCoverage`: the per-edge cover points
  (:meth:`~lockstep.verif.sparse.stu_env.StuUnit.define_coverage`, and the u = 2 round
  coverage), sampled per job from the rebuilt observation.

``summary.json`` reports ``transactions`` (output beats checked plus jobs checked),
``beats``, ``cycles`` (every harness clock edge of every job: reset, loads and runs),
``run_cycles``, ``jobs``, ``errors``, ``mismatches`` and ``python_s``. Job and record
files are deleted once used (``keep=1`` keeps them); ``dump_stream=1`` writes every
job's :func:`stream_entry` to ``stream.json`` (:class:`EdgeStreamTest` writes the
per-edge one).
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

from lockstep.gen.sparse.harness import COUNTERS, REASONS, StuPorts, stu_ports_of
from lockstep.models import sparse
from lockstep.models.sparse.params import SparseParams

from ..context import TbContext
from ..coverage import Covergroup
from ..episodes import (
    EpisodeBfm, EpisodeDriver, EpisodeEnv, EpisodeMonitor, EpisodeScoreboard, EpisodeSeq, EpisodeTest, RecordError,
    hex_field, run_entries, write_episode_files,
)
from ..throughput import spent
from ..twin import pause_threshold
from .job_env import Observation
from .stu_env import StuTest, StuUnit, job_pause_seed, load_words
from .stu_jobs import StuJob, make_jobs, stream_jobs

__all__ = [
    "EdgeStreamTest", "End", "JobDriver", "JobItem", "JobRecord", "JobSeq", "Record", "RecordMonitor", "StuTpBfm",
    "StuTpCoverage", "StuTpEnv", "StuTpScoreboard", "StuTpTest", "build_jobs", "cfg_word",
    "max_cycles", "observation", "read_record", "stream_entry", "write_job",
]


# ---- jobs and their files -------------------------------------------------------------------
def build_jobs(params: SparseParams, seed: int, opts: dict[str, Any], widths: dict[str, int],
               stream: bool = False) -> list[StuJob] | Iterator[StuJob]:
    """The run's jobs: the per-edge testbench's ``make_jobs(scenario, params,
    default_rng(seed), jobs, widths)`` (golden results included; ``jobs`` defaults to
    the per-edge :attr:`StuUnit.default_jobs`); with ``stream`` (a streamed run)
    :func:`~lockstep.verif.sparse.stu_jobs.stream_jobs`'s iterator: those jobs, then more
    of the scenario, ``jobs`` at a time."""
    make = stream_jobs if stream else make_jobs
    return make(str(opts.get("scenario", "random")), params, np.random.default_rng(seed),
                int(opts.get("jobs", StuUnit.default_jobs)), widths)


def cfg_word(values: dict[str, int], sp: StuPorts) -> int:
    """The settings file's ``cfg`` word: ``values`` (:meth:`StuUnit.cfg`) of every
    ``cfg_*`` port in record order, first port in the top bits.

    Raises:
        ValueError: a port the values miss, a value its port cannot carry.
    """
    word = 0
    for name, w in sp.cfg:
        v = int(values[name])
        if not 0 <= v < 1 << w:
            raise ValueError(f"{name} = {v} does not fit {w} bits")
        word = (word << w) | v
    return word


def max_cycles(unit: StuUnit, job: StuJob) -> int:
    """The harness's watchdog for a job, in run cycles: four times the per-edge budget
    (:meth:`StuUnit.budget`; the per-edge run's own watchdog has the same margin)."""
    return 4 * unit.budget(job) + 100


def write_job(folder: Path, e: int, job: StuJob, sp: StuPorts, unit: StuUnit, seed: int, limit: int) -> int:
    """Write job ``e``'s files for the harness (see :mod:`lockstep.gen.sparse.harness`):
    ``tp_load_<e>.hex`` (:func:`~lockstep.verif.sparse.stu_env.load_words`) and, last, ``tp_cfg_<e>.txt`` (the
    watchdog ``limit``, the second start, the reset, the back-pressure generator of
    :func:`~lockstep.verif.sparse.stu_env.job_pause_seed` and the job's rate, the
    ``cfg`` word). Each file is written under a temporary name first, so the harness
    never reads half a job.

    Returns:
        The job's load words.

    Raises:
        ValueError: more load words than the harness holds, or a word or ``cfg`` value
            its port cannot carry (naming the job).
    """
    who = f"job {e} ({job!r})"
    words = load_words(job, unit.params)
    if len(words) > sp.depth:
        raise ValueError(f"{who}: {len(words)} load words; the harness holds {sp.depth}")
    ab, db = sp.w("ld_addr"), sp.w("ld_data")
    for sel, a, d in words:
        if not (0 <= a < 1 << ab and 0 <= d < 1 << db and 0 <= sel < 1 << sp.w("ld_sel")):
            raise ValueError(f"{who}: load word (sel {sel}, address {a}, data {d:#x}) does not fit the load port "
                             f"(ld_addr [{ab}], ld_data [{db}])")
    try:
        cw = cfg_word(unit.cfg(job), sp)
    except ValueError as exc:
        raise ValueError(f"{who}: {exc}") from None
    lw = -(-(sp.w("ld_sel") + ab + db) // 4)
    files = {
        f"tp_load_{e}.hex": [f"{(((s << ab) | a) << db) | d:0{lw}x}" for s, a, d in words],
        f"tp_cfg_{e}.txt": [f"{len(words)} {int(limit)} {job.poke or 0} {job.reset_at or 0} "
                            f"{job_pause_seed(seed, e)} {pause_threshold(job.bp)} {cw:x}"],
    }
    write_episode_files(folder, files)
    return len(words)


# ---- the records ----------------------------------------------------------------------------
@dataclass
class End:
    """A job's ``E`` line.

    Attributes:
        reason: ``done``, ``reset`` or ``timeout``.
        cycle: the run cycle it ended in.
        err: the sticky ``err`` in that cycle.
        busy: ``busy`` in that cycle.
        counters: the six counters in that cycle, by name.
        start: harness edges since ``go`` before the start edge (a waves window's origin).
        edges: clock edges of the whole episode.
    """

    reason: str
    cycle: int
    err: int
    busy: int
    counters: dict[str, int]
    start: int
    edges: int


@dataclass
class Record:
    """One job's ``tp_rec_<e>.log``.

    Attributes:
        busy: ``(cycle, busy)`` at cycle 0 and at every change.
        done: the cycles with ``done`` high.
        beats: ``(cycle, data)`` of every output beat.
        stalls: the cycles with ``o_valid`` high and ``o_ready`` low.
        loud: ``(cycle, data)`` of every cycle with ``o_valid`` low and ``o_data`` not 0.
        taps: ``(cycle, acc_we, acc_addr[, fifo_occ])`` of every cycle with a nonzero
            ``acc_we`` (or ``fifo_occ``).
        poke: ``(cycle, busy)`` of the second start, if it came.
        problems: X or Z on a tap (the per-edge monitor would have failed to read it).
        end: the ``E`` line.
    """

    busy: list[tuple[int, int]] = field(default_factory=list)
    done: list[int] = field(default_factory=list)
    beats: list[tuple[int, int]] = field(default_factory=list)
    stalls: list[int] = field(default_factory=list)
    loud: list[tuple[int, int]] = field(default_factory=list)
    taps: list[tuple[int, ...]] = field(default_factory=list)
    poke: tuple[int, int] | None = None
    problems: list[str] = field(default_factory=list)
    end: End | None = None


def read_record(path: Path, fifo: bool) -> Record:
    """Parse a ``tp_rec_<e>.log`` (see :mod:`lockstep.gen.sparse.harness`); ``fifo``: its
    ``A`` lines carry ``fifo_occ``.

    Raises:
        RecordError: a missing file, an unknown kind, a wrong field count, a field that
            is not hex (X or Z bits), a flag other than 0/1, cycles that go back, a line
            after the ``E`` line, no ``E`` line.
    """
    if not path.exists():
        raise RecordError(f"{path.name}: no such record file (the harness did not write it)")
    nfields = {"B": 2, "D": 1, "O": 2, "S": 1, "Q": 2, "A": 4 if fifo else 3, "P": 2, "U": 1, "E": 12}
    rec = Record()
    last = 0
    for n, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split()
        if not parts or parts[0] not in nfields or len(parts) != nfields[parts[0]] + 1:
            raise RecordError(f"{path.name} line {n} does not parse: {line[:100]!r}")
        if rec.end is not None:
            raise RecordError(f"{path.name} line {n}: a line after the E line: {line[:100]!r}")
        kind = parts[0]
        if kind == "E":
            if parts[1] not in REASONS:
                raise RecordError(f"{path.name} line {n}: end reason {parts[1]!r} is not one of {REASONS}")
            v = [hex_field(tok, f"E field {i + 2}", path, n, line) for i, tok in enumerate(parts[2:])]
            if v[2] > 1:
                raise RecordError(f"{path.name} line {n}: busy is {v[2]}, not 0 or 1: {line!r}")
            rec.end = End(parts[1], v[0], v[1], v[2], dict(zip(COUNTERS, v[3:9])), v[9], v[10])
            if v[0] < last:
                raise RecordError(f"{path.name} line {n}: cycle {v[0]} after cycle {last}: {line!r}")
            continue
        v = [hex_field(tok, f"field {i + 1}", path, n, line) for i, tok in enumerate(parts[1:])]
        c = v[0]
        if c < last:
            raise RecordError(f"{path.name} line {n}: cycle {c} after cycle {last}: {line!r}")
        last = c
        if kind in ("B", "P") and v[1] > 1:
            raise RecordError(f"{path.name} line {n}: busy is {v[1]}, not 0 or 1: {line!r}")
        if kind == "B":
            rec.busy.append((c, v[1]))
        elif kind == "D":
            rec.done.append(c)
        elif kind == "O":
            rec.beats.append((c, v[1]))
        elif kind == "S":
            rec.stalls.append(c)
        elif kind == "Q":
            rec.loud.append((c, v[1]))
        elif kind == "A":
            rec.taps.append(tuple(v))
        elif kind == "P":
            rec.poke = (c, v[1])
        else:
            rec.problems.append(f"a tap (busy, done, o_valid, o_data, acc_we, acc_addr, fifo_occ) holds X or Z bits "
                                f"in cycle {c}")
    if rec.end is None:
        raise RecordError(f"{path.name}: no E line (the record is cut short)")
    if not rec.busy or rec.busy[0][0] != 0:
        raise RecordError(f"{path.name}: no busy value for cycle 0 (B line)")
    return rec


def observation(job: StuJob, rec: Record, fifo: bool) -> Observation:
    """The per-edge monitor's :class:`~lockstep.verif.sparse.job_env.Observation` of a
    job, rebuilt from its record: the control trace of cycles ``0 .. end`` (``start``,
    ``busy``, ``done``, ``o_valid``/``o_ready`` at every beat and stall, ``o_data`` at
    every beat and wherever it is not 0 while ``o_valid`` is low), the output
    beats, and what the per-edge driver reads (the counters and ``err`` at done, the
    second start's ``busy``, or the state after a reset), with the tap of every cycle,
    so :meth:`StuUnit.check` runs unchanged."""
    end = rec.end
    n = end.cycle + 1
    z = lambda: np.zeros(n, dtype=np.int64)  # noqa: E731
    tr = {"start": z(), "busy": z(), "done": z(), "o_valid": z(), "o_ready": np.ones(n, dtype=np.int64), "o_data": z()}
    tr["start"][0] = 1
    marks = rec.busy + [(n, -1)]
    for (c, b), (c2, _) in zip(marks, marks[1:]):
        tr["busy"][c:c2] = b
    for c in rec.done:
        tr["done"][c] = 1
    for c, _ in rec.beats:
        tr["o_valid"][c] = 1
    for c in rec.stalls:
        tr["o_valid"][c], tr["o_ready"][c] = 1, 0
    for c, d in rec.loud + rec.beats:
        tr["o_data"][c] = d
    width = 3 if fifo else 2
    taps = [(0,) * width for _ in range(n)]
    for t in rec.taps:
        taps[t[0]] = tuple(t[1:])
    read: dict[str, Any] = {}
    if end.reason == "reset":
        read["after_reset"] = {"err": end.err, "busy": end.busy, **end.counters}
    else:
        read.update({"err": end.err, **end.counters})
        if rec.poke is not None:
            tr["start"][rec.poke[0]] = 1
            read["poked"] = rec.poke[1]
    read["taps"] = taps
    return Observation(0, end.cycle, tr, {}, {"o": [{"data": d} for _, d in rec.beats]}, read)


def stream_entry(obs: Observation) -> dict[str, Any]:
    """What a job showed, as JSON (both modes write it; their streams must be equal):
    cycles from start to the end, busy in every cycle, the done cycles, every output beat
    with its cycle, the stall cycles, what was read, and the taps of the cycles with a
    nonzero ``acc_we`` (or ``fifo_occ``)."""
    tr = obs.trace
    n = len(tr["done"])
    hs = np.flatnonzero(tr["o_valid"] & tr["o_ready"]).tolist()
    words = [b["data"] for b in obs.outputs.get("o", [])]
    read = {k: v for k, v in obs.read.items() if k != "taps"}
    taps = [[c, *map(int, row)] for c, row in enumerate(obs.read.get("taps", [])[:n]) if row[0] or any(row[2:])]
    return {"cycles": n - 1, "busy": [int(x) for x in tr["busy"]], "done": np.flatnonzero(tr["done"]).tolist(),
            "out": [[int(c), int(w)] for c, w in zip(hs, words)], "n_out": len(words),
            "stalls": np.flatnonzero(tr["o_valid"] & (1 - tr["o_ready"])).tolist(), "read": read, "taps": taps}


# ---- the pyuvm environment -----------------------------------------------------------------
@dataclass
class JobItem:
    """One episode's job and its watchdog.

    Attributes:
        episode: its index in the run.
        job: the job (with its golden result).
        max_cycles: the harness's watchdog (:func:`max_cycles`).
        n_load: its load words.
    """

    episode: int
    job: StuJob
    max_cycles: int = 0
    n_load: int = 0


@dataclass
class JobRecord:
    """One finished job as the monitor read it."""

    item: JobItem
    obs: Observation | None
    record: Record | None
    errors: list[str] = field(default_factory=list)   # record errors (the file did not parse)


class StuTpBfm(EpisodeBfm):
    """Owns the harness (:class:`~lockstep.verif.episodes.EpisodeBfm`): one episode per job.

    Args:
        dut: the harness handle (the top is ``dut.dut``).
        ctx: the runner context.
        sp: the top the harness wraps (from the DUT's record).
        unit: the per-edge unit (parameters, ``cfg_*`` values, budget).
        count: jobs in the run.
    """

    noun = "job"
    count_port = "n_jobs"
    end_port = "ended"
    budget_what = "the loads and the job's watchdog"

    def __init__(self, dut: Any, ctx: TbContext, sp: StuPorts, unit: StuUnit, count: int | None) -> None:
        super().__init__(dut, ctx, count)
        self.sp, self.unit = sp, unit

    def write_files(self, item: JobItem) -> None:
        item.n_load = write_job(self.folder, item.episode, item.job, self.sp, self.unit, self.ctx.seed, item.max_cycles)

    def budget(self, item: JobItem) -> int:
        return 16 + item.n_load + item.max_cycles + 64


class JobSeq(EpisodeSeq):
    """The run's jobs (:func:`build_jobs`), one sequence item per job."""

    def item(self, e: int, job: StuJob) -> JobItem:
        return JobItem(e, job)


class JobDriver(EpisodeDriver):
    """Sets each job's watchdog (:func:`max_cycles`) and writes its files."""

    def prepare(self, item: JobItem) -> None:
        item.max_cycles = max_cycles(self.bfm.unit, item.job)


class RecordMonitor(EpisodeMonitor):
    """Reads each finished job's record and publishes a :class:`JobRecord` on ``ap``."""

    files = ("cfg", "load", "rec")

    def read(self, e: int, item: JobItem) -> JobRecord:
        rec = read_record(self.bfm.folder / f"tp_rec_{e}.log", self.bfm.sp.fifo)
        return JobRecord(item, observation(item.job, rec, self.bfm.sp.fifo), rec)

    def broken(self, e: int, item: JobItem, message: str) -> JobRecord:
        return JobRecord(item, None, None, [f"job {e} ({item.job!r}): {message}"])


class StuTpScoreboard(EpisodeScoreboard):
    """Checks each job as it arrives, in order (the unit keeps the sticky ``err``)."""

    def build_phase(self) -> None:
        super().build_phase()
        self.unit: StuUnit = ConfigDB().get(self, "", "UNIT")
        self.checked = 0     # output beats checked
        self.jobs = 0        # jobs checked
        self.bad = 0         # jobs with a mismatch
        self.run_cycles = 0
        self.cycles = 0
        self.stream: list[dict[str, Any]] = []
        self.last: tuple[int, int] | None = None  # (job, its edges) of the last job checked

    def check(self, rec: JobRecord) -> None:
        """Check one job: the per-edge checks (:meth:`StuUnit.check`) on what its record
        shows, after a timeout's 'no done' and any X or Z on a tap."""
        it, job = rec.item, rec.item.job
        who = f"job {it.episode} ({job!r})"
        if rec.errors:
            self.mismatches += 1
            self.bad += 1
            for e in rec.errors:
                self.error(e)
            return
        end, obs = rec.record.end, rec.obs
        self.jobs += 1
        self.cycles += end.edges
        self.run_cycles += end.cycle
        self.last = (it.episode, end.edges)
        if self.ctx.opt("dump_stream", False):
            self.stream.append(stream_entry(obs))
        errs = [f"no done within {it.max_cycles} cycles"] if end.reason == "timeout" else []
        errs += list(rec.record.problems)
        errs += self.unit.check(job, obs)
        self.checked += len(obs.outputs["o"])
        if errs:
            self.bad += 1
            self.mismatches += len(errs)
            self.error(f"{who}: {errs[0]}\n    replay: {self._replay(it, rec.record)}")
            for m in errs[1:]:
                self.error(f"{who}: {m}")

    def _cycle(self, job: StuJob, r: Record) -> int:
        """The run cycle to look at: the first output word that differs, else the end."""
        if job.golden is not None and job.reset_at is None:
            want = sparse.pack_out(job.golden.out_entries, self.unit.params)
            i = next((k for k, ((_, a), b) in enumerate(zip(r.beats, want)) if a != b), None)
            if i is not None:
                return r.beats[i][0]
        return r.end.cycle

    def _replay(self, it: JobItem, r: Record) -> str:
        """Commands that replay the run up to job ``it`` (a job depends on the jobs
        before it: the accumulator, the memories, ``err``), with waves around the cycle of
        the first difference (``WINDOW`` in harness edges since ``go``), and per-edge
        with the harness's back-pressure."""
        tb = self.ctx.opts.get("testbench", "<test>")
        at = r.end.start + self._cycle(it.job, r)
        lo, hi = max(at - 100, 1), at + 50
        cmd = f"make sim TEST={tb} SEED={self.ctx.seed} WAVES=1 WINDOW={lo}:{hi}"
        if tb.endswith("_tp"):
            cmd += (f"; per-edge: python -m lockstep.verif.runner {tb.removesuffix('_tp')} --seed {self.ctx.seed} "
                    f"--opt jobs={self.ctx.opt('jobs', StuUnit.default_jobs)} --opt pauses=cycle")
        return cmd


class StuTpCoverage(uvm_subscriber):
    """The per-edge cover points, sampled from each finished job's observation."""

    def build_phase(self) -> None:
        self.unit: StuUnit = ConfigDB().get(self, "", "UNIT")
        self.cg = Covergroup(self.unit.covergroup)
        self.unit.define_coverage(self.cg)

    def write(self, rec: JobRecord) -> None:
        """Sample one job (as the per-edge coverage samples it, from what it showed)."""
        if rec.obs is None:
            return
        with spent("coverage"):
            self.cg.sample(self.unit.sample(rec.item.job, rec.obs))


class StuTpEnv(EpisodeEnv):
    """Sequencer and job driver; record monitor feeding scoreboard and coverage."""

    driver_type = JobDriver
    monitor_type = RecordMonitor
    scoreboard_type = StuTpScoreboard
    coverage_type = StuTpCoverage


class StuTpTest(EpisodeTest):
    """The STU in throughput mode: ``jobs`` jobs (option, default 24) of the ``scenario``
    option (default ``random``), each loaded, started, run to done under HDL
    back-pressure, recorded and checked in bulk."""

    seq_type = JobSeq
    inputs = ("cfg", "load")

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        sp = stu_ports_of(ctx.record)
        p = SparseParams.from_dict(ctx.params)
        unit = StuUnit(ctx, p)
        self.ctx, self.unit = ctx, unit
        self.jobs, self.count = run_entries(ctx.opts, lambda: build_jobs(p, ctx.seed, ctx.opts, unit.widths),
                                            lambda: build_jobs(p, ctx.seed, ctx.opts, unit.widths, stream=True))
        self.bfm = StuTpBfm(cocotb.top, ctx, sp, unit, self.count)
        for k, v in (("CTX", ctx), ("BFM", self.bfm), ("UNIT", unit), ("EPISODES", self.jobs)):
            ConfigDB().set(None, "*", k, v)
        self.env = StuTpEnv("env", self)

    def check_phase(self) -> None:
        sb, bfm = self.env.scoreboard, self.bfm
        last = f"; the last job checked was {sb.last[0]} ({sb.last[1]} cycles)" if sb.last else ""
        errors = self.run_errors(sb.jobs, last, "the job's 'no done' message")
        self.finish(errors, blocks=sb.jobs, transactions=sb.checked + sb.jobs, beats=sb.checked, jobs=sb.jobs,
                    bad_jobs=sb.bad, mismatches=sb.mismatches + int(bfm.failed), cycles=sb.cycles,
                    run_cycles=sb.run_cycles, scenario=str(self.ctx.opt("scenario", "random")))

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)
        unit = self.unit
        if unit.rounds is not None:
            self.ctx.summary["rounds_coverage"] = unit.rounds.summary()
        self.ctx.summary["perf"] = unit.perf
        self.ctx.write_summary()


class _StreamRecorder(uvm_subscriber):
    """Keeps every job's observation as :func:`stream_entry` (the per-edge side)."""

    def build_phase(self) -> None:
        self.stream: list[dict[str, Any]] = []

    def write(self, msg: tuple[StuJob, Observation]) -> None:
        self.stream.append(stream_entry(msg[1]))


class EdgeStreamTest(StuTest):
    """The per-edge test (:class:`~lockstep.verif.sparse.stu_env.StuTest`) with the
    harness's back-pressure (``pauses=cycle``) that also writes what its monitor observed
    of every job to ``stream.json``: ``tests/test_sparse_throughput.py`` runs it on the
    bare top to hold the per-edge and throughput streams of one seed equal."""

    def build_phase(self) -> None:
        super().build_phase()
        self.ctx.opts["pauses"] = "cycle"
        self.recorder = _StreamRecorder("recorder", self)

    def connect_phase(self) -> None:
        self.env.monitor.ap.connect(self.recorder.analysis_export)

    def check_phase(self) -> None:
        (self.ctx.results / "stream.json").write_text(json.dumps(self.recorder.stream))
        super().check_phase()
