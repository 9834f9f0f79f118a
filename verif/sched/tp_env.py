"""Throughput mode of the schedule-driven fabric: whole programs at simulator speed,
their traces checked in bulk against the cycle executor.

The fabric (``sched_ring`` or ``sched_mesh``) runs inside its generated harness
(:mod:`lockstep.gen.sched.harness`): clock, reset, the program load, the run to halt and
the recording of every event are HDL; Python wakes once per program (an *episode*):

* :class:`ProgramSeq` -> :class:`ProgramDriver`: the programs of the run, built by the
  per-edge testbench's own builder (:func:`lockstep.verif.sched.env.make_program`, or
  :func:`lockstep.models.sched.random_program` with ``txns`` transactions for long
  random programs), episode ``e`` from seed ``seed + e`` -- so episode ``e`` of seed
  ``s`` is the first program of seed ``s + e``, and the per-edge testbench of that seed
  runs the very same program. The driver runs the golden executor
  (:func:`lockstep.models.sched.execute`: its cycle count sets the watchdog) and writes
  the image files (:func:`write_episode`), at most two programs ahead of the harness;
* :class:`SchedBfm` owns the harness: ``n_prog``, ``n_ready``, ``go``, and one wake per
  finished episode (a change of ``ep``, or ``done``), with a Python watchdog behind the
  harness's own;
* :class:`RecordMonitor` parses each finished episode's record (:func:`read_trace`,
  :func:`read_final`: every line must parse, every field must be 0/1, never a silent
  drop) and publishes an :class:`Episode` to
* :class:`SchedTpScoreboard`: the recorded trace against the executor's, sorted, event
  by event (a mismatch names the event index, its cycle and both events' fields), then
  exactly the per-edge checks (:class:`lockstep.verif.sched.env.TraceScoreboard`: final
  memories, error vectors and their first counts, halted flags, the bus error, the
  illegal programs' predicted first error, jitter and communication effects, compiled
  results against numpy) and the MAC utilisation measured on the DUT's trace; and
* :class:`SchedTpCoverage`: the per-edge cover points
  (:class:`lockstep.verif.sched.env.SchedCoverage`), sampled per episode in bulk
  (:func:`sample_bulk`).

``summary.json`` reports ``transactions`` (events checked), ``cycles`` (load and run
cycles, as the per-edge summary counts them), ``run_cycles``, ``programs``, ``errors``
and ``mismatches``. Image and record files are deleted once used (``keep=1`` keeps
them); ``dump_trace=1`` writes every episode's recorded trace to ``trace.json``.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cocotb
import numpy as np
from pyuvm import ConfigDB, uvm_subscriber

from lockstep.gen.sched.harness import REASONS, FabricPorts, fabric_ports, harness_tail
from lockstep.models import sched
from lockstep.models.sched.params import FabricParams

from ..context import TbContext
from ..episodes import (
    EpisodeBfm, EpisodeDriver, EpisodeEnv, EpisodeMonitor, EpisodeScoreboard, EpisodeSeq, EpisodeTest, RecordError,
    hex_field, write_episode_files,
)
from ..throughput import spent
from .env import (
    Compiled, SchedCoverage, SchedTest, TraceScoreboard, _crosses_wrap, _jitter_bin, _period_bin, fwd_route,
    QUIET, QUIET_SHOWN, _slack_bin, dont_care_ports, make_program, quiet_messages, random_max_len,
)

__all__ = [
    "EdgeTraceTest", "Episode", "Final", "ProgramDriver", "ProgramSeq", "RecordMonitor", "SchedBfm",
    "SchedTpCoverage", "SchedTpEnv", "SchedTpScoreboard", "SchedTpTest", "build_program", "compare_traces",
    "describe", "limits", "read_final", "read_trace", "sample_bulk", "write_episode",
]



# ---- programs and their files ---------------------------------------------------------------
def build_program(name: str, params: FabricParams, seed: int, txns: int | None = None) -> tuple[sched.Program, Any]:
    """The program of one episode and what it expects of the errors: the per-edge
    testbench's :func:`~lockstep.verif.sched.env.make_program` for ``(name, params, seed)``,
    or, with ``txns``, the same random builder (transfers as long as
    :func:`~lockstep.verif.sched.env.random_max_len` says) placing ``txns`` transactions, the
    portless entries' PORT fields filled (:func:`~lockstep.verif.sched.env.dont_care_ports`;
    ``name`` must be ``random``; the linter must accept the program).

    Raises:
        ValueError: ``txns`` with another program than ``random``, or an illegal program.
    """
    if txns is None:
        return make_program(name, params, seed)
    if name != "random":
        raise ValueError(f"txns={txns}: only the program 'random' takes a transaction count, not {name!r}")
    rng = np.random.default_rng(seed)
    program = dont_care_ports(rng, sched.random_program(rng, params, n_txn=int(txns),
                                                        max_len=random_max_len(params, seed)))
    problems = sched.lint(program)
    if problems:
        raise ValueError(f"random program of {txns} transactions (seed {seed}) is not legal:\n  "
                         + "\n  ".join(map(str, problems[:10])))
    return program, None


def _geometry(fp: FabricParams, p: FabricParams) -> list[str]:
    """Where the testbench's parameters ``p`` cannot drive the fabric ``fp`` (memory
    and port sizes; timing and wiring may differ: a negative testbench checks a wrong
    timing, or a mesh as a ring)."""
    keys = ("nt", "cw", "dw", "aw", "sd", "k", "accw", "comm")
    return [f"{k}={getattr(p, k)} (the fabric has {getattr(fp, k)})" for k in keys if getattr(p, k) != getattr(fp, k)]


def limits(golden: Any, tail: int) -> tuple[int, int]:
    """``(stop_at, max_cycles)`` of a program from its golden run: run to halt with a
    watchdog of twice the golden's cycles plus the quiet ``tail``
    (:func:`lockstep.gen.sched.harness.harness_tail`); a program that leaves a tile
    running runs the per-edge test's ``golden cycles + 8``."""
    if all(golden.halted):
        return 0, 2 * golden.cycles + tail + 1000
    return golden.cycles + 8, golden.cycles + 8 + 1000


