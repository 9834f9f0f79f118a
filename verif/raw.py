"""The limit: a throughput testbench's harness, RTL and stimulus with no cocotb at all.

:func:`run_raw` builds the harness (:mod:`lockstep.gen.harness`) and the DUT into a bare
simulator executable (``verilator --binary --timing``: Verilator's own C++ main loop; or
``iverilog`` + ``vvp``), writes the very stimulus the throughput test draws for that
seed (:meth:`~.StreamUnit.items` chunk by chunk, :func:`~.throughput.write_chunk`),
runs it to its ``$finish`` and times only the simulator. The records are then checked
with the unit's golden model (outside the timing), so a raw figure is never the speed
of a wrong run. ``make bench`` puts it beside the per-edge and throughput modes.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lockstep.gen.harness import CHUNK, harness_name, harness_ports

from .context import TbContext
from .registry import Testbench, get
from .runner import BUILD, generate_rtl, harness_source, rtl_dir, run_opts, verilator_makeflags
from .columns import Outs, join_items
from .throughput import read_records, unit_class, write_chunk
from .stream_env import refuse_resets
from .twin import pause_seeds, pause_threshold

__all__ = ["execute_episodes", "RawResult", "build_raw", "execute", "raw_folder", "run_raw"]


@dataclass
class RawResult:
    """One raw run: ``cycles`` simulated in ``wall_s`` seconds of simulator time,
    ``transactions`` checked (``mismatches`` of them wrong)."""

    testbench: str
    sim: str
    cycles: int
    transactions: int
    wall_s: float
    mismatches: int
    folder: Path

    @property
    def cycles_per_s(self) -> float:
        return self.cycles / self.wall_s if self.wall_s > 0 else 0.0


def build_raw(tb: Testbench, sim: str = "verilator") -> Path:
    """The bare simulator executable of ``tb``'s harness (cached beside its RTL)."""
    if tb.mode != "throughput":
        raise ValueError(f"{tb.name} is not a throughput testbench: no harness to run raw")
    record = generate_rtl(tb)
    dut = record.with_suffix(".v")
    harness = harness_source(tb)
    top = harness_name(tb.toplevel)
    key = hashlib.sha256(dut.read_bytes() + harness.read_bytes()).hexdigest()[:12]
    out = rtl_dir(tb) / f"{sim}-raw-{key}"
    exe = out / (top if sim == "verilator" else f"{top}.vvp")
    if exe.exists():
        return exe
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if sim == "verilator":
        cmd = ["verilator", "--binary", "--timing", "-O3", "-Wno-fatal", "--x-assign", "fast", "--x-initial", "fast",
               "-CFLAGS", "-std=c++20", "-j", "2", "-Mdir", str(tmp), "--top-module", top, "-o", top,
               str(harness), str(dut)]
    elif sim == "icarus":
        cmd = ["iverilog", "-g2012", "-o", str(tmp / f"{top}.vvp"), "-s", top, str(harness), str(dut)]
    else:
        raise ValueError(f"unknown simulator {sim!r}")
    env = {**os.environ, "MAKEFLAGS": verilator_makeflags()} if sim == "verilator" else None  # as the runner builds
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    (tmp / "build.log").write_text(res.stdout + res.stderr)
    if res.returncode != 0:
        raise RuntimeError(f"raw build of {tb.name} on {sim} failed; see {tmp / 'build.log'}")
    try:
        tmp.rename(out)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another process built it first
    return exe


def raw_folder(tb: Testbench, sim: str, seed: int) -> Path:
    """The (emptied) working folder of a raw run of ``tb`` on ``sim`` with ``seed``."""
    folder = BUILD / tb.name / "raw" / sim / f"seed{seed}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def execute(exe: Path, sim: str, plus: list[str], folder: Path, name: str) -> tuple[float, list[str]]:
    """Run the bare executable ``exe`` with plusargs ``plus`` in ``folder``: ``(seconds of
    simulator wall time, the fields of tp_end.log)``; its output goes to ``sim.log``.

    Raises:
        RuntimeError: the simulator failed or wrote no ``tp_end.log`` (naming ``name``).
    """
    cmd = [str(exe), *plus] if sim == "verilator" else ["vvp", "-n", str(exe), *plus]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    (folder / "sim.log").write_text(res.stdout + res.stderr)
    end_p = folder / "tp_end.log"
    if res.returncode != 0 or not end_p.exists():
        raise RuntimeError(f"raw run of {name} on {sim} failed (exit {res.returncode}); see {folder / 'sim.log'}")
    return wall, end_p.read_text().split()


