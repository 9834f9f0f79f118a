"""pyuvm environment shared by the gemm family's block testbenches: ``ld_detect``,
``kernel_select`` (:mod:`.detect_env`) and ``sa_cache`` (:mod:`.cache_env`); the ports and
cycle behaviour are docs/gemm.md sections 2, 3, 5 and 9.

A block's testbench supplies one :class:`BlockUnit` subclass (stimulus items, how to drive
one item, the golden-model check, cover points); everything else is shared:

* :class:`BlockBfm` owns the pins and the cycle count. Every input is driven just after a
  falling edge and every output read 1 ns later, still in the same cycle: registered
  outputs show the cycle's state, combinational ones follow the inputs of that cycle, and
  an input written there is taken by the next rising edge (the edge that ends the cycle).
* :class:`~lockstep.verif.seq.ListSeq` -> :class:`BlockDriver` run the items one after the other; the driver
  hands each to :meth:`BlockUnit.drive` and publishes ``(item, observation)``.
* :class:`BlockScoreboard` asks :meth:`BlockUnit.check` (the golden model) about every
  item; :class:`BlockCoverage` samples the unit's cover group with every sample of
  :meth:`BlockUnit.samples`.
* :class:`BlockTest` starts clock and reset, runs everything under a watchdog from the
  items' cycle budgets and writes ``summary.json``.

The unit's parameters are the ones the *testbench* believes (``LOCKSTEP_TB_PARAMS``);
port widths come from the DUT's record, so a negative test's DUT (other parameters, same
ports) still gets driven.
"""

from __future__ import annotations

from typing import Any, ClassVar

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, SimTimeoutError, Timer, with_timeout
from pyuvm import (
    ConfigDB,
    uvm_analysis_port,
    uvm_driver,
    uvm_subscriber,
    uvm_test,
)

from lockstep.models.gemm.params import GemmParams

from ..context import CLOCK_NS, TbContext, start
from ..coverage import Covergroup
from ..seq import DriverEnv, ListSeq

__all__ = ["BlockBfm", "BlockTest", "BlockUnit"]


class BlockBfm:
    """All pin-level access to one block.

    Args:
        dut: the DUT handle.
        record: the generator's record of the DUT (port widths).
        idle: input port -> value driven when nothing else is.
    """

    def __init__(self, dut: Any, record: dict[str, Any], idle: dict[str, int]) -> None:
        self.dut = dut
        self.widths = {n: int(p["width"]) for n, p in record["ports"].items()}
        self.idle = dict(idle)
        self.cycle = 0  # cycles since the test's reset ended
        self.problems: list[str] = []
        self.drive(idle)

    def drive(self, values: dict[str, int]) -> None:
        """Drive inputs (masked to their port width) for the current cycle."""
        for name, v in values.items():
            getattr(self.dut, name).value = int(v) & ((1 << self.widths[name]) - 1)

    async def next_cycle(self, values: dict[str, int] | None = None) -> None:
        """Go to the next cycle's falling edge and drive ``values`` over the idle inputs."""
        await FallingEdge(self.dut.clk)
        self.cycle += 1
        self.drive({**self.idle, **(values or {})})

    async def settle(self) -> None:
        """Let combinational outputs follow inputs written in this cycle."""
        await Timer(1, "ns")

    def read(self, names: list[str] | tuple[str, ...]) -> dict[str, int]:
        """Output values now (X or Z is a problem, read as 0)."""
        out = {}
        for n in names:
            v = getattr(self.dut, n).value
            if not v.is_resolvable:
                if len(self.problems) < 10:
                    self.problems.append(f"cycle {self.cycle}: {n} is {v}")
                out[n] = 0
            else:
                out[n] = int(v)
        return out