def write_episode(folder: Path, e: int, program: sched.Program, stop_at: int, max_cycles: int,
                  ext: list[tuple[int, int]] | None = None) -> None:
    """Write episode ``e``'s files for the harness: ``tp_cfg_<e>.txt`` (``stop_at
    max_cycles``), ``tp_sched_<e>.hex`` and ``tp_data_<e>.hex`` (every tile's whole
    images, tile 0 first) and, on a ``comm`` fabric, ``tp_ext_<e>.txt`` (the external
    words as ``cycle value``). The configuration file is written last, each file under
    a temporary name first, so the harness never reads half an episode.

    Raises:
        ValueError: a schedule longer than ``sd`` (rule SIZE), external words that are
            not one per cycle in increasing cycles, or an external value wider than ``dw``.
    """
    p = program.params
    sched_words: list[str] = []
    data_words: list[str] = []
    for t in range(p.nt):
        try:
            sched_words += [f"{w:x}" for w in program.schedule_image(t)]
        except sched.ProgramError as exc:
            raise ValueError(f"episode {e}: {exc}") from None
        data_words += [f"{int(w):x}" for w in program.data_image(t)]
    files = {f"tp_sched_{e}.hex": sched_words, f"tp_data_{e}.hex": data_words}
    if p.comm:
        cycles = [c for c, _ in (ext or [])]
        if any(b <= a for a, b in zip(cycles, cycles[1:])) or any(c < 0 for c in cycles):
            raise ValueError(f"episode {e}: external words must come one per cycle in increasing cycles, not {cycles[:8]}")
        bad = [(c, v) for c, v in (ext or []) if not 0 <= int(v) < (1 << p.dw)]
        if bad:
            raise ValueError(f"episode {e}: external word {bad[0]} does not fit dw = {p.dw} bits")
        files[f"tp_ext_{e}.txt"] = [f"{c:x} {int(v):x}" for c, v in (ext or [])]
    elif ext:
        raise ValueError(f"episode {e}: external words for a fabric without comm")
    files[f"tp_cfg_{e}.txt"] = [f"{int(stop_at)} {int(max_cycles)}"]
    write_episode_files(folder, files)


#: Fields (after the kind letter) of each trace record line.
_FIELDS = {"I": 3, "W": 4, "B": 2, "M": 5, "P": 3, "S": 2, "D": 2, "E": 3, "F": 2, "Q": 3, "X": 3, "U": 1}


