"""The GEMM tile's raw run: its throughput harness, RTL and jobs with no cocotb at all
(the limit ``make bench`` measures the throughput mode against).

:func:`run_raw_gemm` writes every job of the run up front (the jobs the throughput test
of the same seed builds: :func:`lockstep.verif.gemm.tp_env.build_jobs`, with the per-edge watchdog
:func:`.tile_env.budget`), runs the bare simulator executable
(:func:`lockstep.verif.raw.build_raw`) with ``+tp_jobs``, ``+tp_go`` and ``+tp_finish``,
and times only the simulator. Afterwards each job's records are checked exactly as the
throughput scoreboard checks them (:func:`lockstep.verif.gemm.tp_env.observation` and
:func:`.tile_env.check`), so a raw figure is never the speed of a wrong run. Cycles are
counted as the throughput mode counts them: every harness edge of every job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lockstep.gen.gemm.harness import top_ports_of

from ..raw import RawResult, execute_episodes, raw_folder
from ..registry import Testbench
from ..runner import generate_rtl
from .tile_env import budget
from .tile_env import check as check_obs
from .tp_env import build_jobs, observation, read_final, read_trace, write_job

__all__ = ["run_raw_gemm"]


def run_raw_gemm(tb: Testbench, sim: str, exe: Path, seed: int, opts: dict[str, Any],
                 check: bool = True) -> RawResult:
    """Run ``tb``'s jobs on the bare executable ``exe``.

    Args:
        tb: a gemm throughput testbench.
        sim: ``"verilator"`` or ``"icarus"``.
        exe: the bare executable (:func:`lockstep.verif.raw.build_raw`).
        seed: the seed (the throughput test of this seed runs the same jobs).
        opts: the run's options (``scenario``, ``jobs``).
        check: check every job's records afterwards.

    Returns:
        A :class:`lockstep.verif.raw.RawResult` (transactions: trace requests plus jobs
        checked; mismatches: jobs with a failed check).

    Raises:
        RuntimeError: the simulator failed, or a job hit its watchdog.
    """
    p = tb.tb_params or tb.params   # what the testbench believes (a negative one: wrongly)
    tp = top_ports_of(json.loads(generate_rtl(tb).read_text()))
    jobs = build_jobs(p, seed, opts)
    folder = raw_folder(tb, sim, seed)
    limits = [budget(j) for j in jobs]
    for e, (job, lim) in enumerate(zip(jobs, limits)):
        write_job(folder, e, job, tp, lim)
    wall = execute_episodes(exe, sim, folder, tb.name, "tp_jobs", len(jobs), "job")
    ncsr = 1 << tp.w("csr_addr")
    cycles = checked = mismatches = 0
    for e, (job, lim) in enumerate(zip(jobs, limits)):
        fin = read_final(folder / f"tp_final_{e}.log", ncsr, sum(n for _, n in job.check))
        if fin.reason == "timeout":
            raise RuntimeError(f"raw run of {tb.name} on {sim}: job {e} hit its watchdog; see {folder}")
        cycles += fin.edges
        if check:
            obs = observation(job, read_trace(folder / f"tp_trace_{e}.log"), fin, p, lim)
            mismatches += bool(check_obs(job, obs, job.golden.mem if job.golden is not None else None))
            checked += 1 + (len(job.golden.trace) if job.capture and job.golden is not None else 0)
    return RawResult(tb.name, sim, cycles, checked, wall, mismatches, folder)

