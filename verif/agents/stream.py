"""Valid/ready stream agent: a bus-functional model that owns the signals.

A stream ``<prefix>`` is ``<prefix>_valid``, ``<prefix>_ready`` and payload fields
``<prefix>_<field>``. :class:`StreamSource` drives one, :class:`StreamSink` accepts one,
and both record every handshake with the cycle it happened on. UVM components never
touch the DUT: they talk to these through :class:`cocotb.queue.Queue` objects (the
pyuvm TinyALU split).

Idle cycles on a source and back-pressure on a sink come from injected *pause
generators* (cocotbext-axi style): any iterator of booleans, ``True`` meaning "pause this
cycle". :func:`random_pauses` makes a reproducible one from a seed.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Iterator

import cocotb
from cocotb.handle import SimHandleBase
from cocotb.queue import Queue
from cocotb.triggers import Event, RisingEdge

__all__ = ["Beat", "CycleCounter", "StreamSource", "StreamSink", "random_pauses", "no_pauses"]


def no_pauses() -> Iterator[bool]:
    """A pause generator that never pauses."""
    return itertools.repeat(False)


def random_pauses(seed: int, probability: float) -> Iterator[bool]:
    """Reproducible random pauses.

    Args:
        seed: seed of the private random generator.
        probability: chance of pausing on each cycle, in [0, 1).

    Returns:
        An endless iterator of booleans.
    """
    if not 0.0 <= probability < 1.0:
        raise ValueError(f"pause probability {probability} must be in [0, 1)")
    rng = random.Random(seed)
    while True:
        yield rng.random() < probability


def _in_reset(rst: SimHandleBase | None) -> bool:
    """True while ``rst`` is high or not yet driven (no handshake counts then)."""
    if rst is None:
        return False
    v = rst.value
    return not v.is_resolvable or bool(int(v))


def _bit(sig: SimHandleBase, what: str) -> int:
    """Read a 1-bit control signal; X or Z after reset is a protocol error."""
    v = sig.value
    if not v.is_resolvable:
        raise AssertionError(f"{sig._name} is {v} ({what}): control signals must be 0 or 1 after reset")
    return int(v)


class CycleCounter:
    """Counts rising clock edges since it was started; one coroutine for all agents."""

    def __init__(self, clk: SimHandleBase) -> None:
        self.clk = clk
        self.cycle = 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        while True:
            await RisingEdge(self.clk)
            self.cycle += 1


@dataclass
class Beat:
    """One handshake on a stream.

    Attributes:
        fields: payload field name -> integer value (unsigned bit pattern).
        cycle: the clock edge (from :class:`CycleCounter`) on which it was accepted.
        first_valid: the edge on which this beat was first seen valid (sinks only).
        meta: free-form data a source carries along (e.g. a sequence item id).
    """

    fields: dict[str, int]
    cycle: int = -1
    first_valid: int = -1
    meta: Any = field(default=None)


class _StreamEnd:
    """The signals of one end of a stream, shared by :class:`StreamSource` and
    :class:`StreamSink`.

    Args:
        dut: the DUT handle.
        counter: shared cycle counter.
        prefix: stream name (``"in"`` for ``in_valid``...).
        fields: payload field names.
        pauses: pause generator (source: idle cycles; sink: back-pressure).
        also: other signals sampled with each beat, by the name its fields get (a
            sink's sticky ``err``, read in the cycle of the handshake).
    """

    def __init__(
        self,
        dut: SimHandleBase,
        counter: CycleCounter,
        prefix: str,
        fields: list[str],
        pauses: Iterator[bool] | None = None,
        also: dict[str, SimHandleBase] | None = None,
    ) -> None:
        self.clk = counter.clk
        self.counter = counter
        self.rst = getattr(dut, "rst", None)
        self.valid = getattr(dut, f"{prefix}_valid")
        self.ready = getattr(dut, f"{prefix}_ready")
        self.fields = {f: getattr(dut, f"{prefix}_{f}") for f in fields} | dict(also or {})
        self.pauses = pauses or no_pauses()
        self._setup()

    def _setup(self) -> None:
        """Subclass hook: queues and the driving coroutine, once the signals are bound."""


class StreamSource(_StreamEnd):
    """Drives ``<prefix>_valid`` and payload fields; a beat completes when ready is high.

    Args:
        dut: the DUT handle.
        counter: shared cycle counter.
        prefix: stream name (``"in"`` for ``in_valid``...).
        fields: payload field names.
        pauses: pause generator (idle cycles between beats).
    """

    def _setup(self) -> None:
        self.queue: Queue[Beat] = Queue()
        self.sent: Queue[Beat] = Queue()
        self.idle = Event()
        self.idle.set()
        self.valid.value = 0
        self._task = cocotb.start_soon(self._run())

    async def send(self, beat: Beat) -> None:
        """Queue a beat; returns at once (see ``sent`` for completions)."""
        self.idle.clear()
        await self.queue.put(beat)

    async def _run(self) -> None:
        current: Beat | None = None
        while True:
            await RisingEdge(self.clk)
            if _in_reset(self.rst):
                continue
            if current is not None and _bit(self.ready, "ready while valid"):
                current.cycle = self.counter.cycle
                self.sent.put_nowait(current)
                current = None
            if current is None:
                if next(self.pauses) or self.queue.empty():
                    self.valid.value = 0
                    if self.queue.empty():
                        self.idle.set()
                    continue
                current = self.queue.get_nowait()
                for name, value in current.fields.items():
                    self.fields[name].value = value
                self.valid.value = 1


class StreamSink(_StreamEnd):
    """Accepts a stream: drives ``<prefix>_ready`` from a pause generator, records beats.

    Args:
        dut: the DUT handle.
        counter: shared cycle counter.
        prefix: stream name (``"out"`` for ``out_valid``...).
        fields: payload field names to sample.
        pauses: back-pressure generator (``True`` = ready low this cycle).
        also: other signals to sample with each beat (name -> handle).
    """

    def _setup(self) -> None:
        self.received: Queue[Beat] = Queue()
        self.count = 0
        # Low through reset, as the throughput harness holds it: a register rst leaves
        # alone would otherwise be cleared by an output taken during reset.
        self.ready.value = 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        first_valid = -1
        while True:
            await RisingEdge(self.clk)
            if _in_reset(self.rst):
                first_valid = -1
                continue
            valid = _bit(self.valid, "valid after reset")
            if valid and first_valid < 0:
                first_valid = self.counter.cycle
            if valid and _bit(self.ready, "ready"):
                beat = Beat(
                    {name: int(sig.value) for name, sig in self.fields.items()},
                    cycle=self.counter.cycle,
                    first_valid=first_valid,
                )
                self.count += 1
                self.received.put_nowait(beat)
                first_valid = -1
            self.ready.value = 0 if next(self.pauses) else 1