def read_trace(path: Path, p: FabricParams) -> tuple[list[tuple], list[str]]:
    """Parse a ``tp_trace_<e>.log`` into the per-edge monitor's events (docs/sched.md
    section 8, plus ``psum``, ``suspend`` and ``pad``) and its problems (the counter
    check, X or Z on a tap, an idle output that is not quiet), with the per-edge
    monitor's wording.

    Raises:
        RecordError: a missing file, an unknown kind, a wrong field count, a field that
            is not hex (X or Z bits), a tile, port or source out of range.
    """
    if not path.exists():
        raise RecordError(f"{path.name}: no such record file (the harness did not write it)")
    events: list[tuple] = []
    problems: list[str] = []
    quiet = 0   # idle outputs holding a value (the first QUIET_SHOWN become problems)
    cmask = (1 << p.cw) - 1
    amask = (1 << p.accw) - 1
    for n, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split()
        if not parts or parts[0] not in _FIELDS or len(parts) != _FIELDS[parts[0]] + 1:
            raise RecordError(f"{path.name} line {n} does not parse: {line[:100]!r}")
        kind = parts[0]
        v = [hex_field(tok, f"field {i + 1}", path, n, line) for i, tok in enumerate(parts[1:])]
        c = v[0]
        if kind in "IWMPE" and not 0 <= v[1] < p.nt:
            raise RecordError(f"{path.name} line {n}: tile {v[1]} outside 0..{p.nt - 1}: {line!r}")
        if kind == "I":
            events.append((c, "issue", v[1], v[2]))
        elif kind == "W":
            if v[2] >= p.PORTS:
                raise RecordError(f"{path.name} line {n}: port {v[2]} outside 0..{p.PORTS - 1}: {line!r}")
            events.append((c, "word", v[1], v[2], v[3]))
        elif kind == "B":
            events.append((c, "bus", -1, v[1]))
        elif kind == "M":
            if v[2] >= p.sources:
                raise RecordError(f"{path.name} line {n}: write source {v[2]} outside 0..{p.sources - 1}: {line!r}")
            events.append((c, "write", v[1], v[2], v[3], v[4]))
        elif kind == "P":
            events.append((c, "psum", v[1], tuple((v[2] >> (k * p.accw)) & amask for k in range(p.k))))
        elif kind == "S":   # D is the A field of the CHECK tile 0 issues in this cycle
            events.append((c, "suspend", -1, sched.decode(v[1], p).a))
        elif kind == "D":
            events.append((c, "pad", sched.COMM_TILE, v[1]))
        elif kind == "E":   # a bit raised in cycle c - 1 is registered: seen in cycle c
            events.append((c - 1, "err", v[1], v[2]))
        elif kind == "F":
            events.append((c - 1, "err", -1, v[1]))
        elif kind == "Q":
            if v[1] >= len(QUIET):
                raise RecordError(f"{path.name} line {n}: quiet output {v[1]} outside 0..{len(QUIET) - 1}: {line!r}")
            for q in quiet_messages(c, p, v[1], v[2]):
                quiet += 1
                if quiet <= QUIET_SHOWN:
                    problems.append(q)
        elif kind == "X":
            if v[1] != c & cmask:
                problems.append(f"cycle {c}: chip count is {v[1]}, expected {c & cmask} (+1 per cycle, no stall)")
            for t in range(p.nt):
                local = (v[2] >> (t * p.cw)) & cmask
                if local != v[1]:
                    problems.append(f"cycle {c}: tile {t} local count {local} != chip count {v[1]}")
        else:
            problems.append(f"tap with X or Z bits in cycle {c}: taps must be 0/1 after reset")
    return events, problems


@dataclass
class Final:
    """One episode's end (``tp_final_<e>.log``).

    Attributes:
        reason: ``halt``, ``limit``, ``timeout`` or ``window``.
        run_cycles: cycles recorded (cycle 0 .. run_cycles - 1).
        load_cycles: load-port words written before cycle 0.
        state: the per-edge read-back's dict: ``mems``, ``err``, ``err_cnt``,
            ``halted``, ``bus_err``, ``bus_err_cnt``.
    """

    reason: str
    run_cycles: int
    load_cycles: int
    state: dict[str, Any]


