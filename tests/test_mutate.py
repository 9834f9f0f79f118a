"""Mutation testing: the mutant sampler, the bounded runs, Yosys's equivalence verdicts,
and a smoke of ``make mutate`` (one small DUT, a handful of mutants, every one that is not
equivalent killed)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lockstep.verif import mutate, mutants as M
from lockstep.verif.mutate import Interrupted, bounded, compiles, duts, equivalence, main, stop_all
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import generate_rtl

HDL = Path(__file__).resolve().parents[1] / "hdl"
COUNTER = HDL / "sched" / "sched_counter.v"


def _swap(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# ---- sampling and applying -------------------------------------------------------------
def test_sites_cover_every_kind_and_only_logic_lines():
    text = (HDL / "gemm" / "ld_detect.v").read_text()
    found = M.sites(text)
    assert {m.kind for m in found} == set(M.KINDS)
    lines = text.split("\n")
    for m in found:
        src = lines[m.line - 1]
        assert m.before == src and m.after != src
        assert not src.lstrip().startswith(("//", "reg ", "wire ", "input ", "output ", "always", "module"))


def test_the_sample_is_reproducible_balanced_and_distinct():
    text = (HDL / "bfp" / "bfp_quantize.v").read_text()
    a, b = M.sample(text, 25, seed=7), M.sample(text, 25, seed=7)
    assert a == b and len(a) == 25 and len(set(a)) == 25
    assert M.sample(text, 25, seed=8) != a
    counts = {k: sum(m.kind == k for m in a) for k in M.KINDS}
    assert counts == {k: 5 for k in M.KINDS}   # the kinds in turn
    small = M.sample(COUNTER.read_text(), 10_000, seed=1)
    assert len(small) == len(M.sites(COUNTER.read_text()))  # every site, once


def test_every_mutant_of_the_counter_compiles_and_changes_one_line():
    text = COUNTER.read_text()
    for m in M.sites(text):
        out = M.apply(text, m)
        diff = [(x, y) for x, y in zip(text.split("\n"), out.split("\n")) if x != y]
        assert diff == [(m.before, m.after)], m
    # compile a few of each kind (Icarus, as make mutate does before simulating)
    tmp = Path(subprocess.check_output(["mktemp", "-d"], text=True).strip())
    for k in M.KINDS:
        for i, m in enumerate([m for m in M.sites(text) if m.kind == k][:3]):
            p = tmp / f"{k}{i}.v"
            p.write_text(M.apply(text, m))
            assert compiles(p, "sched_counter") is None, (m.diff, compiles(p, "sched_counter"))


def test_constants_wrap_in_their_width_and_operators_swap():
    text = "module t(input [3:0] a, output reg [3:0] y);\nalways @(a) begin: b\n    y = (a + 4'hf);\nend\nendmodule\n"
    got = {m.after.strip() for m in M.sites(text) if m.kind in ("op", "const")}
    assert got == {"y = (a - 4'hf);", "y = (a + 4'h0);", "y = (a + 4'he);"}


def test_a_stuck_bit_is_never_the_value_a_constant_already_gives_it():
    text = ("module t (\n    clk,\n    rst,\n    a,\n    q,\n    f\n);\n"   # MyHDL's style
            "input clk;\ninput rst;\ninput [7:0] a;\noutput [7:0] q;\nreg [7:0] q;\noutput f;\nreg f;\n"
            "reg [7:0] mem [0:3];\n"
            "always @(posedge clk) begin: b\n"
            "    if (rst == 1) begin\n"
            "        q <= 0;\n"
            "        f <= (0 != 0);\n"
            "        mem[a] <= 8'h0;\n"
            "    end\n"
            "    else begin\n"
            "        q <= a;\n"
            "        f <= a[0];\n"
            "    end\n"
            "end\n"
            "endmodule\n")
    stuck = {m.after.strip() for m in M.sites(text) if m.kind == "stuck"}
    bit = {m.line: int(m.after.rsplit("[", 1)[1].split("]")[0]) for m in M.sites(text) if m.kind == "stuck"
           and m.after.count(";") == 2}   # the bit the sampler chose for each word's statement
    q0, mem0, qa = sorted(bit)
    assert stuck == {
        f"q <= 0; q[{bit[q0]}] <= 1'b1;",                          # never q[b] <= 1'b0 after q <= 0
        "f <= 1'b1;",                                              # never f <= 1'b0 for (0 != 0)
        f"mem[a] <= 8'h0; mem[a][{bit[mem0]}] <= 1'b1;",  # a memory word's bit, not the word
        f"q <= a; q[{bit[qa]}] <= 1'b0;", f"q <= a; q[{bit[qa]}] <= 1'b1;",
        "f <= 1'b0;", "f <= 1'b1;",
    }
    tmp = Path(subprocess.check_output(["mktemp", "-d"], text=True).strip())
    for i, m in enumerate(m for m in M.sites(text) if m.kind == "stuck"):
        (tmp / f"s{i}.v").write_text(M.apply(text, m))
        assert compiles(tmp / f"s{i}.v", "t") is None, m.diff


def test_apply_refuses_a_text_the_mutant_was_not_drawn_from():
    m = M.sites(COUNTER.read_text())[0]
    with pytest.raises(ValueError, match=f"line {m.line}"):
        M.apply(COUNTER.read_text().replace(m.before, m.before + " "), m)


# ---- bounds and equivalence --------------------------------------------------------------
def test_a_run_past_its_time_is_killed_with_its_group():
    rc, _, wall = bounded([sys.executable, "-c", "import subprocess,time; subprocess.Popen(['sleep','30']); time.sleep(30)"],
                          timeout=1.0, mem_bytes=0)
    assert rc is None and wall < 10


def test_a_run_past_its_memory_fails():
    rc, out, _ = bounded([sys.executable, "-c", "x = bytearray(3 << 30)"], timeout=60, mem_bytes=1 << 30)
    assert rc != 0 and "MemoryError" in out


def test_an_interrupt_kills_the_running_children_and_starts_no_more():
    from lockstep.verif import mutate
    got = []
    t = threading.Thread(target=lambda: got.append(bounded(["sleep", "30"], timeout=60, mem_bytes=0)))
    t.start()
    while not mutate._LIVE:
        time.sleep(0.05)
    try:
        stop_all()
        t.join(10)
        assert not t.is_alive() and got[0][0] == -9       # SIGKILL, long before its 30 s
        with pytest.raises(Interrupted):
            bounded(["true"], timeout=10, mem_bytes=0)
    finally:
        mutate._STOP.clear()


@pytest.mark.parametrize("old,new,verdict", [
    ("        nxt = 24'h0;", "        nxt = 24'h1;", "equivalent"),          # a default overwritten next line
    ("if ((nxt == 0)) begin", "if ((nxt == 1)) begin", "survived"),        # wraps one cycle after reset
    ("                wrap <= 1;", "                wrap <= 0;", "equivalent-bounded"),  # only after 2**24 cycles
])
def test_yosys_tells_equivalent_bounded_and_different_mutants_apart(tmp_path, old, new, verdict):
    text = COUNTER.read_text()
    orig, mut = tmp_path / "orig.v", tmp_path / "mut.v"
    orig.write_text(text)
    mut.write_text(_swap(text, old, new))
    got, detail = equivalence(orig, mut, "sched_counter", depth=8, workdir=tmp_path)
    assert got == verdict, detail
    if verdict == "survived":
        assert "cycles after reset" in detail
    if verdict == "equivalent-bounded":
        assert "within 8 cycles" in detail


def test_both_sides_of_the_miter_start_with_the_same_memories(tmp_path):
    """A memory nothing resets starts with the same (zero) contents in the original and the
    mutant: otherwise the search tells any two designs that read one apart in cycle 0 (it
    did: every survivor of the sched fabric's FIFOs came out 'survived, 0 cycles')."""
    text = ("module m (\n    clk,\n    rst,\n    we,\n    a,\n    d,\n    q\n);\n"
            "input clk;\ninput rst;\ninput we;\ninput [1:0] a;\ninput [3:0] d;\noutput [3:0] q;\nwire [3:0] q;\n"
            "reg [1:0] ra;\nreg [3:0] mem [0:4-1];\n"
            "always @(posedge clk) begin: w\n    if (we) begin\n        mem[a] <= d;\n    end\nend\n"
            "always @(posedge clk) begin: r\n    if (rst == 1) begin\n        ra <= 0;\n    end\n"
            "    else begin\n        ra <= a;\n    end\nend\n"
            "assign q = mem[ra];\nendmodule\n")
    orig, mut = tmp_path / "orig.v", tmp_path / "mut.v"
    orig.write_text(text)
    mut.write_text(_swap(text, "        ra <= a;", "        ra <= (a ^ 2'b00);"))   # the same design, rewritten
    got, detail = equivalence(orig, mut, "m", depth=6, workdir=tmp_path)
    assert got in ("equivalent", "equivalent-bounded"), detail
    mut.write_text(_swap(text, "        ra <= a;", "        ra <= (a + 1);"))
    assert equivalence(orig, mut, "m", depth=6, workdir=tmp_path)[0] == "survived"


@pytest.mark.parametrize("drop,verdict", [
    ("        i = {1'b0, lo_i};", "equivalent"),   # the index of an all-zero vector: nothing reads it
    ("        i = {1'b1, hi_i};", "survived"),     # the index of the half that holds the leading one
])
def test_a_latch_from_a_dropped_assignment_gets_a_verdict(tmp_path, drop, verdict):
    """Dropping one branch's assignment in a combinational block makes a latch ($dlatch),
    which Yosys's SMT back end refuses: every such mutant was 'unknown'. Lowered as
    SymbiYosys lowers it (async2sync: the latch holds its value from step to step), a
    don't-care latch proves equivalent and a read one is told apart."""
    text = ("module m (\n    clk,\n    rst,\n    hi,\n    lo,\n    hi_i,\n    lo_i,\n    q\n);\n"
            "input clk;\ninput rst;\ninput [1:0] hi;\ninput [1:0] lo;\ninput hi_i;\ninput lo_i;\noutput [1:0] q;\nwire [1:0] q;\n"
            "reg [1:0] i;\n"
            "assign q = ((hi != 0) || (lo != 0)) ? i : 2'b00;\n"   # i is read only when some half is nonzero
            "always @(hi, lo, hi_i, lo_i) begin: pick\n    if ((hi != 0)) begin\n        i = {1'b1, hi_i};\n    end\n"
            "    else if ((lo != 0)) begin\n        i = {1'b0, lo_i};\n    end\n    else begin\n        i = {1'b0, lo_i};\n"
            "    end\nend\nendmodule\n")
    orig, mut = tmp_path / "orig.v", tmp_path / "mut.v"
    orig.write_text(text)
    at = text.rindex(drop) if verdict == "equivalent" else text.index(drop)
    mut.write_text(text[:at] + "        // mutant: dropped" + text[at + len(drop):])
    got, detail = equivalence(orig, mut, "m", depth=6, workdir=tmp_path)
    assert got == verdict, detail


@pytest.mark.parametrize("stuck,proved", [("t[15] = 1'b1;", True), ("t[3] = 1'b1;", False)])
def test_the_structural_check_proves_a_mutation_nothing_reads(tmp_path, monkeypatch, stuck, proved):
    """Before the miter (whose search, on a large design, may reach no cycle at all: the
    host engine's 52-bit scalers), Yosys's structural check pairs the two designs' cells
    and proves a mutation no output reads (bit 15 of a product of which only the low
    byte leaves), and never proves one an output reads: the miter then decides."""
    text = ("module m (\n    clk,\n    rst,\n    a,\n    b,\n    q\n);\n"
            "input clk;\ninput rst;\ninput [7:0] a;\ninput [7:0] b;\noutput [7:0] q;\nwire [7:0] q;\n"
            "reg [15:0] p;\nreg [15:0] t;\n"
            "always @(posedge clk) begin: mul\n    if (rst == 1) begin\n        p <= 0;\n    end\n"
            "    else begin\n        p <= (a * b);\n    end\nend\n"
            "always @(p) begin: f\n    t = p;\nend\n"
            "assign q = t[7:0];\nendmodule\n")
    orig, mut = tmp_path / "orig.v", tmp_path / "mut.v"
    orig.write_text(text)
    mut.write_text(_swap(text, "    t = p;\n", f"    t = p; {stuck}\n"))
    calls: list[str] = []
    monkeypatch.setattr(mutate, "_miter", lambda *a, **k: calls.append("miter") or ("unknown", "out of time (stand-in)"))
    got, detail = equivalence(orig, mut, "m", depth=6, timeout=60, workdir=tmp_path)
    if proved:
        assert got == "equivalent" and "structural" in detail and calls == [], detail
    else:
        assert got == "unknown" and calls == ["miter"], detail


@pytest.mark.parametrize("old,new,proved", [
    ("    ok = (a[0] || b[0]);", "    ok = 1'b1;", True),     # read only by ok_unused: dead
    ("    t = (a + b);", "    t = (a - b);", False),         # held in h, which q shows
])
def test_the_structural_check_proves_a_dead_result_on_the_cut(tmp_path, monkeypatch, old, new, proved):
    """A block whose one result is dead (read only by an ``_unused`` sink) and whose other
    results are live: the cut one level out drops the dead one, but its registers are two
    copies the miter's induction may start apart (kernel_select@f7a20 m023 ran out of time
    there, and the whole design holds a memory the structural check cannot take). The
    structural check on the cut pairs them by name and proves the dead mutation, never the
    live one."""
    text = ("module m (\n    clk,\n    rst,\n    a,\n    b,\n    q\n);\n"
            "input clk;\ninput rst;\ninput [3:0] a;\ninput [3:0] b;\noutput [3:0] q;\nwire [3:0] q;\n"
            "reg ok;\nwire ok_unused;\nreg [3:0] t;\nreg [3:0] h;\n"
            "always @(a, b) begin: f\n    ok = (a[0] || b[0]);\n    t = (a + b);\nend\n"
            "always @(posedge clk) begin: r\n    if (rst == 1) begin\n        h <= 0;\n    end\n"
            "    else if (a[1]) begin\n        h <= t;\n    end\nend\n"
            "assign ok_unused = ok;\nassign q = h;\nendmodule\n")
    orig, mut = tmp_path / "orig.v", tmp_path / "mut.v"
    orig.write_text(text)
    mut.write_text(_swap(text, old, new))
    line = text.split("\n").index(old) + 1
    monkeypatch.setattr(mutate, "_miter", lambda *a, **k: ("unknown", "out of time (stand-in)"))
    got, detail = equivalence(orig, mut, "m", depth=6, timeout=60, workdir=tmp_path, line=line)
    if proved:
        assert got == "equivalent" and "structural" in detail and "1 level(s) deep" in detail, detail
    else:
        assert got == "unknown", detail


# ---- the smoke: one DUT, a handful of mutants -----------------------------------------------
def test_the_duts_group_testbenches_by_generated_file():
    groups = {d.name: d for d in duts(["sched_*"])}
    ring = next(d for d in groups.values() if "sched_random" in d.testbenches)
    assert ring.testbenches[0] == "sched_random_tp"        # throughput first
    assert "sched_mutant" not in ring.testbenches          # negative testbenches cannot kill
    assert all(generate_rtl(TESTBENCHES[n]).with_suffix(".v") == ring.source for n in ring.testbenches)


@pytest.mark.sim
def test_make_mutate_smoke_kills_every_non_equivalent_mutant(tmp_path, capsys):
    rc = main(["--tests", "sched_counter_cw8", "--n", "6", "--seed", "3", "--jobs", "2",
               "--report", str(tmp_path), "--min-rate", "100"])
    out = capsys.readouterr().out
    data = json.loads((tmp_path / "mutate.json").read_text())
    (dut,) = data["results"]
    assert rc == 0, out
    assert dut["tally"]["killed"] >= 4 and dut["tally"]["survived"] == dut["tally"]["unknown"] == 0, dut["tally"]
    assert len(dut["mutants"]) == 6 and {m["kind"] for m in dut["mutants"]} == set(M.KINDS)
    for m in dut["mutants"]:
        if m["verdict"] == "killed":
            assert m["killed_by"] == "sched_counter_cw8" and m["runs"][-1]["verdict"] in ("fail", "timeout")
    assert (tmp_path / "index.html").read_text().count("<tr class=") == 6
    assert "kill rate 100.0%" in out
    assert len(dut["rtl_sha"]) == 12 and dut["commit"] != ""
    # a campaign run in parts: the reports merge into one (a DUT measured twice keeps its
    # later record), with no simulation; --min-rate judges the merged DUTs
    other = json.loads((tmp_path / "mutate.json").read_text())
    worse = {**dut, "tally": {**dut["tally"], "killed": dut["tally"]["killed"] - 1, "survived": 1},
             "kill_rate": 50.0, "family": "sched"}
    twin = {**dut, "dut": "sched_counter@twin", "family": "gemm"}
    other["results"] = [worse, twin]
    (tmp_path / "part2.json").write_text(json.dumps(other))
    merged = tmp_path / "merged"
    assert main(["--merge", str(tmp_path), str(tmp_path / "part2.json"), "--report", str(merged),
                 "--min-rate", "90"]) == 1
    data = json.loads((merged / "mutate.json").read_text())
    assert [r["dut"] for r in data["results"]] == [dut["dut"], "sched_counter@twin"]
    assert data["results"][0]["tally"]["survived"] == 1       # the later record of the DUT
    assert set(data["families"]) == {"sched", "gemm"}
    assert main(["--merge", str(tmp_path / "nowhere"), "--report", str(merged)]) == 2


def _record(dut: str, sha: str, killed: int = 9, survived: int = 1) -> dict:
    tally = {v: 0 for v in mutate.VERDICTS} | {"killed": killed, "survived": survived}
    return {"dut": dut, "family": dut.split("_")[0], "testbenches": ["tb"], "usable": ["tb"], "tally": tally,
            "kill_rate": round(100.0 * killed / (killed + survived), 1), "problems": [], "wall_s": 1.0,
            "rtl_sha": sha, "commit": "abc1234", "mutants": []}


def test_the_campaign_folder_merges_and_is_held_to_todays_tier(tmp_path, monkeypatch, capsys):
    """The campaign keeps one record per DUT in the repository (``--save``); ``make
    mutate-status`` merges the folder and holds it to the quick tier generated now: a DUT
    with no record, or measured at Verilog the generators no longer write, is named, and
    with ``--min-rate`` fails the status as a low rate does."""
    from lockstep.verif.mutate import Dut, campaign_status, merge_reports, rtl_sha
    src = {}
    for name, text in [("a", "module a; endmodule\n"), ("b", "module b; endmodule\n"), ("c", "module c; endmodule\n")]:
        src[name] = tmp_path / f"{name}.v"
        src[name].write_text(text)
    current = [Dut(f"bfp_{n}@1", "bfp", f"bfp_{n}", src[n]) for n in "abc"]
    camp = tmp_path / "campaign"
    camp.mkdir()
    rec_a = _record("bfp_a@1", rtl_sha(src["a"].read_text()))
    two = {**rec_a, "mutants": [{"id": "m000", "verdict": "killed"}, {"id": "m001", "verdict": "equivalent"}]}
    assert json.loads(mutate.record_json(two)) == two and mutate.record_json(two).count("\n") == 4  # a line each
    (camp / "bfp_a_1.json").write_text(mutate.record_json(rec_a))
    (camp / "bfp_b_1.json").write_text(json.dumps(_record("bfp_b@1", "000000000000")))   # an older RTL
    (camp / "bfp_old_1.json").write_text(json.dumps(_record("bfp_old@1", "111111111111")))
    results = merge_reports([camp])
    assert [r["dut"] for r in results] == ["bfp_a@1", "bfp_b@1", "bfp_old@1"]
    status = campaign_status(results, current)
    assert status == {"duts": 3, "measured": ["bfp_a@1"], "stale": ["bfp_b@1"], "missing": ["bfp_c@1"],
                      "retired": ["bfp_old@1"]}
    # one DUT's record file merges on its own, and a later source replaces an earlier record
    better = tmp_path / "bfp_b_1.json"
    better.write_text(json.dumps(_record("bfp_b@1", rtl_sha(src["b"].read_text()), killed=10, survived=0)))
    assert {r["dut"]: r["kill_rate"] for r in merge_reports([camp, better])}["bfp_b@1"] == 100.0
    monkeypatch.setattr(mutate, "duts", lambda patterns, sim: current)
    out = tmp_path / "report"
    assert main(["--merge", str(camp), "--tier", "--report", str(out)]) == 0    # no rate asked: a status only
    text = capsys.readouterr()
    assert "1 of 3 DUTs measured" in text.out and "missing (1): bfp_c@1" in text.err and "stale (1): bfp_b@1" in text.err
    assert json.loads((out / "mutate.json").read_text())["campaign"]["missing"] == ["bfp_c@1"]
    assert "missing (1)" in (out / "index.html").read_text()
    assert main(["--merge", str(camp), "--tier", "--report", str(out), "--min-rate", "80"]) == 1   # gaps fail
    (camp / "bfp_b_1.json").write_text(better.read_text())
    (camp / "bfp_c_1.json").write_text(json.dumps(_record("bfp_c@1", rtl_sha(src["c"].read_text()))))
    assert main(["--merge", str(camp), "--tier", "--report", str(out), "--min-rate", "80"]) == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["--merge", str(empty), "--report", str(out)]) == 2
    assert "no report" in capsys.readouterr().err


