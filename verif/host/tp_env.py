"""Throughput mode of the host family's whole command path: long task streams through
``host_top`` at simulator speed, each episode's records checked in bulk against the
golden model.

``host_top`` runs inside its generated harness (:mod:`lockstep.gen.host.harness`): the
reset, the test-port and CSR set-up, the memory load, the submissions (waiting while the
SQ is full), the CQ consumer, the final register reads and the memory read-back are HDL;
Python wakes once per *episode*. An episode is one run of a per-edge scenario
(:func:`lockstep.verif.host.jobs.make_scenario`) on a freshly reset top:

* :class:`HostSeq` -> :class:`~lockstep.verif.episodes.EpisodeDriver`: the run's episodes
  (:func:`build_episodes`): episode ``e`` is the per-edge scenario of seed
  :func:`episode_seed` ``(seed, e)`` (episode 0: the run's own seed) with ``tasks`` tasks,
  its initial memory image (:func:`lockstep.verif.host.top_env.initial_image`) and its
  CSR script (:func:`script`: the per-edge test's register accesses in its order). So
  episode ``e`` is the per-edge run of that seed. The driver writes each episode's files
  (:func:`write_episode`) at most two episodes ahead of the harness;
* :class:`HostTpBfm` owns the harness (:class:`~lockstep.verif.episodes.EpisodeBfm`);
* :class:`RecordMonitor` parses each finished episode's records (:func:`read_trace`,
  :func:`read_final`: every line must parse, never a silent drop) and publishes an
  :class:`EpisodeRecord` to
* :class:`HostTpScoreboard`: the per-edge checks
  (:func:`lockstep.verif.host.top_env.check_queue`: every tag completes exactly once, the
  CQ order rules, status, kernel id, exec_cycles against the busy runs the harness
  recorded (modulo ``2**cnt_bits``) and those against
  :func:`lockstep.models.host.exec_cycles`, the whole memory image against the model,
  counters, pointers, STATUS, IRQ_STATUS, the DMA byte counters), the reset values, the
  RO ID, the register read-backs of the set-up, the harness's own pointers
  (:func:`check_episode`); each message names the episode, its seed, and a replay
  command (throughput with a waves window, and per-edge); and
* :class:`HostTpCoverage`: the per-edge cover points
  (:func:`~lockstep.verif.host.top_env.define_coverage`) sampled per episode
  (:func:`sample_bulk`).

``summary.json`` reports ``transactions`` (completions checked), ``cycles`` (every
harness edge of every episode: resets, set-up, loads, the task stream, final reads and
read-backs), ``episodes``, ``tasks``, ``bad_episodes``, ``errors``, ``mismatches``,
``harness_cycles``, ``wakes`` and ``python_s``. Episode files are deleted once used
(``keep=1`` keeps them); ``dump_stream=1`` writes every episode's completions and final
memory (:func:`stream_entry`) to ``stream.json``.

Scenarios: ``stream``, ``backpressure``, ``memerr`` and ``flush`` run here (a flush lands
at another cycle than per-edge, so which tasks are ABORTED differs; the checks accept any
outcome the model allows, as per-edge). ``errors`` is per-edge only
(:data:`EDGE_ONLY`).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import cocotb
import numpy as np
from pyuvm import ConfigDB, uvm_subscriber

from lockstep.gen.host.harness import OPS, OPS_DEPTH, REASONS, HostPorts, host_ports_of
from lockstep.models import host as hm
from lockstep.models.host.params import HostParams

from ..context import TbContext
from ..coverage import Covergroup
from ..episodes import (
    EpisodeBfm, EpisodeEnv, EpisodeMonitor, EpisodeScoreboard, EpisodeSeq, EpisodeTest, RecordError,
    hex_field, run_entries, write_episode_files,
)
from ..throughput import spent
from .driver import TP
from .jobs import Scenario, make_scenario
from .top_env import (
    _CTRL_HALT, _CTRL_SR, FINAL_REGS, HostTopTest, check_queue, ctrl_value, define_coverage, initial_image,
    pair_runs, reset_problems, reset_values, submissions,
)

__all__ = [
    "EDGE_ONLY", "EdgeStreamTest", "Episode", "EpisodeItem", "EpisodeRecord", "Final", "HostSeq",
    "HostTpBfm", "HostTpCoverage", "HostTpEnv", "HostTpScoreboard", "HostTpTest", "RecordMonitor", "Trace",
    "EpisodeResult", "build_episode", "build_episodes", "check_episode", "stream_episodes", "episode_budget", "episode_seed", "read_final", "read_trace",
    "sample_bulk", "script", "stream_entry", "write_episode",
]

#: Per-edge scenarios the harness cannot play, and why.
EDGE_ONLY = {
    "errors": "its CSR-level error steps write values computed from pointers read at run time (an overflowing "
              "doorbell, a write into the newest owned slot, a CQ_HEAD past CQ_TAIL) and it consumes the CQ on the "
              "IRQ with W1C; the harness's script and consumer do neither",
}

#: Polls of a flush's WAIT (the per-edge 10,000 reads of STATUS, 16 cycles apart).
_FLUSH_POLLS = 10000


def episode_seed(seed: int, e: int) -> int:
    """The per-edge seed episode ``e`` of a run of seed ``seed`` replays (episode 0: ``seed``)."""
    return seed + 7919 * e


def episode_budget(p: HostParams, tasks: int) -> int:
    """The harness's watchdog for an episode of ``tasks`` tasks (harness edges): the
    per-edge run's budget (``4000 + 6000 per task + 400``), the memory load and
    read-back, and the set-up and final reads."""
    return 4000 + 6000 * tasks + 400 + 2 * p.mem_words + 400


@dataclass
class Episode:
    """One episode: a per-edge scenario run on a freshly reset top.

    Attributes:
        index: its number in the run.
        seed: the per-edge seed it replays (:func:`episode_seed`).
        sc: the scenario.
        image: the memory loaded before the first task (uint8, the whole memory).
        subs: ``(step, words, label)`` of every submitted descriptor, in SQ order.
        ops: the CSR script, ``(op, addr, data)`` (:data:`lockstep.gen.host.harness.OPS`).
        reads: what each ``RD`` of the script reads, in order: ``(purpose, register)``
            with purpose ``reset``, ``ro``, ``set`` or ``final``.
        set_values: the value each ``set`` read must return.
        tp_reads: the test-port registers the ``TPR`` ops read, in order.
        max_cycles: the harness's watchdog (:func:`episode_budget`).
    """

    index: int
    seed: int
    sc: Scenario
    image: np.ndarray
    subs: list[tuple[int, list[int], str]]
    ops: list[tuple[int, int, int]]
    reads: list[tuple[str, str]]
    set_values: list[int]
    tp_reads: list[str]
    max_cycles: int

    @property
    def tasks(self) -> int:
        """Descriptors submitted."""
        return len(self.subs)

    def __repr__(self) -> str:
        return f"{self.sc.name} seed {self.seed}: {self.tasks} tasks"


def script(p: HostParams, sc: Scenario, seed: int) -> tuple[list[tuple[int, int, int]], list[tuple[str, str]],
                                                            list[int], list[str]]:
    """The CSR script of scenario ``sc`` run with seed ``seed``: what the per-edge test
    (:class:`~lockstep.verif.host.top_env.HostTopTest`) does, in its order.

    Reset values read, a write to the RO ID and its read; the test-port registers (seed,
    back-pressure and latency rates, the error window); WGT_BASE, WGT_SIZE, MEM_LIMIT
    written and read back; the memory image loaded; PERF_CTRL and CTRL; then each step
    (its gap, then a submission -- a batch behind one doorbell where the scenario says
    so --, a stop or resume of the CQ consumer, a flush and the wait for its end); then
    every completion drained, four idle cycles, :data:`~lockstep.verif.host.top_env.FINAL_REGS`, the DMA byte
    counters, the memory read back.

    Returns:
        ``(ops, reads, set_values, tp_reads)`` (see :class:`Episode`).

    Raises:
        ValueError: a step the harness cannot play (:data:`EDGE_ONLY`), or a batch cut
            short by the end of the steps.
    """
    if sc.name in EDGE_ONLY or sc.use_irq:
        raise ValueError(f"the host {sc.name} scenario is per-edge only: {EDGE_ONLY.get(sc.name, 'an IRQ consumer')}")
    ops: list[tuple[int, int, int]] = []
    reads: list[tuple[str, str]] = []
    set_values: list[int] = []
    tp_reads: list[str] = []

    def rd(name: str, why: str) -> None:
        ops.append((OPS["RD"], hm.CSR[name], 0))
        reads.append((why, name))

    for name in reset_values(p):
        rd(name, "reset")
    ops.append((OPS["WR"], hm.CSR["ID"], 0x12345678))  # RO: ignored
    rd("ID", "ro")
    lo, hi = sc.err_window or (0, 0)
    for name, v in (("SEED", seed or 1), ("BP_RATE", sc.bp_rate), ("LAT_RATE", sc.lat_rate), ("ERR_LO", lo),
                    ("ERR_HI", hi)):
        ops.append((OPS["TPW"], TP[name], v))
    for name, v in (("WGT_BASE", sc.wgt_base), ("WGT_SIZE", sc.wgt_size), ("MEM_LIMIT", sc.mem_limit)):
        ops.append((OPS["WR"], hm.CSR[name], v))
        rd(name, "set")
        set_values.append(v)
    ops.append((OPS["LOAD"], 0, 0))
    ops.append((OPS["WR"], hm.CSR["PERF_CTRL"], 1))
    ctrl = ctrl_value(sc)
    ops.append((OPS["WR"], hm.CSR["CTRL"], ctrl))

    def submit(batch: list[list[int]]) -> None:
        ops.append((OPS["SUBMIT"], 0, len(batch)))
        ops.extend((OPS["DESC"], 0, w) for words in batch for w in words)

    words_of = {i: w for i, w, _ in submissions(sc)}
    pending: list[list[int]] = []
    want = 0
    for i, st in enumerate(sc.steps):
        if st.gap:
            ops.append((OPS["GAP"], 0, st.gap))
        if st.kind == "task":
            if st.batch > 1 or pending:  # gathered until the batch is whole (the per-edge submitter)
                want = want or st.batch
                pending.append(words_of[i])
                if len(pending) == want:
                    submit(pending)
                    pending, want = [], 0
                continue
            submit([words_of[i]])
        elif st.kind == "stop_cq":
            ops.append((OPS["STOP"], 0, 0))
        elif st.kind == "resume_cq":
            ops.append((OPS["RESUME"], 0, 0))
        elif st.kind == "flush":
            ops.append((OPS["WR"], hm.CSR["CTRL"], (ctrl & ~_CTRL_HALT) | _CTRL_SR))
            ops.append((OPS["WAIT"], hm.CSR["STATUS"], _FLUSH_POLLS << 16 | 0 << 8 | 7))  # until STATUS bit 7 is 0
        elif st.kind == "wait":
            pass
        else:
            raise ValueError(f"host {sc.name} scenario: step {i} ({st.kind}) is per-edge only")
    if pending:
        raise ValueError(f"host {sc.name} scenario: a batch of {want} ends after {len(pending)} descriptors")
    ops.append((OPS["DRAIN"], 0, len(words_of)))
    ops.append((OPS["GAP"], 0, 4))
    for name in FINAL_REGS:
        rd(name, "final")
    for name in ("DMA_WR_BYTES", "DMA_RD_BYTES"):
        ops.append((OPS["TPR"], TP[name], 0))
        tp_reads.append(name)
    ops.append((OPS["DUMP"], 0, 0))
    ops.append((OPS["END"], 0, 0))
    return ops, reads, set_values, tp_reads


def build_episode(p: HostParams, scenario: str, seed: int, tasks: int, e: int = 0) -> Episode:
    """Episode ``e`` of a run: the per-edge scenario ``scenario`` of seed
    ``episode_seed(seed, e)`` with ``tasks`` tasks, its image and its script.

    Raises:
        ValueError: an unknown or per-edge-only scenario.
    """
    s = episode_seed(seed, e)
    sc = make_scenario(scenario, p, s, tasks)
    ops, reads, set_values, tp_reads = script(p, sc, s)
    subs = submissions(sc)
    return Episode(e, s, sc, initial_image(p, sc, s), subs, ops, reads, set_values, tp_reads,
                   episode_budget(p, len(subs)))


def build_episodes(p: HostParams, seed: int, opts: dict[str, Any]) -> list[Episode]:
    """The run's episodes: ``episodes`` (option, default 1) of :func:`build_episode` with
    the ``scenario`` (default ``stream``) and ``tasks`` (default 24, the per-edge
    default) options."""
    return list(itertools.islice(stream_episodes(p, seed, opts), int(opts.get("episodes", 1))))


def stream_episodes(p: HostParams, seed: int, opts: dict[str, Any]) -> Iterator[Episode]:
    """:func:`build_episode` for ``e = 0, 1, ...`` without end (each episode is a run of
    its own seed), built as they are taken: a streamed run's episodes (a ``cycles``
    option), and the first ``episodes`` of them :func:`build_episodes`'s."""
    scenario = str(opts.get("scenario", "stream"))
    tasks = int(opts.get("tasks", 24))
    return (build_episode(p, scenario, seed, tasks, e) for e in itertools.count())


