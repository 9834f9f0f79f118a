"""The part of a throughput environment that is the same for every harness running whole
programs, jobs or task streams (*episodes*): the schedule-driven fabric's
(:mod:`lockstep.verif.sched.tp_env`), the GEMM tile's (:mod:`lockstep.verif.gemm.tp_env`),
the STU's (:mod:`lockstep.verif.sparse.tp_env`) and the host top's
(:mod:`lockstep.verif.host.tp_env`).

Such a harness reads episode ``e``'s files when ``n_ready > e``, counts the finished
episodes on ``ep``, raises its end signal when the run is over and writes ``tp_end.log``
(``cycles episodes status``). :class:`EpisodeBfm` owns that protocol on the Python side:
it writes each episode's files at most two episodes ahead of the harness, raises ``go``
once the first is written, wakes once per finished episode (or at the end, or at its own
watchdog behind the harness's) and hands the finished episode numbers to the monitor on its
``closed`` queue.

Around it, the parts of a family's environment that do not depend on what an episode is:
:class:`EpisodeSeq` and :class:`EpisodeDriver` (one item per episode; its files written),
:class:`EpisodeMonitor` (reads each finished episode's records, never dropping a broken
one), :class:`EpisodeScoreboard` (timing and the first messages), :class:`EpisodeEnv`
(sequencer, driver, monitor, scoreboard, coverage, wired) and :class:`EpisodeTest` (the
run and how it ended: :meth:`EpisodeBfm.run_problems`).

A run has a fixed count of episodes, or it is *streamed* (option ``cycles``,
:func:`stream_cycles`; the full tier's depth on Verilator): its episodes are built as the
sequence takes them (:func:`run_entries`), :class:`EpisodeBfm` gives the harness
:data:`STREAM_MAX` as its count, and the sequence stops once the harness's edge counter
has reached ``cycles`` (:meth:`EpisodeBfm.more`, which logs the progress) and tells the
harness how many it sent (:meth:`EpisodeBfm.close`). Nothing per episode is kept once it is checked, so
memory stays flat however long the run is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import cocotb
from cocotb.triggers import First, RisingEdge, Timer, ValueChange
from pyuvm import (
    ConfigDB, uvm_analysis_port, uvm_component, uvm_driver, uvm_env, uvm_sequence, uvm_sequencer, uvm_subscriber,
    uvm_test,
)

from .context import CLOCK_NS, TbContext, check_reset, reset_values
from .seq import Item
from .throughput import SPENT, spent

__all__ = ["STREAM_MAX", "EpisodeBfm", "EpisodeDriver", "EpisodeEnv", "EpisodeMonitor", "EpisodeScoreboard", "EpisodeSeq",
           "EpisodeTest", "RecordError", "hex_field", "run_entries", "stream_cycles", "write_episode_files"]


_LOG = logging.getLogger("cocotb.lockstep.episodes")

#: Episodes a streamed run may send at most (the harnesses' 32-bit episode counters).
STREAM_MAX = (1 << 31) - 1


def stream_cycles(opts: dict[str, Any]) -> int:
    """A run's ``cycles`` option: 0, or the harness edges after which a streamed run
    starts no further episode. Such a run builds its episodes as it goes (a family's
    builder repeats its scenario, its state chained), so memory stays flat however long
    it runs; the ``jobs``/``episodes``/``programs`` option is then the size of one
    repetition.

    Raises:
        ValueError: a negative target.
    """
    n = int(opts.get("cycles", 0) or 0)
    if n < 0:
        raise ValueError(f"the option cycles={n} must be 0 (none) or a number of harness cycles")
    return n


def run_entries(opts: dict[str, Any], make: Callable[[], list[Any]],
                stream: Callable[[], Iterator[Any]]) -> tuple[Iterable[Any], int | None]:
    """A throughput run's episodes and their count: ``make()``'s list and its length, or
    for a streamed run (a ``cycles`` option: :func:`stream_cycles`) ``stream()``'s
    iterator, taken as the run goes, and None (:class:`EpisodeBfm` gives the harness
    :data:`STREAM_MAX`). Building is timed as ``golden`` either way."""
    if not stream_cycles(opts):
        with spent("golden"):
            entries = make()
        return entries, len(entries)

    def timed(it: Iterator[Any]) -> Iterator[Any]:
        while True:
            with spent("golden"):
                entry = next(it, _END)
            if entry is _END:
                return
            yield entry

    return timed(stream()), None


_END = object()


class RecordError(AssertionError):
    """A record line that does not parse, or a record file that is missing or short."""


def hex_field(tok: str, what: str, path: Path, n: int, line: str) -> int:
    """Field ``tok`` (``what``) of line ``n`` (``line``) of the record ``path``, read as hex.

    Raises:
        RecordError: X or Z bits, or not hex (naming the file, line and field).
    """
    try:
        return int(tok, 16)
    except ValueError:
        raise RecordError(f"{path.name} line {n}: {what} is {tok!r}: X or Z bits, or not hex "
                          f"(line {line.strip()!r})") from None


def write_episode_files(folder: Path, files: dict[str, list[str]]) -> None:
    """Write an episode's files (name -> lines) into ``folder``, each under a temporary
    name first, so the harness never reads half of one."""
    for name, lines in files.items():
        tmp = folder / f".{name}.tmp"
        tmp.write_text("\n".join(lines) + ("\n" if lines else ""))
        tmp.replace(folder / name)


class EpisodeBfm:
    """Owns an episode harness: settings, ``go``, the episode files, one wake per episode.

    A family subclasses it with :attr:`noun`, :attr:`count_port`, :attr:`end_port`,
    :attr:`budget_what`, :meth:`write_files` and :meth:`budget`.

    Args:
        dut: the harness handle (the DUT is ``dut.dut``).
        ctx: the runner context.
        count: episodes in the run; a streamed run (option ``cycles``) gives the harness
            :data:`STREAM_MAX` instead, whatever ``count`` says, and tells it the real
            count at the end (:meth:`close`).

    Raises:
        ValueError: ``count`` below 1 in a run that is not streamed.
    """

    #: what an episode is called in messages (``program``, ``job``).
    noun = "episode"
    #: the harness input that holds the run's episode count.
    count_port = "n_prog"
    #: the harness output that rises when the run is over.
    end_port = "done"
    #: what the watchdog's budget covers, for its message.
    budget_what = "the episode"

    def __init__(self, dut: Any, ctx: TbContext, count: int | None) -> None:
        #: harness edges after which no further episode starts (option ``cycles``; 0: none).
        self.cycles = stream_cycles(ctx.opts)
        if self.cycles:
            count = STREAM_MAX
        elif count is None or count < 1:
            raise ValueError(f"a throughput run needs at least one {self.noun}, not {count}")
        self.dut, self.ctx, self.count = dut, ctx, count
        self.tenth = 0     # tenths of ``cycles`` logged
        self.stopped = False   # a streamed run reached its cycles: no further episode
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

    def budget(self, item: Any) -> int:
        """Clock cycles the harness may take for the episode of ``item`` (the Python
        watchdog)."""
        raise NotImplementedError

    async def write(self, item: Any) -> None:
        """Write episode ``item.episode``'s files once the harness is within two episodes
        of it, then tell the harness (``n_ready``); unless the run is streamed and the
        harness has run its cycles by then (:meth:`more`): then the run stops there."""
        e = item.episode
        while e > self.finished + 2:
            self.moved.clear()
            await self.moved.wait()
        if e and not self.more():   # a streamed run at its cycles: this episode is not run
            self.stopped = True
            return
        with spent("files"):
            self.write_files(item)
        self.items[e] = item
        self.written = e + 1
        self.dut.n_ready.value = self.written
        self.moved.set()

    async def run(self) -> None:
        """Raise ``go`` once the first episode is written; wake per episode until the end."""
        d = self.dut
        if resets := reset_values():   # the DUT instance under the harness, after its first rst edge
            cocotb.start_soon(check_reset(d.dut, d.clk, resets))
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
            item = self.items.get(self.finished)
            # an episode not written yet: the harness waits for n_ready (the driver is behind, not the DUT)
            budget = 1_000_000 if item is None else self.budget(item)
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

    def more(self) -> bool:
        """Whether another episode may start: always, unless the run has a ``cycles``
        target and the harness has run that many edges (read from its ``total``). Asked
        when the next episode's files are due, two episodes ahead of the harness, so a
        streamed run ends at most two episodes past its target. It logs its progress at
        every tenth of the target."""
        if not self.cycles:
            return True
        total = int(self.dut.total.value)
        tenth = min(10, total * 10 // self.cycles)
        if tenth > self.tenth:
            self.tenth = tenth
            _LOG.info("streamed run: %s of %s harness cycles, %d %ss finished", f"{total:,}", f"{self.cycles:,}",
                      self.finished, self.noun)
        return total < self.cycles

    def close(self, n: int) -> None:
        """The sequence has sent its last episode, ``n`` in all: when fewer than the
        count the harness was given (a streamed run), tell it, so it ends after them."""
        if n != self.count:
            self.count = n
            getattr(self.dut, self.count_port).value = n

    @property
    def status(self) -> str:
        """The harness's end status (``ok``, ``timeout``, ``window``, ``missing:<file>``;
        empty before the end)."""
        return self.end[2] if len(self.end) > 2 else ""

    @property
    def failed(self) -> bool:
        """The run failed as a whole: the Python watchdog fired, or the harness could not
        open an episode's file."""
        return bool(self.timeout) or self.status.startswith("missing:")

    def run_problems(self, recorded: int, last: str = "") -> list[str]:
        """What went wrong with the run as a whole (first in a failure's messages): the
        Python watchdog (with ``last``, the last episode checked), a file the harness could
        not open, or fewer episodes recorded than written. A waves window's early end and
        the harness's own watchdog (each family's scoreboard reports the episode it hit)
        are not problems here.

        Args:
            recorded: episodes the monitor read.
            last: what the scoreboard checked last, for the watchdog's message.
        """
        status = self.status
        if self.timeout:
            return [self.timeout + last]
        if status.startswith("missing:"):
            return [f"the harness could not open {status.split(':', 1)[1]} ({self.noun} {self.end[1]})"]
        if status in ("window", "timeout") or recorded == self.count:
            return []
        return [f"{recorded} of {self.count} {self.noun}s recorded (harness status {status or 'none'}, "
                f"tp_end.log {self.end})"]


