"""Coverage merging and the regression report's testplan logic (no simulator needed,
but Verilator's coverage tools and genhtml must be installed: `make setup` does it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from lockstep.verif import covreport, testplan
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.report import analyse, family_lines, render_html


def _db(points: dict[str, dict], at_least: int = 1) -> dict:
    """A cocotb-coverage YAML export with the given points (name -> {bin: hits})."""
    db: dict = {}
    for name, bins in points.items():
        cov = sum(h >= at_least for h in bins.values())
        db[name] = {"at_least": at_least, "bins:_hits": dict(bins), "cover_percentage": round(100 * cov / len(bins), 2),
                    "coverage": cov, "size": len(bins), "type": "<class 'cocotb_coverage.coverage.CoverPoint'>",
                    "weight": 1}
        parts = name.split(".")
        for i in range(1, len(parts)):  # every enclosing group, as cocotb-coverage exports them
            g = db.setdefault(".".join(parts[:i]),
                              {"coverage": 0, "size": 0, "type": "<class 'cocotb_coverage.coverage.CoverItem'>"})
            g["coverage"] += cov
            g["size"] += len(bins)
            g["cover_percentage"] = round(100 * g["coverage"] / g["size"], 2)
    return db


def _write(path: Path, db: dict) -> Path:
    path.write_text(yaml.dump(db))
    return path


def test_functional_merge_sums_hits_and_unions_bins(tmp_path):
    a = _write(tmp_path / "a.yml", _db({"u.g.p": {"x": 2, "y": 0}, "u.g.r": {True: 1, False: 0}}))
    b = _write(tmp_path / "b.yml", _db({"u.g.p": {"x": 1, "y": 0, "z": 4}, "u.g.q": {1: 0}}))
    m = covreport.merge_functional([a, b])
    assert m["u.g.p"]["bins"] == {"x": 3, "y": 0, "z": 4} and m["u.g.p"]["runs"] == 2
    assert m["u.g.r"]["bins"] == {"True": 1, "False": 0}
    assert covreport.bins_total(m) == (3, 6)  # hit: x, z, True; holes: y, False, q=1
    assert covreport.bins_total(covreport.select_points(m, ["u.g.p"])) == (2, 3)
    assert set(covreport.select_points(m, ["u.g.q", "u.g.r"])) == {"u.g.q", "u.g.r"}


def test_functional_merge_agrees_with_cocotb_coverage_on_equal_bins(tmp_path):
    """Where cocotb-coverage's own merger works (same bins everywhere), we agree with it."""
    from cocotb_coverage.coverage import merge_coverage

    dbs = [_db({"u.g.p": {"a": i, "b": 2 - i, "c": 0}, "u.g.q": {0: i % 2, 1: 1}}) for i in range(3)]
    files = [_write(tmp_path / f"{i}.yml", d) for i, d in enumerate(dbs)]
    merge_coverage(lambda *_: None, str(tmp_path / "ref.yml"), *map(str, files))
    ref = yaml.safe_load((tmp_path / "ref.yml").read_text())
    ours = covreport.merge_functional(files)
    for name in ("u.g.p", "u.g.q"):
        assert ours[name]["bins"] == {str(k): v for k, v in ref[name]["bins:_hits"].items()}
    hit, total = covreport.bins_total(ours)
    assert round(100 * hit / total, 2) == ref["u.g"]["cover_percentage"]


def test_functional_merge_refuses_incomparable_thresholds(tmp_path):
    a = _write(tmp_path / "a.yml", _db({"u.g.p": {"x": 2}}, at_least=1))
    b = _write(tmp_path / "b.yml", _db({"u.g.p": {"x": 2}}, at_least=3))
    with pytest.raises(ValueError, match="at_least"):
        covreport.merge_functional([a, b])


def _dat_key(src: Path, line: int, kind: str, obj: str) -> str:
    page = {"line": "v_line", "branch": "v_branch", "toggle": "v_toggle"}[kind]
    return "".join(f"\x01{k}\x02{v}" for k, v in
                   (("f", src), ("l", line), ("n", 1), ("t", kind), ("page", f"{page}/top"), ("o", obj), ("h", "top")))


