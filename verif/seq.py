"""The sequence side every pyuvm environment here shares: transactions are generated up
front from the run's seed (so a seed replays the whole run), wrapped one by one in a
sequence item and handed to the environment's driver in order."""

from __future__ import annotations

from typing import Any, Iterable

from pyuvm import ConfigDB, uvm_sequence, uvm_sequence_item

__all__ = ["Item", "ListSeq"]


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