def test_pending_measures_only_the_duts_without_a_current_record(tmp_path, monkeypatch, capsys):
    """``make mutate PENDING=1 SAVE=1`` resumes a campaign: a DUT with a record at today's
    Verilog is skipped, a missing or stale one is measured and its record saved."""
    from lockstep.verif.mutate import Dut, rtl_sha
    src = {}
    for name in "abc":
        src[name] = tmp_path / f"{name}.v"
        src[name].write_text(f"module {name}; endmodule\n")
    current = [Dut(f"bfp_{n}@1", "bfp", f"bfp_{n}", src[n], ["tb"]) for n in "abc"]
    camp = tmp_path / "campaign"
    camp.mkdir()
    (camp / "bfp_a_1.json").write_text(mutate.record_json(_record("bfp_a@1", rtl_sha(src["a"].read_text()))))
    (camp / "bfp_b_1.json").write_text(mutate.record_json(_record("bfp_b@1", "000000000000")))   # stale
    measured: list[str] = []

    def fake_mutate(d, opt):
        measured.append(d.name)
        return {**_record(d.name, rtl_sha(d.source.read_text()), killed=10, survived=0), "mutants": []}

    monkeypatch.setattr(mutate, "CAMPAIGN", camp)
    monkeypatch.setattr(mutate, "duts", lambda patterns, sim: current)
    monkeypatch.setattr(mutate, "mutate_dut", fake_mutate)
    monkeypatch.setattr(mutate, "yosys", lambda: None)
    monkeypatch.setattr(mutate, "smtbmc", lambda: None)
    assert main(["--pending", "--save", "--report", str(tmp_path / "r")]) == 0
    assert measured == ["bfp_b@1", "bfp_c@1"]
    assert "1 DUT(s) already measured" in capsys.readouterr().out
    assert {f.name for f in camp.glob("*.json")} == {"bfp_a_1.json", "bfp_b_1.json", "bfp_c_1.json"}
    measured.clear()
    assert main(["--pending", "--save", "--report", str(tmp_path / "r")]) == 0   # now nothing is pending
    assert measured == [] and "nothing pending" in capsys.readouterr().out