def read_final(path: Path, p: FabricParams) -> Final:
    """Parse a ``tp_final_<e>.log`` (see :mod:`lockstep.gen.sched.harness`).

    Raises:
        RecordError: a missing file, a line that does not parse (X or Z included), a
            missing or extra line.
    """
    if not path.exists():
        raise RecordError(f"{path.name}: no such record file (the harness did not write it)")
    lines = path.read_text().splitlines()
    want = 2 + p.nt + p.nt * p.words
    if len(lines) != want:
        raise RecordError(f"{path.name}: {len(lines)} lines, not {want} (R, {p.nt} T, B, {p.nt * p.words} words)")
    head = lines[0].split()
    if len(head) != 4 or head[0] != "R" or head[1] not in REASONS:
        raise RecordError(f"{path.name} line 1 does not parse: {lines[0]!r}")
    run_cycles, load_cycles = (hex_field(t, "cycles", path, 1, lines[0]) for t in head[2:])
    err, cnt, halted = [], [], []
    for t in range(p.nt):
        parts = lines[1 + t].split()
        if len(parts) != 5 or parts[0] != "T" or parts[1] != f"{t:x}":
            raise RecordError(f"{path.name} line {2 + t} does not parse as tile {t}'s end state: {lines[1 + t]!r}")
        e, c, h = (hex_field(x, name, path, 2 + t, lines[1 + t]) for x, name in zip(parts[2:], ("err", "err_cnt", "halted")))
        err.append(e)
        cnt.append(c)
        halted.append(bool(h))
    parts = lines[1 + p.nt].split()
    if len(parts) != 3 or parts[0] != "B":
        raise RecordError(f"{path.name} line {2 + p.nt} does not parse as the bus's end state: {lines[1 + p.nt]!r}")
    bus_err, bus_cnt = (hex_field(x, "bus_err", path, 2 + p.nt, lines[1 + p.nt]) for x in parts[1:])
    words = lines[2 + p.nt:]
    try:
        mem = np.array([int(w, 16) for w in words], dtype=np.int64)
    except ValueError:
        i = next(i for i, w in enumerate(words) if not all(ch in "0123456789abcdefABCDEF" for ch in w) or not w)
        raise RecordError(f"{path.name} line {3 + p.nt + i}: tile {i // p.words} mem[{i % p.words}] reads "
                          f"{words[i]!r}: X or Z bits, or not hex") from None
    mems = [mem[t * p.words:(t + 1) * p.words] for t in range(p.nt)]
    state = {"mems": mems, "err": err, "err_cnt": cnt, "halted": halted, "bus_err": bus_err, "bus_err_cnt": bus_cnt}
    return Final(head[1], run_cycles, load_cycles, state)


def describe(ev: tuple, p: FabricParams) -> str:
    """An event with its fields named (``cycle 207 write: tile 1 source 3 addr 0xc4 value 0x1234``)."""
    c, kind = ev[0], ev[1]
    if kind == "issue":
        ent = sched.decode(ev[3], p)
        name = sched.OP_NAMES.get(ent.op, f"OP{ent.op}")
        return f"cycle {c} issue: tile {ev[2]} entry {ev[3]:#x} ({name} T={ent.t} port={ent.port} a={ent.a} " \
               f"b={ent.b} d={ent.d} len={ent.n})"
    if kind == "word":
        return f"cycle {c} word: tile {ev[2]} out[{ev[3]}] = {ev[4]:#x}"
    if kind == "bus":
        return f"cycle {c} bus: {ev[3]:#x}"
    if kind == "write":
        return f"cycle {c} write: tile {ev[2]} source {ev[3]} addr {ev[4]:#x} value {ev[5]:#x}"
    if kind == "err":
        names = [n for i, n in enumerate(FabricParams.ERR_NAMES) if ev[3] >> i & 1]
        return f"cycle {c} err: {'bus' if ev[2] < 0 else f'tile {ev[2]}'} bits {ev[3]:#x} ({', '.join(names)})"
    if kind == "psum":
        return f"cycle {c} psum: tile {ev[2]} lanes {[hex(x) for x in ev[3]]}"
    if kind == "suspend":
        return f"cycle {c} suspend: D = {ev[3]}"
    if kind == "pad":
        return f"cycle {c} pad: tile {ev[2]} word {ev[3]:#x}"
    return f"cycle {c} {kind}: {ev[2:]}"


