"""The regression and coverage report: testplan status, merged coverage, runs, parity.

:func:`analyse` turns a regression's runs (one dict per run, as ``tests/test_sim.py``
records them) into per-family figures; :func:`render_html` makes the self-contained page
``index.html`` of ``make regress`` / ``make coverage``; :func:`family_lines` the one line
per family they print. Only runs that passed and are not negative tests feed the
coverage: a failing run's hits, or a deliberately wrong DUT's, prove nothing.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from . import covreport
from .registry import TESTBENCHES
from .testplan import Testplan, feature_status, load_all

__all__ = ["analyse", "render_html", "family_lines", "counted"]


def counted(r: dict[str, Any]) -> bool:
    """Does this run's coverage count (it passed and is not a negative test)?"""
    return bool(r["ok"]) and not r.get("expect_fail")


def _pct(hit: int, total: int) -> float | None:
    return round(100.0 * hit / total, 2) if total else None




def analyse(rows: list[dict[str, Any]], outdir: Path, build: Path, code: bool = False,
            plans: dict[str, Testplan] | None = None) -> dict[str, Any]:
    """Per-family testplan status, functional and (optionally) code coverage.

    Args:
        rows: the regression's runs (``testbench``, ``sim``, ``ok``, ``expect_fail``,
            ``results`` folder, ``rtl`` source simulated...).
        outdir: report folder; code coverage goes to ``outdir/code``.
        build: the build folder (stripped from source names in the code pages).
        code: merge Verilator ``coverage.dat`` files and render their HTML.
        plans: testplans (default: every family's ``testplan.yml``).

    Returns:
        ``{"families": {family: {...}}, "code_pages": {kind: path}, "problems": [...]}``;
        a problem (code coverage requested but missing for a family) fails the regression.
    """
    plans = plans if plans is not None else load_all()
    fam_of = {r["testbench"]: TESTBENCHES[r["testbench"]].family for r in rows if r["testbench"] in TESTBENCHES}
    families: dict[str, Any] = {}
    for fam in sorted(set(fam_of.values())):
        plan = plans[fam]
        mine = [r for r in rows if fam_of.get(r["testbench"]) == fam]
        ymls = [Path(r["results"]) / "coverage.yml" for r in mine if counted(r)]
        points = covreport.merge_functional([y for y in ymls if y.exists()])
        features = feature_status(plan, mine)
        for f in features:
            sel = covreport.select_points(points, f["cover"])
            f["cover_hit"], f["cover_bins"] = covreport.bins_total(sel)
            f["cover_missing"] = [c for c in f["cover"] if not covreport.select_points(points, [c])]
        hit, total = covreport.bins_total(points)
        families[fam] = {
            "title": plan.title, "goals": plan.goals, "stages": plan.stages, "features": features,
            "functional": {"hit": hit, "total": total, "pct": _pct(hit, total)},
            "points": points, "runs": len(mine), "counted": sum(counted(r) for r in mine),
            "code": None, "modules": [], "excluded": [],
        }
    pages: dict[str, Path] = {}
    problems: list[str] = []
    if code:
        dats = [Path(r["results"]) / "coverage.dat" for r in rows if counted(r) and r["sim"] == "verilator"]
        dats = [d for d in dats if d.exists()]
        if dats:
            merged = covreport.merge_dat(dats, outdir / "code" / "merged.dat")
            # a generated source is shared by every testbench of its module and parameters
            users: dict[str, set[str]] = {}
            for r in rows:
                if r.get("rtl") and counted(r):
                    users.setdefault(str(Path(r["rtl"]).resolve()), set()).add(r["testbench"])

            def family_of(source: str) -> str | None:
                tbs = users.get(str(Path(source).resolve()))
                return fam_of[min(tbs)] if tbs else None

            counts, excluded = covreport.split_excluded(
                covreport.merge_instances(covreport.read_dat(merged)), lambda src: plans[f].exclusions if (f := family_of(src)) else ())
            for x in excluded:
                fam = family_of(x["source"])
                if fam is None:   # a harness's tied bit: the harness is not counted anyway
                    continue
                families[fam]["excluded"].append(x)
                if x["count"]:
                    problems.append(f"{fam}: excluded {x['kind']} point hit {x['count']} time(s): {x['module']} "
                                    f"line {x['line']} {x['name']} (excluded because: {x['reason']})")
            per_file = covreport.code_summary(counts)
            for source, kinds in sorted(per_file.items()):
                tbs = sorted(users.get(str(Path(source).resolve()), ()))
                if not tbs:
                    continue
                entry = families[fam_of[tbs[0]]]
                entry["modules"].append({"testbenches": tbs, "module": Path(source).stem, "source": source, **kinds})
                totals = entry["code"] or {k: [0, 0] for k in covreport.KINDS}
                for k in covreport.KINDS:
                    totals[k] = [totals[k][0] + kinds[k][0], totals[k][1] + kinds[k][1]]
                entry["code"] = totals
            pages = covreport.render_code_html(counts, outdir / "code", build / "rtl", "lockstep code coverage")
        for fam, entry in families.items():
            ran = any(counted(r) and r["sim"] == "verilator" for r in rows if fam_of.get(r["testbench"]) == fam)
            if ran and entry["code"] is None:
                problems.append(f"{fam}: passing Verilator runs but no code coverage attributed to the family's "
                                f"generated sources (missing or foreign coverage.dat)")
    return {"families": families, "code_pages": {k: str(v) for k, v in pages.items()}, "problems": problems}


