"""Generic pyuvm environment for a one-in, one-out valid/ready streaming unit.

A unit testbench supplies one :class:`StreamUnit` subclass: the payload fields, the
stimulus, the golden-model check and the cover points. Everything else is shared:

* :class:`StreamBfm` owns the signals (a :class:`~.agents.stream.StreamSource` and a
  :class:`~.agents.stream.StreamSink` with reproducible idle and back-pressure pause generators);
* :class:`StreamSeq` -> :class:`StreamDriver` send the unit's transactions;
* :class:`PairMonitor` pairs each output beat with the input accepted in the same order
  and publishes the pairs to the scoreboard and the coverage collector;
* :class:`StreamScoreboard` asks the unit to check all pairs in one vectorised golden
  model call (check phase) and checks count, order, timing and the sticky ``err``: at
  every output beat (:func:`sticky_beats`) and at the end against the golden flags;
* :class:`StreamTest` starts clock and reset, runs the sequence under a watchdog derived
  from the cycle model, and writes ``summary.json``.

Timing rule checked for every beat: an output first becomes valid exactly ``latency``
cycles (from the generator's JSON record) after its input was accepted.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Sequence

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, RisingEdge, SimTimeoutError, with_timeout
from pyuvm import (
    ConfigDB,
    uvm_analysis_port,
    uvm_component,
    uvm_driver,
    uvm_env,
    uvm_sequencer,
    uvm_test,
    uvm_tlm_analysis_fifo,
)

from lockstep.gen.harness import CHUNK

from .agents.stream import Beat, CycleCounter, StreamSink, StreamSource, random_pauses
from .columns import Items, Outs, ints
from .context import CLOCK_NS, TbContext, pulse_reset, start
from .coverage import Covergroup
from .seq import ListSeq

__all__ = [
    "PairMonitor", "StreamBfm", "StreamCoverage", "StreamDriver", "StreamEnv", "StreamScoreboard", "StreamSeq", "StreamTest",
    "GoldenFlagsQuiet", "StreamUnit", "sticky_beats",
]


def sticky_beats(outs: Outs | Sequence[dict[str, int]], carry: int = 0, base: int = 0) -> tuple[list[str], int]:
    """The sticky ``err`` at every output beat: in the cycle beat ``k`` is taken it holds
    the OR of the ``flags`` of beats ``0..k`` (every streaming unit loads ``err`` with its
    output register, latency 1: ``gen/stream.py``), so a bit raised early, late, never or
    for good shows at the beat it goes wrong, not only in the end-of-run OR (where every
    flag has long been raised). The beat's ``flags`` field is itself checked against
    the golden model.

    Args:
        outs: beats with ``err`` (sampled with the beat) and ``flags`` fields.
        carry: the OR of the flags of the beats before these.
        base: index of the first of these beats (for the message).

    Returns:
        ``(errors, carry)``: at most one message (the first wrong beat and how many
        are wrong) and the OR of the flags up to the last of these beats.
    """
    if not len(outs):
        return [], carry
    flags, err = ints(outs, "flags"), ints(outs, "err")
    want = np.bitwise_or.accumulate(flags) | carry
    bad = np.flatnonzero(err != want)
    errors = []
    if len(bad):
        k = int(bad[0])
        errors.append(f"sticky err={int(err[k]):#x} at output beat {base + k}, the OR of the flags of beats "
                      f"0..{base + k} is {int(want[k]):#x} ({len(bad)} beat(s) of {len(outs)} wrong)")
    return errors, int(want[-1])


class StreamUnit:
    """What a testbench knows about one streaming unit. Subclass and fill in.

    Class attributes:
        params_type: the family's parameter dataclass (has ``from_dict``).
        in_fields / out_fields: payload fields of ``in_*`` / ``out_*``.
        covergroup: name of the unit's cover group.
        default_count: transactions per run unless the ``blocks`` option says otherwise.

    Args:
        ctx: the runner context.
        params: the parameters the testbench checks against.
    """

    params_type: ClassVar[type]
    in_fields: ClassVar[list[str]]
    out_fields: ClassVar[list[str]]
    covergroup: ClassVar[str]
    default_count: ClassVar[int] = 400
    #: Mismatching transactions described in full in a report; the rest are counted.
    report_limit: ClassVar[int] = 10

    def __init__(self, ctx: TbContext, params: Any) -> None:
        self.ctx = ctx
        self.params = params
        self._opened = False      # the run's first transaction is drawn (draw)
        #: Per-edge mode: indices of the transactions the DUT is reset before (:meth:`resets`).
        self.reset_at: set[int] = set()

    def items(self, rng: np.random.Generator, count: int) -> list[Any]:
        """``count`` stimulus transactions (any objects :meth:`encode` understands)."""
        raise NotImplementedError

    def quiet(self, items: Sequence[Any]) -> int | None:
        """Index of a transaction of ``items`` that raises no flag when it is the first
        after reset, or None (none does, or the unit has no flags). Units with an ``err``
        port override this from their golden model (:class:`GoldenFlagsQuiet`)."""
        return None

    def draw(self, rng: np.random.Generator, count: int) -> Any:
        """The next ``count`` transactions of the run: :meth:`items`, drawn chunk by chunk
        from the run's one generator by every mode (per-edge, throughput, raw), so one
        seed is one stream. The run opens with a transaction that raises no flag
        (:meth:`quiet` swapped to the front): an ``err`` bit the first block sets,
        whatever its flags, then shows at beat 0 (:func:`sticky_beats`), where a stream
        opening with a NaN block or an exponent clamp would raise it legitimately."""
        items = self.items(rng, count)
        if not self._opened:
            self._opened = True
            k = self.quiet(items) if len(items) else None
            if k:
                order = [k, *range(1, k), 0, *range(k + 1, len(items))]
                items = items.take(order) if isinstance(items, Items) else [items[i] for i in order]
        return items

    def encode(self, item: Any) -> dict[str, int]:
        """Input payload field values for one transaction."""
        raise NotImplementedError

    def resets(self, items: Sequence[Any]) -> np.ndarray:
        """Per transaction of ``items``: True when the stimulus resets the DUT before it
        (per-edge mode: the stream is drained first, so nothing is in flight, and the
        golden model starts afresh there). The states a unit has only from reset (the
        statistics selector's max mode before its first window) are reached this way as
        often as the stimulus needs. The throughput harness resets once, at the start:
        it refuses a stream with a reset in it (``refuse_resets``)."""
        return np.zeros(len(items), bool)

    def encode_columns(self, items: list[Any]) -> dict[str, np.ndarray]:
        """Input payload of many transactions, field by field (the throughput mode's
        stimulus): field -> ``(N,)`` values, or ``(N, L)`` lanes of ``width / L`` bits
        each, lane 0 in the low bits. Override with a vectorised version; this default
        calls :meth:`encode` per transaction."""
        rows = [self.encode(it) for it in items]
        return {f: np.array([r[f] for r in rows], dtype=object) for f in self.in_fields}

    def check(self, items: Sequence[Any], outs: Outs | list[dict[str, int]]) -> tuple[list[str], int, int | None]:
        """Compare outputs with the golden model.

        ``items`` is a list of the unit's items, or the :class:`~.columns.Items` its
        :meth:`items` returned (sliced); ``outs`` the output fields, one dict per beat
        (per-edge) or :class:`~.columns.Outs` columns (throughput). Read both through
        :mod:`.columns` (:func:`~.columns.col`, :func:`~.columns.ints`,
        :func:`~.columns.lanes`), which take either form.

        Returns:
            ``(errors, mismatching_transactions, expected_sticky_err)``; the last is
            ``None`` when the unit has no ``err`` port.
        """
        raise NotImplementedError

    def save_state(self) -> Any:
        """A copy of whatever the golden model carries from one :meth:`check` call to the
        next (a unit whose outputs depend on earlier transactions); None when stateless.
        The throughput scoreboard checks a stream chunk by chunk and, to find the first
        mismatch of a chunk, replays it from the state saved before it."""
        return None

    def load_state(self, state: Any) -> None:
        """Restore a state from :meth:`save_state`."""

    def shown(self, bad: np.ndarray) -> np.ndarray:
        """The mismatching transactions to describe in full (the first :attr:`report_limit`)."""
        return bad[: self.report_limit]

    def more(self, bad: np.ndarray, noun: str) -> list[str]:
        """The line that counts the mismatches not described, if any."""
        rest = len(bad) - self.report_limit
        return [f"... and {rest} more mismatching {noun}"] if rest > 0 else []

    def define_coverage(self, cg: Covergroup) -> None:
        """Add cover points to ``cg``."""

    def samples(self, items: Sequence[Any], outs: Outs | list[dict[str, int]]) -> list[dict[str, Any]]:
        """One dict per transaction for the cover points (batch, after the run; ``items``
        and ``outs`` as for :meth:`check`). A unit that defines :meth:`sample_columns`
        instead gets this from it."""
        if type(self).sample_columns is StreamUnit.sample_columns:
            return []
        cols = self.sample_columns(items, outs)
        names = list(cols)
        return [dict(zip(names, row)) for row in zip(*(np.asarray(cols[k]).tolist() for k in names))]

    def sample_columns(self, items: Sequence[Any], outs: Outs | list[dict[str, int]]) -> dict[str, Any]:
        """The cover-point fields of many transactions, column by column (field -> one
        value per transaction): what the throughput mode samples. Override for speed;
        this default transposes :meth:`samples`."""
        rows = self.samples(items, outs)
        if not rows:
            return {}
        return {k: [r[k] for r in rows] for k in rows[0]}


def refuse_resets(unit: StreamUnit, items: Sequence[Any], mode: str) -> None:
    """The error for a stream that asks for a reset (:meth:`StreamUnit.resets`) in
    ``mode``, where only the per-edge testbench can reset mid-stream."""
    if len(items) and unit.resets(items).any():
        raise ValueError(f"{type(unit).__name__}: the stimulus asks for resets mid-stream (option resets), "
                         f"which only the per-edge testbench does, not the {mode} mode")


def segments(unit: StreamUnit, items: Sequence[Any]) -> list[tuple[int, int]]:
    """``[start, stop)`` of each run of transactions between resets (one for a stream
    without any): check and sample each from the golden model's state after reset."""
    cut = np.flatnonzero(unit.resets(items)).tolist() if len(items) else []
    bounds = sorted({0, *cut, len(items)})
    return list(zip(bounds[:-1], bounds[1:])) or [(0, 0)]


def by_segment(unit: StreamUnit, pairs: list[tuple[Beat, Beat]]):
    """``(start, items, outs)`` of each run between resets of the checked ``(in, out)``
    pairs, the unit's golden state restored to its state after reset before each (when
    there is more than one run): the scoreboard and the coverage walk them alike."""
    items = [i.meta for i, _ in pairs]
    parts = segments(unit, items)
    for a, b in parts:
        if len(parts) > 1:
            unit.load_state(unit.initial_state)
        yield a, items[a:b], [o.fields for _, o in pairs[a:b]]


class GoldenFlagsQuiet:
    """:meth:`StreamUnit.quiet` for a stateless unit whose ``golden(items)`` returns the
    block flags last: the first transaction whose golden flags are 0. Mix in before
    :class:`StreamUnit`."""

    def quiet(self, items: Sequence[Any]) -> int | None:
        k = np.flatnonzero(np.asarray(self.golden(items)[-1]) == 0)
        return int(k[0]) if len(k) else None


class StreamBfm:
    """Owns the DUT's signals: cycle counter, input source and output sink."""

    def __init__(self, dut, ctx: TbContext, unit: StreamUnit) -> None:
        self.unit = unit
        self.counter = CycleCounter(dut.clk)
        p_idle, p_bp = float(ctx.opt("idle", 0.2)), float(ctx.opt("backpressure", 0.3))
        if ctx.opt("pauses", "random") == "cycle":  # the throughput harness's pattern, cycle for cycle
            from .twin import CyclePauses, pause_seeds

            s_idle, s_bp = pause_seeds(ctx.seed)
            idle, bp = CyclePauses(self.counter, s_idle, p_idle), CyclePauses(self.counter, s_bp, p_bp)
        else:
            idle, bp = random_pauses(ctx.seed + 1, p_idle), random_pauses(ctx.seed + 2, p_bp)
        self.source = StreamSource(dut, self.counter, "in", unit.in_fields, idle)
        also = {"err": dut.err} if "err" in ctx.record["ports"] else None   # sampled with each beat
        self.sink = StreamSink(dut, self.counter, "out", unit.out_fields, bp, also=also)

    async def send(self, item: Any) -> None:
        """Queue one transaction on the input stream."""
        await self.source.send(Beat(self.unit.encode(item), meta=item))

    async def drained(self, count: int) -> None:
        """Return once ``count`` transactions are in and out: nothing in flight."""
        await self.source.idle.wait()
        while self.sink.count < count:
            await RisingEdge(self.counter.clk)


class StreamSeq(ListSeq):
    """All of the unit's stimulus, generated up front from the test's seed."""

    async def body(self) -> None:
        unit: StreamUnit = ConfigDB().get(None, "", "UNIT")
        ctx: TbContext = ConfigDB().get(None, "", "CTX")
        count = int(ctx.opt("blocks", unit.default_count))
        # Drawn chunk by chunk, as the throughput mode draws them: one seed, one stream.
        rng, objs = np.random.default_rng(ctx.seed), []
        for base in range(0, count, CHUNK):
            objs += unit.draw(rng, min(CHUNK, count - base))
        self.objs, self.prefix = objs, "t"
        unit.reset_at = set(np.flatnonzero(unit.resets(objs)).tolist()) - {0} if objs else set()
        await super().body()


class StreamDriver(uvm_driver):
    """Hands sequence items to the BFM."""

    def connect_phase(self) -> None:
        self.bfm: StreamBfm = ConfigDB().get(self, "", "BFM")

    async def run_phase(self) -> None:
        k = 0
        while True:
            seq_item = await self.seq_item_port.get_next_item()
            if k in self.bfm.unit.reset_at:   # drained, then reset (StreamUnit.resets)
                await self.bfm.drained(k)
                await pulse_reset(cocotb.top)
            await self.bfm.send(seq_item.obj)
            self.seq_item_port.item_done()
            k += 1


class PairMonitor(uvm_component):
    """Pairs output beats with accepted inputs in order; publishes ``(in, out)`` on ``ap``.

    Inputs never matched stay in ``unmatched`` (a lost transaction), outputs with
    no input in ``extra`` (an invented one).
    """

    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)
        self.unmatched: list[Beat] = []
        self.extra: list[Beat] = []

    def connect_phase(self) -> None:
        self.bfm: StreamBfm = ConfigDB().get(self, "", "BFM")

    async def run_phase(self) -> None:
        cocotb.start_soon(self._inputs())
        while True:
            out = await self.bfm.sink.received.get()
            if self.unmatched:
                self.ap.write((self.unmatched.pop(0), out))
            else:
                self.extra.append(out)

    async def _inputs(self) -> None:
        while True:
            self.unmatched.append(await self.bfm.source.sent.get())