def test_code_coverage_merge_summary_and_html(tmp_path):
    """Two runs' coverage.dat merged by verilator_coverage: counts add up per point; the
    summary splits line/branch/toggle; genhtml renders a page per kind."""
    src = tmp_path / "rtl" / "top-abc" / "top.v"
    src.parent.mkdir(parents=True)
    src.write_text("module top(input a, output b);\nassign b = a;\nalways @* if (a) ;\nendmodule\n")
    k_line, k_if, k_else, k_tog = (_dat_key(src, 2, "line", "block"), _dat_key(src, 3, "branch", "if"),
                                   _dat_key(src, 3, "branch", "else"), _dat_key(src, 1, "toggle", "a:0->1"))
    r1 = covreport.write_dat({k_line: 3, k_if: 1, k_else: 0, k_tog: 0}, tmp_path / "r1.dat")
    r2 = covreport.write_dat({k_line: 2, k_if: 0, k_else: 0, k_tog: 0}, tmp_path / "r2.dat")
    assert covreport.read_dat(r1)[k_line] == 3
    merged = covreport.merge_dat([r1, r2], tmp_path / "out" / "merged.dat")
    counts = covreport.read_dat(merged)
    assert counts[k_line] == 5 and counts[k_if] == 1 and counts[k_else] == 0
    summary = covreport.code_summary(counts)[str(src)]
    assert summary["line"] == [1, 1] and summary["branch"] == [1, 2] and summary["toggle"] == [0, 1]
    pages = covreport.render_code_html(merged, tmp_path / "out", tmp_path / "rtl", "t")
    assert set(pages) == {"line", "toggle"}
    assert all(p.exists() for p in pages.values())
    assert "top.v" in (pages["line"].parent / "top-abc" / "index.html").read_text()


def test_every_registered_testbench_is_planned():
    """Each family has a testplan that loads cleanly and lists all its testbenches."""
    plans = testplan.load_all()
    for tb in TESTBENCHES.values():
        assert tb.name in plans[tb.family].tests(), tb.name


def _plan_yaml(**over) -> dict:
    base = {"family": "bfp", "goals": {"functional": 100}, "stages": {"V1": "x"},
            "features": [{"name": "all", "stage": "V1", "tests": ["bfp_*"], "cover": ["bfp.quantizer"]}]}
    base.update(over)
    return base


@pytest.mark.parametrize("change,message", [
    ({"colour": 1}, "unknown key"),
    ({"family": "nope"}, "family"),
    ({"goals": {"functional": 101}}, "percentage"),
    ({"goals": {"speed": 1}}, "goals"),
    ({"stages": {}}, "stages"),
    ({"features": []}, "at least one feature"),
    ({"features": [{"name": "f", "stage": "V9", "tests": ["bfp_*"]}]}, "stage 'V9'"),
    ({"features": [{"name": "f", "stage": "V1", "tests": ["nothing_*"]}]}, "matches no registered"),
    ({"features": [{"name": "f", "stage": "V1", "tests": ["bfp_dot_*"]}]}, "no feature lists"),
    ({"features": [{"name": "f", "stage": "V1", "tests": ["bfp_*"], "owner": "me"}]}, "unknown key"),
    ({"features": [{"name": "f", "stage": "V1", "tests": ["bfp_*"]}] * 2}, "listed twice"),
])
def test_testplan_refuses_malformed_plans(change, message):
    with pytest.raises(testplan.TestplanError, match=message):
        testplan.parse(_plan_yaml(**change), Path("plan.yml"), family="bfp")


def _run(tmp: Path, tb: str, sim: str, ok: bool, hits: dict | None = None) -> dict:
    res = tmp / f"{tb}-{sim}-{ok}"
    res.mkdir()
    if hits is not None:
        _write(res / "coverage.yml", _db(hits))
    return {"testbench": tb, "sim": sim, "seed": 1, "ok": ok, "expect_fail": TESTBENCHES[tb].expect_fail,
            "cycles": 10, "wall": 1.0, "coverage": None, "results": str(res), "repro": f"make sim TEST={tb}"}