def write_episode(folder: Path, ep: Episode, hp: HostPorts, ops_depth: int = OPS_DEPTH) -> None:
    """Write episode ``ep``'s files for the harness (see :mod:`lockstep.gen.host.harness`):
    ``tp_mem_<e>.hex`` (the image, one little-endian 32-bit word per line),
    ``tp_ops_<e>.hex`` (the script) and, last, ``tp_cfg_<e>.txt``. Each file is written
    under a temporary name first, so the harness never reads half an episode.

    Raises:
        ValueError: an image or script larger than the harness holds, or a script word
            whose address or data does not fit (naming the episode).
    """
    e = ep.index
    who = f"episode {e} ({ep!r})"
    ca = hp.w("csr_addr")
    if ep.image.size % 4 or ep.image.size // 4 > hp.mem_words:
        raise ValueError(f"{who}: an image of {ep.image.size} bytes; the harness holds {hp.mem_words} words")
    if len(ep.ops) > ops_depth:
        raise ValueError(f"{who}: a script of {len(ep.ops)} words; the harness holds {ops_depth} (fewer tasks)")
    for k, (op, addr, data) in enumerate(ep.ops):
        if not (0 <= op < 16 and 0 <= addr < 1 << ca and 0 <= data < 1 << 32):
            raise ValueError(f"{who}: script word {k} ({op}, {addr:#x}, {data:#x}) does not fit {{op, addr, data}}")
    words = np.ascontiguousarray(ep.image, dtype=np.uint8).view("<u4")
    digits = -(-hp.op_bits // 4)
    files = {
        f"tp_mem_{e}.hex": [f"{w:08x}" for w in words.tolist()],
        f"tp_ops_{e}.hex": [f"{(op << (ca + 32)) | (addr << 32) | data:0{digits}x}" for op, addr, data in ep.ops],
        f"tp_cfg_{e}.txt": [f"{words.size} {len(ep.ops)} {ep.max_cycles}"],
    }
    write_episode_files(folder, files)


#: Fields (after the kind letter) of each trace record line.
_FIELDS = {"C": 3, "R": 3, "P": 3, "D": 4, "F": 1, "N": 2, "U": 1, "B": 3}


@dataclass
class Trace:
    """One episode's ``tp_trace_<e>.log``.

    Attributes:
        cq: ``(cycle, w0, w1)`` of every CQ entry consumed, in CQ order.
        reads: ``(cycle, addr, value)`` of every CSR read of the script.
        tp_reads: ``(cycle, addr, value)`` of every test-port read.
        doorbells: ``(cycle, occupancy, descriptors, waits)`` of every doorbell.
        full: cycles the host saw the CQ full.
        gave_up: ``(cycle, op)`` of every RESUME or WAIT that gave up.
        problems: X or Z on a status pin.
        busy: ``(cycle, kernel, cycles)`` of every busy run of a kernel, as it ended.
    """

    cq: list[tuple[int, int, int]] = field(default_factory=list)
    reads: list[tuple[int, int, int]] = field(default_factory=list)
    tp_reads: list[tuple[int, int, int]] = field(default_factory=list)
    doorbells: list[tuple[int, int, int, int]] = field(default_factory=list)
    full: list[int] = field(default_factory=list)
    gave_up: list[tuple[int, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    busy: list[tuple[int, int, int]] = field(default_factory=list)

    def runs(self, n_kernels: int) -> dict[int, list[int]]:
        """Per kernel, its busy runs' cycles in order (what
        :func:`~lockstep.verif.host.top_env.check_queue` pairs with its completions)."""
        out: dict[int, list[int]] = {k: [] for k in range(n_kernels)}
        for _, k, n in self.busy:
            out.setdefault(k, []).append(n)
        return out


def read_trace(path: Path) -> Trace:
    """Parse a ``tp_trace_<e>.log`` (see :mod:`lockstep.gen.host.harness`).

    Raises:
        RecordError: a missing file, an unknown kind, a wrong field count, a field that
            is not hex (X or Z bits), cycles that go back.
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
        if c < last:
            raise RecordError(f"{path.name} line {n}: cycle {c} after cycle {last}: {line!r}")
        last = c
        kind = parts[0]
        if kind == "C":
            tr.cq.append((c, v[1], v[2]))
        elif kind == "R":
            tr.reads.append((c, v[1], v[2]))
        elif kind == "P":
            tr.tp_reads.append((c, v[1], v[2]))
        elif kind == "D":
            tr.doorbells.append((c, v[1], v[2], v[3]))
        elif kind == "F":
            tr.full.append(c)
        elif kind == "N":
            tr.gave_up.append((c, v[1]))
        elif kind == "B":
            tr.busy.append((c, v[1], v[2]))
        else:
            tr.problems.append(f"a status pin (cq_nonempty, sq_full, irq, busy, k_busy) holds X or Z bits in cycle {c}")
    return tr


@dataclass
class Final:
    """One episode's end (``tp_final_<e>.log``).

    Attributes:
        reason: ``ok``, ``timeout`` or ``badop``.
        edges: clock edges of the whole episode.
        t0: harness edges since ``go`` when the episode started.
        sq_tail: the harness's SQ_TAIL.
        cq_head: the harness's CQ_HEAD.
        mem: the memory read back (uint8), or None when the episode did not get there.
    """

    reason: str
    edges: int
    t0: int
    sq_tail: int
    cq_head: int
    mem: np.ndarray | None


def read_final(path: Path, n_mem: int) -> Final:
    """Parse a ``tp_final_<e>.log`` of an ``n_mem``-word image.

    Raises:
        RecordError: a missing file, no ``E`` line, a missing or extra word (after an
            ``ok`` episode), a line that does not parse (X or Z included).
    """
    if not path.exists():
        raise RecordError(f"{path.name}: no such record file (the harness did not write it)")
    lines = path.read_text().splitlines()
    if not lines:
        raise RecordError(f"{path.name}: empty (no E line)")
    tail = lines[-1].split()
    if len(tail) != 6 or tail[0] != "E" or tail[1] not in REASONS:
        raise RecordError(f"{path.name} line {len(lines)} does not parse: {lines[-1]!r}")
    edges, t0, sq_tail, cq_head = (hex_field(t, "E field", path, len(lines), lines[-1]) for t in tail[2:])
    words = lines[:-1]
    mem = None
    if tail[1] == "ok":
        if len(words) != n_mem:
            raise RecordError(f"{path.name}: {len(words)} memory words, not {n_mem}")
        try:
            mem = np.array([int(w, 16) for w in words], dtype="<u4").view(np.uint8)
        except ValueError:
            i = next(i for i, w in enumerate(words) if not w or not all(ch in "0123456789abcdefABCDEF" for ch in w))
            raise RecordError(f"{path.name} line {i + 1}: memory word {i} reads {words[i]!r}: X or Z bits, "
                              "or not hex") from None
    return Final(tail[1], edges, t0, sq_tail, cq_head, mem)


@dataclass
class EpisodeResult:
    """What :func:`check_episode` found.

    Attributes:
        errors: the failed checks' messages (empty: the episode passed).
        counts: ``ok``, ``err``, ``busy0``, ``busy1`` (:func:`~lockstep.verif.host.top_env.check_queue`).
        cq: the completions consumed, in CQ order.
        device: the memory read back (uint8), or None when the episode did not get there.
        runs: per kernel, the busy runs the harness recorded (cycles, in order).
    """

    errors: list[str]
    counts: dict[str, int]
    cq: list[hm.Completion]
    device: np.ndarray | None
    runs: dict[int, list[int]] | None = None


def check_episode(ep: Episode, tr: Trace, fin: Final, p: HostParams) -> EpisodeResult:
    """Every check of the per-edge test on one episode's records: the reset values, the
    RO ID, the set-up's read-backs, the RESUME and flush waits, the harness's own
    pointers, and :func:`~lockstep.verif.host.top_env.check_queue` (completions, memory,
    counters, pointers, STATUS, IRQ_STATUS, DMA byte counters).

    Raises:
        RecordError: the records do not match the script (a read missing or extra, a
            read of another address).
    """
    cq, problems = [], list(tr.problems)
    for pos, (c, w0, w1) in enumerate(tr.cq):
        try:
            cq.append(hm.Completion.unpack([w0, w1]))
        except ValueError as exc:
            problems.append(f"CQ entry {pos} (cycle {c}): {exc}")
    if fin.reason != "ok":
        why = (f"watchdog: {len(cq)} of {ep.tasks} completions after {ep.max_cycles} harness cycles"
               if fin.reason == "timeout" else "the harness met a script word it does not know (badop)")
        return EpisodeResult(problems + [why], {}, cq, None)
    if len(tr.reads) != len(ep.reads) or len(tr.tp_reads) != len(ep.tp_reads):
        raise RecordError(f"{len(tr.reads)} CSR and {len(tr.tp_reads)} test-port reads recorded; the script has "
                          f"{len(ep.reads)} and {len(ep.tp_reads)}")
    vals: dict[str, dict[str, int]] = {"reset": {}, "ro": {}, "final": {}}
    sets = iter(ep.set_values)
    for (c, addr, v), (why, name) in zip(tr.reads, ep.reads):
        if addr != hm.CSR[name]:
            raise RecordError(f"the read of {name} in cycle {c} recorded address {addr:#x}, not {hm.CSR[name]:#x}")
        if why == "set":
            want = next(sets)
            if v != want:
                problems.append(f"{name} reads {v:#x} after writing {want:#x}")
        else:
            vals[why][name] = v
    problems += reset_problems(vals["reset"], p)
    if vals["ro"]["ID"] != hm.ID_VALUE:
        problems.append("a write to the RO register ID changed it")
    for c, op in tr.gave_up:
        problems.append("resume_cq: while the host held the CQ, STATUS never showed it full with PERF_CQ_STALL counting a waiting completion"
                        if op == OPS["RESUME"] else f"the flush did not end within {_FLUSH_POLLS * 16} cycles")
    span = 2 * p.depth
    if fin.sq_tail != len(ep.subs) % span or fin.cq_head != len(cq) % span:
        problems.append(f"the harness's SQ_TAIL/CQ_HEAD are {fin.sq_tail}/{fin.cq_head}, its submissions and "
                        f"completions say {len(ep.subs) % span}/{len(cq) % span}")
    tp = {name: v for (_, _, v), name in zip(tr.tp_reads, ep.tp_reads)}
    errs, counts = check_queue(
        p, ep.sc, [w for _, w, _ in ep.subs], [lb for _, _, lb in ep.subs], cq, problems, ep.image, fin.mem,
        vals["final"], tp, sq_tail=fin.sq_tail, cq_head=fin.cq_head, moved={"wr": ep.image.size, "rd": 0},
        cq_full_seen=bool(tr.full), runs=tr.runs(p.n_kernels))
    return EpisodeResult(errs, counts, cq, fin.mem, tr.runs(p.n_kernels))


def stream_entry(cq: list[hm.Completion], device: np.ndarray | None,
                 runs: dict[int, list[int]] | None = None) -> dict[str, Any]:
    """What an episode showed, as JSON (both modes write it; their streams must be
    equal): every completion ``[status, tag, kernel, exec_cycles]`` in CQ order, each
    one's busy run (whole cycles, :func:`~lockstep.verif.host.top_env.pair_runs`; None for
    a front-end entry) and the final memory (hex)."""
    return {"cq": [[c.status, c.tag, c.kernel, c.cycles] for c in cq], "busy": pair_runs(cq, runs),
            "mem": None if device is None else np.asarray(device, dtype=np.uint8).tobytes().hex()}


def sample_bulk(cg: Covergroup, ep: Episode, tr: Trace, cq: list[hm.Completion], depth: int) -> None:
    """The per-edge coverage of one episode (``cg`` from
    :func:`~lockstep.verif.host.top_env.define_coverage`): every completion's status and
    kernel, the SQ occupancy (at most ``depth``) the host read before each single
    submission, each batch's size, each submitted MATMUL's variant."""
    for c in cq:
        cg.sample({"status": c.status, "kernel": c.kernel})
    for _, occ, k, _ in tr.doorbells:
        if k == 1:
            cg.sample({"occ": min(occ, depth)})
        else:
            cg.sample({"batch": k})
    for _, w, _ in ep.subs:
        d = hm.Descriptor.unpack(w)
        if d.opcode in (0, 1) and d.dtype in (0, 1):
            cg.sample({"task": (d.opcode, d.relu, d.pool, d.dtype)})


# ---- the pyuvm environment -----------------------------------------------------------------
@dataclass
class EpisodeItem:
    """One episode for the driver (``episode``: its index)."""

    episode: int
    ep: Episode


@dataclass
class EpisodeRecord:
    """One finished episode as the monitor read it."""

    item: EpisodeItem
    trace: Trace | None
    final: Final | None
    errors: list[str] = field(default_factory=list)   # record errors (the files did not parse)


class HostTpBfm(EpisodeBfm):
    """Owns the harness (:class:`~lockstep.verif.episodes.EpisodeBfm`): one episode per
    scenario run.

    Args:
        dut: the harness handle (the top is ``dut.dut``).
        ctx: the runner context.
        hp: the top the harness wraps (from the DUT's record).
        count: episodes in the run.
    """

    noun = "episode"
    count_port = "n_eps"
    end_port = "ended"
    budget_what = "reset, set-up, memory load, the task stream, final reads and the read-back"

    def __init__(self, dut: Any, ctx: TbContext, hp: HostPorts, count: int | None) -> None:
        super().__init__(dut, ctx, count)
        self.hp = hp

    def write_files(self, item: EpisodeItem) -> None:
        write_episode(self.folder, item.ep, self.hp)

    def budget(self, item: EpisodeItem) -> int:
        return item.ep.max_cycles + 200


class HostSeq(EpisodeSeq):
    """The run's episodes (:func:`build_episodes`), one sequence item each."""

    def item(self, e: int, ep: Episode) -> EpisodeItem:
        return EpisodeItem(e, ep)


class RecordMonitor(EpisodeMonitor):
    """Reads each finished episode's records and publishes an :class:`EpisodeRecord` on ``ap``."""

    files = ("cfg", "mem", "ops", "trace", "final")

    def read(self, e: int, item: EpisodeItem) -> EpisodeRecord:
        folder = self.bfm.folder
        tr = read_trace(folder / f"tp_trace_{e}.log")
        return EpisodeRecord(item, tr, read_final(folder / f"tp_final_{e}.log", item.ep.image.size // 4))

    def broken(self, e: int, item: EpisodeItem, message: str) -> EpisodeRecord:
        return EpisodeRecord(item, None, None, [f"episode {e} ({item.ep!r}): {message}"])


class HostTpScoreboard(EpisodeScoreboard):
    """Checks each episode as it arrives (nothing is kept but counts and messages)."""

    def build_phase(self) -> None:
        super().build_phase()
        self.p: HostParams = ConfigDB().get(self, "", "TB_PARAMS")
        self.checked = 0     # completions checked
        self.episodes = 0    # episodes checked
        self.tasks = 0
        self.bad = 0         # episodes with a mismatch
        self.cycles = 0
        self.counts = {"ok": 0, "err": 0, "busy0": 0, "busy1": 0}
        self.stream: list[dict[str, Any]] = []
        self.last: tuple[int, int] | None = None

    def check(self, rec: EpisodeRecord) -> None:
        """Check one episode (:func:`check_episode`)."""
        ep = rec.item.ep
        who = f"episode {ep.index} ({ep!r})"
        errs = list(rec.errors)
        res = None
        if not errs:
            try:
                res = check_episode(ep, rec.trace, rec.final, self.p)
            except RecordError as exc:
                errs.append(f"{who}: {exc}")
        if res is None:
            self.mismatches += len(errs)
            self.bad += 1
            for m in errs:
                self.error(m)
            return
        fin = rec.final
        self.episodes += 1
        self.tasks += ep.tasks
        self.cycles += fin.edges
        self.checked += len(res.cq)
        self.last = (ep.index, fin.edges)
        for k, v in res.counts.items():
            self.counts[k] += v
        if self.ctx.opt("dump_stream", False):
            self.stream.append(stream_entry(res.cq, res.device, res.runs))
        if res.errors:
            self.bad += 1
            self.mismatches += len(res.errors)
            self.error(f"{who}: {res.errors[0]}\n    replay: {self._replay(ep, rec.trace, fin, res.errors[0])}")
            for m in res.errors[1:]:
                self.error(f"{who}: {m}")

    def _replay(self, ep: Episode, tr: Trace, fin: Final, msg: str) -> str:
        """Commands that replay the run up to episode ``ep`` with waves around the
        completion the message names (else the episode's end; ``WINDOW`` in harness
        edges since ``go``), and the episode per-edge."""
        tb = self.ctx.opts.get("testbench", "<test>")
        at = fin.t0 + fin.edges
        m = re.search(r"tag (0x[0-9a-f]+)", msg)
        if m:
            tag = int(m.group(1), 16)
            at = next((c for c, w0, _ in tr.cq if w0 & 0xFFFF == tag), at)
        lo, hi = max(at - 100, 1), at + 50
        cmd = f"make sim TEST={tb} SEED={self.ctx.seed} WAVES=1 WINDOW={lo}:{hi}"
        if tb.endswith("_tp"):
            cmd += (f"; per-edge: python -m lockstep.verif.runner {tb.removesuffix('_tp')} --seed {ep.seed} "
                    f"--opt tasks={self.ctx.opt('tasks', 24)}")
        return cmd


class HostTpCoverage(uvm_subscriber):
    """The per-edge cover points, sampled from each finished episode."""

    def build_phase(self) -> None:
        p: HostParams = ConfigDB().get(self, "", "TB_PARAMS")
        self.cg = define_coverage(p)
        self.depth = p.depth

    def write(self, rec: EpisodeRecord) -> None:
        """Sample one episode (its completions, doorbells and descriptors)."""
        if rec.trace is None:
            return
        with spent("coverage"):
            cq = []
            for _, w0, w1 in rec.trace.cq:
                try:
                    cq.append(hm.Completion.unpack([w0, w1]))
                except ValueError:
                    pass   # the scoreboard reports it; nothing to sample
            sample_bulk(self.cg, rec.item.ep, rec.trace, cq, self.depth)


class HostTpEnv(EpisodeEnv):
    """Sequencer and episode driver; record monitor feeding scoreboard and coverage."""

    monitor_type = RecordMonitor
    scoreboard_type = HostTpScoreboard
    coverage_type = HostTpCoverage


def _geometry(hp: HostPorts, p: HostParams) -> list[str]:
    """Where the testbench's parameters ``p`` cannot drive the top ``hp`` (the SQ depth
    and the memory size; the latency and the kernels may differ: a negative testbench)."""
    bad = []
    if p.depth != hp.depth:
        bad.append(f"depth={p.depth} (the top has {hp.depth})")
    if p.mem_words != hp.mem_words:
        bad.append(f"{p.mem_words} memory words (the top has {hp.mem_words})")
    return bad


class HostTpTest(EpisodeTest):
    """host_top in throughput mode: ``episodes`` episodes (option, default 1) of the
    ``scenario`` option (default ``stream``) with ``tasks`` tasks each, played by the
    harness and checked in bulk."""

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        hp = host_ports_of(ctx.record)
        p = HostParams.from_dict(ctx.params)
        bad = _geometry(hp, p)
        if bad:
            raise ValueError(f"the testbench's parameters cannot drive this top: {', '.join(bad)}")
        self.ctx, self.params = ctx, p
        self.eps, self.count = run_entries(ctx.opts, lambda: build_episodes(p, ctx.seed, ctx.opts),
                                           lambda: stream_episodes(p, ctx.seed, ctx.opts))
        self.bfm = HostTpBfm(cocotb.top, ctx, hp, self.count)
        for k, v in (("CTX", ctx), ("BFM", self.bfm), ("TB_PARAMS", p), ("PARAMS", p), ("EPISODES", self.eps)):
            ConfigDB().set(None, "*", k, v)
        self.env = HostTpEnv("env", self)

    seq_type = HostSeq
    inputs = ("cfg", "mem", "ops")

    def check_phase(self) -> None:
        sb, bfm = self.env.scoreboard, self.bfm
        last = f"; the last episode checked was {sb.last[0]} ({sb.last[1]} cycles)" if sb.last else ""
        errors = self.run_errors(sb.episodes, last, "its 'watchdog' message")
        self.finish(errors, blocks=sb.checked, transactions=sb.checked, completions=sb.checked, episodes=sb.episodes,
                    tasks=sb.tasks, bad_episodes=sb.bad, mismatches=sb.mismatches + int(bfm.failed), cycles=sb.cycles,
                    scenario=str(self.ctx.opt("scenario", "stream")), perf_busy=sb.counts["busy0"], **sb.counts)

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)


class EdgeStreamTest(HostTopTest):
    """The per-edge test (:class:`~lockstep.verif.host.top_env.HostTopTest`) that also
    writes what it observed (:func:`stream_entry`: its completions and its final memory)
    to ``stream.json``: ``tests/test_host_throughput.py`` runs it on the bare top to hold
    the per-edge and throughput streams of one seed equal."""

    def check_phase(self) -> None:
        entry = stream_entry(self.sh.cq, getattr(self, "device", None), self.sh.runs)
        (self.ctx.results / "stream.json").write_text(json.dumps([entry]))
        super().check_phase()