def _drain(fifo: uvm_tlm_analysis_fifo) -> list[Any]:
    out = []
    while True:
        ok, x = fifo.try_get()
        if not ok:
            return out
        out.append(x)


class StreamScoreboard(uvm_component):
    """Golden-model comparison of every pair, plus count, order, timing and sticky err."""

    def build_phase(self) -> None:
        self.fifo = uvm_tlm_analysis_fifo("fifo", self)
        self.export = self.fifo.analysis_export

    def check_phase(self) -> None:
        ctx: TbContext = ConfigDB().get(self, "", "CTX")
        unit: StreamUnit = ConfigDB().get(self, "", "UNIT")
        monitor: PairMonitor = ConfigDB().get(self, "", "MONITOR")
        latency = int(ctx.record["timing"]["latency"])
        pairs = _drain(self.fifo)
        errors: list[str] = []
        if monitor.unmatched:
            errors.append(f"{len(monitor.unmatched)} accepted transaction(s) never came out")
        if monitor.extra:
            errors.append(f"{len(monitor.extra)} output beat(s) with no input")
        mismatches = 0
        if not pairs:
            errors.append("no transaction was checked")
        else:
            runs = []   # the outputs of each run between resets
            for a, items, outs in by_segment(unit, pairs):
                errs, bad, sticky = unit.check(items, outs)
                errors += [f"after the reset before transaction {a}: {e}" for e in errs] if a else errs
                mismatches += bad
                runs.append(outs)
            late = [k for k, (i, o) in enumerate(pairs) if o.first_valid - i.cycle != latency]
            for k in late[:5]:
                i, o = pairs[k]
                errors.append(
                    f"transaction {k}: accepted at cycle {i.cycle}, first valid at "
                    f"{o.first_valid}; the record says latency {latency}"
                )
            ctx.summary["late"] = len(late)
            if sticky is not None:
                for outs in runs:   # err restarts from 0 at each reset
                    errors += sticky_beats(outs)[0]
                dut_err = int(cocotb.top.err.value)
                if dut_err != sticky:
                    errors.append(f"sticky err={dut_err:#x}, golden OR of flags={sticky:#x}")
        ctx.summary.update(blocks=len(pairs), transactions=len(pairs), mismatches=int(mismatches), errors=errors[:20])
        if ctx.opt("dump_stream", False):  # the stream as the throughput mode records it
            from .twin import stream_record

            bfm: StreamBfm = ConfigDB().get(self, "", "BFM")
            origin = getattr(bfm.source.pauses, "origin", None)
            if origin is None:
                raise ValueError("dump_stream needs pauses=cycle (cycle stamps from the first edge out of reset)")
            rec = stream_record(np.array([i.cycle for i, _ in pairs]) - origin, [o.fields for _, o in pairs],
                                np.array([o.cycle for _, o in pairs]) - origin,
                                np.array([o.first_valid for _, o in pairs]) - origin,
                                [unit.encode(i.meta) for i, _ in pairs])
            (ctx.results / "stream.json").write_text(json.dumps(rec))
        ctx.write_summary()  # also when failing: the runner reports what went wrong
        for e in errors:
            self.logger.error(e)
        assert not errors, f"{len(errors)} scoreboard error(s); first: {errors[0]}"