class BlockUnit:
    """What a testbench knows about one block. Subclass and fill in.

    Class attributes:
        idle: input ports -> value driven when idle.
        covergroup: name of the unit's cover group.
        default_items: items per run unless the ``items`` option says otherwise.

    Args:
        ctx: the runner context.
        params: the parameters the testbench checks against.
        widths: the DUT's port widths (from its record).
    """

    idle: ClassVar[dict[str, int]] = {}
    covergroup: ClassVar[str]
    default_items: ClassVar[int] = 40

    def __init__(self, ctx: TbContext, params: GemmParams, widths: dict[str, int]) -> None:
        self.ctx = ctx
        self.params = params
        self.widths = widths

    def items(self, rng: np.random.Generator, count: int) -> list[Any]:
        """The run's items, directed ones first."""
        raise NotImplementedError

    def budget(self, item: Any) -> int:
        """Most cycles the item may take (the watchdog)."""
        raise NotImplementedError

    async def drive(self, bfm: BlockBfm, item: Any) -> Any:
        """Run one item on the DUT and return what was observed. On entry and on return
        the BFM is in a cycle whose outputs were read and whose inputs may still change."""
        raise NotImplementedError

    def check(self, item: Any, obs: Any) -> list[str]:
        """Compare one item with the golden model; the errors (empty when it matched)."""
        raise NotImplementedError

    def define_coverage(self, cg: Covergroup) -> None:
        """Add cover points to ``cg``."""

    def samples(self, item: Any, obs: Any) -> list[Any]:
        """The cover-group samples of one item."""
        return []


class BlockDriver(uvm_driver):
    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)

    def connect_phase(self) -> None:
        self.bfm: BlockBfm = ConfigDB().get(self, "", "BFM")
        self.unit: BlockUnit = ConfigDB().get(self, "", "UNIT")

    async def run_phase(self) -> None:
        while True:
            it = await self.seq_item_port.get_next_item()
            obs = await self.unit.drive(self.bfm, it.obj)
            self.ap.write((it.obj, obs))
            self.seq_item_port.item_done()


class BlockScoreboard(uvm_subscriber):
    """Golden-model comparison of every item (through :meth:`BlockUnit.check`)."""

    def build_phase(self) -> None:
        self.errors: list[str] = []
        self.items = 0
        self.bad = 0

    def write(self, msg: tuple[Any, Any]) -> None:
        item, obs = msg
        unit: BlockUnit = ConfigDB().get(self, "", "UNIT")
        errs = unit.check(item, obs)
        self.items += 1
        if errs:
            self.bad += 1
            self.errors += [f"item {self.items - 1} ({item!r}): {e}" for e in errs]


class BlockCoverage(uvm_subscriber):
    def build_phase(self) -> None:
        unit: BlockUnit = ConfigDB().get(self, "", "UNIT")
        self.cg = Covergroup(unit.covergroup)
        unit.define_coverage(self.cg)

    def write(self, msg: tuple[Any, Any]) -> None:
        unit: BlockUnit = ConfigDB().get(self, "", "UNIT")
        for s in unit.samples(*msg):
            self.cg.sample(s)


class BlockEnv(DriverEnv):
    DRIVER, SCOREBOARD, COVERAGE = BlockDriver, BlockScoreboard, BlockCoverage


class BlockTest(uvm_test):
    """Every item of the unit, checked against the golden model. Subclasses set :attr:`UNIT`."""

    UNIT: ClassVar[type[BlockUnit]]

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        params = GemmParams.from_dict(ctx.params)
        bfm = BlockBfm(cocotb.top, ctx.record, self.UNIT.idle)
        unit = self.UNIT(ctx, params, bfm.widths)
        ConfigDB().set(None, "*", "UNIT", unit)
        ConfigDB().set(None, "*", "BFM", bfm)
        self.items = unit.items(np.random.default_rng(ctx.seed), int(ctx.opt("items", unit.default_items)))
        ConfigDB().set(None, "*", "ITEMS", self.items)
        self.ctx, self.unit, self.bfm = ctx, unit, bfm
        self.env = BlockEnv("env", self)

    async def run_phase(self) -> None:
        self.raise_objection()
        await start(cocotb.top)
        await self.bfm.next_cycle()  # the first idle cycle
        await self.bfm.settle()
        budget = 2 * sum(self.unit.budget(i) for i in self.items) + 100  # a hang fails here
        try:
            await with_timeout(ListSeq("seq", "ITEMS", prefix="item").start(self.env.seqr), budget * CLOCK_NS, "ns")
        except SimTimeoutError as exc:
            raise AssertionError(f"watchdog: {self.env.scoreboard.items}/{len(self.items)} items done after "
                                 f"{budget} cycles (limit from the items' cycle budgets)") from exc
        self.ctx.summary["cycles"] = self.bfm.cycle
        self.drop_objection()

    def check_phase(self) -> None:
        sb = self.env.scoreboard
        errors = list(self.bfm.problems) + sb.errors
        if sb.items != len(self.items):
            errors.append(f"{sb.items} of {len(self.items)} items checked")
        self.ctx.summary.update(blocks=sb.items, mismatches=sb.bad, errors=errors[:20])
        self.ctx.finish(errors, self.logger)

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)