def compare_traces(want: list[tuple], have: list[tuple], p: FabricParams) -> tuple[int, list[str]]:
    """Two sorted traces: ``(events that differ, messages)``. The first message names the
    first event index at which they diverge, its cycle and the fields of both events;
    then the counts of missing and unexpected events (multiset difference)."""
    if want == have:
        return 0, []
    i = next((k for k, (a, b) in enumerate(zip(want, have)) if a != b), min(len(want), len(have)))
    w = describe(want[i], p) if i < len(want) else "(none: the golden trace has ended)"
    h = describe(have[i], p) if i < len(have) else "(none: the recorded trace has ended)"
    cyc = min(x[i][0] for x in (want, have) if i < len(x))
    cw_, ch_ = Counter(want), Counter(have)
    missing = sum((cw_ - ch_).values())
    extra = sum((ch_ - cw_).values())
    msgs = [f"trace event {i} (of {len(want)} expected, {len(have)} recorded) differs at cycle {cyc}: "
            f"recorded {h}; golden {w}",
            f"{missing} golden event(s) missing from the recorded trace, {extra} unexpected recorded event(s)"]
    first_missing = sorted(cw_ - ch_)[:1]
    first_extra = sorted(ch_ - cw_)[:1]
    if first_missing:
        msgs[-1] += f"; first missing: {describe(first_missing[0], p)}"
    if first_extra:
        msgs[-1] += f"; first unexpected: {describe(first_extra[0], p)}"
    return missing + extra, msgs


# ---- coverage in bulk -----------------------------------------------------------------------
def sample_bulk(cov: SchedCoverage, program: sched.Program, trace: list[tuple], golden: Any, err: list[int],
                bus_err: int) -> None:
    """The per-edge :meth:`SchedCoverage.sample` of one run, in bulk: the issue points
    from columns (:meth:`~lockstep.verif.coverage.Covergroup.sample_columns`, each entry
    decoded once per distinct word without its T field), the others with
    :meth:`~lockstep.verif.coverage.Covergroup.sample_batch`. The same hits as the
    per-edge sampling (``tests/test_sched_throughput.py`` holds them equal)."""
    p = program.params
    issues = sorted((e[2], e[0], e[3]) for e in trace if e[1] == "issue")   # by tile, then cycle
    if issues:
        tiles = np.array([x[0] for x in issues])
        cycles = np.array([x[1] for x in issues], dtype=np.int64)
        tmask = (1 << (p.ew - p.cw)) - 1   # everything but T
        keys = [x[2] & tmask for x in issues]
        names: dict[int, tuple[str, str, Any]] = {}
        for k in set(keys):
            ent = sched.decode(k, p)
            name = sched.OP_NAMES.get(ent.op, f"OP{ent.op}")
            port = sched.PORT_NAMES[ent.port] if ent.port < len(sched.PORT_NAMES) else str(ent.port)
            names[k] = (name, f"{name}@{port}" if ent.op in sched.PORT_OPS else "-", ent)
        b2b = np.zeros(len(issues), dtype=bool)
        b2b[1:] = (tiles[1:] == tiles[:-1]) & (cycles[1:] == cycles[:-1] + 1)
        cov.issues.sample_columns({"op": np.array([names[k][0] for k in keys]),
                                   "op_port": np.array([names[k][1] for k in keys]), "b2b": b2b,
                                   "fwd": np.array([fwd_route(int(t), names[k][2]) for t, k in zip(tiles, keys)])})
    slack = [_slack_bin(s) for *_, s in golden.recv_slack]
    if slack:
        cov.transfer.sample_batch(slack)
    full = any(occ >= p.buf_d for row in golden.max_occupancy for occ in row[:2])
    cov.run_cg.sample({"full": full, "wrap": _crosses_wrap(trace, p)})
    periods = [_period_bin(sched.decode(program.schedules[t][x.header], p).a)
               for t in range(p.nt) for x in program.expanded(t)
               if x.first_in_block and not x.poison and x.header is not None]
    if periods:
        cov.periodic.sample_batch(periods)
    if p.comm:
        run = {"susp": any(e[1] == "suspend" for e in trace), "full": golden.fifo_max >= p.fifo_d, "pad": None}
        cov.comm.sample(run)
        src = 4 + p.k
        pads = {e[0] for e in trace if e[1] == "pad"}
        popped, hits = False, []
        for e in sorted(e for e in trace if e[1] == "write" and e[2] == sched.COMM_TILE and e[3] == src):
            if e[0] in pads:
                hits.append({**run, "pad": "hold-last" if popped else "start-up zero"})
            else:
                popped = True
        if hits:
            cov.comm.sample_batch(hits)
    moved = (program.meta or {}).get("moved")
    if moved is not None:
        if cov.jitter is None:   # as the per-edge sampling creates it
            from ..coverage import Covergroup

            cov.jitter = Covergroup("sched.jitter")
            cov.jitter.point("delay_vs_slack", lambda s: s, ["j=s", "j=s+1"])
            cov.groups.append(cov.jitter)
        cov.jitter.sample(_jitter_bin(moved["j"], moved["slack"]))
    raised = [n for i, n in enumerate(FabricParams.ERR_NAMES) if any(b >> i & 1 for b in list(err) + [bus_err])]
    cov.errors.sample_batch(raised or ["none"])


