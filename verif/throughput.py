"""Throughput mode of a streaming unit: the same pyuvm structure, transactions in bulk.

The DUT runs inside its generated harness (:mod:`lockstep.gen.harness`): clock, reset,
idle cycles and back-pressure are in HDL, the stimulus comes from chunk files the
simulator loads itself, and every beat is recorded by the simulator with its cycle.
Python wakes once per chunk of :data:`~lockstep.gen.harness.CHUNK` transactions:

* :class:`ChunkSeq` -> :class:`ChunkDriver`: the unit's :meth:`~.StreamUnit.items`, one
  chunk per sequence item, written as ``tp_stim_<k>.bin`` (two chunks ahead of the
  player, so the simulator never waits);
* :class:`TpBfm` owns the harness: writes the settings, raises ``go``, sleeps until the
  player starts the next chunk (or the run ends, or the watchdog from the cycle model
  fires) and hands the closed record files to
* :class:`RecordMonitor`, which parses them with the stimulus still held for those
  transactions and publishes :class:`Batch` es (inputs, outputs, cycles) on ``ap`` to
* :class:`TpScoreboard`: :meth:`~.StreamUnit.check` on each batch (value, in one
  vectorised golden-model call), count and order (a beat with no input, an input that
  never came out), timing (``first_valid - accepted == latency`` for every beat), and
  the sticky ``err`` at every beat (:func:`~.stream_env.sticky_beats`) and at the end
  against the OR of every golden flag; and
* :class:`TpCoverage`: the unit's cover points from each batch, the same points as the
  per-edge environment's.

Memory stays flat: a chunk's stimulus is dropped once its transactions are checked, and
each record file is deleted once parsed (``keep=1`` keeps them).

:class:`~.twin.CyclePauses` is the Python twin of the harness's pause generators: the per-edge
environment with the option ``pauses="cycle"`` idles and back-pressures on exactly the
harness's cycles, so both modes see the identical stream (``dump_stream=1`` writes it
to ``stream.json`` in either mode).
"""

from __future__ import annotations

import json
import resource
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cocotb
import numpy as np
from cocotb.triggers import First, RisingEdge, Timer, ValueChange
from pyuvm import (
    ConfigDB, uvm_analysis_port, uvm_component, uvm_driver, uvm_env, uvm_sequence, uvm_sequencer, uvm_subscriber,
    uvm_test,
)

from lockstep.gen.harness import CHUNK, HarnessPorts, harness_ports

from .columns import Outs, join_items, nibble_ints, parse_hex_lines
from .context import CLOCK_NS, TbContext, check_reset, reset_values
from .coverage import Covergroup
from .seq import Item
from .stream_env import StreamUnit, refuse_resets, sticky_beats
from .twin import pause_seeds, pause_threshold, stream_record

__all__ = [
    "SPENT", "Batch", "ChunkDriver", "ChunkSeq", "RecordMonitor", "StimulusError", "TpBfm", "TpCoverage", "TpEnv", "TpScoreboard",
    "TpTest", "read_records", "spent", "unit_class", "write_chunk",
]

#: Seconds of Python spent per activity in this run (stimulus, records, scoreboard,
#: coverage), reported in ``summary.json`` so a bench can hold it against the simulation.
SPENT: dict[str, float] = defaultdict(float)


