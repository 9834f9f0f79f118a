"""The part of a throughput environment that is the same for every harness running whole
programs or jobs (*episodes*): the schedule-driven fabric's
(:mod:`lockstep.verif.sched.tp_env`) and the GEMM tile's (:mod:`lockstep.verif.gemm.tp_env`).

Such a harness reads episode ``e``'s files when ``n_ready > e``, counts the finished
episodes on ``ep``, raises its end signal when the run is over and writes ``tp_end.log``
(``cycles episodes status``). :class:`EpisodeBfm` owns that protocol on the Python side:
it writes each episode's files at most two episodes ahead of the harness, raises ``go``
once the first is written, wakes once per finished episode (or at the end, or at its own
watchdog behind the harness's) and hands the finished episode numbers to the monitor on its
``closed`` queue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cocotb
from cocotb.triggers import First, RisingEdge, Timer, ValueChange

from .context import CLOCK_NS, TbContext
from .throughput import spent

__all__ = ["EpisodeBfm", "RecordError"]


class RecordError(AssertionError):
    """A record line that does not parse, or a record file that is missing or short."""


class EpisodeBfm:
    """Owns an episode harness: settings, ``go``, the episode files, one wake per episode.

    A family subclasses it with :attr:`noun`, :attr:`count_port`, :attr:`end_port`,
    :attr:`budget_what`, :meth:`write_files` and :meth:`budget`.

    Args:
        dut: the harness handle (the DUT is ``dut.dut``).
        ctx: the runner context.
        count: episodes in the run.

    Raises:
        ValueError: ``count`` below 1.
    """

    #: what an episode is called in messages (``program``, ``job``).
    noun = "episode"
    #: the harness input that holds the run's episode count.
    count_port = "n_prog"
    #: the harness output that rises when the run is over.
    end_port = "done"
    #: what the watchdog's budget covers, for its message.
    budget_what = "the episode"

    def __init__(self, dut: Any, ctx: TbContext, count: int) -> None:
        if count < 1:
            raise ValueError(f"a throughput run needs at least one {self.noun}, not {count}")
        self.dut, self.ctx, self.count = dut, ctx, count
        self.folder = Path.cwd()  # the simulator's working folder: the harness opens its files there
        self.written = 0   # episodes whose files are written
        self.finished = 0  # episodes the harness has finished
        self.items: dict[int, Any] = {}
        self.moved = cocotb.triggers.Event()
        self.closed: cocotb.queue.Queue[int] = cocotb.queue.Queue()  # finished episodes; -1 ends
        self.timeout: str | None = None
        self.end: list[str] = []
        self.wakes = 0

    def write_files(self, item: Any) -> None:
        """Write episode ``item.episode``'s files into ``self.folder`` (the simulator's
        working folder)."""
        raise NotImplementedError

    def budget(self, e: int) -> int:
        """Clock cycles the harness may take for episode ``e`` (the Python watchdog)."""
        raise NotImplementedError

    async def write(self, item: Any) -> None:
        """Write episode ``item.episode``'s files once the harness is within two episodes
        of it, then tell the harness (``n_ready``)."""
        e = item.episode
        while e > self.finished + 2:
            self.moved.clear()
            await self.moved.wait()
        with spent("files"):
            self.write_files(item)
        self.items[e] = item
        self.written = e + 1
        self.dut.n_ready.value = self.written
        self.moved.set()

    async def run(self) -> None:
        """Raise ``go`` once the first episode is written; wake per episode until the end."""
        d = self.dut
        await Timer(1, "ns")  # the harness's initial block has set its state (Icarus runs it after cocotb starts)
        getattr(d, self.count_port).value = self.count
        d.n_ready.value = self.written
        d.wstart.value, d.wstop.value = self.ctx.opt("window", (0, 0))
        while self.written < 1:
            self.moved.clear()
            await self.moved.wait()
        d.go.value = 1
        end_sig = getattr(d, self.end_port)
        while True:
            budget = self.budget(self.finished)
            t = await First(ValueChange(d.ep), RisingEdge(end_sig), Timer(budget * CLOCK_NS, "ns"))
            self.wakes += 1
            ended = bool(int(end_sig.value))
            ep = int(d.ep.value)
            if ended:   # the end rises before the nonblocking update of ep: tp_end.log has the count
                end = self.folder / "tp_end.log"
                self.end = end.read_text().split() if end.exists() else ["0", str(ep), "missing:tp_end.log"]
                ep = int(self.end[1]) if self.end[1].isdigit() else ep
            for k in range(self.finished, ep):
                self.closed.put_nowait(k)
            self.finished = max(self.finished, ep)
            self.moved.set()
            if ended:
                break
            if isinstance(t, Timer):
                self.timeout = (f"watchdog: the harness did not finish {self.noun} {self.finished} within {budget} "
                                f"cycles ({self.budget_what})")
                break
        self.closed.put_nowait(-1)