def _fmt(hit_total: list[int] | None) -> str:
    if not hit_total or not hit_total[1]:
        return "-"
    return f"{100.0 * hit_total[0] / hit_total[1]:.1f}%"


def family_lines(result: dict[str, Any]) -> list[str]:
    """One line per family: features passing, line / branch / toggle / functional coverage vs goals."""
    out = []
    for fam, e in result["families"].items():
        ok = sum(f["status"] == "pass" for f in e["features"])
        code = e["code"]
        parts = [f"{k} {_fmt(code[k]) if code else 'n/a'}" for k in ("line", "branch", "toggle")]
        func = e["functional"]["pct"]
        parts.append(f"functional {'-' if func is None else f'{func:.1f}%'}")
        if e.get("excluded"):
            parts.append(f"{len(e['excluded'])} points excluded")
        below = [k for k, goal in e["goals"].items() if (_value(e, k) is not None and _value(e, k) < goal)]
        note = f"; below goal: {', '.join(below)}" if below else ""
        out.append(f"{fam}: {ok}/{len(e['features'])} features pass; " + ", ".join(parts) + note)
    return out


def _value(e: dict[str, Any], kind: str) -> float | None:
    if kind == "functional":
        return e["functional"]["pct"]
    if not e["code"] or not e["code"][kind][1]:
        return None
    return 100.0 * e["code"][kind][0] / e["code"][kind][1]


def _verdict(r: dict[str, Any]) -> str:
    """PASS/FAIL; a negative testbench that failed as it must says so."""
    if not r["ok"]:
        return "FAIL"
    return "PASS (failed as expected)" if r.get("expect_fail") else "PASS"


def _cell(value: float | None, goal: float | None) -> str:
    if value is None:
        return "<td class='na'>-</td>"
    cls = "" if goal is None else (" class='good'" if value >= goal else " class='bad'")
    tip = "" if goal is None else f" title='goal {goal:g}%'"
    return f"<td{cls}{tip}>{value:.1f}%</td>"


_E = html.escape