def test_report_feature_status_and_counted_coverage(tmp_path):
    """pass / fail / untested per feature; failing and negative runs add no coverage."""
    plan = testplan.parse(
        {"family": "bfp", "goals": {"functional": 100}, "stages": {"V1": "x"}, "features": [
            {"name": "quant", "stage": "V1", "tests": ["bfp_quantize_patent"], "cover": ["bfp.quantizer"]},
            {"name": "dot", "stage": "V1", "tests": ["bfp_dot_patent"], "cover": ["bfp.dot"]},
            {"name": "rest", "stage": "V1", "tests": ["bfp_*"]}]},
        Path("plan.yml"), family="bfp")
    rows = [
        _run(tmp_path, "bfp_quantize_patent", "icarus", True, {"bfp.quantizer.p": {"a": 1, "b": 0}}),
        _run(tmp_path, "bfp_quantize_patent", "verilator", True, {"bfp.quantizer.p": {"a": 0, "b": 0}}),
        _run(tmp_path, "bfp_quantize_mutant", "icarus", True, {"bfp.quantizer.p": {"a": 0, "b": 5}}),
        _run(tmp_path, "bfp_dot_patent", "icarus", False, {"bfp.dot.p": {"a": 1}}),
    ]
    result = analyse(rows, tmp_path / "report", tmp_path, plans={"bfp": plan})
    fam = result["families"]["bfp"]
    status = {f["feature"]: (f["status"], f["cover_hit"], f["cover_bins"]) for f in fam["features"]}
    assert status["quant"] == ("pass", 1, 2)  # the mutant's hit on b does not count
    assert status["dot"] == ("fail", 0, 0)  # the failing run's coverage does not count
    assert status["rest"][0] == "fail"
    assert fam["functional"] == {"hit": 1, "total": 2, "pct": 50.0}
    assert fam["points"]["bfp.quantizer.p"]["bins"] == {"a": 1, "b": 0}
    line = family_lines(result)[0]
    assert line.startswith("bfp: 1/3 features pass") and "functional 50.0%" in line and "below goal: functional" in line
    page = render_html(rows, [], "t", 1.0, result)
    assert page.count("NO PASSING TEST") == 0 and page.count("<td class='st'>FAIL</td>") >= 2
    untested = analyse(rows[:1], tmp_path / "r2", tmp_path, plans={"bfp": plan})
    assert [f["status"] for f in untested["families"]["bfp"]["features"]] == ["pass", "untested", "pass"]
    assert "NO PASSING TEST" in render_html(rows[:1], [], "t", 1.0, untested)


@pytest.mark.parametrize("entry,message", [
    ("nope", "must be a mapping"),
    ({"kind": "expr", "source": "x", "reason": "never reached at all"}, "kind must be"),
    ({"kind": "toggle", "source": "x", "reason": "never reached at all"}, "with 'signal'"),
    ({"kind": "line", "signal": "x", "reason": "never reached at all"}, "with 'source'"),
    ({"kind": "line", "source": "(", "reason": "never reached at all"}, "not a regular expression"),
    ({"kind": "toggle", "signal": "x"}, "needs a reason"),
    ({"kind": "toggle", "signal": "x", "reason": "todo"}, "needs a reason"),
    ({"kind": "toggle", "signal": "x", "reason": "never reached at all", "owner": "me"}, "unknown key"),
    ({"kind": "toggle", "module": "", "signal": "x", "reason": "never reached at all"}, "module must be"),
    ({"kind": "toggle", "signal": "x", "reason": "never reached at all", "when": "__import__('os')"}, "not a condition"),
    ({"kind": "toggle", "signal": "x", "reason": "never reached at all", "when": "e <"}, "not a condition"),
    ({"kind": "line", "source": "x", "reason": "never reached at all", "bits": "b > 3"}, "not on a line point"),
    ({"kind": "toggle", "signal": "x", "reason": "never reached at all", "bits": "b >"}, "not a condition on the bit"),
])
def test_exclusions_refuse_malformed_entries(entry, message):
    with pytest.raises(testplan.TestplanError, match=message):
        testplan.parse_exclusions([entry], Path("coverage_exclusions.yml"))


def test_every_family_exclusions_file_loads():
    """The committed exclusions parse; every entry carries its reason."""
    for plan in testplan.load_all().values():
        assert all(len(x.reason.split()) >= 3 for x in plan.exclusions)