# ---- the pyuvm environment -----------------------------------------------------------------
@dataclass
class ProgramItem:
    """One episode's stimulus and prediction.

    Attributes:
        episode: its index in the run.
        seed: the builder's seed (``run seed + episode``).
        program: the program.
        expected: what the builder expects of the errors (see ``make_program``).
        golden: the executor's run.
        stop_at: 0 (run to halt) or the cycles to run (a program the golden run leaves
            running).
        max_cycles: the harness's watchdog for this episode.
    """

    episode: int
    seed: int
    program: sched.Program
    expected: Any
    golden: Any = None
    stop_at: int = 0
    max_cycles: int = 0


@dataclass
class Episode:
    """One finished episode as the monitor read it."""

    item: ProgramItem
    events: list[tuple]
    problems: list[str]
    final: Final | None
    errors: list[str] = field(default_factory=list)   # record errors (the files did not parse)


class SchedBfm(EpisodeBfm):
    """Owns the harness (:class:`~lockstep.verif.episodes.EpisodeBfm`): one episode per
    program.

    Args:
        dut: the harness handle (the fabric is ``dut.dut``).
        ctx: the runner context.
        fp: the fabric the harness wraps (from the DUT's record).
        count: programs in the run.
    """

    budget_what = "load, the program's limit and the dump"

    def __init__(self, dut: Any, ctx: TbContext, fp: FabricPorts, count: int) -> None:
        super().__init__(dut, ctx, count)
        self.fp = fp
        self.tail = harness_tail(fp.params)

    def watchdog(self, golden: Any) -> tuple[int, int]:
        """``(stop_at, max_cycles)`` of a program from its golden run (:func:`limits`)."""
        return limits(golden, self.tail)

    def write_files(self, item: ProgramItem) -> None:
        write_episode(self.folder, item.episode, item.program, item.stop_at, item.max_cycles,
                      (item.program.meta or {}).get("ext"))

    def budget(self, item: ProgramItem) -> int:
        p = self.fp.params
        return 16 + p.nt * (p.sd + p.words) + item.max_cycles + p.nt * p.words + 64


class ProgramSeq(EpisodeSeq):
    """The run's programs, one sequence item per episode (episode ``e`` from seed
    ``seed + e``), each built as the run takes it (``programs`` of them, or a streamed
    run's until its ``cycles``: :meth:`~lockstep.verif.episodes.EpisodeSeq.body`)."""

    def entries(self) -> Iterator[ProgramItem]:
        ctx: TbContext = ConfigDB().get(None, "", "CTX")
        p: FabricParams = ConfigDB().get(None, "", "TB_PARAMS")
        name = str(ctx.opt("program", "random"))
        txns = ctx.opt("txns", None)
        for e in itertools.count():
            with spent("programs"):
                program, expected = build_program(name, p, ctx.seed + e, txns)
            yield ProgramItem(e, ctx.seed + e, program, expected)


class ProgramDriver(EpisodeDriver):
    """Runs the golden executor on each program (its cycles set the watchdog) and
    writes the episode's files for the harness."""

    def prepare(self, item: ProgramItem) -> None:
        with spent("golden"):
            item.golden = sched.execute(item.program, ext=(item.program.meta or {}).get("ext"))
        item.stop_at, item.max_cycles = self.bfm.watchdog(item.golden)