class StreamCoverage(uvm_component):
    """Samples the unit's cover group with every (input, output) pair, in one batch."""

    def build_phase(self) -> None:
        self.fifo = uvm_tlm_analysis_fifo("fifo", self)
        self.export = self.fifo.analysis_export
        unit: StreamUnit = ConfigDB().get(self, "", "UNIT")
        self.cg = Covergroup(unit.covergroup)
        self.cg.point("stalled", lambda t: t["stalled"], [False, True])
        unit.define_coverage(self.cg)

    def extract_phase(self) -> None:
        unit: StreamUnit = ConfigDB().get(self, "", "UNIT")
        pairs = _drain(self.fifo)
        if not pairs:
            return
        samples = []
        for _, items, outs in by_segment(unit, pairs):
            samples += unit.samples(items, outs) or [{} for _ in items]
        for (_, o), s in zip(pairs, samples):
            self.cg.sample({**s, "stalled": o.cycle > o.first_valid})


class StreamEnv(uvm_env):
    """Sequencer, driver, pair monitor, scoreboard and coverage for one unit."""

    def build_phase(self) -> None:
        self.seqr = uvm_sequencer("seqr", self)
        self.driver = StreamDriver("driver", self)
        self.monitor = PairMonitor("monitor", self)
        self.scoreboard = StreamScoreboard("scoreboard", self)
        self.coverage = StreamCoverage("coverage", self)
        ConfigDB().set(None, "*", "MONITOR", self.monitor)

    def connect_phase(self) -> None:
        self.driver.seq_item_port.connect(self.seqr.seq_item_export)
        self.monitor.ap.connect(self.scoreboard.export)
        self.monitor.ap.connect(self.coverage.export)