def _cov_run(tmp: Path, tb: str, src: Path, counts: dict[str, int]) -> dict:
    res = tmp / f"run-{tb}"
    res.mkdir()
    covreport.write_dat(counts, res / "coverage.dat")
    return {"testbench": tb, "sim": "verilator", "seed": 1, "ok": True, "expect_fail": False, "cycles": 10,
            "wall": 1.0, "coverage": None, "results": str(res), "repro": "", "rtl": str(src)}


def test_excluded_points_are_set_apart_and_a_hit_one_fails_the_report(tmp_path):
    """Excluded points leave the figures and are listed with their reason; one that a run
    hits is a problem (the reason was wrong), named in the report."""
    src = tmp_path / "rtl" / "top-abc" / "bfp_quantize.v"
    src.parent.mkdir(parents=True)
    src.write_text("module top(input a, output b);\nassign b = a;\nalways @* if (a == 7) ;\nendmodule\n")
    k_line, k_if, k_else = (_dat_key(src, 2, "line", "block"), _dat_key(src, 3, "branch", "if"),
                            _dat_key(src, 3, "branch", "else"))
    k_t0, k_t1, k_u = (_dat_key(src, 1, "toggle", "a_unused[0]:0->1"), _dat_key(src, 1, "toggle", "a_unused[0]:1->0"),
                       _dat_key(src, 1, "toggle", "b[0]:0->1"))
    src.with_suffix(".json").write_text('{"params": {"e": 5, "w": 16}}')
    plan = testplan.parse(_plan_yaml(), Path("plan.yml"), family="bfp")
    excl = testplan.parse_exclusions([
        {"kind": "toggle", "module": "bfp_quant*", "signal": "*_unused*", "reason": "bits nothing reads"},
        {"kind": "branch", "source": r"a == 7", "reason": "a is one bit, never seven", "when": "e < 8 and w == 16"},
        {"kind": "line", "source": r"assign b", "reason": "only for wider exponents", "when": "e >= 8"},
        {"kind": "toggle", "module": "other", "signal": "b*", "reason": "another module only"},
    ], Path("x.yml"))
    plan = dataclasses.replace(plan, exclusions=excl)
    counts = {k_line: 4, k_if: 0, k_else: 3, k_t0: 0, k_t1: 0, k_u: 1}
    rows = [_cov_run(tmp_path, "bfp_quantize_patent", src, counts)]
    result = analyse(rows, tmp_path / "rep", tmp_path, code=True, plans={"bfp": plan})
    fam = result["families"]["bfp"]
    assert fam["code"]["line"] == [1, 1] and fam["code"]["branch"] == [0, 0] and fam["code"]["toggle"] == [1, 1]
    assert sorted((x["kind"], x["name"], x["count"]) for x in fam["excluded"]) == [
        ("branch", "else", 3), ("branch", "if", 0), ("toggle", "a_unused[0]:0->1", 0), ("toggle", "a_unused[0]:1->0", 0)]
    assert len(result["problems"]) == 1 and "excluded branch point hit 3 time(s)" in result["problems"][0]
    assert "a is one bit" in result["problems"][0]
    page = render_html(rows, [], "t", 1.0, result)
    assert "Excluded code coverage points" in page and "HIT: bfp_quantize line 3 else" in page
    assert "4 points excluded" in family_lines(result)[0]


def test_an_exclusion_condition_names_real_parameters():
    x = testplan.parse_exclusions([{"kind": "line", "source": "x", "reason": "only for wide formats", "when": "q > 1"}],
                                  Path("x.yml"))[0]
    assert not x.matches("line", "m", "", "y", {"e": 5})       # the source does not match: not evaluated
    with pytest.raises(testplan.TestplanError, match=r"m has no parameter\(s\) \['q'\]"):
        x.matches("line", "m", "", "x", {"e": 5})