def test_a_timeout_is_confirmed_with_a_longer_bound_before_it_kills(monkeypatch, tmp_path):
    """A mutant's run that hits its bound runs again with RETRY_FACTOR times the bound
    (a loaded machine slows every run): a pass then is no kill, a second timeout is."""
    import lockstep.verif.mutate as mm

    # its own mutant folder: the smoke mutates the same DUT, perhaps at the same time on
    # another xdist worker, and mutate_dut starts by emptying build/mutate/<dut>/
    monkeypatch.setattr(mm, "BUILD", tmp_path)

    calls: list[tuple[bool, float]] = []
    second = {"verdict": "pass"}

    def fake(name, sim, seed, rtl, timeout, mem):
        calls.append((rtl is not None, timeout))
        if rtl is None:
            return mm.TbRun(name, "pass", 2.0)
        n = sum(1 for mutant, _ in calls if mutant)
        return mm.TbRun(name, "timeout" if n % 2 else second["verdict"], timeout)

    monkeypatch.setattr(mm, "run_testbench", fake)
    monkeypatch.setattr(mm, "equivalence", lambda *a, **k: ("survived", "a difference 3 cycles after reset"))
    (dut,) = duts(["sched_counter_cw8"])
    opt = mm.Options(n=1, seed=3, jobs=1)
    rec = mm.mutate_dut(dut, opt, log=lambda *_: None)["mutants"][0]
    bound = opt.timeout_factor * 2.0 + 30
    assert [t for mutant, t in calls if mutant] == [bound, mm.RETRY_FACTOR * bound]
    assert rec["runs"][0]["retried"] and rec["verdict"] == "survived", rec
    second["verdict"] = "timeout"
    calls.clear()
    rec = mm.mutate_dut(dut, opt, log=lambda *_: None)["mutants"][0]
    assert rec["verdict"] == "killed" and rec["how"] == "timeout" and len(rec["runs"]) == 2, rec