class StreamTest(uvm_test):
    """Random stimulus with idle cycles and back-pressure, checked against the model.

    Subclasses set ``UNIT``.
    """

    UNIT: ClassVar[type[StreamUnit]]

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        unit = self.UNIT(ctx, self.UNIT.params_type.from_dict(ctx.params))
        ConfigDB().set(None, "*", "CTX", ctx)
        ConfigDB().set(None, "*", "UNIT", unit)
        ConfigDB().set(None, "*", "BFM", StreamBfm(cocotb.top, ctx, unit))
        unit.initial_state = unit.save_state()   # the golden state after reset (segments)
        self.ctx, self.unit = ctx, unit
        self.env = StreamEnv("env", self)

    async def run_phase(self) -> None:
        self.raise_objection()
        bfm: StreamBfm = ConfigDB().get(self, "", "BFM")
        # The stimulus is queued during reset, so the source can offer it on the first
        # edge out of reset (cycle 0), as the throughput harness's player does.
        seq = cocotb.start_soon(StreamSeq("seq").start(self.env.seqr))
        await start(cocotb.top)
        count = int(self.ctx.opt("blocks", self.unit.default_count))
        latency = int(self.ctx.record["timing"]["latency"])
        # Watchdog from the cycle model: one transaction per cycle stretched by the idle
        # and back-pressure rates, plus the latency; x4 margin. A hang fails here.
        idle, bp = float(self.ctx.opt("idle", 0.2)), float(self.ctx.opt("backpressure", 0.3))
        t0 = bfm.counter.cycle

        async def body() -> None:
            await seq
            while bfm.sink.count < count:
                await RisingEdge(cocotb.top.clk)

        # (each reset mid-stream drains the pipeline: latency, 2 edges and the last beat's back-pressure)
        resets = len(self.unit.reset_at)
        budget = int(4 * (count / ((1 - idle) * (1 - bp)) + (resets + 1) * (latency + 50)))
        try:
            await with_timeout(body(), budget * CLOCK_NS, "ns")
        except SimTimeoutError as exc:
            raise AssertionError(
                f"watchdog: {bfm.sink.count}/{count} transactions out after {budget} cycles "
                f"(limit from the cycle model)"
            ) from exc
        await ClockCycles(cocotb.top.clk, latency + 2)  # let a stray extra output show up
        self.ctx.summary["cycles"] = bfm.counter.cycle - t0
        self.drop_objection()

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)