def _family_html(fam: str, e: dict[str, Any], pages: dict[str, str]) -> str:
    goals = e["goals"]
    feats = []
    for f in e["features"]:
        cov = f"{f['cover_hit']}/{f['cover_bins']}" if f["cover_bins"] else "-"
        miss = ""
        if f["cover_missing"] and f["passed"]:  # a point its passing tests never sampled
            miss = f" <span class='bad'>no data: {_E(', '.join(f['cover_missing']))}</span>"
        label = {"pass": "PASS", "fail": "FAIL", "untested": "NO PASSING TEST"}[f["status"]]
        if f["status"] == "untested" and all(TESTBENCHES[t].tier == "full" for t in f["tests"]):
            label += " (full-tier tests)"
        feats.append(
            f"<tr class='{f['status']}'><td>{_E(f['feature'])}</td><td>{_E(f['stage'])}</td>"
            f"<td class='st'>{label}</td><td>{f['passed']}/{f['passed'] + f['failed']}</td>"
            f"<td>{cov}{miss}</td><td>{_E(f['desc'])}</td></tr>")
    pts = []
    for name, p in sorted(e["points"].items()):
        hit, total = covreport.bins_total({name: p})
        holes = [b for b, h in p["bins"].items() if h < p["at_least"]]
        bins = " ".join(f"<span class='{'hole' if h < p['at_least'] else 'bin'}'>{_E(b)}: {h}</span>"
                        for b, h in p["bins"].items())
        pts.append(
            f"<tr class='{'fail' if holes else 'pass'}'><td>{_E(name)}</td><td>{hit}/{total}</td>"
            f"<td>{_E(', '.join(holes)) or '-'}</td><td class='bins'>{bins}</td></tr>")
    code = ""
    if e["code"]:
        mods = "".join(
            f"<tr><td>{_E(m['module'])}</td><td>{_E(', '.join(m['testbenches']))}</td>"
            + "".join(_cell(_pct(*m[k]), goals.get(k)) for k in ("line", "branch", "toggle")) + "</tr>"
            for m in e["modules"])
        links = " · ".join(f"<a href='code/{k}/index.html'>{k} coverage by source line</a>" for k in pages)
        code = (f"<h3>Code coverage (Verilator) per generated module</h3><p>{links}</p>"
                "<table><tr><th>module</th><th>testbenches (same parameters)</th><th>line</th><th>branch</th>"
                f"<th>toggle</th></tr>{mods}</table>" + _excluded_html(e["excluded"]))
    stages = "; ".join(f"<b>{_E(k)}</b> {_E(v)}" for k, v in e["stages"].items())
    return f"""<h2 id='{_E(fam)}'>{_E(fam)}: {_E(e['title'])}</h2>
<p class='small'>{e['runs']} runs, {e['counted']} counted for coverage (passed, not negative). Stages: {stages}</p>
<h3>Testplan</h3><table><tr><th>feature</th><th>stage</th><th>status</th><th>runs passed</th>
<th>cover bins hit</th><th>what</th></tr>{''.join(feats)}</table>
<h3>Functional coverage (merged over runs)</h3><table><tr><th>cover point</th><th>bins hit</th><th>holes</th>
<th>bins: hits</th></tr>{''.join(pts)}</table>{code}"""


def _excluded_html(excluded: list[dict[str, Any]]) -> str:
    """The excluded code coverage points, grouped by reason; a hit one is red (it fails)."""
    if not excluded:
        return ""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for x in excluded:
        groups.setdefault((x["kind"], x["reason"]), []).append(x)
    rows = []
    for (kind, reason), xs in sorted(groups.items()):
        hit = [x for x in xs if x["count"]]
        mods = sorted({x["module"] for x in xs})
        names = sorted({x["name"].rsplit(":", 1)[0] if kind == "toggle" else f"line {x['line']}" for x in xs})
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        where_hit = ", ".join(f"{x['module']} line {x['line']} {x['name']}" for x in hit[:5])
        bad = f"<span class='bad'>HIT: {_E(where_hit)}</span>" if hit else "0"
        rows.append(f"<tr class='{'fail' if hit else 'pass'}'><td>{kind}</td><td>{len(xs)}</td><td>{bad}</td>"
                    f"<td>{_E(reason)}</td><td class='bins'>{_E(', '.join(mods))}: {_E(shown)}</td></tr>")
    return ("<h3>Excluded code coverage points (not in the figures above)</h3>"
            "<table><tr><th>kind</th><th>points</th><th>hit (fails)</th><th>reason</th><th>where</th></tr>"
            + "".join(rows) + "</table>")


