"""The sequence side every pyuvm environment here shares: transactions are generated up
front from the run's seed (so a seed replays the whole run), wrapped one by one in a
sequence item and handed to the environment's driver in order."""

from __future__ import annotations

from typing import Any, ClassVar, Iterable

from pyuvm import ConfigDB, uvm_env, uvm_sequence, uvm_sequence_item, uvm_sequencer

__all__ = ["DriverEnv", "Item", "ListSeq"]


class Item(uvm_sequence_item):
    """A sequence item carrying one transaction (``obj``: any object the driver knows)."""

    def __init__(self, name: str, obj: Any) -> None:
        super().__init__(name)
        self.obj = obj


class ListSeq(uvm_sequence):
    """Sends the transactions stored in ConfigDB under ``key`` (or given as ``objs``).

    Args:
        name: the sequence's name.
        key: the ConfigDB key of the list (``"JOBS"``, ``"ITEMS"``).
        objs: the transactions themselves, instead of a ConfigDB key.
        prefix: names of the items (``job0``, ``job1``...).
    """

    def __init__(self, name: str, key: str = "JOBS", objs: Iterable[Any] | None = None, prefix: str = "job") -> None:
        super().__init__(name)
        self.key = key
        self.objs = objs
        self.prefix = prefix

    async def body(self) -> None:
        objs = self.objs if self.objs is not None else ConfigDB().get(None, "", self.key)
        for i, obj in enumerate(objs):
            item = Item(f"{self.prefix}{i}", obj)
            await self.start_item(item)
            await self.finish_item(item)


class DriverEnv(uvm_env):
    """The environment most testbenches here share: a sequencer feeds the driver, whose
    analysis port feeds the scoreboard and the coverage collector. A subclass names the
    three component classes (``DRIVER``, ``SCOREBOARD``, ``COVERAGE``)."""

    DRIVER: ClassVar[type]
    SCOREBOARD: ClassVar[type]
    COVERAGE: ClassVar[type]

    def build_phase(self) -> None:
        self.seqr = uvm_sequencer("seqr", self)
        self.driver = self.DRIVER("driver", self)
        self.scoreboard = self.SCOREBOARD("scoreboard", self)
        self.coverage = self.COVERAGE("coverage", self)

    def connect_phase(self) -> None:
        self.driver.seq_item_port.connect(self.seqr.seq_item_export)
        self.driver.ap.connect(self.scoreboard.analysis_export)
        self.driver.ap.connect(self.coverage.analysis_export)