class EpisodeSeq(uvm_sequence):
    """The run's episodes, one sequence item each: the entries the test puts in ConfigDB
    as ``EPISODES`` (a list, or an iterator for a streamed run: :func:`stream_cycles`),
    each made an item's object by :meth:`item` and let go of once sent (the scoreboard
    holds what it still needs until it is checked). A streamed run stops once the
    harness has run its ``cycles`` (:meth:`EpisodeBfm.more`) and tells the harness how
    many episodes it sent (:meth:`EpisodeBfm.close`)."""

    def item(self, e: int, entry: Any) -> Any:
        """The object of episode ``e``'s sequence item (default: the entry itself)."""
        return entry

    def entries(self) -> Iterable[Any]:
        """The run's episodes (default: ``EPISODES`` from ConfigDB)."""
        return ConfigDB().get(None, "", "EPISODES")

    async def body(self) -> None:
        bfm: EpisodeBfm = ConfigDB().get(None, "", "BFM")
        entries = self.entries()
        taken = iter(entries)
        e = 0
        while e < bfm.count and not bfm.stopped:
            entry = next(taken, _END)
            if entry is _END:
                break
            it = Item(f"episode{e}", self.item(e, entry))
            await self.start_item(it)
            await self.finish_item(it)
            if isinstance(entries, list):
                entries[e] = None
            e += 1
        bfm.close(bfm.written)


