"""pyuvm environment for the BFP quantizer (float32 block -> shared exponent + mantissas).

Layout (the same in every family): a BFM owns the DUT's signals; the driver, monitor,
scoreboard and coverage collector are UVM components that only see transactions.

* :class:`QuantBfm` wraps a :class:`StreamSource` on ``in_*`` and a
  :class:`StreamSink` on ``out_*``.
* :class:`QuantSeq` makes constrained-random blocks (:mod:`.stimulus`) and, at a given
  rate, forced-exponent blocks (the patent's Table 2 mode).
* :class:`QuantScoreboard` predicts every output with :func:`lockstep.models.bfp.quantize`
  in one vectorised call and compares value, order, count and timing (first valid
  exactly ``latency`` cycles after acceptance, from the generator's record).
* :class:`QuantCoverage` samples cocotb-coverage cover points.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import cocotb
import numpy as np
import pyuvm
from cocotb.triggers import ClockCycles, RisingEdge, SimTimeoutError, with_timeout
from pyuvm import (
    ConfigDB,
    uvm_analysis_port,
    uvm_component,
    uvm_driver,
    uvm_env,
    uvm_sequence,
    uvm_sequence_item,
    uvm_sequencer,
    uvm_test,
    uvm_tlm_analysis_fifo,
)

from lockstep.models import bfp
from lockstep.models.formats import BfpFormat
from lockstep.verif.agents.stream import Beat, CycleCounter, StreamSink, StreamSource, random_pauses
from lockstep.verif.context import CLOCK_NS, TbContext, start
from lockstep.verif.coverage import Covergroup
from lockstep.verif.packing import pack_lanes, unpack_lanes, to_signed

from .stimulus import KINDS, float_blocks

__all__ = ["QuantItem", "QuantBfm", "QuantSeq", "QuantEnv", "QuantTest"]


@dataclass
class QuantItem:
    """One input block and, once seen, its output.

    Attributes:
        bits: ``n`` float32 bit patterns.
        force: use ``exp`` instead of Eq. 4.
        exp: forced exponent.
        kind: stimulus kind (for coverage).
    """

    bits: np.ndarray
    force: bool = False
    exp: int = 0
    kind: str = "gauss"


class QuantSeqItem(uvm_sequence_item):
    """Sequence item carrying a :class:`QuantItem`."""

    def __init__(self, name: str, item: QuantItem) -> None:
        super().__init__(name)
        self.item = item


class QuantBfm:
    """Owns the quantizer's signals: input source, output sink, cycle counter.

    Args:
        dut: the DUT.
        ctx: runner context (pause rates come from its options).
        fmt: the format the testbench assumes.
    """

    def __init__(self, dut, ctx: TbContext, fmt: BfpFormat) -> None:
        self.dut = dut
        self.fmt = fmt
        self.counter = CycleCounter(dut.clk)
        seed = ctx.seed
        self.source = StreamSource(
            dut, self.counter, "in", ["data", "force", "exp"], random_pauses(seed + 1, ctx.opt("idle", 0.2))
        )
        self.sink = StreamSink(
            dut, self.counter, "out", ["data", "exp", "flags"], random_pauses(seed + 2, ctx.opt("backpressure", 0.3))
        )

    async def send(self, item: QuantItem) -> None:
        """Queue one block on the input stream."""
        fields = {
            "data": pack_lanes(item.bits, 32),
            "force": int(item.force),
            "exp": int(item.exp) & ((1 << self.fmt.e) - 1),
        }
        await self.source.send(Beat(fields, meta=item))


class QuantSeq(uvm_sequence):
    """Constrained-random blocks biased to corners; some with a forced exponent."""

    async def body(self) -> None:
        ctx: TbContext = ConfigDB().get(None, "", "CTX")
        fmt: BfpFormat = ConfigDB().get(None, "", "FMT")
        rng = np.random.default_rng(ctx.seed)
        count = int(ctx.opt("blocks", 400))
        bits, kinds = float_blocks(rng, fmt, count)
        force = rng.random(count) < float(ctx.opt("force_rate", 0.1))
        exps = rng.integers(fmt.e_min, fmt.e_max + 1, size=count)
        names = list(KINDS)
        for i in range(count):
            item = QuantSeqItem(f"blk{i}", QuantItem(bits[i], bool(force[i]), int(exps[i]), names[kinds[i]]))
            await self.start_item(item)
            await self.finish_item(item)


class QuantDriver(uvm_driver):
    """Hands sequence items to the BFM."""

    def connect_phase(self) -> None:
        self.bfm: QuantBfm = ConfigDB().get(self, "", "BFM")

    async def run_phase(self) -> None:
        while True:
            seq_item = await self.seq_item_port.get_next_item()
            await self.bfm.send(seq_item.item)
            self.seq_item_port.item_done()


class QuantMonitor(uvm_component):
    """Pairs each output block with the input accepted in the same order.

    Publishes ``(in_beat, out_beat)`` on ``ap``; inputs still unmatched at the end are in
    :attr:`unmatched` (a lost block), extra outputs in :attr:`extra` (an invented one).
    """

    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)
        self.unmatched: list[Beat] = []
        self.extra: list[Beat] = []

    def connect_phase(self) -> None:
        self.bfm: QuantBfm = ConfigDB().get(self, "", "BFM")

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


def _pairs(fifo) -> list[tuple[Beat, Beat]]:
    """Everything an analysis FIFO holds, in order."""
    out = []
    while True:
        ok, pair = fifo.try_get()
        if not ok:
            return out
        out.append(pair)


class QuantScoreboard(uvm_component):
    """Compares every output block with the golden model: value, order, count, timing."""

    def build_phase(self) -> None:
        self.fifo = uvm_tlm_analysis_fifo("fifo", self)
        self.export = self.fifo.analysis_export
        self.errors: list[str] = []

    def check_phase(self) -> None:
        ctx: TbContext = ConfigDB().get(self, "", "CTX")
        fmt: BfpFormat = ConfigDB().get(self, "", "FMT")
        monitor: QuantMonitor = ConfigDB().get(self, "", "MONITOR")
        latency = int(ctx.record["timing"]["latency"])
        pairs = _pairs(self.fifo)
        if monitor.unmatched:
            self.errors.append(f"{len(monitor.unmatched)} accepted block(s) never came out")
        if monitor.extra:
            self.errors.append(f"{len(monitor.extra)} output block(s) with no input")
        n = len(pairs)
        if n == 0:
            self.errors.append("no block was checked")
        else:
            self._compare(ctx, fmt, latency, pairs)
        ctx.summary.update(blocks=n, errors=self.errors[:20])
        ctx.write_summary()  # also when failing: the runner reports what went wrong
        for e in self.errors:
            self.logger.error(e)
        assert not self.errors, f"{len(self.errors)} scoreboard error(s); first: {self.errors[0]}"

    def _compare(self, ctx: TbContext, fmt: BfpFormat, latency: int, pairs) -> None:
        items: list[QuantItem] = [i.meta for i, _ in pairs]
        outs = [o for _, o in pairs]
        n = len(pairs)
        bits = np.array([it.bits for it in items], dtype=np.uint32).reshape(n, fmt.n)
        force = np.array([it.force for it in items], dtype=bool)
        exp_forced = np.array([it.exp for it in items], dtype=np.int64)
        g_exp, g_man, g_flg = bfp.quantize(bits, fmt)
        if force.any():
            fe, fm, ff = bfp.quantize(bits[force], fmt, exp=exp_forced[force])
            g_exp[force], g_man[force], g_flg[force] = fe, fm, ff
        d_man = np.array([unpack_lanes(o.fields["data"], fmt.w, fmt.n, signed=True) for o in outs])
        d_exp = np.array([to_signed(o.fields["exp"], fmt.e) for o in outs], dtype=np.int64)
        d_flg = np.array([o.fields["flags"] for o in outs], dtype=np.int64)
        bad = np.flatnonzero((d_exp != g_exp) | (d_flg != g_flg) | (d_man != g_man).any(axis=1))
        for i in bad[:10]:
            forced = f", forced exp {items[i].exp}" if items[i].force else ""
            self.errors.append(
                f"block {i} ({items[i].kind}{forced}): input {[hex(v) for v in bits[i]]}\n"
                f"    DUT    exp={d_exp[i]} flags={d_flg[i]:#04x} m={d_man[i].tolist()}\n"
                f"    golden exp={g_exp[i]} flags={g_flg[i]:#04x} m={g_man[i].tolist()}"
            )
        if len(bad) > 10:
            self.errors.append(f"... and {len(bad) - 10} more mismatching blocks")
        late = [k for k, (i, o) in enumerate(pairs) if o.first_valid - i.cycle != latency]
        for k in late[:5]:
            i, o = pairs[k]
            self.errors.append(
                f"block {k}: accepted at cycle {i.cycle}, first valid at {o.first_valid}; "
                f"expected latency {latency}"
            )
        sticky = int(np.bitwise_or.reduce(g_flg))
        dut_err = int(cocotb.top.err.value)
        if dut_err != sticky:
            self.errors.append(f"sticky err={dut_err:#04x}, golden OR of flags={sticky:#04x}")
        ctx.summary.update(mismatches=int(len(bad)), late=len(late))


class QuantCoverage(uvm_component):
    """Functional coverage of (input, output) block pairs, sampled in one batch."""

    def build_phase(self) -> None:
        self.fifo = uvm_tlm_analysis_fifo("fifo", self)
        self.export = self.fifo.analysis_export
        fmt: BfpFormat = ConfigDB().get(self, "", "FMT")
        self.fmt = fmt
        cg = Covergroup("bfp.quantizer")
        for name, bit in bfp.FLAG_NAMES.items():
            cg.point(f"flag_{name}", lambda t, b=bit: bool(t["flags"] & b), [False, True])
        cg.point(
            "exponent",
            lambda t: "e_min" if t["exp"] == fmt.e_min else "e_max" if t["exp"] == fmt.e_max
            else "neg" if t["exp"] < 0 else "zero" if t["exp"] == 0 else "pos",
            ["e_min", "neg", "zero", "pos", "e_max"],
        )
        cg.point("forced", lambda t: t["force"], [False, True])
        cg.point("kind", lambda t: t["kind"], list(KINDS))
        if fmt.rounding == "rne":
            cg.point("round_up", lambda t: t["round_up"], [False, True])
        cg.point("stalled", lambda t: t["stalled"], [False, True])
        self.cg = cg

    def extract_phase(self) -> None:
        pairs = _pairs(self.fifo)
        if not pairs:
            return
        fmt = self.fmt
        bits = np.array([i.meta.bits for i, _ in pairs], dtype=np.uint32)
        # A round-up is an element whose RNE magnitude exceeds its truncated magnitude.
        _, m_t, _ = bfp.quantize(bits, dataclasses.replace(fmt, rounding="trunc"))
        for (i, o), mt in zip(pairs, m_t):
            m = unpack_lanes(o.fields["data"], fmt.w, fmt.n, signed=True)
            self.cg.sample(
                {
                    "flags": o.fields["flags"],
                    "exp": to_signed(o.fields["exp"], fmt.e),
                    "force": i.meta.force,
                    "kind": i.meta.kind,
                    "round_up": bool((np.abs(m) > np.abs(mt)).any()),
                    "stalled": o.cycle > o.first_valid,
                }
            )


class QuantEnv(uvm_env):
    """Sequencer, driver, monitor, scoreboard and coverage for one quantizer."""

    def build_phase(self) -> None:
        self.seqr = uvm_sequencer("seqr", self)
        self.driver = QuantDriver("driver", self)
        self.monitor = QuantMonitor("monitor", self)
        self.scoreboard = QuantScoreboard("scoreboard", self)
        self.coverage = QuantCoverage("coverage", self)
        ConfigDB().set(None, "*", "MONITOR", self.monitor)

    def connect_phase(self) -> None:
        self.driver.seq_item_port.connect(self.seqr.seq_item_export)
        self.monitor.ap.connect(self.scoreboard.export)
        self.monitor.ap.connect(self.coverage.export)


class QuantTest(uvm_test):
    """Random blocks with idle cycles and back-pressure, checked against the model."""

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        fmt = BfpFormat.from_dict(ctx.params)
        ConfigDB().set(None, "*", "CTX", ctx)
        ConfigDB().set(None, "*", "FMT", fmt)
        ConfigDB().set(None, "*", "BFM", QuantBfm(cocotb.top, ctx, fmt))
        self.ctx, self.fmt = ctx, fmt
        self.env = QuantEnv("env", self)

    async def run_phase(self) -> None:
        self.raise_objection()
        bfm: QuantBfm = ConfigDB().get(self, "", "BFM")
        await start(cocotb.top)
        count = int(self.ctx.opt("blocks", 400))
        # Watchdog from the cycle model: one block per cycle, stretched by the idle and
        # back-pressure rates, plus latency; x4 margin. A hang fails here with a message.
        idle, bp = float(self.ctx.opt("idle", 0.2)), float(self.ctx.opt("backpressure", 0.3))
        budget = int(4 * (count / ((1 - idle) * (1 - bp)) + 50))
        t0 = bfm.counter.cycle

        async def body() -> None:
            await QuantSeq("seq").start(self.env.seqr)
            while bfm.sink.count < count:
                await RisingEdge(cocotb.top.clk)

        try:
            await with_timeout(body(), budget * CLOCK_NS, "ns")
        except SimTimeoutError as exc:
            raise AssertionError(
                f"watchdog: {bfm.sink.count}/{count} blocks out after {budget} cycles "
                f"(limit from the cycle model)"
            ) from exc
        await ClockCycles(cocotb.top.clk, 2)  # let a stray extra output show up
        self.ctx.summary["cycles"] = bfm.counter.cycle - t0
        self.drop_objection()

    def report_phase(self) -> None:
        self.ctx.summary.update(self.env.coverage.cg.summary())
        self.ctx.summary["coverage_file"] = str(self.env.coverage.cg.export(self.ctx.results))
        self.ctx.write_summary()