def test_a_recheck_runs_only_the_survivors_again_and_says_so(monkeypatch, tmp_path, capsys):
    """``make mutate RECHECK=1``: a current record's survivors and unknowns run again
    through today's testbenches; a kill there updates the verdict and the rate, the rest
    of the record stays as measured, and the record names the recheck's commit."""
    import lockstep.verif.mutate as mm

    monkeypatch.setattr(mm, "BUILD", tmp_path)
    verdict = {"mutant": "pass"}
    ran: list[str] = []

    def fake(name, sim, seed, rtl, timeout, mem):
        if rtl is None:
            return mm.TbRun(name, "pass", 1.0)
        ran.append(Path(rtl).stem)
        return mm.TbRun(name, "fail" if verdict["mutant"] == "fail" else "pass", 1.0, "a mismatch")

    monkeypatch.setattr(mm, "run_testbench", fake)
    monkeypatch.setattr(mm, "equivalence", lambda *a, **k: ("survived", "a difference 3 cycles after reset"))
    (dut,) = duts(["sched_counter_cw8"])
    opt = mm.Options(n=3, seed=3, jobs=1)
    rec = mm.mutate_dut(dut, opt, log=lambda *_: None)
    assert rec["tally"]["survived"] == 3 and rec["kill_rate"] == 0.0
    rec["mutants"][1].update(verdict="equivalent")   # a proof: not run again
    rec["tally"] = mm._tally(rec["mutants"])
    verdict["mutant"], ran[:] = "fail", []
    new = mm.recheck_dut(dut, rec, opt, log=lambda *_: None)
    assert sorted(ran) == ["m000", "m002"]
    assert [m["verdict"] for m in new["mutants"]] == ["killed", "equivalent", "killed"]
    assert new["kill_rate"] == 100.0 and new["commit"] == rec["commit"]
    assert new["rechecks"][-1]["ran"] == ["m000", "m002"] and new["rechecks"][-1]["killed"] == ["m000", "m002"]
    assert new["rechecks"][-1]["proved"] == []
    assert new["mutants"][0]["rechecked"] and new["mutants"][0]["killed_by"] == "sched_counter_cw8"
    # alive still: today's equivalence check judges it again (a proof now excludes it)
    verdict["mutant"] = "pass"
    monkeypatch.setattr(mm, "equivalence", lambda *a, **k: ("equivalent", "proved: nothing reads it"))
    again = mm.recheck_dut(dut, rec, opt, log=lambda *_: None)
    assert [m["verdict"] for m in again["mutants"]] == ["equivalent"] * 3
    assert again["rechecks"][-1]["proved"] == ["m000", "m002"] and again["kill_rate"] is None
    # NOEQ=1: alive still keeps its recorded verdict and detail, no equivalence check run
    monkeypatch.setattr(mm, "equivalence", lambda *a, **k: pytest.fail("NOEQ ran the equivalence check"))
    kept = mm.recheck_dut(dut, rec, mm.Options(n=3, seed=3, jobs=1, eq=False), log=lambda *_: None)
    assert [(m["verdict"], m["detail"]) for m in kept["mutants"]] == [(m["verdict"], m["detail"])
                                                                       for m in rec["mutants"]]
    assert kept["rechecks"][-1]["equivalence"] == "not run" and kept["rechecks"][-1]["killed"] == []
    assert main(["--tests", "sched_counter_cw8", "--no-eq", "--report", str(tmp_path / "r")]) == 2
    with pytest.raises(ValueError, match="another Verilog"):
        mm.recheck_dut(dut, {**rec, "rtl_sha": "000000000000"}, opt, log=lambda *_: None)
    # from the command line: the campaign's record written back with --save
    verdict["mutant"] = "fail"
    camp = tmp_path / "campaign"
    camp.mkdir()
    monkeypatch.setattr(mm, "CAMPAIGN", camp)
    (camp / mm.record_file(dut.name)).write_text(mm.record_json(rec))
    assert main(["--tests", "sched_counter_cw8", "--recheck", "--save", "--jobs", "1",
                 "--report", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "kill rate 0.0% -> 100.0%" in out and "survivors rechecked at" in out
    assert json.loads((camp / mm.record_file(dut.name)).read_text())["kill_rate"] == 100.0
    (camp / mm.record_file(dut.name)).unlink()
    assert main(["--tests", "sched_counter_cw8", "--recheck", "--report", str(tmp_path / "r")]) == 2


# ---- the mutated block alone -----------------------------------------------------------------
BLOCKS = """module top (clk, rst, a, b, y, z);
input clk;
input rst;
input [3:0] a;
input [1:0] b;
output [3:0] y;
wire [3:0] y;
output [3:0] z;
wire [3:0] z;
reg [3:0] mem [0:4-1];
reg [3:0] t;
reg [3:0] s;
reg [3:0] dead;

always @(posedge clk) begin: regs
    integer i;
    if (rst == 1) begin
        t <= 0;
        for (i=0; i<4; i=i+1) begin
            mem[i] <= 0;
        end
    end
    else begin
        t <= (mem[b] + a);
        mem[b] <= a;
    end
end

always @(a) begin: shr
    s = (a >>> 1);
end

always @(a) begin: unread
    dead = (a >> 1);
end

assign y = t;
assign z = s;

endmodule
"""


def _block_mutant(tmp_path, old: str, new: str) -> tuple[Path, Path, int]:
    orig, mut_file = tmp_path / "orig.v", tmp_path / "mut.v"
    orig.write_text(BLOCKS)
    mut_file.write_text(_swap(BLOCKS, old, new))
    return orig, mut_file, BLOCKS.split("\n").index(next(ln for ln in BLOCKS.split("\n") if old in ln)) + 1


def test_the_mutated_block_alone_reads_free_inputs_and_drives_what_others_read(tmp_path):
    from lockstep.verif.mutants import local_pair

    orig, mut_file, line = _block_mutant(tmp_path, "dead = (a >> 1);", "dead = (a << 1);")
    gold, gate = local_pair(orig.read_text(), mut_file.read_text(), line)
    assert "output" not in gold and "reg [3:0] dead;" in gold and "(a << 1)" in gate   # read nowhere
    orig, mut_file, line = _block_mutant(tmp_path, "s = (a >>> 1);", "s = (a >> 1);")
    gold, _ = local_pair(orig.read_text(), mut_file.read_text(), line)
    assert "output [3:0] s;" in gold and "input [3:0] a;" in gold and "always @(a) begin: shr" in gold
    # a memory written in the block and read elsewhere cannot be a port: no local pair
    text = BLOCKS.replace("assign y = t;", "assign y = mem[0];")
    line = text.split("\n").index("        t <= (mem[b] + a);") + 1
    assert local_pair(text, text.replace("(mem[b] + a)", "(mem[b] - a)"), line) is None
    # a memory only read in the block: each read is a free input of its own
    text = BLOCKS.replace("        mem[b] <= a;\n", "").replace("            mem[i] <= 0;\n", "")
    text = text.replace("assign z = s;", "assign z = s;\nalways @(posedge clk) begin: w\n    mem[b] <= a;\nend")
    line = text.split("\n").index("        t <= (mem[b] + a);") + 1
    gold, gate = local_pair(text, text.replace("(mem[b] + a)", "(mem[b] - a)"), line)
    assert "input [3:0] _lockstep_rd0;" in gold and "t <= (_lockstep_rd0 + a);" in gold and "input [1:0] b;" not in gold



def test_the_block_alone_keeps_constants_case_targets_and_refuses_a_loop_over_a_memory():
    from lockstep.verif.mutants import local_pair

    # a localparam the block reads stays a constant (MyHDL writes a constant signal as one):
    # as a free input, (k == 0) && (k > 6) would not be the always-false it is
    text = BLOCKS.replace("reg [3:0] dead;", "reg [3:0] dead;\nlocalparam [3:0] k = 4'd6;")
    text = text.replace("s = (a >>> 1);", "s = ((k == 0) || (k > 6)) ? a : (a >>> 1);")
    line = text.split("\n").index("    s = ((k == 0) || (k > 6)) ? a : (a >>> 1);") + 1
    gold, gate = local_pair(text, text.replace("(k == 0) || (k > 6)", "(k == 0) && (k > 6)"), line)
    assert "localparam [3:0] k = 4'd6;" in gold and "input [3:0] k;" not in gold
    # a case item's target is assigned, not read: an output, never also an input
    text = BLOCKS.replace("    s = (a >>> 1);", "    case (b)\n        0: s = 1;\n        default: s = a;\n    endcase")
    line = text.split("\n").index("        0: s = 1;") + 1
    gold, _ = local_pair(text, text.replace("0: s = 1;", "0: s = 2;"), line)
    assert "output [3:0] s;" in gold and "input [3:0] s;" not in gold
    # mem[i] in a loop reads a word per i: one free input for all of them would tie them
    text = BLOCKS.replace("        mem[b] <= a;\n", "").replace("            mem[i] <= 0;\n", "")
    text = text.replace("        t <= (mem[b] + a);", "        for (i=0; i<4; i=i+1) begin\n            t <= (t ^ mem[i]);\n"
                        "        end")
    text = text.replace("assign z = s;", "assign z = s;\nalways @(posedge clk) begin: w\n    mem[b] <= a;\nend")
    line = text.split("\n").index("            t <= (t ^ mem[i]);") + 1
    assert local_pair(text, text.replace("(t ^ mem[i])", "(t | mem[i])"), line) is None


@pytest.mark.parametrize("old,new,verdict,how", [
    ("dead = (a >> 1);", "dead = (a << 1);", "equivalent", "nothing reads"),
    ("s = (a >>> 1);", "s = (a >> 1);", "equivalent", "on the mutated block alone"),
    ("t <= (mem[b] + a);", "t <= (mem[b] - a);", "survived", "cycles after reset"),  # the whole design decides
])
def test_equivalence_tries_the_mutated_block_alone_first(tmp_path, old, new, verdict, how):
    orig, mut_file, line = _block_mutant(tmp_path, old, new)
    got, detail = equivalence(orig, mut_file, "top", depth=6, workdir=tmp_path, line=line)
    assert got == verdict and how in detail, detail


def test_no_mutant_is_drawn_on_a_store_overwritten_before_any_read():
    text = ("module t (\n    clk,\n    a,\n    q\n);\ninput clk;\ninput [3:0] a;\noutput [3:0] q;\nreg [3:0] q;\n"
            "always @(posedge clk) begin: b\n"
            "    reg [3:0] pw;\n    reg [3:0] nx;\n"
            "    pw = 4'h0;\n"          # dead: overwritten below before any read
            "    nx = 4'h0;\n"          # live: read (conditionally assigned) below
            "    if (a[0]) begin\n        nx = a;\n    end\n"
            "    pw = (a + 1);\n"
            "    q <= (pw ^ nx);\n"
            "end\nendmodule\n")
    lines = {m.before.strip() for m in M.sites(text)}
    assert "pw = 4'h0;" not in lines
    sink = text.replace("    q <= (pw ^ nx);\n", "    q <= (pw ^ nx);\n    wrap_unused <= a[0];\n")
    assert "wrap_unused" in sink and not any("wrap_unused" in m.before for m in M.sites(sink))   # nothing reads it
    assert {"nx = 4'h0;", "pw = (a + 1);", "q <= (pw ^ nx);"} <= lines


def test_a_stuck_bit_is_never_the_value_a_leading_constant_fixes():
    assert M._fixed_bits("{3'h5, y}", 8) == {5: 1, 6: 0, 7: 1} and M._fixed_bits("{y, 3'h5}", 8) == {}
    assert M._fixed_bits("{3'h0, y} + {3'h0, z}", 8) == {}   # a sum of two, whose carry reaches the top
    assert M.concat_parts("{8'h0, a[3:0], {b, c}}") == ["8'h0", "a[3:0]", "{b, c}"] and M.sized_literal("8'sh1") is None
    text = ("module t (\n    clk,\n    a,\n    q\n);\ninput clk;\ninput [3:0] a;\noutput [31:0] q;\nreg [31:0] q;\n"
            "always @(posedge clk) begin: b\n    q <= {31'h0, a[0]};\nend\nendmodule\n")
    stuck = [m for m in M.sites(text) if m.kind == "stuck"]
    bit = int(stuck[0].after.rsplit("[", 1)[1].split("]")[0])
    assert [m.after.strip()[-5:-1] for m in stuck] == (["1'b1"] if bit >= 1 else ["1'b0", "1'b1"])


def test_the_local_cut_grows_by_the_blocks_that_read_it(tmp_path):
    """A stuck bit its only reader truncates away: the block alone differs, the block and
    its reader do not (one level), and the whole design is never needed."""
    from lockstep.verif.mutants import local_pair

    text = BLOCKS.replace("reg [3:0] dead;", "reg [3:0] dead;\nreg [3:0] w;\nreg [1:0] lo;")
    text = text.replace("always @(a) begin: unread", "always @(a) begin: wide\n    w = (a + 1);\nend\n\n"
                        "always @(w) begin: trunc\n    lo = w[1:0];\nend\n\nalways @(a) begin: unread")
    text = text.replace("assign z = s;", "assign z = {lo, lo};")
    orig, mut_file = tmp_path / "orig.v", tmp_path / "mut.v"
    orig.write_text(text)
    mut_file.write_text(text.replace("    w = (a + 1);", "    w = (a + 1); w[3] = 1'b1;"))
    line = text.split("\n").index("    w = (a + 1);") + 1
    gold0, _ = local_pair(text, mut_file.read_text(), line)
    gold1, gate1 = local_pair(text, mut_file.read_text(), line, grow=1)
    assert "output [3:0] w;" in gold0 and "lo = w[1:0];" not in gold0
    assert "lo = w[1:0];" in gold1 and "output [1:0] lo;" in gold1 and "output [3:0] w;" not in gold1
    assert "w[3] = 1'b1;" in gate1 and "reg [3:0] w;" in gold1
    # the assign reading lo is in the next level; the level after that adds nothing: no cut
    assert "assign z = {lo, lo};" in local_pair(text, mut_file.read_text(), line, grow=2)[0]
    assert local_pair(text, mut_file.read_text(), line, grow=3) is None
    got, detail = equivalence(orig, mut_file, "top", depth=6, workdir=tmp_path, line=line)
    assert got == "equivalent" and "1 level(s) deep" in detail, detail


_ZERO_EXTENDED = ("module top (\n    clk,\n    rst,\n    a,\n    q\n);\n"
                  "input clk;\ninput rst;\ninput [3:0] a;\noutput [4:0] q;\nreg [4:0] q;\nwire [4:0] ax;\n"
                  "assign ax = {1'h0, a};\n\n"
                  "always @(posedge clk) begin: r\n    reg [4:0] w;\n    w = 5'h0;\n    if (rst == 1) begin\n"
                  "        q <= 0;\n    end\n    else begin\n        w = ax;\n        q <= (w + 1);\n    end\nend\n"
                  "endmodule\n")


@pytest.mark.parametrize("bit,verdict", [(4, "equivalent"), (3, "survived")])
def test_the_local_cut_takes_in_the_assigns_that_drive_it(tmp_path, bit, verdict):
    """A stuck bit on a value its driving assign fixes (the top bit of a zero-extension,
    stu_top@421f m013): free on the block alone, fixed once the cut takes in the assign,
    which proves it in seconds; a bit the assign leaves free still differs."""
    from lockstep.verif.mutants import local_pair

    text = _ZERO_EXTENDED
    mutated = text.replace("        w = ax;\n", f"        w = ax; w[{bit}] = 1'b0;\n")
    orig, mut_file = tmp_path / "orig.v", tmp_path / "mut.v"
    orig.write_text(text)
    mut_file.write_text(mutated)
    line = text.split("\n").index("        w = ax;") + 1
    assert "assign ax" not in local_pair(text, mutated, line)[0]
    gold, gate = local_pair(text, mutated, line, drivers=True)
    assert "assign ax = {1'h0, a};" in gold and "input [3:0] a;" in gold and f"w[{bit}] = 1'b0;" in gate
    got, detail = equivalence(orig, mut_file, "top", depth=6, workdir=tmp_path, line=line)
    assert got == verdict, detail
    if verdict == "equivalent":
        assert "the assigns driving what it reads" in detail, detail


_DEAD_PRODUCT = """module dp(input clk, input rst, input [7:0] x, output reg [15:0] y);
  reg [15:0] sq;
  reg [15:0] acc;
  always @(x) begin: square
    sq = (x * x);
  end
  always @(posedge clk) begin: state
    if (rst) acc <= 0; else acc <= acc + sq;
  end
  always @(x, acc) begin: out
    y = {8'h0, x} + (acc * 16'h0);
  end
endmodule
"""


@pytest.mark.parametrize("new", ["sq = (x + x);", "// dropped"])
def test_structural_check_folds_a_product_by_zero(tmp_path, new):
    """A register whose every use is multiplied by a zero parameter (the stats selector's
    squares with k_sigma = 0) is dead: the structural check folds the constant first, so
    a mutant there is proved equivalent, where pairing the differing named wires left it
    unproven. Where it is live, no proof: a dropped assignment leaves its net free (not
    0), so the accumulator it feeds can take any value."""
    gold, gate = tmp_path / "gold.v", tmp_path / "gate.v"
    gold.write_text(_DEAD_PRODUCT)
    gate.write_text(_DEAD_PRODUCT.replace("sq = (x * x);", new))
    assert mutate._structural(gold, gate, "dp", "t", tmp_path, 120)
    # ... and a live difference is not proved
    gate.write_text(_DEAD_PRODUCT.replace("16'h0);", "16'h1);").replace("sq = (x * x);", new))
    assert not mutate._structural(gold, gate, "dp", "t2", tmp_path, 120)