class RecordMonitor(EpisodeMonitor):
    """Reads each finished episode's records and publishes an :class:`Episode` on ``ap``."""

    files = ("cfg", "sched", "data", "ext", "trace", "final")

    def read(self, e: int, item: ProgramItem) -> Episode:
        p, folder = item.program.params, self.bfm.folder
        events, problems = read_trace(folder / f"tp_trace_{e}.log", p)
        return Episode(item, events, problems, read_final(folder / f"tp_final_{e}.log", p))

    def broken(self, e: int, item: ProgramItem, message: str) -> Episode:
        return Episode(item, [], [], None, [f"episode {e} (program seed {item.seed}): {message}"])


class SchedTpScoreboard(EpisodeScoreboard):
    """Checks each episode as it arrives (nothing is kept but counts and messages)."""

    def build_phase(self) -> None:
        super().build_phase()
        self.edge = TraceScoreboard("edge_checks", self)   # the per-edge checks, reused as they are
        self.checked = 0
        self.run_cycles = 0
        self.load_cycles = 0
        self.programs = 0
        self.traces: list[list[tuple]] = []
        self.last: tuple[int, int] | None = None  # (episode, run cycles) of the last episode checked

    def check(self, ep: Episode) -> None:
        """Check one episode: its trace against the golden executor's, then the per-edge
        scoreboard's own checks."""
        it = ep.item
        p = it.program.params
        who = f"episode {it.episode} (program seed {it.seed})"
        if ep.errors:
            self.mismatches += 1
            for e in ep.errors:
                self.error(e)
            return
        fin = ep.final
        self.programs += 1
        self.run_cycles += fin.run_cycles
        self.load_cycles += fin.load_cycles
        self.last = (it.episode, fin.run_cycles)
        have = sorted(ep.events)
        want = sorted(it.golden.trace)
        if self.ctx.opt("dump_trace", False):
            self.traces.append(have)
        if fin.reason == "timeout":
            self.mismatches += 1
            self.error(f"{who}: watchdog: the fabric ran {fin.run_cycles} cycles without every tile halting "
                        f"(halted {fin.state['halted']}; the golden run halts after {it.golden.cycles}); "
                        f"{len(have)} events recorded")
        if fin.reason == "window":   # a replay that stopped at the end of its waves window
            cut = fin.run_cycles - 1   # an error raised in the last cycle is seen after it
            want = [e for e in want if e[0] < cut]
            have = [e for e in have if e[0] < cut]
        bad, msgs = compare_traces(want, have, p)
        self.checked += len(want)
        if bad:
            self.mismatches += bad
            self.error(f"{who}: {msgs[0]}\n    replay: {self._replay(it, self._first_cycle(want, have))}")
            for m in msgs[1:]:
                self.error(f"{who}: {m}")
        if fin.reason == "window":
            return
        # the per-edge scoreboard's own checks: the trace per kind, memories, errors, ...
        rest = self.edge.check(self.ctx, it.program, it.golden, ep.events, fin.state, ep.problems, it.expected)
        self.mismatches += len(rest)
        for r in rest:
            self.error(f"{who}: {r}")
        if isinstance(it.expected, Compiled):
            util = sched.utilisation(SimpleNamespace(trace=have, params=p))
            pred = sched.predicted_utilisation(it.expected.layout)
            if abs(util - pred) > 1e-12:
                self.mismatches += 1
                self.error(f"{who}: MAC utilisation {util:.4f} measured on the DUT trace, cycle model predicts {pred:.4f}")

    @staticmethod
    def _first_cycle(want: list[tuple], have: list[tuple]) -> int:
        i = next((k for k, (a, b) in enumerate(zip(want, have)) if a != b), min(len(want), len(have)))
        return min(x[i][0] for x in (want, have) if i < len(x))

    def _replay(self, it: ProgramItem, cycle: int) -> str:
        """Commands that replay episode ``it`` alone (it is the first program of seed
        ``seed + episode``): with waves around ``cycle``, and per-edge when the
        per-edge testbench builds the same program."""
        tb = self.ctx.opts.get("testbench", "<test>")
        lo, hi = max(cycle - 100, 0), cycle + 50
        cmd = f"make sim TEST={tb} SEED={it.seed} WAVES=1 WINDOW={lo}:{hi}"
        if self.ctx.opt("txns", None) is None and tb.endswith("_tp"):
            cmd += f"; per-edge: make sim TEST={tb.removesuffix('_tp')} SEED={it.seed}"
        return cmd