def execute_episodes(exe: Path, sim: str, folder: Path, name: str, count_arg: str, count: int, noun: str) -> float:
    """Run an episode harness's bare executable over ``count`` episodes whose files are
    all written in ``folder`` (``+<count_arg>=count``): seconds of simulator wall time.

    Raises:
        RuntimeError: the simulator failed, or the run did not end ``ok`` (an episode hit
            its watchdog, a file was missing), naming ``name`` and the folder.
    """
    wall, end = execute(exe, sim, [f"+{count_arg}={count}", "+tp_go", "+tp_finish"], folder, name)
    if len(end) != 3 or end[2] != "ok":
        raise RuntimeError(f"raw run of {name} on {sim} ended {' '.join(end)!r} (a {noun} hit its watchdog?); "
                           f"see {folder}")
    return wall


def run_raw(name: str, sim: str = "verilator", *, seed: int = 1, opts: dict[str, Any] | None = None,
            check: bool = True) -> RawResult:
    """Run throughput testbench ``name`` with no cocotb (see the module docstring).

    Args:
        name: a registered throughput testbench.
        sim: ``"verilator"`` or ``"icarus"``.
        seed: the seed (the throughput test of this seed draws the same stimulus).
        opts: option overrides (``blocks``, ``idle``, ``backpressure``; ``programs`` or
            ``jobs`` for a testbench whose ``raw`` option names its family's raw run:
            :func:`lockstep.verif.sched.raw.run_raw_sched`,
            :func:`lockstep.verif.gemm.raw.run_raw_gemm`).
        check: check the records with the golden model afterwards.
    """
    tb = get(name)
    exe = build_raw(tb, sim)
    o = run_opts(tb, sim, opts)
    if "raw" in o:   # a family whose harness runs whole programs or jobs names its own raw run
        modname, _, func = o["raw"].partition(":")
        return getattr(importlib.import_module(modname), func)(tb, sim, exe, seed, o, check)
    record = json.loads(generate_rtl(tb).read_text())
    count = int(o.get("blocks", 1000))
    folder = raw_folder(tb, sim, seed)
    params = tb.tb_params.to_dict() if tb.tb_params else record["params"]   # as TbContext.from_env
    ctx = TbContext(record, params, o, folder, seed)
    unit_t = unit_class(o["unit"])
    unit = unit_t(ctx, unit_t.params_type.from_dict(params))
    hp = harness_ports(record)
    rng = np.random.default_rng(seed)
    chunks = []
    for k in range(-(-count // CHUNK)):
        items = unit.draw(rng, min(CHUNK, count - k * CHUNK))
        refuse_resets(unit, items, "raw")
        write_chunk(folder / f"tp_stim_{k}.bin", unit.encode_columns(items), hp, k * CHUNK)
        chunks.append(items)
    s_idle, s_bp = pause_seeds(seed)
    plus = [f"+tp_n={count}", f"+tp_idle_seed={s_idle}", f"+tp_bp_seed={s_bp}",
            f"+tp_idle_thr={pause_threshold(float(o.get('idle', 0.2)))}",
            f"+tp_bp_thr={pause_threshold(float(o.get('backpressure', 0.3)))}",
            f"+tp_max_cycles={100 * count + 10_000}", "+tp_wstart=0", "+tp_wstop=0", "+tp_go", "+tp_finish"]
    wall, end = execute(exe, sim, plus, folder, name)
    if "timeout" in end:
        raise RuntimeError(f"raw run of {name} on {sim} hit its cycle limit; see {folder}")
    mismatches, checked = 0, 0
    if check:
        acc_all, outs_all = [], []
        for k in range(int(end[4]) + 1):
            acc, _, _, outs = read_records(folder, k, hp)
            acc_all.append(acc)
            outs_all.append(outs)
        items, outs = join_items(chunks), Outs.concat(outs_all)
        if len(outs) != count or sum(len(a) for a in acc_all) != count:
            raise RuntimeError(f"raw run of {name}: {len(outs)} outputs for {count} inputs")
        _, bad, _ = unit.check(items, outs)
        mismatches, checked = int(bad), len(items)
    return RawResult(name, sim, int(end[0]), checked or count, wall, mismatches, folder)
