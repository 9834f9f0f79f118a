"""pytest plugin for regressions (``make regress``): progress, replay lines, parity, report.

Loaded with ``-p lockstep.verif.regress --regress-report DIR`` on top of
``tests/test_sim.py`` (which records each run's seed, cycles and wall time as test
properties). On the controlling process it

* prints a progress line after every run: done/total, failures so far, elapsed time;
* prints, for every failure, the one command that replays it exactly;
* checks Icarus/Verilator parity: two simulators that ran the same testbench with the
  same seed must agree on the verdict and on the simulated cycle count. Any difference
  fails the regression;
* writes ``DIR/summary.json`` and ``DIR/index.html`` (per testbench and simulator:
  result, seed, cycles, wall time, cycles per second, functional coverage, results
  folder). pytest's own ``--junitxml`` gives the merged JUnit XML.
"""

from __future__ import annotations

import html
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

__all__ = ["RegressReport", "parity_problems", "render_html"]


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
        verdicts = {(r["ok"], int(r["cycles"])) for r in runs}
        if len(verdicts) > 1:
            got = ", ".join(f"{r['sim']}: {'PASS' if r['ok'] else 'FAIL'} {r['cycles']} cycles" for r in runs)
            out.append(f"parity: {name} seed={seed} differs between simulators ({got})")
    return out


def _verdict(r: dict[str, Any]) -> str:
    """PASS/FAIL; a negative testbench that failed as it must says so."""
    if not r["ok"]:
        return "FAIL"
    return "PASS (failed as expected)" if r.get("expect_fail") else "PASS"


def render_html(rows: list[dict[str, Any]], parity: list[str], title: str, elapsed: float) -> str:
    """A self-contained HTML page summarising a regression."""
    fails = sum(not r["ok"] for r in rows)
    head = f"{len(rows)} runs, {fails} failed, {len(parity)} parity problem(s), {elapsed:.0f} s"
    body = []
    for r in sorted(rows, key=lambda r: (r["testbench"], int(r["seed"]), r["sim"])):
        rate = f"{r['cycles'] / r['wall']:,.0f}" if r.get("wall") else "-"
        cov = "-" if r.get("coverage") is None else f"{r['coverage']:.1f}%"
        cls = "pass" if r["ok"] else "fail"
        body.append(
            f"<tr class='{cls}'><td>{html.escape(r['testbench'])}</td><td>{r['sim']}</td>"
            f"<td>{_verdict(r)}</td><td>{r['seed']}</td><td>{r['cycles']}</td>"
            f"<td>{r['wall']:.2f}</td><td>{rate}</td><td>{cov}</td>"
            f"<td><code>{html.escape(r['repro'])}</code></td>"
            f"<td><a href='file://{html.escape(r['results'])}'>results</a></td></tr>"
        )
    par = "".join(f"<li>{html.escape(p)}</li>" for p in parity) or "<li>all simulators agree</li>"
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; font-size: 14px; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: left; }}
th {{ background: #f3f3f3; position: sticky; top: 0; }}
tr.pass td:nth-child(3) {{ color: #17692f; font-weight: 600; }}
tr.fail td {{ background: #fde8e8; }} tr.fail td:nth-child(3) {{ color: #a00; font-weight: 600; }}
code {{ font-size: 12px; }}
</style></head><body>
<h1>{html.escape(title)}</h1><p>{html.escape(head)}</p>
<h2>Icarus / Verilator parity</h2><ul>{par}</ul>
<h2>Runs</h2><table><tr><th>testbench</th><th>sim</th><th>result</th><th>seed</th><th>cycles</th>
<th>wall s</th><th>cycles/s</th><th>functional cov.</th><th>replay</th><th></th></tr>
{''.join(body)}</table></body></html>
"""


class RegressReport:
    """The plugin object (registered on the controlling process only)."""

    def __init__(self, outdir: Path) -> None:
        self.outdir = outdir
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
        elapsed = time.monotonic() - self.t0
        self.outdir.mkdir(parents=True, exist_ok=True)
        (self.outdir / "summary.json").write_text(
            json.dumps({"runs": self.rows, "parity": parity, "elapsed": elapsed}, indent=1)
        )
        (self.outdir / "index.html").write_text(render_html(self.rows, parity, "lockstep regression", elapsed))
        sys.stdout.write("\n")
        for p in parity:
            sys.stdout.write(p + "\n")
        sys.stdout.write(f"[regress] report: {self.outdir / 'index.html'}\n")
        if parity and session.exitstatus == 0:
            session.exitstatus = 1


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regress-report", default=None, help="write the regression report into this folder")


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("--regress-report")
    if out and not hasattr(config, "workerinput"):
        config.pluginmanager.register(RegressReport(Path(out).resolve()), "lockstep-regress-report")