class spent:
    """``with spent("scoreboard"):`` adds the block's wall time to :data:`SPENT`."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()

    def __exit__(self, *exc: Any) -> None:
        SPENT[self.what] += time.perf_counter() - self.t0


class StimulusError(ValueError):
    """A transaction whose fields do not fit the port record."""


def _field_bits(f: str, width: int, col: np.ndarray, base: int) -> np.ndarray:
    """``(N, width)`` bits, most significant first, of one field's column (see
    :meth:`~.StreamUnit.encode_columns`)."""
    n = len(col)
    lanes = 1 if col.ndim == 1 else col.shape[1]
    if width % lanes:
        raise StimulusError(f"in_{f}: {lanes} lanes do not divide its {width}-bit port")
    lw = width // lanes
    if col.dtype == object or lw > 62:  # Python ints: through bytes
        vals = [int(v) for v in (col if col.ndim == 1 else
                                 [sum(int(x) << (i * lw) for i, x in enumerate(row)) for row in col])]
        bad = [i for i, v in enumerate(vals) if not 0 <= v < (1 << width)]
        if bad:
            raise StimulusError(f"transaction {base + bad[0]}: in_{f}={vals[bad[0]]!r} does not fit its {width}-bit port")
        nb = (width + 7) // 8
        raw = np.frombuffer(b"".join(v.to_bytes(nb, "big") for v in vals), np.uint8).reshape(n, nb)
        return np.unpackbits(raw, axis=1)[:, nb * 8 - width:]
    c = col.reshape(n, lanes).astype(np.int64)
    bad = np.flatnonzero(((c < 0) | (c >= (1 << lw))).any(axis=1))
    if len(bad):
        what = f"lane value {c[bad[0]].tolist()}" if lanes > 1 else f"{int(c[bad[0], 0])}"
        raise StimulusError(f"transaction {base + bad[0]}: in_{f}={what} does not fit its {width}-bit port "
                            f"({lanes} lane(s) of {lw} bits)")
    if lw in (8, 16, 32, 64):   # native lanes: their big-endian bytes, unpacked
        return np.unpackbits(np.ascontiguousarray(c[:, ::-1]).astype(f">u{lw // 8}").view(np.uint8), axis=1)
    shifts = np.arange(lw - 1, -1, -1, dtype=np.int64)
    return ((c[:, ::-1, None] >> shifts) & 1).astype(np.uint8).reshape(n, width)


def write_chunk(path: Path, columns: dict[str, np.ndarray], hp: HarnessPorts, base: int, chunk: int = CHUNK) -> None:
    """Write one stimulus chunk for the harness's ``$fread``: ``chunk`` words of
    ``ceil(bits / 8)`` bytes, big-endian, each the ``in_*`` fields concatenated in
    port-record order (first field in the top bits); missing words are zero.

    Args:
        path: the chunk file.
        columns: field -> values of every transaction of the chunk
            (:meth:`~.StreamUnit.encode_columns`).
        hp: the harness's ports.
        base: index of the chunk's first transaction (for messages).
        chunk: words per chunk.

    Raises:
        StimulusError: a field is missing, unknown, negative or wider than its port
            (named with the transaction's index).
    """
    names = [f for f, _ in hp.inputs]
    if sorted(columns) != sorted(names):
        raise StimulusError(f"transactions from {base}: fields {sorted(columns)} are not the port record's {sorted(names)}")
    n = len(columns[names[0]])
    if n > chunk or any(len(c) != n for c in columns.values()):
        raise StimulusError(f"transactions from {base}: columns of {[len(c) for c in columns.values()]} values for a "
                            f"chunk of {chunk}")
    sw = hp.word_bits
    pad = (-sw) % 8
    bits = np.zeros((chunk, sw + pad), np.uint8)
    at = pad
    for f, width in hp.inputs:
        bits[:n, at:at + width] = _field_bits(f, width, np.asarray(columns[f]), base)
        at += width
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(np.packbits(bits, axis=1).tobytes())
    tmp.replace(path)


def read_records(folder: Path, k: int, hp: HarnessPorts, keep: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, Outs]:
    """Parse chunk ``k``'s record files in bulk: the accepted cycles, and the output
    beats as their cycles, first-valid cycles and fields (:class:`~.columns.Outs`; a
    unit with a sticky ``err`` has it as the field ``err``, recorded with each beat).
    Deletes the files unless ``keep``.

    The recorder writes ``%h`` values, which have a fixed width (the signal's, in hex
    digits), so every output line has the same layout and each field is a fixed slice.

    Raises:
        RecordFormatError: a line of another length or layout, or X or Z bits in a field
            (naming the file, the line and the field).
    """
    acc_p, out_p = folder / f"tp_acc_{k}.log", folder / f"tp_out_{k}.log"
    (acc_n,) = parse_hex_lines(acc_p.read_bytes(), [16], ["accepted cycle"], acc_p.name)
    beat = list(hp.outputs) + ([("err", hp.err)] if hp.err else [])
    names = ["cycle", "first_valid", *(f"out_{f}" for f, _ in hp.outputs)] + (["err"] if hp.err else [])
    digits = [16, 16] + [(w + 3) // 4 for _, w in beat]
    cyc, fv, *fields = parse_hex_lines(out_p.read_bytes(), digits, names, out_p.name)
    outs = Outs({f: m for (f, _), m in zip(beat, fields)}, dict(beat))
    if not keep:
        acc_p.unlink()
        out_p.unlink()
    return nibble_ints(acc_n), nibble_ints(cyc), nibble_ints(fv), outs


@dataclass
class Batch:
    """Transactions ``[base, base + len(items))``, paired in order.

    Attributes:
        base: global index of the first transaction.
        items: the unit's stimulus for these transactions.
        accepted: cycle each input was accepted.
        outs: output fields of each transaction, as columns.
        cycles: cycle each output was taken.
        first_valid: cycle each output was first valid.
    """

    base: int
    items: Any
    accepted: np.ndarray
    outs: Outs
    cycles: np.ndarray
    first_valid: np.ndarray


class TpBfm:
    """Owns the harness: settings, ``go``, the chunk files and the per-chunk wake-up.

    Args:
        dut: the harness handle (the DUT is ``dut.dut``).
        ctx: the runner context.
        unit: the unit (for the port names and :meth:`~.StreamUnit.encode`).
        count: transactions in the run.
    """

    def __init__(self, dut: Any, ctx: TbContext, unit: StreamUnit, count: int) -> None:
        self.dut, self.ctx, self.unit, self.count = dut, ctx, unit, count
        self.hp = harness_ports(ctx.record)
        if {f for f, _ in self.hp.inputs} != set(unit.in_fields) or {f for f, _ in self.hp.outputs} != set(unit.out_fields):
            raise StimulusError(f"{type(unit).__name__}: fields in {unit.in_fields} / out {unit.out_fields} differ from "
                                f"the record's ports in {[f for f, _ in self.hp.inputs]} / out "
                                f"{[f for f, _ in self.hp.outputs]}")
        if count < 1:
            raise ValueError(f"a throughput run needs at least one transaction, not {count}")
        self.chunks = -(-count // CHUNK)
        self.folder = Path.cwd()  # the simulator's working folder: the harness opens its files there
        self.written = 0  # chunk files written
        self.dropped = 0  # chunk files deleted (below this one)
        self.presented = 0  # chunk the player is on
        self.items: dict[int, list[Any]] = {}  # stimulus of chunks not yet checked
        self.moved = cocotb.triggers.Event()  # a chunk was written, or the player moved on
        self.closed: cocotb.queue.Queue[int] = cocotb.queue.Queue()  # record files to read; -1 ends
        self.timeout: str | None = None
        self.end: list[str] = []

    async def write(self, k: int, items: list[Any]) -> None:
        """Write chunk ``k`` once the player is within two chunks of it."""
        while k > self.presented + 2:
            self.moved.clear()
            await self.moved.wait()
        with spent("stimulus"):
            write_chunk(self.folder / f"tp_stim_{k}.bin", self.unit.encode_columns(items), self.hp, k * CHUNK)
        self.items[k] = items
        self.written = k + 1
        self.moved.set()

    def _drop_stimulus(self, upto: int) -> None:
        """Delete the chunk files below ``upto`` (loaded already) unless ``keep``."""
        if not self.ctx.opt("keep", False):
            for j in range(self.dropped, min(upto, self.written)):
                (self.folder / f"tp_stim_{j}.bin").unlink(missing_ok=True)
            self.dropped = max(self.dropped, min(upto, self.written))

    async def run(self, budget_per_chunk: int) -> None:
        """Start the harness once the first chunks are written; wake per chunk until done."""
        d = self.dut
        if resets := reset_values():   # the DUT instance under the harness, after its first rst edge
            cocotb.start_soon(check_reset(d.dut, d.clk, resets))
        await Timer(1, "ns")  # the harness's initial block has set its state (Icarus runs it after cocotb starts)
        idle, bp = float(self.ctx.opt("idle", 0.2)), float(self.ctx.opt("backpressure", 0.3))
        s_idle, s_bp = pause_seeds(self.ctx.seed)
        d.n_total.value = self.count
        d.idle_s.value, d.idle_thr.value = s_idle, pause_threshold(idle)
        d.bp_s.value, d.bp_thr.value = s_bp, pause_threshold(bp)
        d.max_cycles.value = 0
        d.wstart.value, d.wstop.value = self.ctx.opt("window", (0, 0))
        while self.written < min(3, self.chunks):
            self.moved.clear()
            await self.moved.wait()
        d.go.value = 1
        while True:
            t = await First(ValueChange(d.chunk), RisingEdge(d.done), Timer(budget_per_chunk * CLOCK_NS, "ns"))
            if int(d.done.value):
                for k in range(self.presented, int(d.chunk.value) + 1):
                    self.closed.put_nowait(k)
                self.end = (self.folder / "tp_end.log").read_text().split()
                self._drop_stimulus(self.chunks)
                break
            if isinstance(t, Timer):
                self.timeout = (f"watchdog: the harness neither started a chunk nor ended within "
                                f"{budget_per_chunk} cycles (the cycle model's limit) on chunk {self.presented}")
                break
            k = int(d.chunk.value)
            for j in range(self.presented, k):
                self.closed.put_nowait(j)
            self._drop_stimulus(k + 2)  # chunks up to k + 1 are in the banks
            self.presented = k
            self.moved.set()
        self.closed.put_nowait(-1)


class ChunkSeq(uvm_sequence):
    """The unit's stimulus, one sequence item per chunk, generated from the run's seed."""

    async def body(self) -> None:
        unit: StreamUnit = ConfigDB().get(None, "", "UNIT")
        bfm: TpBfm = ConfigDB().get(None, "", "BFM")
        rng = np.random.default_rng(unit.ctx.seed)
        for k in range(bfm.chunks):
            n = min(CHUNK, bfm.count - k * CHUNK)
            with spent("stimulus"):
                items = unit.draw(rng, n)
                refuse_resets(unit, items, "throughput")
                item = Item(f"chunk{k}", (k, items))
            await self.start_item(item)
            await self.finish_item(item)


class ChunkDriver(uvm_driver):
    """Writes each chunk for the harness's player."""

    def connect_phase(self) -> None:
        self.bfm: TpBfm = ConfigDB().get(self, "", "BFM")

    async def run_phase(self) -> None:
        while True:
            seq_item = await self.seq_item_port.get_next_item()
            await self.bfm.write(*seq_item.obj)
            self.seq_item_port.item_done()


class RecordMonitor(uvm_component):
    """Reads each closed chunk's records, pairs outputs with accepted inputs in order
    and publishes a :class:`Batch` on ``ap`` per record file (its items joined from the
    stimulus chunks they came from). At the end ``unmatched`` counts inputs that
    never came out and ``extra`` outputs with no input."""

    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)
        self.acc = np.zeros(0, np.int64)      # accepted cycles not yet paired
        self.cyc = np.zeros(0, np.int64)      # output beats not yet paired: cycles,
        self.fv = np.zeros(0, np.int64)       # ... first-valid cycles
        self.outs: Outs | None = None         # ... and fields
        self.paired = 0
        self.unmatched = 0
        self.extra = 0
        self.last: tuple[int, int] | None = None  # (index, cycle) of the last output paired
        self.finished = cocotb.triggers.Event()

    def connect_phase(self) -> None:
        self.bfm: TpBfm = ConfigDB().get(self, "", "BFM")

    async def run_phase(self) -> None:
        keep = bool(self.bfm.ctx.opt("keep", False))
        while True:
            k = await self.bfm.closed.get()
            if k < 0:
                break
            with spent("records"):
                acc, cyc, fv, outs = read_records(self.bfm.folder, k, self.bfm.hp, keep)
                self.acc = np.concatenate([self.acc, acc])
                self.cyc, self.fv = np.concatenate([self.cyc, cyc]), np.concatenate([self.fv, fv])
                self.outs = outs if self.outs is None else Outs.concat([self.outs, outs])
            self._publish()
        self.unmatched = len(self.acc)
        self.extra = len(self.cyc)
        self.finished.set()

    def _publish(self) -> None:
        n = min(len(self.acc), len(self.cyc))
        if n == 0:
            return
        base = self.paired
        parts = []
        for c in range(base // CHUNK, (base + n - 1) // CHUNK + 1):
            lo, hi = max(base, c * CHUNK) - c * CHUNK, min(base + n, (c + 1) * CHUNK) - c * CHUNK
            parts.append(self.bfm.items[c][lo:hi])
            if hi == CHUNK or c * CHUNK + hi == self.bfm.count:
                del self.bfm.items[c]  # checked: the stimulus is not kept
        self.paired += n
        self.last = (base + n - 1, int(self.cyc[n - 1]))
        batch = Batch(base, join_items(parts), self.acc[:n], self.outs[:n], self.cyc[:n], self.fv[:n])
        self.acc, self.cyc, self.fv, self.outs = self.acc[n:], self.cyc[n:], self.fv[n:], self.outs[n:]
        self.ap.write(batch)


class TpScoreboard(uvm_subscriber):
    """Checks each batch as it arrives (nothing is kept but counts and messages)."""

    def build_phase(self) -> None:
        self.unit: StreamUnit = ConfigDB().get(self, "", "UNIT")
        self.ctx: TbContext = ConfigDB().get(self, "", "CTX")
        self.latency = int(self.ctx.record["timing"]["latency"])
        self.checked = 0
        self.mismatches = 0
        self.late = 0
        self.sticky: int | None = None
        self.dut_flags = 0      # OR of the flags of every beat so far (the per-beat err check)
        self.errors: list[str] = []
        self.stream: list[dict[str, Any]] = []

    def write(self, b: Batch) -> None:
        """Check one batch: values, latency, flags; keep the first messages."""
        with spent("scoreboard"):
            self._check(b)

    def _check(self, b: Batch) -> None:
        before = self.unit.save_state()
        errs, bad, sticky = self.unit.check(b.items, b.outs)
        if sticky is not None:
            self.sticky = (self.sticky or 0) | int(sticky)
            errs_err, self.dut_flags = sticky_beats(b.outs, self.dut_flags, b.base)
            for e in errs_err:
                self._error(e)
        if bad:
            self.mismatches += int(bad)
            after = self.unit.save_state()
            self.unit.load_state(before)  # replay the chunk one transaction at a time
            first = next(i for i in range(len(b.items)) if self.unit.check([b.items[i]], [b.outs[i]])[1])
            self.unit.load_state(after)
            g = b.base + first
            self._error(f"transaction {g} (accepted at cycle {b.accepted[first]}, out at cycle {b.cycles[first]}) "
                        f"is the first of {bad} mismatching in transactions {b.base}..{b.base + len(b.items) - 1}: "
                        f"out {b.outs[first]}\n    replay with waves around it: {self._replay(int(b.cycles[first]))}")
            for e in errs:
                self._error(f"(batch from transaction {b.base}) {e}")
        lat = b.first_valid - b.accepted
        late = np.flatnonzero(lat != self.latency)
        self.late += len(late)
        for i in late[:3]:
            self._error(f"transaction {b.base + i}: accepted at cycle {b.accepted[i]}, first valid at "
                        f"{b.first_valid[i]}; the record says latency {self.latency}")
        self.checked += len(b.items)
        if self.ctx.opt("dump_stream", False):
            self.stream += stream_record(b.accepted, b.outs.rows(), b.cycles, b.first_valid,
                                         [self.unit.encode(it) for it in b.items])

    def _error(self, msg: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(msg)

    def _replay(self, cycle: int) -> str:
        tb = self.ctx.opts.get("testbench", "<test>")
        lo, hi = max(cycle - 200, 0), cycle + 50
        return f"make sim TEST={tb} SEED={self.ctx.seed} WAVES=1 WINDOW={lo}:{hi}"


class TpCoverage(uvm_subscriber):
    """Samples the unit's cover group from each batch (the per-edge points, in bulk)."""

    def build_phase(self) -> None:
        self.unit: StreamUnit = ConfigDB().get(self, "", "UNIT")
        self.cg = Covergroup(self.unit.covergroup)
        self.cg.point("stalled", lambda t: t["stalled"], [False, True])
        self.unit.define_coverage(self.cg)

    def write(self, b: Batch) -> None:
        """Sample the cover points with one batch."""
        with spent("coverage"):
            self._sample(b)

    def _sample(self, b: Batch) -> None:
        cols = dict(self.unit.sample_columns(b.items, b.outs))
        cols["stalled"] = b.cycles > b.first_valid
        self.cg.sample_columns(cols)


class TpEnv(uvm_env):
    """Sequencer and chunk driver; record monitor feeding scoreboard and coverage."""

    def build_phase(self) -> None:
        self.seqr = uvm_sequencer("seqr", self)
        self.driver = ChunkDriver("driver", self)
        self.monitor = RecordMonitor("monitor", self)
        self.scoreboard = TpScoreboard("scoreboard", self)
        self.coverage = TpCoverage("coverage", self)

    def connect_phase(self) -> None:
        self.driver.seq_item_port.connect(self.seqr.seq_item_export)
        self.monitor.ap.connect(self.scoreboard.analysis_export)
        self.monitor.ap.connect(self.coverage.analysis_export)


def unit_class(path: str) -> type[StreamUnit]:
    """The :class:`~.stream_env.StreamUnit` subclass named ``"module:Class"`` (the ``unit`` option)."""
    import importlib

    mod, _, cls = path.partition(":")
    unit = getattr(importlib.import_module(mod), cls, None)
    if not (isinstance(unit, type) and issubclass(unit, StreamUnit)):
        raise ValueError(f"unit option {path!r} names no StreamUnit subclass")
    return unit


class TpTest(uvm_test):
    """A streaming unit in throughput mode; the unit is the ``unit`` option."""

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        unit_t = unit_class(ctx.opt("unit", ""))
        unit = unit_t(ctx, unit_t.params_type.from_dict(ctx.params))
        self.count = int(ctx.opt("blocks", unit.default_count))
        self.ctx, self.unit = ctx, unit
        self.bfm = TpBfm(cocotb.top, ctx, unit, self.count)
        for k, v in (("CTX", ctx), ("UNIT", unit), ("BFM", self.bfm)):
            ConfigDB().set(None, "*", k, v)
        self.env = TpEnv("env", self)

    async def run_phase(self) -> None:
        self.raise_objection()
        latency = int(self.ctx.record["timing"]["latency"])
        idle, bp = float(self.ctx.opt("idle", 0.2)), float(self.ctx.opt("backpressure", 0.3))
        budget = int(4 * (CHUNK / ((1 - idle) * (1 - bp)) + latency + 50))
        cocotb.start_soon(ChunkSeq("seq").start(self.env.seqr))
        await self.bfm.run(budget)
        await self.env.monitor.finished.wait()
        self.drop_objection()

    def check_phase(self) -> None:
        sb, mon, bfm = self.env.scoreboard, self.env.monitor, self.bfm
        errors = list(sb.errors)
        window = "window" in bfm.end
        if window:  # a replay that stopped at the end of its waves window, as asked
            self.logger.info(f"stopped at cycle {bfm.end[0]}, the end of the waves window: "
                             f"{sb.checked} transactions checked, the count checks skipped")
        if bfm.timeout:
            last = (f"the last transaction out was {mon.last[0]} at cycle {mon.last[1]}" if mon.last
                    else "no transaction came out")
            errors.insert(0, f"{bfm.timeout}; {last}")
        elif not window:
            if mon.unmatched:
                errors.append(f"{mon.unmatched} accepted transaction(s) never came out")
            if mon.extra:
                errors.append(f"{mon.extra} output beat(s) with no input")
            if sb.checked != self.count:
                errors.append(f"{sb.checked} transactions checked, {self.count} sent")
            if sb.sticky is not None and bfm.end:
                dut_err = int(bfm.end[1], 16)
                if dut_err != sb.sticky:
                    errors.append(f"sticky err={dut_err:#x}, golden OR of flags={sb.sticky:#x}")
        s = self.ctx.summary
        s.update(blocks=sb.checked, transactions=sb.checked, mismatches=sb.mismatches, late=sb.late,
                 cycles=int(bfm.end[0]) if bfm.end else 0, mode="throughput", errors=errors[:20],
                 python_s={k: round(v, 3) for k, v in SPENT.items()},
                 max_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))
        if self.ctx.opt("dump_stream", False):
            (self.ctx.results / "stream.json").write_text(json.dumps(sb.stream))
        self.ctx.finish(errors, self.logger)

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)
