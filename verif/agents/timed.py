"""Counter-timed agents: load a memory through a load port, sample taps every cycle.

Counter-timed blocks have no handshake to wait on: their monitors record, in every
cycle, what the taps show, with the cycle it happened in. :class:`TapSampler` reads a
fixed set of signals once per clock (in the read-only phase after the rising edge, so
registered outputs have settled) and hands the integer values to a callback; the
callback turns them into events. :class:`LoadPort` writes words through a
``we/sel/addr/data`` port, one per clock.
"""

from __future__ import annotations

from typing import Callable, Iterable

from cocotb.handle import SimHandleBase
from cocotb.triggers import ReadOnly, RisingEdge

__all__ = ["LoadPort", "TapSampler"]


class LoadPort:
    """Writes words through ``<prefix>_we``, ``_sel``, ``_addr``, ``_data`` (and optional
    ``_tile``) one per clock.

    Args:
        dut: the DUT handle.
        prefix: port name prefix (``"ld"``).
    """

    def __init__(self, dut: SimHandleBase, prefix: str = "ld") -> None:
        self.clk = dut.clk
        self.we = getattr(dut, f"{prefix}_we")
        self.sel = getattr(dut, f"{prefix}_sel")
        self.addr = getattr(dut, f"{prefix}_addr")
        self.data = getattr(dut, f"{prefix}_data")
        self.tile = getattr(dut, f"{prefix}_tile", None)
        self.words = 0

    def idle(self) -> None:
        """Drive the port inactive."""
        self.we.value = 0
        self.sel.value = 0
        self.addr.value = 0
        self.data.value = 0
        if self.tile is not None:
            self.tile.value = 0

    async def write(self, sel: int, words: Iterable[int], tile: int = 0, base: int = 0) -> None:
        """Write ``words`` at ``base``, ``base + 1``, ... of memory ``sel`` of ``tile``."""
        for i, w in enumerate(words):
            self.we.value = 1
            self.sel.value = sel
            self.addr.value = base + i
            self.data.value = int(w)
            if self.tile is not None:
                self.tile.value = tile
            await RisingEdge(self.clk)
            self.words += 1
        self.idle()


class TapSampler:
    """Reads ``signals`` once per clock and calls ``on_cycle(k, values)``.

    Args:
        clk: the clock.
        signals: name -> handle; values are read as unsigned integers.
        on_cycle: called with the sample index (0 = the first cycle sampled) and a dict
            name -> int. X or Z on a tap is an error, not a zero.
    """

    def __init__(self, clk: SimHandleBase, signals: dict[str, SimHandleBase],
                 on_cycle: Callable[[int, dict[str, int]], None]) -> None:
        self.clk = clk
        self.signals = signals
        self.on_cycle = on_cycle

    async def run(self, cycles: int) -> None:
        """Sample ``cycles`` consecutive cycles, starting with the current one."""
        await ReadOnly()
        for k in range(cycles):
            values = {}
            for name, sig in self.signals.items():
                v = sig.value
                if not v.is_resolvable:
                    raise AssertionError(f"tap {name} is {v} in sampled cycle {k}: taps must be 0/1 after reset")
                values[name] = int(v)
            self.on_cycle(k, values)
            await RisingEdge(self.clk)
            await ReadOnly()
