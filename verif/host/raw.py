"""host_top's raw run: its throughput harness, RTL and episodes with no cocotb at all
(the limit ``make bench`` measures the throughput mode against).

:func:`run_raw_host` writes every episode of the run up front (the episodes the
throughput test of the same seed builds: :func:`.tp_env.build_episodes`), runs the bare
simulator executable (:func:`lockstep.verif.raw.build_raw`) with ``+tp_eps``, ``+tp_go``
and ``+tp_finish``, and times only the simulator. Afterwards each episode's records are
checked exactly as the throughput scoreboard checks them (:func:`.tp_env.check_episode`),
so a raw figure is never the speed of a wrong run. Cycles are counted as the throughput
mode counts them: every harness edge of every episode.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lockstep.gen.host.harness import host_ports_of

from ..raw import RawResult, execute_episodes, raw_folder
from ..registry import Testbench
from ..runner import generate_rtl
from .tp_env import build_episodes, check_episode, read_final, read_trace, write_episode

__all__ = ["run_raw_host"]


def run_raw_host(tb: Testbench, sim: str, exe: Path, seed: int, opts: dict[str, Any],
                 check: bool = True) -> RawResult:
    """Run ``tb``'s episodes on the bare executable ``exe``.

    Args:
        tb: a host_top throughput testbench.
        sim: ``"verilator"`` or ``"icarus"``.
        exe: the bare executable (:func:`lockstep.verif.raw.build_raw`).
        seed: the seed (the throughput test of this seed runs the same episodes).
        opts: the run's options (``scenario``, ``tasks``, ``episodes``).
        check: check every episode's records afterwards.

    Returns:
        A :class:`lockstep.verif.raw.RawResult` (transactions: completions checked;
        mismatches: episodes with a failed check).

    Raises:
        RuntimeError: the simulator failed, or an episode hit its watchdog.
    """
    p = tb.tb_params or tb.params   # what the testbench believes (a negative one: wrongly)
    hp = host_ports_of(json.loads(generate_rtl(tb).read_text()))
    eps = build_episodes(p, seed, opts)
    folder = raw_folder(tb, sim, seed)
    for ep in eps:
        write_episode(folder, ep, hp)
    wall = execute_episodes(exe, sim, folder, tb.name, "tp_eps", len(eps), "episode")
    cycles = checked = mismatches = 0
    for ep in eps:
        fin = read_final(folder / f"tp_final_{ep.index}.log", ep.image.size // 4)
        if fin.reason != "ok":
            raise RuntimeError(f"raw run of {tb.name} on {sim}: episode {ep.index} ended {fin.reason}; see {folder}")
        cycles += fin.edges
        if check:
            res = check_episode(ep, read_trace(folder / f"tp_trace_{ep.index}.log"), fin, p)
            mismatches += bool(res.errors)
            checked += len(res.cq)
    return RawResult(tb.name, sim, cycles, checked, wall, mismatches, folder)