class EpisodeDriver(uvm_driver):
    """Completes each episode's item (:meth:`prepare`) and writes its files through the
    BFM, at most two episodes ahead of the harness."""

    def connect_phase(self) -> None:
        self.bfm: EpisodeBfm = ConfigDB().get(self, "", "BFM")

    def prepare(self, item: Any) -> None:
        """Complete ``item`` before its files are written (a family's watchdog, ...)."""

    async def run_phase(self) -> None:
        while True:
            seq_item = await self.seq_item_port.get_next_item()
            self.prepare(seq_item.obj)
            await self.bfm.write(seq_item.obj)
            self.seq_item_port.item_done()


class EpisodeMonitor(uvm_component):
    """Reads each finished episode's records and publishes what :meth:`read` makes of
    them on ``ap``; a record that does not parse becomes :meth:`broken`'s record, never a
    silent drop. Deletes the episode's files once read (``keep=1`` keeps them).

    A family subclasses it with :attr:`files`, :meth:`read` and :meth:`broken`.
    """

    #: the kinds of episode file deleted once read (``tp_<kind>_<e>.txt``, ``.hex`` or ``.log``).
    files: tuple[str, ...] = ()

    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)
        self.recorded = 0
        self.finished = cocotb.triggers.Event()

    def connect_phase(self) -> None:
        self.bfm: EpisodeBfm = ConfigDB().get(self, "", "BFM")

    def read(self, e: int, item: Any) -> Any:
        """The record of finished episode ``e`` (its item ``item``), from its files.

        Raises:
            RecordError: a file is missing or a line does not parse.
        """
        raise NotImplementedError

    def broken(self, e: int, item: Any, message: str) -> Any:
        """The record of an episode whose files did not parse (``message`` says why)."""
        raise NotImplementedError

    async def run_phase(self) -> None:
        keep = bool(self.bfm.ctx.opt("keep", False))
        folder = self.bfm.folder
        while True:
            e = await self.bfm.closed.get()
            if e < 0:
                break
            item = self.bfm.items.pop(e)
            with spent("records"):
                try:
                    rec = self.read(e, item)
                except RecordError as exc:
                    rec = self.broken(e, item, str(exc))
            if not keep:   # (no glob: a pattern per episode costs a regex compilation each)
                for name in self.files:
                    for ext in ("txt", "hex", "log"):
                        (folder / f"tp_{name}_{e}.{ext}").unlink(missing_ok=True)
            self.recorded += 1
            self.ap.write(rec)
        self.finished.set()