class SchedTpCoverage(uvm_subscriber):
    """The per-edge cover points, sampled in bulk from each episode."""

    def build_phase(self) -> None:
        self.cov = SchedCoverage("points", self)

    def write(self, ep: Episode) -> None:
        """Sample one episode (the DUT's trace; buffer statistics from the golden run,
        which the scoreboard holds event by event to the trace)."""
        if ep.final is None or ep.final.reason == "window":
            return
        with spent("coverage"):
            st = ep.final.state
            sample_bulk(self.cov, ep.item.program, ep.events, ep.item.golden, st["err"], st["bus_err"])


class SchedTpEnv(EpisodeEnv):
    """Sequencer and program driver; record monitor feeding scoreboard and coverage."""

    driver_type = ProgramDriver
    monitor_type = RecordMonitor
    scoreboard_type = SchedTpScoreboard
    coverage_type = SchedTpCoverage


class SchedTpTest(EpisodeTest):
    """The fabric in throughput mode: ``programs`` programs (option, default 1) of the
    ``program`` option (default ``random``; ``txns`` transactions for long random
    programs), each loaded, run to halt, recorded and checked in bulk."""

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        fp = fabric_ports(ctx.record)
        p = FabricParams.from_dict(ctx.params)
        bad = _geometry(fp.params, p)
        if bad:
            raise ValueError(f"the testbench's parameters cannot drive this fabric: {', '.join(bad)}")
        self.ctx, self.params = ctx, p
        self.count = int(ctx.opt("programs", 1))
        self.bfm = SchedBfm(cocotb.top, ctx, fp, self.count)
        for k, v in (("CTX", ctx), ("BFM", self.bfm), ("TB_PARAMS", p), ("PARAMS", ctx.params)):
            ConfigDB().set(None, "*", k, v)
        self.env = SchedTpEnv("env", self)

    seq_type = ProgramSeq
    inputs = ("cfg", "sched", "data", "ext")

    def check_phase(self) -> None:
        sb, bfm = self.env.scoreboard, self.bfm
        last = f"; the last episode checked was {sb.last[0]} ({sb.last[1]} run cycles)" if sb.last else ""
        errors = bfm.run_problems(self.env.monitor.recorded, last) + sb.errors
        if bfm.status == "window":
            self.logger.info(f"stopped at the end of the waves window: {sb.checked} events checked, the end state "
                             f"not compared")
        if sb.checked == 0 and not errors:
            errors.append(f"no event was checked ({self.env.monitor.recorded} programs recorded, harness status "
                          f"{bfm.status})")
        if self.ctx.opt("dump_trace", False):
            (self.ctx.results / "trace.json").write_text(json.dumps(sb.traces))
        self.finish(errors, blocks=sb.checked, transactions=sb.checked, mismatches=sb.mismatches + int(bfm.failed),
                    programs=sb.programs, cycles=sb.run_cycles + sb.load_cycles, run_cycles=sb.run_cycles,
                    load_cycles=sb.load_cycles, program=str(self.ctx.opt("program", "random")))

    def report_phase(self) -> None:
        cov = self.env.coverage.cov
        sums = [g.summary() for g in cov.groups]
        hit = sum(1 for s in sums for bins in s["cover_points"].values() for h in bins.values() if h)
        total = sum(len(bins) for s in sums for bins in s["cover_points"].values())
        self.ctx.summary.update(functional_coverage=round(100.0 * hit / total, 2) if total else None,
                                holes=[h for s in sums for h in s["holes"]])
        self.ctx.summary["coverage_file"] = str(cov.groups[0].export(self.ctx.results))
        self.ctx.write_summary()


class EdgeTraceTest(SchedTest):
    """The per-edge test (:class:`~lockstep.verif.sched.env.SchedTest`) that also writes
    the trace its monitor rebuilt to ``trace.json`` (``[[event, ...]]``, one program):
    ``tests/test_sched_throughput.py`` runs it on the bare fabric to hold the per-edge
    and throughput traces of one program equal."""

    def check_phase(self) -> None:
        (self.ctx.results / "trace.json").write_text(json.dumps([sorted(self.env.monitor.events)]))
        super().check_phase()
