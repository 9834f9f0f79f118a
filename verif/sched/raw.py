"""The schedule-driven fabric's raw run: its throughput harness, RTL and programs with no
cocotb at all (the limit ``make bench`` measures the throughput mode against).

:func:`run_raw_sched` writes every program of the run up front (episode ``e`` is the
program the throughput test of the same seed builds: :func:`.tp_env.build_program` of
seed ``seed + e``, with the watchdog of :func:`.tp_env.limits`), runs the bare simulator
executable (:func:`lockstep.verif.raw.build_raw`) with ``+tp_programs``, ``+tp_go`` and
``+tp_finish``, and times only the simulator. Afterwards each episode's recorded trace is
compared with the cycle executor's (:func:`.tp_env.compare_traces`), so a raw figure is
never the speed of a wrong run. Cycles are counted as the throughput mode counts them:
load and run cycles of every program.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockstep.gen.sched.harness import harness_tail
from lockstep.models import sched

from ..raw import RawResult, execute, raw_folder
from ..registry import Testbench
from .tp_env import build_program, compare_traces, limits, read_final, read_trace, write_episode

__all__ = ["run_raw_sched"]


def run_raw_sched(tb: Testbench, sim: str, exe: Path, seed: int, opts: dict[str, Any],
                  check: bool = True) -> RawResult:
    """Run ``tb``'s programs on the bare executable ``exe``; a
    :class:`lockstep.verif.raw.RawResult` (transactions: events checked).

    Raises:
        RuntimeError: the simulator failed, or a program hit its watchdog.
    """
    p = tb.tb_params or tb.params   # what the testbench believes (a negative one: wrongly)
    count = int(opts.get("programs", 1))
    txns = opts.get("txns")
    name = str(opts.get("program", "random"))
    folder = raw_folder(tb, sim, seed)
    tail = harness_tail(tb.params)
    goldens = []
    for e in range(count):
        program, _ = build_program(name, p, seed + e, txns)
        golden = sched.execute(program, ext=(program.meta or {}).get("ext"))
        stop_at, max_cycles = limits(golden, tail)
        write_episode(folder, e, program, stop_at, max_cycles, (program.meta or {}).get("ext"))
        goldens.append(golden)
    plus = [f"+tp_programs={count}", "+tp_go", "+tp_finish"]
    wall, _ = execute(exe, sim, plus, folder, tb.name)
    cycles = checked = mismatches = 0
    for e, golden in enumerate(goldens):
        fin = read_final(folder / f"tp_final_{e}.log", p)
        if fin.reason == "timeout":
            raise RuntimeError(f"raw run of {tb.name} on {sim}: program {e} hit its watchdog; see {folder}")
        cycles += fin.load_cycles + fin.run_cycles
        if check:
            have, _ = read_trace(folder / f"tp_trace_{e}.log", p)
            bad, _ = compare_traces(sorted(golden.trace), sorted(have), p)
            mismatches += bad
            checked += len(golden.trace)
    return RawResult(tb.name, sim, cycles, checked, wall, mismatches, folder)
