"""The STU's raw run: its throughput harness, RTL and jobs with no cocotb at all (the
limit ``make bench`` measures the throughput mode against).

:func:`run_raw_stu` writes every job of the run up front (the jobs the throughput test
of the same seed builds: :func:`lockstep.verif.sparse.tp_env.build_jobs`, with the watchdog
:func:`.tp_env.max_cycles`), runs the bare simulator executable
(:func:`lockstep.verif.raw.build_raw`) with ``+tp_jobs``, ``+tp_go`` and ``+tp_finish``,
and times only the simulator. Afterwards each job's record is checked exactly as the
throughput scoreboard checks it (:func:`lockstep.verif.sparse.tp_env.observation` and
:meth:`lockstep.verif.sparse.stu_env.StuUnit.check`, job after job: the sticky ``err`` is carried), so a raw
figure is never the speed of a wrong run. Cycles are counted as the throughput mode
counts them: every harness edge of every job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lockstep.gen.sparse.harness import stu_ports_of
from lockstep.models.sparse.params import SparseParams

from ..context import TbContext
from ..raw import RawResult, execute_episodes, raw_folder
from ..registry import Testbench
from ..runner import generate_rtl
from .stu_env import StuUnit
from .tp_env import build_jobs, max_cycles, observation, read_record, write_job

__all__ = ["run_raw_stu"]


def run_raw_stu(tb: Testbench, sim: str, exe: Path, seed: int, opts: dict[str, Any],
                check: bool = True) -> RawResult:
    """Run ``tb``'s jobs on the bare executable ``exe``.

    Args:
        tb: an STU throughput testbench.
        sim: ``"verilator"`` or ``"icarus"``.
        exe: the bare executable (:func:`lockstep.verif.raw.build_raw`).
        seed: the seed (the throughput test of this seed runs the same jobs).
        opts: the run's options (``scenario``, ``jobs``).
        check: check every job's record afterwards.

    Returns:
        A :class:`lockstep.verif.raw.RawResult` (transactions: output beats plus jobs
        checked; mismatches: jobs with a failed check).

    Raises:
        RuntimeError: the simulator failed, or a job hit its watchdog.
    """
    record = json.loads(generate_rtl(tb).read_text())
    sp = stu_ports_of(record)
    p = tb.tb_params or tb.params   # what the testbench believes (a negative one: wrongly)
    folder = raw_folder(tb, sim, seed)
    unit = StuUnit(TbContext(record, p.to_dict(), opts, folder, seed), SparseParams.from_dict(p.to_dict()))
    jobs = build_jobs(unit.params, seed, opts, unit.widths)
    limits = [max_cycles(unit, j) for j in jobs]
    for e, (job, lim) in enumerate(zip(jobs, limits)):
        write_job(folder, e, job, sp, unit, seed, lim)
    wall = execute_episodes(exe, sim, folder, tb.name, "tp_jobs", len(jobs), "job")
    cycles = checked = mismatches = 0
    for e, job in enumerate(jobs):
        rec = read_record(folder / f"tp_rec_{e}.log", sp.fifo)
        if rec.end.reason == "timeout":
            raise RuntimeError(f"raw run of {tb.name} on {sim}: job {e} hit its watchdog; see {folder}")
        cycles += rec.end.edges
        if check:
            obs = observation(job, rec, sp.fifo)
            mismatches += bool(rec.problems or unit.check(job, obs))
            checked += 1 + len(obs.outputs["o"])
    return RawResult(tb.name, sim, cycles, checked, wall, mismatches, folder)