def render_html(rows: list[dict[str, Any]], parity: list[str], title: str, elapsed: float,
                result: dict[str, Any] | None = None) -> str:
    """A self-contained HTML page: families (testplan, coverage), parity, every run."""
    result = result or {"families": {}, "code_pages": {}}
    fails = sum(not r["ok"] for r in rows)
    head = f"{len(rows)} runs, {fails} failed, {len(parity)} parity problem(s), {elapsed:.0f} s"
    fam_rows = []
    for fam, e in result["families"].items():
        ok = sum(f["status"] == "pass" for f in e["features"])
        cls = "good" if ok == len(e["features"]) else "bad"
        fam_rows.append(
            f"<tr><td><a href='#{_E(fam)}'>{_E(fam)}</a></td><td class='{cls}'>{ok}/{len(e['features'])}</td>"
            + _cell(e["functional"]["pct"], e["goals"].get("functional"))
            + "".join(_cell(_value(e, k), e["goals"].get(k)) for k in ("line", "branch", "toggle")) + "</tr>")
    families = "".join(_family_html(f, e, result["code_pages"]) for f, e in result["families"].items())
    body = []
    for r in sorted(rows, key=lambda r: (r["testbench"], int(r["seed"]), r["sim"])):
        rate = f"{r['cycles'] / r['wall']:,.0f}" if r.get("wall") else "-"
        cov = "-" if r.get("coverage") is None else f"{r['coverage']:.1f}%"
        cls = "pass" if r["ok"] else "fail"
        body.append(
            f"<tr class='{cls}'><td>{_E(r['testbench'])}</td><td>{r['sim']}</td>"
            f"<td class='st'>{_verdict(r)}</td><td>{r['seed']}</td><td>{r['cycles']}</td>"
            f"<td>{r['wall']:.2f}</td><td>{rate}</td><td>{cov}</td>"
            f"<td><code>{_E(r['repro'])}</code></td>"
            f"<td><a href='file://{_E(r['results'])}'>results</a></td></tr>"
        )
    par = "".join(f"<li>{_E(p)}</li>" for p in parity) or "<li>all simulators agree</li>"
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{_E(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1400px; }}
table {{ border-collapse: collapse; font-size: 14px; margin-bottom: 1em; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; position: sticky; top: 0; }}
.small {{ font-size: 13px; color: #555; }}
td.good {{ color: #17692f; font-weight: 600; }} td.bad, span.bad {{ color: #a00; font-weight: 600; }}
td.na {{ color: #999; }}
tr.pass td.st {{ color: #17692f; font-weight: 600; }}
tr.fail td, tr.untested td {{ background: #fde8e8; }} tr.fail td.st, tr.untested td.st {{ color: #a00; font-weight: 600; }}
td.bins {{ font-size: 12px; }} span.bin, span.hole {{ display: inline-block; margin: 0 8px 2px 0; }}
span.hole {{ color: #a00; font-weight: 600; }}
code {{ font-size: 12px; }}
</style></head><body>
<h1>{_E(title)}</h1><p>{_E(head)}</p>
<h2>Families</h2><table><tr><th>family</th><th>features passing</th><th>functional</th><th>line</th>
<th>branch</th><th>toggle</th></tr>{''.join(fam_rows)}</table>
<p class='small'>Green: at or above the testplan's goal (hover for it); red: below. A feature is red when no
test of it passed in this run. Code coverage appears after <code>make coverage</code>.</p>
<h2>Icarus / Verilator parity</h2><ul>{par}</ul>
{families}
<h2>Runs</h2><table><tr><th>testbench</th><th>sim</th><th>result</th><th>seed</th><th>cycles</th>
<th>wall s</th><th>cycles/s</th><th>functional cov.</th><th>replay</th><th></th></tr>
{''.join(body)}</table></body></html>
"""