def test_a_bits_condition_picks_bit_indices():
    x = testplan.parse_exclusions([{"kind": "toggle", "signal": "*cnt*", "reason": "upper bits of wide counters",
                                    "bits": "b % cnt_bits >= 16", "when": "cnt_bits == 32"}], Path("x.yml"))[0]
    p32, p8 = {"cnt_bits": 32}, {"cnt_bits": 8}
    assert x.matches("toggle", "m", "cnt_hits[16]:0->1", "", p32) and x.matches("toggle", "m", "cnt_hits[63]:1->0", "", p32)
    assert not x.matches("toggle", "m", "cnt_hits[15]:0->1", "", p32)
    assert not x.matches("toggle", "m", "cnt_hits[32]:0->1", "", p32)   # lane 1's bit 0
    assert not x.matches("toggle", "m", "cnt_hits[20]:0->1", "", p8)    # not this configuration
    assert not x.matches("toggle", "m", "cnt_hits:0->1", "", p32)       # no index: no bit to judge
    assert not x.matches("toggle", "m", "other[20]:0->1", "", p32)


def test_bits_a_constant_drives_are_set_apart_and_their_start_up_rise_is_no_toggle(tmp_path):
    """The constant parts at either end of a concatenation (MyHDL's zero extension, fixed
    low fields) cannot toggle: set apart without an exclusions file. A count Verilator gives
    one (a bit tied to 1 rises once as the simulation starts; Verilator counts toggles on
    tied bits of nets it merges) is kept apart and is no hit."""
    src = tmp_path / "rtl" / "top-abc" / "host_front.v"
    src.parent.mkdir(parents=True)
    src.write_text("module host_front(input [3:0] a, output [7:0] x);\n"
                   "wire [7:0] a__x;\nwire [6:0] ra;\n"
                   "assign a__x = {4'h0, a};\n"           # bits 7..4 tied to 0
                   "assign ra = {a, 3'h5};\n"             # bits 2..0 tied to 1, 0, 1
                   "endmodule\n")
    tied = covreport._tied_bits(src.read_text().splitlines())
    assert tied == {"a__x": {4: 0, 5: 0, 6: 0, 7: 0}, "ra": {0: 1, 1: 0, 2: 1}}
    counts = {_dat_key(src, 2, "toggle", "a___05Fx[7]:0->1"): 0, _dat_key(src, 2, "toggle", "a___05Fx[3]:0->1"): 5,
              _dat_key(src, 3, "toggle", "ra[0]:0->1"): 1, _dat_key(src, 3, "toggle", "ra[0]:1->0"): 0,
              _dat_key(src, 3, "toggle", "ra[1]:0->1"): 0, _dat_key(src, 3, "toggle", "ra[3]:0->1"): 2}
    kept, excluded = covreport.split_excluded(counts, lambda s: ())
    assert sorted(x["name"] for x in excluded) == ["a___05Fx[7]:0->1", "ra[0]:0->1", "ra[0]:1->0", "ra[1]:0->1"]
    assert all(x["count"] == 0 and x["reason"] == covreport.TIED_REASON for x in excluded)
    assert sorted(kept.values()) == [2, 5]
    # the Verilog ties it, so a count Verilator gives a tied bit is kept apart, not a hit
    counts[_dat_key(src, 3, "toggle", "ra[1]:0->1")] = 3
    _, excluded = covreport.split_excluded(counts, lambda s: ())
    assert [(x["count"], x["verilator_count"]) for x in excluded if x["name"] == "ra[1]:0->1"] == [(0, 3)]


def test_a_source_covered_in_any_build_is_covered():
    """A generated source simulated alone (per-edge build) and under a throughput harness
    (another hierarchy) is one module: a point hit in either build is hit."""
    src = Path("/x/rtl/sched_ring-abc/sched_ring.v")

    def key(h: str, line: int, obj: str) -> str:
        return "".join(f"\x01{k}\x02{v}" for k, v in (("f", src), ("l", line), ("n", 3), ("t", "branch"),
                                                        ("page", "v_branch/sched_ring"), ("o", obj), ("h", h)))
    counts = {key("sched_ring", 5, "if"): 0, key("tp_sched_ring.dut", 5, "if"): 7,
              key("sched_ring", 5, "else"): 2, key("tp_sched_ring.dut", 5, "else"): 3}
    merged = covreport.merge_instances(counts)
    assert merged == {key("sched_ring", 5, "if"): 7, key("sched_ring", 5, "else"): 5}
    assert covreport.code_summary(merged)[str(src)]["branch"] == [2, 2]
    assert covreport.code_summary(counts)[str(src)]["branch"] == [3, 4]   # per instance, one looked unhit