class EpisodeScoreboard(uvm_subscriber):
    """Checks each episode's record as it arrives (:meth:`check`, timed as
    ``scoreboard``) and keeps the first :attr:`limit` messages; nothing else is kept
    but what the family counts."""

    #: messages kept.
    limit = 40

    def build_phase(self) -> None:
        self.ctx: TbContext = ConfigDB().get(self, "", "CTX")
        self.errors: list[str] = []
        self.mismatches = 0

    def write(self, rec: Any) -> None:
        """Check one episode."""
        with spent("scoreboard"):
            self.check(rec)

    def check(self, rec: Any) -> None:
        """Check one episode's record (a family's checks)."""
        raise NotImplementedError

    def error(self, msg: str) -> None:
        """Keep ``msg`` if fewer than :attr:`limit` are kept."""
        if len(self.errors) < self.limit:
            self.errors.append(msg)


class EpisodeEnv(uvm_env):
    """Sequencer and driver; the monitor feeding scoreboard and coverage. A family sets
    the component types."""

    driver_type: type = EpisodeDriver
    monitor_type: type = EpisodeMonitor
    scoreboard_type: type = EpisodeScoreboard
    coverage_type: type = uvm_subscriber

    def build_phase(self) -> None:
        self.seqr = uvm_sequencer("seqr", self)
        self.driver = self.driver_type("driver", self)
        self.monitor = self.monitor_type("monitor", self)
        self.scoreboard = self.scoreboard_type("scoreboard", self)
        self.coverage = self.coverage_type("coverage", self)

    def connect_phase(self) -> None:
        self.driver.seq_item_port.connect(self.seqr.seq_item_export)
        self.monitor.ap.connect(self.scoreboard.analysis_export)
        self.monitor.ap.connect(self.coverage.analysis_export)


