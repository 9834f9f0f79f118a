"""pytest plugin for regressions (``make regress``): progress, replay lines, parity, report.

Loaded with ``-p lockstep.verif.regress --regress-report DIR`` on top of
``tests/test_sim.py`` (which records each run's seed, cycles and wall time as test
properties). On the controlling process it

* prints a progress line after every run: done/total, failures so far, elapsed time;
* prints, for every failure, the one command that replays it exactly;
* checks Icarus/Verilator parity: two simulators that ran the same testbench with the
  same seed must agree on the verdict and on the simulated cycle count. Any difference
  fails the regression;
* writes ``DIR/summary.json`` and ``DIR/index.html`` (:mod:`lockstep.verif.report`):
  per family the testplan's feature status and the merged functional coverage (every
  cover point's bins, hits and holes against the plan's goals); with ``--regress-coverage``
  (``make coverage``) also Verilator code coverage, merged and rendered per generated
  module under ``DIR/code/``; then every run (result, seed, cycles, wall time, cycles
  per second, replay command). pytest's own ``--junitxml`` gives the merged JUnit XML;
* prints one line per family: features passing, line / branch / toggle / functional %.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .report import analyse, family_lines, render_html
from .registry import TESTBENCHES
from .runner import BUILD, run_opts

__all__ = ["RegressReport", "parity_problems"]


def parity_problems(rows: list[dict[str, Any]]) -> list[str]:
    """Runs of one testbench and seed whose simulators disagree.

    Args:
        rows: one dict per run with ``testbench``, ``sim``, ``seed``, ``ok``, ``cycles``.

    Returns:
        One message per disagreeing (testbench, seed).
    """
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["testbench"], int(r["seed"])), []).append(r)
    out = []
    for (name, seed), runs in sorted(groups.items()):
        if len(runs) < 2:
            continue
        # A testbench whose length differs by simulator (its ``by_sim`` options: a
        # throughput run is shorter on Icarus) runs different stimulus on each: only the
        # verdicts compare.
        tb = TESTBENCHES.get(name)
        same = tb is None or len({repr(sorted(run_opts(tb, r["sim"]).items())) for r in runs}) == 1
        verdicts = {(r["ok"], int(r["cycles"]) if same else None) for r in runs}
        if len(verdicts) > 1:
            got = ", ".join(f"{r['sim']}: {'PASS' if r['ok'] else 'FAIL'} {r['cycles']} cycles" for r in runs)
            out.append(f"parity: {name} seed={seed} differs between simulators ({got})")
    return out


def transaction_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Transactions checked per testbench (summed over simulators and seeds) and in total."""
    per: dict[str, int] = {}
    for r in rows:
        per[r["testbench"]] = per.get(r["testbench"], 0) + int(r.get("transactions") or r.get("blocks") or 0)
    if not per:
        return []
    width = max(len(n) for n in per)
    lines = [f"[regress] transactions checked: {n:<{width}} {v:>12,}" for n, v in sorted(per.items(), key=lambda x: -x[1])]
    return lines + [f"[regress] transactions checked in total: {sum(per.values()):,} by {len(rows)} runs"]


class RegressReport:
    """The plugin object (registered on the controlling process only)."""

    def __init__(self, outdir: Path, code: bool = False) -> None:
        self.outdir = outdir
        self.code = code
        self.rows: list[dict[str, Any]] = []
        self.total = 0
        self.done = 0
        self.failed = 0
        self.t0 = time.monotonic()
        self.tty = sys.stdout.isatty()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = max(self.total, len(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not (report.when == "call" or (report.when == "setup" and not report.passed)):
            return
        self.done += 1
        props = dict(report.user_properties)
        if "testbench" in props:
            if "ok" not in props:  # the run did not get as far as a result (e.g. a build error)
                props.update(ok=False, cycles=0, wall=0.0, coverage=None, results="",
                             error=str(report.longrepr)[-400:])
            self.rows.append(props)
        if report.failed:
            self.failed += 1
            repro = props.get("repro") or report.nodeid
            self._print(f"FAIL {report.nodeid}\n    replay: {repro}", newline=True)
        elapsed = time.monotonic() - self.t0
        self._print(f"[regress] {self.done}/{self.total} done, {self.failed} failed, "
                    f"{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d} elapsed")

    def _print(self, text: str, newline: bool = False) -> None:
        if self.tty and not newline:
            sys.stdout.write("\r" + text)
        else:
            sys.stdout.write(("\n" if self.tty else "") + text + "\n")
        sys.stdout.flush()

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        parity = parity_problems(self.rows)
        self.outdir.mkdir(parents=True, exist_ok=True)
        sys.stdout.write("\n")
        problems = []
        try:
            result = analyse(self.rows, self.outdir, BUILD, code=self.code)
        except Exception as exc:  # the report must say why it is incomplete, never vanish
            problems.append(f"[regress] coverage/testplan analysis failed: {type(exc).__name__}: {exc}")
            result = {"families": {}, "code_pages": {}, "problems": []}
        problems += [f"[regress] {p}" for p in result["problems"]]
        if self.code and not result["code_pages"] and not problems:
            problems.append("[regress] no code coverage data: no passing Verilator run wrote coverage.dat")
        elapsed = time.monotonic() - self.t0
        (self.outdir / "summary.json").write_text(json.dumps(
            {"runs": self.rows, "parity": parity, "elapsed": elapsed, **result, "problems": problems},
            indent=1, default=str))
        title = "lockstep coverage" if self.code else "lockstep regression"
        (self.outdir / "index.html").write_text(render_html(self.rows, parity, title, elapsed, result))
        for line in parity + problems + family_lines(result) + transaction_lines(self.rows):
            sys.stdout.write(line + "\n")
        sys.stdout.write(f"[regress] report: {self.outdir / 'index.html'}\n")
        if (parity or problems) and session.exitstatus == 0:
            session.exitstatus = 1


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regress-report", default=None, help="write the regression report into this folder")
    parser.addoption("--regress-coverage", action="store_true",
                     help="merge Verilator code coverage into the report (runs must use LOCKSTEP_COVERAGE=1)")


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("--regress-report")
    if out and not hasattr(config, "workerinput"):
        code = bool(config.getoption("--regress-coverage"))
        if code and os.environ.get("LOCKSTEP_COVERAGE") != "1":
            raise pytest.UsageError("--regress-coverage needs LOCKSTEP_COVERAGE=1 (coverage builds)")
        config.pluginmanager.register(RegressReport(Path(out).resolve(), code), "lockstep-regress-report")