class EpisodeTest(uvm_test):
    """Runs the sequence :attr:`seq_type` through ``self.env`` (an :class:`EpisodeEnv`)
    and ``self.bfm`` (an :class:`EpisodeBfm`), both made by the family's build phase,
    until the monitor has read the last episode; then deletes the input files
    (:attr:`inputs`) of episodes the run never reached (``keep=1`` keeps them).
    :meth:`finish` writes the summary and the verdict."""

    #: the sequence that makes the run's episodes (one item each).
    seq_type: type = EpisodeSeq
    #: the kinds of episode input file (``tp_<kind>_<e>.*``).
    inputs: tuple[str, ...] = ()

    async def run_phase(self) -> None:
        self.raise_objection()
        cocotb.start_soon(self.seq_type("seq").start(self.env.seqr))
        await self.bfm.run()
        await self.env.monitor.finished.wait()
        if not self.ctx.opt("keep", False):
            for name in self.inputs:
                for f in self.bfm.folder.glob(f"tp_{name}_*.*"):
                    f.unlink()
        self.drop_objection()

    def run_errors(self, checked: int, last: str, watchdog: str) -> list[str]:
        """The run's messages: its own problems (:meth:`EpisodeBfm.run_problems`), the
        harness's watchdog (``watchdog``: where its message is), the scoreboard's, and
        that nothing was checked (``checked`` episodes) when nothing else is wrong; a
        waves window's early end is logged. With ``dump_stream=1`` the scoreboard's
        ``stream`` goes to ``stream.json``.

        Args:
            checked: episodes the scoreboard checked.
            last: what the scoreboard checked last, for the Python watchdog's message.
            watchdog: where the harness watchdog's own message is, for the run's.
        """
        sb, bfm, noun = self.env.scoreboard, self.bfm, self.bfm.noun
        recorded = self.env.monitor.recorded
        errors = bfm.run_problems(recorded, last) + sb.errors
        if bfm.status == "window":
            self.logger.info(f"stopped at the end of the waves window: {checked} {noun}s checked, the {noun} in the "
                             "window not compared")
        elif bfm.status == "timeout" and not bfm.timeout:
            ran = int(bfm.end[1]) - 1 if bfm.end[1].isdigit() else "?"
            errors.insert(0, f"the harness's watchdog ended the run in {noun} {ran} (see {watchdog})")
        if checked == 0 and not errors and bfm.status != "window":
            errors.append(f"no {noun} was checked ({recorded} {noun}s recorded, harness status {bfm.status})")
        if self.ctx.opt("dump_stream", False):
            (self.ctx.results / "stream.json").write_text(json.dumps(sb.stream))
        return errors

    def finish(self, errors: list[str], **summary: Any) -> None:
        """Write the run's summary (``summary`` plus the harness's cycles, the wakes,
        the mode, the first errors and the Python time per activity) and the verdict."""
        bfm = self.bfm
        self.ctx.summary.update(summary, harness_cycles=int(bfm.end[0]) if bfm.end and bfm.end[0].isdigit() else 0,
                                wakes=bfm.wakes, mode="throughput", errors=errors[:20],
                                python_s={k: round(v, 3) for k, v in SPENT.items()})
        self.ctx.finish(errors, self.logger)
